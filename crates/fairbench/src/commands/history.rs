//! `fairbench history`: a case's figures across the stored runs, where
//! they changed, and a CI verdict (docs/history.md).

use std::path::PathBuf;
use std::time::Duration;

use super::export::{self, Kind};
use crate::args::{positive_duration, positive_usize, resolve_run, RunSel};
use crate::history::analysis::{analyse, CaseHistory, Settings};
use crate::history::order::{self, Commits, How, Order};
use crate::history::series::{collect, Metric, Series};
use crate::history::{chart, render, within};
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
    /// How the points are ordered: date (the runs' start), revision (the
    /// commit graph of --repo) or version (the server's declared version,
    /// 1.9 before 1.10). Change points and --fail-on-change follow it.
    #[arg(long, value_enum, value_name = "ORDER", default_value = "date")]
    pub order: Order,
    /// A git checkout of the measured project, for --order revision (for
    /// the zoo's own servers: fairbench's checkout).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// One run's own drift instead of runs: each case of RUN (an id or
    /// `latest`) as its per-second series in windows of --window.
    #[arg(long, value_name = "RUN")]
    pub within: Option<RunSel>,
    /// The window of --within [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub window: Option<Duration>,
    /// With --within: only repetition N of each case (numbered from 1, as
    /// `show` numbers them).
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub repetition: Option<usize>,
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

/// `--within`'s window when none is given: a minute, long enough for a
/// window's median to shrug off a slow second, short enough for an hour's
/// soak to give 60 points.
const DEFAULT_WINDOW: Duration = Duration::from_secs(60);

/// The histories to print, and how they were made.
struct Gathered {
    cases: Vec<CaseHistory>,
    order: &'static str,
    within: Option<render::Within>,
    /// The line above the text output that says how points are ordered.
    header: Option<String>,
    warnings: Vec<String>,
    /// What the chart's x axis reads.
    axis: &'static str,
}

/// The flags' combinations and values, before anything is read.
fn check(args: &mut HistoryArgs) -> anyhow::Result<()> {
    if args.json {
        args.format = Format::Json;
    }
    if !(args.min_change.is_finite() && args.min_change >= 0.0) {
        return Err(usage(format!(
            "--min-change {}: expected a percentage ≥ 0",
            args.min_change
        )));
    }
    if args.order == Order::Revision && args.repo.is_none() {
        return Err(usage(
            "--order revision needs --repo DIR: a git checkout of the measured project (fairbench's own for the zoo's servers)",
        ));
    }
    if args.repo.is_some() && args.order != Order::Revision {
        return Err(usage("--repo is read by --order revision only"));
    }
    if args.window.is_some() && args.within.is_none() {
        return Err(usage(
            "--window cuts the run of --within RUN; give --within",
        ));
    }
    if args.repetition.is_some() && args.within.is_none() {
        return Err(usage(
            "--repetition picks a repetition of the run of --within RUN; give --within",
        ));
    }
    if args.within.is_some() && args.order != Order::Date {
        return Err(usage(
            "--order orders runs; --within shows one run's windows in time order",
        ));
    }
    if let Some(r) = &args.reference {
        Pairing::from_stored_suite("", Some(r)).map_err(usage)?;
    }
    for (kind, path) in exports(args) {
        export::check_writable(kind.flag(), path)?;
    }
    if let Some(p) = &args.svg {
        export::check_writable("--svg", p)?;
    }
    Ok(())
}

pub fn run(mut args: HistoryArgs) -> anyhow::Result<i32> {
    check(&mut args)?;
    let how = match (args.order, &args.repo) {
        (Order::Revision, Some(dir)) => How::Revision(Commits::read(dir).map_err(usage)?),
        (Order::Version, _) => How::Version,
        _ => How::Date,
    };
    let store = Store::open_read_only(&args.db)?;
    let gathered = match args.within {
        Some(sel) => within(&args, &store, sel)?,
        None => across(&args, &store, &how)?,
    };
    match gathered {
        Some(g) => output(&args, &store, g),
        None => Ok(0),
    }
}

/// Each selected case across the stored runs, in the order asked; None
/// when the database holds no finished run (a line says so).
fn across(args: &HistoryArgs, store: &Store, how: &How) -> anyhow::Result<Option<Gathered>> {
    let all = collect(store, args.metric, args.reference.as_deref())?;
    if all.is_empty() {
        println!(
            "{}: no finished run, so no history",
            crate::output::terminal::text(&args.db.display().to_string())
        );
        return Ok(None);
    }
    let mut selected: Vec<Series> = all.into_iter().filter(|s| args.selects(&s.key)).collect();
    if selected.is_empty() {
        return Err(usage(
            "no stored case matches --server/--variant/--scenario/--cores/--load (`fairbench history` alone lists every case)",
        ));
    }
    let warnings: Vec<String> = order::apply(&mut selected, how).into_iter().collect();
    for w in &warnings {
        crate::note!("fairbench: {w}");
    }
    let settings = Settings {
        min_change_pct: args.min_change,
    };
    Ok(Some(Gathered {
        cases: selected.into_iter().map(|s| analyse(s, settings)).collect(),
        order: how.order().as_str(),
        within: None,
        header: how.header(),
        warnings,
        axis: match how.order() {
            Order::Date => "run (oldest → newest)",
            Order::Revision => "run (in commit order)",
            Order::Version => "run (by the server's declared version)",
        },
    }))
}

