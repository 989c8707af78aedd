//! `fairbench report` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
