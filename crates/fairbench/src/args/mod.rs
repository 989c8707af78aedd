//! Values typed on the command line and in suite files, each kind with one
//! parser and one set of rules wherever it appears: counts and rates (SI
//! suffixes), durations, warm-ups, CPU lists, output formats, variants, percentiles,
//! run ids, and where the fairbench root is.

pub mod bounds;
mod count;
mod cpus;
mod duration;
mod format;
pub mod migrant;
mod percentiles;
pub mod proxy;
mod root;
mod run_id;
mod stages;
mod variant;
mod warmup;

pub use count::{count, positive_count, positive_usize, rate};
pub use cpus::{format_cpus, CpuList};
pub use duration::{duration, positive_duration, MAX_DURATION};
pub use format::{wants_json, TextFormat};
pub use percentiles::{parse_percentiles, Percentiles};
pub use root::{load_zoo, resolve_root};
pub use run_id::{resolve_run, RunSel};
pub use stages::parse_stages;
pub use variant::VariantSel;
pub use warmup::{warmup, Warmup};