/// Each selected case of one run as windows of its per-second series;
/// None when there is nothing to show (a line says why).
fn within(args: &HistoryArgs, store: &Store, sel: RunSel) -> anyhow::Result<Option<Gathered>> {
    let run = resolve_run(store, sel)?;
    let window = args.window.unwrap_or(DEFAULT_WINDOW);
    let mut cases = within::collect(store, &run, window, args.metric, &|k| args.selects(k))?;
    if let Some(n) = args.repetition {
        cases.retain(|c| usize::try_from(c.repetition).ok() == Some(n));
    }
    if cases.is_empty() {
        if args.has_selector() || args.repetition.is_some() {
            return Err(usage(format!(
                "no finished case of run {} matches --server/--variant/--scenario/--cores/--load/--repetition",
                run.id
            )));
        }
        println!("run {}: no finished case, so no drift to show", run.id);
        return Ok(None);
    }
    if let Some(line) = within::too_short(run.id, &cases, window) {
        if args.format == Format::Text {
            println!("{line}");
            return Ok(None);
        }
        // The document still follows, for a consumer that expects one.
        crate::note!("fairbench: {line}");
    }
    let left_out = cases.iter().map(|c| c.left_out_s).fold(0.0, f64::max);
    let settings = Settings {
        min_change_pct: args.min_change,
    };
    let histories = cases
        .into_iter()
        .filter(|c| !c.series.points.is_empty())
        .map(|c| {
            let mut h = analyse(c.series, settings);
            h.label = format!("{} · repetition {}", h.label, c.repetition);
            h
        })
        .collect();
    let w = humantime::format_duration(window);
    Ok(Some(Gathered {
        cases: histories,
        order: "window",
        within: Some(render::Within {
            run: run.id,
            window_s: window.as_secs_f64(),
        }),
        header: Some(format!(
            "run {}: each case's per-second series in windows of {w} from the start of its measurement, a window's figure the median of its seconds{}",
            run.id,
            if left_out >= 1.0 {
                format!("; the last {left_out:.0} s, shorter than a window, left out")
            } else {
                String::new()
            }
        )),
        warnings: Vec::new(),
        axis: "window (seconds from the start of the measurement)",
    }))
}

fn output(args: &HistoryArgs, store: &Store, g: Gathered) -> anyhow::Result<i32> {
    let cases = &g.cases;
    if args.svg.is_some() && cases.len() != 1 {
        // Within a run each repetition is a series of its own.
        let what = if g.within.is_some() {
            "series (one per case and repetition)"
        } else {
            "cases"
        };
        let repetition = if g.within.is_some() {
            ", --repetition"
        } else {
            ""
        };
        return Err(usage(format!(
            "--svg: {} {what} match; select one (--server, --variant, --scenario, --cores, --load{repetition})",
            cases.len()
        )));
    }
    let db = store.path().display().to_string();
    let meta = render::Meta {
        db: &db,
        min_change_pct: args.min_change,
        order: g.order,
        within: g.within,
        warnings: &g.warnings,
    };
    let header = g.header.map(|h| h + "\n").unwrap_or_default();
    let one = cases.len() == 1 && (args.has_selector() || args.within.is_some());
    let text = match args.format {
        Format::Json => crate::output::terminal::json(&render::json(&meta, cases)?),
        // Its cells went through the visible rule already; the CRLF the
        // format asks for stays.
        Format::Csv => render::csv(cases, g.order)?,
        Format::Text if one => {
            crate::output::terminal::text(&(header + &render::case_table(&cases[0])))
        }
        Format::Text => crate::output::terminal::text(&(header + &render::summary(cases))),
    };
    print!("{text}");
    for (kind, path) in exports(args) {
        let text = match kind {
            Kind::Json => render::json(&meta, cases)?,
            Kind::Csv | Kind::Markdown => render::csv(cases, g.order)?,
        };
        export::write(kind.flag(), path, &text)?;
    }
    if let Some(p) = &args.svg {
        export::write("--svg", p, &chart::svg(&cases[0], g.axis))?;
    }
    let changed: Vec<&CaseHistory> = cases
        .iter()
        .filter(|c| c.newest_regressed() || c.newest_off().is_some())
        .collect();
    if args.fail_on_change && !changed.is_empty() {
        let at = if g.within.is_some() { "window" } else { "run" };
        for c in &changed {
            match c.newest_off() {
                Some(off) => crate::note!(
                    "fairbench: {} at the newest {at} {off} (--fail-on-change)",
                    c.label
                ),
                None => crate::note!(
                    "fairbench: {} changed for the worse at the newest {at} (--fail-on-change)",
                    c.label
                ),
            }
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
