//! What `load` prints and writes: the summary on the terminal, the
//! per-target table, the JSON (and its per-target part), the HDR histogram
//! log, and the one line a failed TLS handshake gets.

pub mod clients;
pub mod ends;
pub mod hdr_log;
pub mod http3;
pub mod json;
pub mod json_bodies;
pub mod json_targets;
pub mod summary;
pub mod tables;
pub mod targets;
pub mod tls_error;
