//! `fairbench runs`: the runs stored in the results database.

use std::path::PathBuf;

use crate::store::Store;
use crate::units::one_line;

#[derive(clap::Args, Debug)]
pub struct RunsArgs {
    /// The results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// text (tables) or json (schema: docs/cli-json.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: crate::args::TextFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

pub fn run(args: RunsArgs) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&args.db)?;
    let runs = store.runs()?;
    if crate::args::wants_json(args.format, args.json) {
        println!(
            "{}",
            crate::report::json_doc::render(
                crate::report::json_doc::Doc::Runs,
                &serde_json::json!({ "runs": runs })
            )?
        );
        return Ok(0);
    }
    if runs.is_empty() {
        println!("no runs in {}", args.db.display());
        return Ok(0);
    }
    println!(
        "{:>4}  {:<20}  {:<12}  {:>11}  {:>6}  {:>7}  planned",
        "id", "started", "suite", "state", "done", "failed"
    );
    for r in runs {
        println!(
            "{:>4}  {:<20}  {:<12}  {:>11}  {:>6}  {:>7}  {}",
            r.id,
            r.started_at,
            crate::output::terminal::text(&one_line(&r.suite)),
            state(&r),
            r.cases_done,
            r.cases_failed,
            r.planned_cases
        );
    }
    Ok(0)
}

/// A run marked `running` whose process is gone was killed outright (no
/// chance to mark itself interrupted); say so, since it is resumable.
fn state(r: &crate::store::RunRow) -> String {
    match (r.state.as_str(), r.pid) {
        ("running", Some(pid)) if !std::path::Path::new(&format!("/proc/{pid}")).exists() => {
            "interrupted?".to_string()
        }
        _ => r.state.clone(),
    }
}
