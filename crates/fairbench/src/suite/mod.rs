//! Suites: `suites/*.toml`, the matrix a `fairbench run` measures.

mod engine;
mod file;
#[cfg(test)]
mod ladder_tests;
pub mod order;
pub mod overrides;
pub mod pairing;
mod plan;
pub mod span;
mod timing;

pub use file::{AddressFamily, Ends, LoadProfile, Repetitions, Service, Step, Suite, SweepSpec};
pub use plan::{
    full_matrix, plan, CaseSpec, PlanItem, Probes, Subject, SuitePlan, SweepItem, FULL_MATRIX_CPUS,
};
pub use timing::Timing;
