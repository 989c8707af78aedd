//! `fairbench servers`: every server definition, its variants, and whether
//! its toolchain is present here (and if not, why).

use std::path::PathBuf;

use fairbench_zoo::toolchain::Prober;

use crate::args::{load_zoo, resolve_root};
use crate::output::servers::Listing;

#[derive(clap::Args, Debug)]
pub struct ServersArgs {
    /// The fairbench root (a folder with servers/ and scenarios/); by default
    /// the nearest such folder at or above the current directory.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// text (tables) or json (schema: docs/cli-json.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: crate::args::TextFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

pub fn run(args: ServersArgs) -> anyhow::Result<i32> {
    let root = resolve_root(args.root.as_deref())?;
    let zoo = load_zoo(&root)?;
    let listing = Listing::new(&zoo, &mut Prober::new());
    if crate::args::wants_json(args.format, args.json) {
        println!(
            "{}",
            crate::report::json_doc::render(crate::report::json_doc::Doc::Servers, &listing)?
        );
    } else {
        print!("{}", crate::output::terminal::text(&listing.text(&zoo)));
    }
    for e in &zoo.errors {
        crate::note!("fairbench: {e}");
    }
    Ok(if zoo.errors.is_empty() { 0 } else { 1 })
}
