//! How a `fairbench run` ends, whatever it measured (zoo servers, or
//! services at their URLs): the run's table, then its report when asked for.

use std::path::Path;

use super::run_args::RunArgs;
use crate::output::run_table;
use crate::store::Store;

/// The run's table, and its report when asked for (zoo and services alike).
pub(super) fn ended(args: &RunArgs, store: &Store, run: i64) -> anyhow::Result<()> {
    if let (Some(r), cases) = (store.run(run)?, store.cases(run)?) {
        println!();
        let paired = crate::report::model::paired_of(&r, &cases, None).ok();
        print!(
            "{}",
            crate::output::terminal::text(&run_table::render(&r, &cases, paired.as_ref()))
        );
        print!(
            "{}",
            crate::output::terminal::text(&crate::output::calibration_table::render(
                &cases,
                &store.calibrations(run)?
            ))
        );
    }
    if let Some(path) = &args.report {
        write_report(&args.db, run, path);
    }
    export(args, store, run)
}

/// The files `--export-json`, `--export-csv` and `--export-markdown` ask
/// for, as `report` renders the run. Each is tried; one that cannot be
/// written fails the command (exit 1) naming its flag, after the others.
fn export(args: &RunArgs, store: &Store, run: i64) -> anyhow::Result<()> {
    let asked = exports(args);
    if asked.iter().all(|(_, p)| p.is_none()) {
        return Ok(());
    }
    let row = crate::args::resolve_run(store, crate::args::RunSel::Id(run))?;
    let report = crate::report::model::build(store, &row)?;
    let mut failed = Vec::new();
    for (flag, path) in asked {
        let Some(path) = path else { continue };
        let text = match flag {
            "--export-json" => crate::report::json::render(&report)?,
            "--export-csv" => crate::report::csv::render(&report)?,
            _ => crate::report::markdown::render(&report),
        };
        match crate::report::write_atomic(path, text.as_bytes()) {
            Ok(()) => eprintln!("{flag}: {}", path.display()),
            Err(e) => {
                eprintln!("fairbench: {flag}: {e:#}");
                failed.push(flag);
            }
        }
    }
    if !failed.is_empty() {
        anyhow::bail!("could not write {}", failed.join(", "));
    }
    Ok(())
}

/// Each export flag with its file, if given.
fn exports(args: &RunArgs) -> [(&'static str, Option<&Path>); 3] {
    [
        ("--export-json", args.export_json.as_deref()),
        ("--export-csv", args.export_csv.as_deref()),
        ("--export-markdown", args.export_markdown.as_deref()),
    ]
}

/// Refuses, before a run of hours, a report or export file that could
/// never be written (a folder, a missing folder, a socket).
pub(super) fn check_targets(args: &RunArgs) -> anyhow::Result<()> {
    let report = ("--report", args.report.as_deref());
    for (flag, path) in std::iter::once(report).chain(exports(args)) {
        if let Some(p) = path {
            crate::report::check_target(p)
                .map_err(|e| crate::usage_error::usage(format!("{flag}: {e:#}")))?;
        }
    }
    Ok(())
}

/// The HTML report, when the report module is built in; a failure here must
/// not hide the run's own outcome.
fn write_report(db: &Path, run: i64, path: &Path) {
    if let Err(e) = crate::report::write_html(db, run, path) {
        eprintln!(
            "fairbench: could not write the report {}: {e:#}",
            path.display()
        );
    } else {
        eprintln!("report: {}", path.display());
    }
}
