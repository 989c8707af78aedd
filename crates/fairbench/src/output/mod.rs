//! Terminal output: progress, summaries and warnings; what `load`
//! prints and writes ([`load`]).

pub mod calibration_table;
pub mod case_rows;
pub mod check_report;
pub mod check_table;
pub mod load;
pub mod median_table;
pub mod metrics;
pub mod pipe;
pub mod progress;
pub mod run_plan;
pub mod run_progress;
pub mod run_table;
pub mod servers;
pub mod terminal;
pub mod url_table;
