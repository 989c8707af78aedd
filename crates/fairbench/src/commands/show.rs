//! `fairbench show` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct ShowArgs {}

pub fn run(_args: ShowArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
