//! `fairbench load` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct LoadArgs {}

pub fn run(_args: LoadArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
