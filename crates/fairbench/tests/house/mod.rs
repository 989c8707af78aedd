//! Rules of the house kept in files of their own.

pub mod functions;
