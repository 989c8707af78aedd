//! `fairbench compare RUN_A RUN_B`: two stored runs case by case, with a
//! verdict on each difference (docs/compare.md).

use std::path::PathBuf;

use super::export::{self, Kind};
use crate::args::{resolve_run, RunSel};
use crate::compare::model::{compare_runs, RunRef};
use crate::compare::paired;
use crate::compare::render;
use crate::store::Store;
use crate::usage_error::usage;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Md,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The baseline run: its id, or `latest`.
    pub run_a: RunSel,
    /// The run compared with it: its id, or `latest`.
    pub run_b: RunSel,
    /// The results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// The database RUN_B is in, when it is another file [default: --db]
    #[arg(long, value_name = "PATH")]
    pub db_b: Option<PathBuf>,
    /// text (an aligned table), md or json.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Exit with status 98 when any case is significantly slower by more than
    /// PCT percent (req/s for closed loop, p99 for constant rate): for CI,
    /// which tells it from a failed step (1) and a usage error (2).
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// Also write the comparison as JSON (schema: docs/schemas/) to FILE,
    /// whatever is printed: the table for a CI log, the file for its
    /// artefacts.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the comparison as Markdown to FILE (a CI job's summary).
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Pair both runs relative to this server (or SERVER/MODE/RESPONSE)
    /// [default: run A's suite's reference, else go-nethttp]
    #[arg(long, value_name = "SERVER")]
    pub reference: Option<String>,
}

pub fn run(mut args: CompareArgs) -> anyhow::Result<i32> {
    if args.json {
        args.format = Format::Json;
    }
    if let Some(p) = args.fail_on_regression {
        if !(p.is_finite() && p >= 0.0) {
            return Err(usage(format!(
                "--fail-on-regression {p}: expected a percentage ≥ 0"
            )));
        }
    }
    for (kind, path) in exports(&args) {
        export::check_writable(kind.flag(), path)?;
    }
    let store_a = Store::open_read_only(&args.db)?;
    let store_b = match &args.db_b {
        Some(p) => Some(Store::open_read_only(p)?),
        None => None,
    };
    let sb = store_b.as_ref().unwrap_or(&store_a);
    let run_a = resolve_run(&store_a, args.run_a)?;
    let run_b = resolve_run(sb, args.run_b)?;
    let (cases_a, cases_b) = (store_a.cases(run_a.id)?, sb.cases(run_b.id)?);
    let mut cmp = compare_runs(
        RunRef::of(&store_a.path().display().to_string(), &run_a),
        &cases_a,
        RunRef::of(&sb.path().display().to_string(), &run_b),
        &cases_b,
        args.fail_on_regression,
    );
    paired::attach(
        &mut cmp,
        &run_a,
        &cases_a,
        &cases_b,
        args.reference.as_deref(),
    )?;
    let text = match args.format {
        Format::Text => render::text(&cmp),
        Format::Md => render::markdown_doc(&cmp),
        Format::Json => render::json(&cmp)?,
    };
    print!(
        "{}",
        match args.format {
            Format::Json => crate::output::terminal::json(&text),
            _ => crate::output::terminal::text(&text),
        }
    );
    for (kind, path) in exports(&args) {
        let text = match kind {
            Kind::Json => render::json(&cmp)?,
            Kind::Csv | Kind::Markdown => render::markdown_doc(&cmp),
        };
        export::write(kind.flag(), path, &text)?;
    }
    if cmp.regressions > 0 {
        eprintln!(
            "fairbench: {} case(s) regressed by more than {} %, failed over 1 % of their requests or answered them with other bodies in B, or had figures their load generator bounded (--fail-on-regression)",
            cmp.regressions,
            args.fail_on_regression.unwrap_or(0.0)
        );
        return Ok(crate::thresholds::EXIT_REGRESSED);
    }
    Ok(0)
}

/// The export files given (compare has no CSV).
fn exports(args: &CompareArgs) -> Vec<(Kind, &std::path::Path)> {
    export::asked(
        args.export_json.as_deref(),
        None,
        args.export_markdown.as_deref(),
    )
}
