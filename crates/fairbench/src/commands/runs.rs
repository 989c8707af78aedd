//! `fairbench runs` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct RunsArgs {}

pub fn run(_args: RunsArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
