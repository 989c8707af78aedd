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
