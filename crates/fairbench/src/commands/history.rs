//! `fairbench history`: a case's figures across the stored runs, where
//! they changed, and a CI verdict (docs/history.md).

use std::path::PathBuf;

use super::export::{self, Kind};
use crate::history::analysis::{analyse, CaseHistory, Settings};
use crate::history::series::{collect, Metric};
use crate::history::{chart, render};
use crate::report::case_key::CaseKey;
use crate::store::Store;
use crate::suite::pairing::Pairing;
use crate::usage_error::usage;

/// `history --fail-on-change`'s exit code when the newest run starts a
/// change for the worse: its own, beside compare's 98 and load's 99.
pub const EXIT_CHANGED: i32 = 97;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
}

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// The results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// Only cases of this server (for a saved load: its URL).
    #[arg(long, value_name = "SERVER")]
    pub server: Option<String>,
    /// Only cases of this variant: MODE/RESPONSE (e.g. native/normalized),
    /// or a mode or a response shape alone.
    #[arg(long, value_name = "MODE/RESPONSE")]
    pub variant: Option<String>,
    /// Only cases of this scenario.
    #[arg(long, value_name = "SCENARIO")]
    pub scenario: Option<String>,
    /// Only cases given this many cores.
    #[arg(long, value_name = "N")]
    pub cores: Option<i64>,
    /// Only cases of this load, as its label reads (e.g. 'closed c=50 t=1').
    #[arg(long, value_name = "LABEL")]
    pub load: Option<String>,
    /// The figure followed [default: req/s in closed loop, p99 at a constant rate]
    #[arg(long, value_enum, value_name = "METRIC")]
    pub metric: Option<Metric>,
    /// A change smaller than PCT percent (or than a run's A/A noise floor,
    /// if larger) is not reported.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub min_change: f64,
    /// Ratios relative to this server (or SERVER/MODE/RESPONSE) [default: each run's suite's reference]
    #[arg(long, value_name = "SERVER")]
    pub reference: Option<String>,
    /// text (one case: its table; several: a line each), json or csv.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Also write the history as JSON (schema: docs/schemas/) to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the history as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the chart of the one case selected as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Exit with status 97 when the newest run starts a change for the
    /// worse beyond the noise floor, in any case selected: a CI gate with
    /// no baseline to pick and no fixed percentage.
    #[arg(long)]
    pub fail_on_change: bool,
}

impl HistoryArgs {
    fn selects(&self, k: &CaseKey) -> bool {
        let variant = format!("{}/{}", k.mode, k.response);
        self.server.as_ref().is_none_or(|s| *s == k.server)
            && self
                .variant
                .as_ref()
                .is_none_or(|v| *v == variant || *v == k.mode || *v == k.response)
            && self.scenario.as_ref().is_none_or(|s| *s == k.scenario)
            && self.cores.is_none_or(|c| c == k.cores)
            && self.load.as_ref().is_none_or(|l| *l == k.load)
    }

    fn has_selector(&self) -> bool {
        self.server.is_some()
            || self.variant.is_some()
            || self.scenario.is_some()
            || self.cores.is_some()
            || self.load.is_some()
    }
}

pub fn run(mut args: HistoryArgs) -> anyhow::Result<i32> {
    if args.json {
        args.format = Format::Json;
    }
    if !(args.min_change.is_finite() && args.min_change >= 0.0) {
        return Err(usage(format!(
            "--min-change {}: expected a percentage ≥ 0",
            args.min_change
        )));
    }
    if let Some(r) = &args.reference {
        Pairing::from_stored_suite("", Some(r)).map_err(usage)?;
    }
    for (kind, path) in exports(&args) {
        export::check_writable(kind.flag(), path)?;
    }
    if let Some(p) = &args.svg {
        export::check_writable("--svg", p)?;
    }
    let store = Store::open_read_only(&args.db)?;
    let all = collect(&store, args.metric, args.reference.as_deref())?;
    if all.is_empty() {
        println!(
            "{}: no finished run, so no history",
            crate::output::terminal::text(&args.db.display().to_string())
        );
        return Ok(0);
    }
    let settings = Settings {
        min_change_pct: args.min_change,
    };
    let cases: Vec<CaseHistory> = all
        .into_iter()
        .filter(|s| args.selects(&s.key))
        .map(|s| analyse(s, settings))
        .collect();
    if cases.is_empty() {
        return Err(usage(
            "no stored case matches --server/--variant/--scenario/--cores/--load (`fairbench history` alone lists every case)",
        ));
    }
    if args.svg.is_some() && cases.len() != 1 {
        return Err(usage(format!(
            "--svg: {} cases match; select one (--server, --variant, --scenario, --cores, --load)",
            cases.len()
        )));
    }
    let db = store.path().display().to_string();
    let text = match args.format {
        Format::Json => crate::output::terminal::json(&render::json(&db, args.min_change, &cases)?),
        // Its cells went through the visible rule already; the CRLF the
        // format asks for stays.
        Format::Csv => render::csv(&cases)?,
        Format::Text if cases.len() == 1 && args.has_selector() => {
            crate::output::terminal::text(&render::case_table(&cases[0]))
        }
        Format::Text => crate::output::terminal::text(&render::summary(&cases)),
    };
    print!("{text}");
    for (kind, path) in exports(&args) {
        let text = match kind {
            Kind::Json => render::json(&db, args.min_change, &cases)?,
            Kind::Csv | Kind::Markdown => render::csv(&cases)?,
        };
        export::write(kind.flag(), path, &text)?;
    }
    if let Some(p) = &args.svg {
        export::write("--svg", p, &chart::svg(&cases[0]))?;
    }
    let changed: Vec<&CaseHistory> = cases.iter().filter(|c| c.newest_regressed()).collect();
    if args.fail_on_change && !changed.is_empty() {
        for c in &changed {
            crate::note!(
                "fairbench: {} changed for the worse at the newest run (--fail-on-change)",
                c.label
            );
        }
        return Ok(EXIT_CHANGED);
    }
    Ok(0)
}

/// The export files given (history has no Markdown).
fn exports(args: &HistoryArgs) -> Vec<(Kind, &std::path::Path)> {
    export::asked(
        args.export_json.as_deref(),
        args.export_csv.as_deref(),
        None,
    )
}
