//! How long a measurement warms up, lasts and waits: what the suite file
//! sets and the engine's settings are built with.

use std::time::Duration;

/// How long a measurement warms up, lasts, and waits for each response.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// A fixed duration or `auto` (until steady, at most a ceiling).
    pub warmup: crate::args::Warmup,
    pub duration: Duration,
    pub timeout: Duration,
    pub timeout_mode: fairbench_engine::TimeoutMode,
}
