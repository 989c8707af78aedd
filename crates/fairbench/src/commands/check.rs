//! `fairbench check` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct CheckArgs {}

pub fn run(_args: CheckArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
