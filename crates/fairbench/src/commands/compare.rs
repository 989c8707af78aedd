//! `fairbench compare` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct CompareArgs {}

pub fn run(_args: CompareArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
