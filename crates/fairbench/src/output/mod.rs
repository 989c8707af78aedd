//! Terminal output: progress, summaries and warnings.

pub mod check_report;
pub mod check_table;
pub mod load_summary;
pub mod progress;
pub mod run_progress;
pub mod run_table;
pub mod target_table;
pub mod terminal;
pub mod tls_error;
pub mod url_table;
