//! The report as JSON: the whole model (run, servers, parity, every case
//! with its per-repetition values, spectra, warm-up series and sweeps).

use serde::Serialize;

use crate::report::model::RunReport;

/// Bumped when a field changes meaning or goes away.
pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Doc<'a> {
    format: &'static str,
    version: u32,
    #[serde(flatten)]
    report: &'a RunReport,
}

pub fn render(r: &RunReport) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(&Doc {
        format: "fairbench-report",
        version: VERSION,
        report: r,
    })?;
    s.push('\n');
    Ok(s)
}
