//! Terminal output: progress, summaries and warnings.

pub mod load_summary;
pub mod progress;
pub mod units;
