//! The server zoo: server manifests, scenario contracts, toolchain probes,
//! cached builds, the database behind the servers, and the parity check.
//! Processes and control groups are fairbench-sys's.
//!
//! A benchmark runner uses it per case as: [`Zoo::load`] → pick a
//! [`Server`] and [`Variant`] → [`toolchain::probe`] → [`build::ensure_built`]
//! → [`launch::spec`] → `fairbench_sys::process::ServerProcess::start` →
//! `wait_ready` → [`parity::inspect`] (byte counts to store) → load → `stop`.

pub mod build;
pub mod contract;
pub mod database;
pub mod dial;
pub mod error;
pub mod fetch;
pub mod fetch_h2;
pub mod fetch_h3;
pub mod launch;
pub mod manifest;
pub mod parity;
pub mod pki;
pub mod placeholder;
pub mod protocol_parity;
pub mod reference;
pub mod row;
pub mod rule;
pub mod runnable;
pub mod scenario;
mod token;
pub mod toolchain;
mod zoo;

pub use error::DefinitionError;
/// The protocols a server may serve: the engine's, one type for both.
pub use fairbench_engine::Protocol;
pub use manifest::{Deviation, DeviationTarget, Mode, ResponseKind, Server, Variant};
pub use scenario::Scenario;
pub use zoo::{find_root, NameFilter, Zoo};
