//! `fairbench run` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
