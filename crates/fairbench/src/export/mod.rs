//! Machine-readable exports, one file per format.

pub mod hdr_log;
pub mod load_json;
