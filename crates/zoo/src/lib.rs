//! The server zoo: server manifests, scenario contracts, toolchain probes,
//! cached builds, server processes and the parity check.

pub mod process;
