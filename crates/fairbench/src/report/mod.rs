//! Reports and comparisons of stored runs.
//!
//! The pipeline is one-way: [`model`] reads the results database into a
//! [`model::Report`] (repetitions aggregated, confidence intervals computed),
//! [`figures`] turns the model into charts ([`svg`]) each with the table of
//! every number it draws, and [`html`] assembles them into one self-contained
//! page. The Markdown, CSV and JSON exports (crate::export::report_*) read the
//! same model and figures, so every format says the same thing.

pub mod comparison;
pub mod escape;
pub mod figures;
pub mod html;
pub mod machines;
pub mod model;
pub mod overview;
pub mod paired;
pub mod paired_compare;
pub mod palette;
pub mod ratio_stats;
pub mod stats;
pub mod svg;
pub mod table;
pub mod url_case;
mod write;

pub use write::{check_target, write_atomic, write_html};

#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
