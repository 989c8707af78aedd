//! The database behind the `db`, `queries`, `fortunes` and `updates`
//! scenarios: a PostgreSQL that fairbench starts for a check or a run
//! ([`postgres`]), its deterministic tables ([`seed`]), what the check asks
//! it to grade a server's answers against ([`oracle`], [`content`]), how it
//! is reached from outside ([`psql`]), and the
//! data folders of fairbench processes that died ([`leftovers`]).
//!
//! PostgreSQL is contained like a server: a control group of its own (its
//! CPU and memory are counted there, and its end kills every backend), its
//! own data folder and port, nothing left behind. docs/scenarios.md.

pub mod content;
pub mod leftovers;
pub mod oracle;
pub mod postgres;
pub mod psql;
pub mod seed;

pub use oracle::Oracle;
pub use postgres::{Postgres, PostgresOptions};
