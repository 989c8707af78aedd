//! The report of a stored run, in every format.
//!
//! The pipeline is one-way: [`model`] reads the results database into a
//! [`model::RunReport`] (repetitions aggregated, confidence intervals
//! computed), [`figures`] turns the model into charts ([`svg`]) each with
//! the table of every number it draws, and one file per format renders
//! it: [`html`] one self-contained page, [`markdown`], [`csv`] (with
//! [`csv_ratios`]), [`json`] and [`hdr`] (the merged latency histograms).
//! Every format reads the same model and figures, so every format says the
//! same thing. Comparing two runs is `crate::compare`'s. The History
//! section ([`history_section`]) shows [`run_history`], which `report`
//! fills from `crate::history`: that library builds on this one, so it is
//! called from the command, never from here.

pub mod bodies;
pub mod bound;
pub mod case_key;
pub mod claims;
pub mod csv;
pub mod csv_ratios;
pub mod escape;
pub mod failing;
pub mod figures;
pub mod hdr;
pub mod history_section;
pub mod html;
pub mod json;
pub mod json_doc;
pub mod ladder;
pub mod machines;
pub mod markdown;
pub mod model;
pub mod overview;
pub mod paired;
pub mod palette;
pub mod ratio_stats;
pub mod run_history;
pub mod stats;
pub mod stop;
pub mod svg;
pub mod table;
pub mod url_case;
mod write;

pub use write::{check_target, write_atomic};

#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
