//! The report as JSON: the whole model (run, servers, parity, every case
//! with its per-repetition values, spectra, warm-up series and sweeps), as
//! the document `fairbench-report` (`docs/schemas/`).

use crate::report::json_doc::{self, Doc};
use crate::report::model::RunReport;

pub fn render(r: &RunReport) -> anyhow::Result<String> {
    let mut s = json_doc::render(Doc::Report, r)?;
    s.push('\n');
    Ok(s)
}
