//! Rules of the house kept in files of their own.

pub mod functions;
pub mod glob_halves;
pub mod outside_paths;
pub mod processes;
