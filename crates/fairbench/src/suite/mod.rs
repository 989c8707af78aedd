//! Suites: `suites/*.toml`, the matrix a `fairbench run` measures.

mod engine;
mod file;
pub mod order;
pub mod overrides;
pub mod pairing;
mod plan;
pub mod span;
mod timing;

pub use file::{AddressFamily, Ends, LoadProfile, Service, Suite};
pub use plan::{
    full_matrix, plan, CaseSpec, PlanItem, Subject, SuitePlan, SweepItem, FULL_MATRIX_CPUS,
};
pub use timing::Timing;
