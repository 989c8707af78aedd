//! `fairbench servers` (stub: being written).

#[derive(clap::Args, Debug)]
pub struct ServersArgs {}

pub fn run(_args: ServersArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
