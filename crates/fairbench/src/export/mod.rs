//! Machine-readable exports, one file per format.

pub mod comparison;
pub mod hdr_log;
pub mod load_json;
pub mod load_json_targets;
pub mod report_csv;
pub mod report_csv_ratios;
pub mod report_hdr;
pub mod report_json;
pub mod report_md;
