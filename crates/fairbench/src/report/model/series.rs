//! A case's shapes beyond its summary: the latency spectrum, the warm-up,
//! a rate sweep's steps, and the repetitions that did not finish.

use serde::Serialize;

use crate::report::case_key::CaseKey;
use crate::store::SweepRow;

/// The latency percentile spectrum of a case: every repetition's histogram
/// merged, read at evenly spaced "nines".
#[derive(Debug, Clone, Serialize)]
pub struct Spectrum {
    pub count: u64,
    pub points: Vec<SpectrumPoint>,
    pub max_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SpectrumPoint {
    /// 0 … 100.
    pub percentile: f64,
    /// −log10(1 − percentile/100): 1 = 90 %, 2 = 99 %, …
    pub nines: f64,
    pub latency_us: u64,
}

/// Steps per nine and the deepest nine drawn.
pub const NINES_STEP: f64 = 0.25;
pub const NINES_MAX: f64 = 6.0;

impl Spectrum {
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Option<Spectrum> {
        let count = h.len();
        if count == 0 {
            return None;
        }
        // Deeper than log10(count) nines there is no sample to tell.
        let deepest = ((count as f64).log10().min(NINES_MAX) / NINES_STEP).floor() as usize;
        let points = (0..=deepest)
            .map(|i| {
                let nines = i as f64 * NINES_STEP;
                let q = 1.0 - 10f64.powf(-nines);
                SpectrumPoint {
                    percentile: round_to(q * 100.0, 6),
                    nines,
                    latency_us: h.value_at_quantile(q),
                }
            })
            .collect();
        Some(Spectrum {
            count,
            points,
            max_us: h.max(),
        })
    }
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let m = 10f64.powi(decimals);
    (v * m).round() / m
}

/// Requests per second, second by second, warm-up included, of the first
/// finished repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Warmup {
    pub repetition: i64,
    pub points: Vec<WarmupPoint>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WarmupPoint {
    pub second: i64,
    pub phase: String,
    /// Seconds since the load began (warm-up included).
    pub t_s: f64,
    pub rps: f64,
    pub p99_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepInfo {
    /// The stored sweep, as the database holds it.
    #[serde(flatten)]
    pub row: SweepRow,
    pub palette_index: usize,
    pub steps: Vec<SweepStep>,
}

/// A sweep is read like its row, plus what the report adds.
impl std::ops::Deref for SweepInfo {
    type Target = SweepRow;
    fn deref(&self) -> &SweepRow {
        &self.row
    }
}

impl SweepInfo {
    pub fn variant_label(&self) -> String {
        format!("{} {}/{}", self.server, self.mode, self.response)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepStep {
    pub offered_rps: f64,
    pub achieved_rps: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// Whether the step met the objective, when the objective's quantile is
    /// one the database keeps (p50, p90, p99, p99.9).
    pub met: Option<bool>,
    pub load: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub key: CaseKey,
    pub repetition: i64,
    pub state: String,
    pub reason: Option<String>,
    pub log_tail: Option<String>,
}
