//! Values typed on the command line and in suite files, each kind with one
//! parser and one set of rules wherever it appears: counts and rates (SI
//! suffixes), durations, CPU lists,
//! run ids, and where the fairbench root is.

mod count;
mod cpus;
mod duration;
mod root;
mod run;

pub use count::{count, positive_count, positive_usize, rate};
pub use cpus::{format_cpus, CpuList};
pub use duration::{duration, positive_duration, MAX_DURATION};
pub use root::{load_zoo, resolve_root};
pub use run::{resolve_run, RunSel};
