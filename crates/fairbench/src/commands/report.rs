//! `fairbench report` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}

/// Writes the HTML report of `run` to `path` (used by `fairbench run --report`).
pub fn write_html(_db: &std::path::Path, _run: i64, _path: &std::path::Path) -> anyhow::Result<()> {
    anyhow::bail!("the HTML report is not built yet")
}
