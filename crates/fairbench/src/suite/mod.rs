//! Suites: `suites/*.toml`, the matrix a `fairbench run` measures.

mod file;
mod plan;

pub use file::{Ends, LoadProfile, Suite};
pub use plan::{plan, CaseSpec, PlanItem, Subject, SuitePlan, SweepItem};
