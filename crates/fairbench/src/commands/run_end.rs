//! How a `fairbench run` ends, whatever it measured (zoo servers, or
//! services at their URLs): the run's table, then its report when asked for.

use std::path::Path;

use super::export::{self, Kind};
use super::run_args::RunArgs;
use crate::output::run_table;
use crate::runner::adaptive;
use crate::runner::stopping::Stopped;
use crate::store::Store;

/// The run's table, and its report when asked for (zoo and services alike).
pub(super) fn ended(args: &RunArgs, store: &Store, run: i64) -> anyhow::Result<()> {
    if let (Some(r), cases) = (store.run(run)?, store.cases(run)?) {
        println!();
        let level = crate::report::model::look_level(store, run)?;
        let paired = crate::report::model::paired_at(&r, &cases, None, level).ok();
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
        print!(
            "{}",
            crate::output::terminal::text(&stop_lines(store, run)?)
        );
    }
    if let Some(path) = &args.report {
        write_report(&args.db, run, path);
    }
    export(args, store, run)
}

/// How an adaptive run stopped, and each ratio at the level its stop
/// holds for (the table's intervals are 95 % ones, which looking at the
/// data as it came does not keep): nothing for a fixed count.
fn stop_lines(store: &Store, run: i64) -> anyhow::Result<String> {
    let Some(stopped) = store
        .stopped(run)?
        .and_then(|j| serde_json::from_str::<Stopped>(&j).ok())
    else {
        return Ok(String::new());
    };
    let mut out = format!("{}\n", stopped.run_line());
    for (what, r) in adaptive::ratios(store, run, stopped.level_per_look)? {
        let shown = r.map_or_else(|| "no interval".to_string(), |r| r.text());
        out += &format!(
            "  {what}: {shown} at {:.2} %\n",
            100.0 * stopped.level_per_look
        );
    }
    Ok(out)
}

/// The files `--export-json`, `--export-csv` and `--export-markdown` ask
/// for, as `report` renders the run. Each is tried; one that cannot be
/// written fails the command (exit 1) naming its flag, after the others.
fn export(args: &RunArgs, store: &Store, run: i64) -> anyhow::Result<()> {
    let asked = exports(args);
    if asked.is_empty() {
        return Ok(());
    }
    let report = with_history(store, run, &args.db)?;
    let mut failed = Vec::new();
    for (kind, path) in asked {
        let text = match kind {
            Kind::Json => crate::report::json::render(&report)?,
            Kind::Csv => crate::report::csv::render(&report)?,
            Kind::Markdown => crate::report::markdown::render(&report),
        };
        match export::write(kind.flag(), path, &text) {
            Ok(()) => eprintln!("{}: {}", kind.flag(), path.display()),
            Err(e) => {
                eprintln!("fairbench: {e:#}");
                failed.push(kind.flag());
            }
        }
    }
    if !failed.is_empty() {
        anyhow::bail!("could not write {}", failed.join(", "));
    }
    Ok(())
}

fn exports(args: &RunArgs) -> Vec<(Kind, &Path)> {
    export::asked(
        args.export_json.as_deref(),
        args.export_csv.as_deref(),
        args.export_markdown.as_deref(),
    )
}

/// Refuses, before a run of hours, a report or export file that could
/// never be written (a folder, a missing folder, a socket).
pub(super) fn check_targets(args: &RunArgs) -> anyhow::Result<()> {
    if let Some(p) = &args.report {
        export::check_writable("--report", p)?;
    }
    for (kind, path) in exports(args) {
        export::check_writable(kind.flag(), path)?;
    }
    Ok(())
}

/// The run's report as `report` builds it, its History section included.
fn with_history(
    store: &Store,
    run: i64,
    db: &Path,
) -> anyhow::Result<crate::report::model::RunReport> {
    let row = crate::args::resolve_run(store, crate::args::RunSel::Id(run))?;
    let report = super::report::stop::add(crate::report::model::build(store, &row)?, store);
    Ok(super::report::history::add(report, store, &row, None, db))
}

/// The HTML report, when the report module is built in; a failure here must
/// not hide the run's own outcome.
fn write_report(db: &Path, run: i64, path: &Path) {
    let written = Store::open_read_only(db)
        .and_then(|store| with_history(&store, run, db))
        .and_then(|report| {
            crate::report::write_atomic(path, crate::report::html::render(&report).as_bytes())
        });
    if let Err(e) = written {
        eprintln!(
            "fairbench: could not write the report {}: {e:#}",
            path.display()
        );
    } else {
        eprintln!("report: {}", path.display());
    }
}
