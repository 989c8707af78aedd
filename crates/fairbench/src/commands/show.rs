//! `fairbench show RUN`: one stored run's summary table.

use std::path::PathBuf;

use serde::Serialize;

use crate::args::{resolve_run, RunSel};
use crate::output::run_table;
use crate::report::model::{look_level, paired_at};
use crate::report::paired::Paired;
use crate::report::stop::Stop;
use crate::runner::time_spent::TimeSpent;
use crate::store::{CaseRow, RunRow, Store, Versions};

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// The run: its id (see `fairbench runs`), or `latest`.
    #[arg(default_value = "latest")]
    pub run: RunSel,
    /// The results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// text (tables) or json (schema: docs/cli-json.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: crate::args::TextFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Ratios relative to this server (or SERVER/MODE/RESPONSE) instead of
    /// the suite's reference [default: the suite's, else go-nethttp]
    #[arg(long, value_name = "SERVER")]
    pub reference: Option<String>,
}

#[derive(Serialize)]
struct ShowJson<'a> {
    run: &'a RunRow,
    host: serde_json::Value,
    toolchains: serde_json::Value,
    cases: Vec<CaseJson<'a>>,
    paired: &'a Paired,
    /// The original tool's runs on the cases (`run --calibrate`), their
    /// figures parsed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    calibrations: Vec<serde_json::Value>,
    /// Where the run's machine time went (runs stored since schema 12).
    #[serde(skip_serializing_if = "Option::is_none")]
    time_spent: Option<TimeSpent>,
    /// How an adaptive run's repetitions stopped; null for a fixed count.
    stopped: Option<Stop>,
}

#[derive(Serialize)]
struct CaseJson<'a> {
    #[serde(flatten)]
    row: &'a CaseRow,
    load: serde_json::Value,
    params: serde_json::Value,
    parity: serde_json::Value,
    warnings: serde_json::Value,
    /// Its successes by body size; null before schema 14.
    body_sizes: serde_json::Value,
    /// What the case measured, by version (since schema 12).
    #[serde(skip_serializing_if = "Option::is_none")]
    versions: Option<Versions>,
}

pub fn run(args: ShowArgs) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&args.db)?;
    let run = resolve_run(&store, args.run)?;
    let id = run.id;
    let cases = store.cases(id)?;
    let paired = paired_at(
        &run,
        &cases,
        args.reference.as_deref(),
        look_level(&store, id)?,
    )?;
    let spent: Option<TimeSpent> = store
        .time_spent(id)?
        .and_then(|j| serde_json::from_str(&j).ok());
    let mut versions = store.versions(id)?;
    if crate::args::wants_json(args.format, args.json) {
        let parse = |s: &str| serde_json::from_str(s).unwrap_or(serde_json::Value::Null);
        let j = ShowJson {
            run: &run,
            host: parse(&run.host_json),
            toolchains: parse(&run.toolchains_json),
            cases: cases
                .iter()
                .map(|c| CaseJson {
                    row: c,
                    load: parse(&c.load_json),
                    params: parse(&c.variant_params_json),
                    parity: c.parity_json.as_deref().map(parse).unwrap_or_default(),
                    warnings: parse(&c.warnings_json),
                    body_sizes: c.body_sizes_json.as_deref().map(parse).unwrap_or_default(),
                    versions: versions.remove(&c.id),
                })
                .collect(),
            paired: &paired,
            calibrations: store
                .calibrations(id)?
                .into_iter()
                .map(|k| {
                    let mut v = serde_json::to_value(&k).unwrap_or_default();
                    v["figures"] = k.figures_json.as_deref().map(parse).unwrap_or_default();
                    v
                })
                .collect(),
            time_spent: spent,
            stopped: super::report::stop::of(&store, id)?,
        };
        println!(
            "{}",
            crate::report::json_doc::render(crate::report::json_doc::Doc::Show, &j)?
        );
    } else {
        print!(
            "{}",
            crate::output::terminal::text(&run_table::render(&run, &cases, Some(&paired)))
        );
        print!(
            "{}",
            crate::output::terminal::text(&crate::output::calibration_table::render(
                &cases,
                &store.calibrations(id)?
            ))
        );
        if let Some(t) = &spent {
            println!("{}", t.line());
        }
        print_stop(&store, id)?;
        for s in store.sweeps(id)? {
            let proto = crate::report::case_key::protocol_label(&s.protocol);
            // A service's sweep (mode "-", no cores) has its name only.
            let what = match s.mode.as_str() {
                "-" => format!("{}{proto}", s.server),
                _ => format!(
                    "{} {}/{}{proto} {} {}c",
                    s.server, s.mode, s.response, s.scenario, s.cores
                ),
            };
            let line = format!(
                "sweep {what}: {}",
                match (s.knee_rps, s.state.as_str()) {
                    (Some(k), _) => format!(
                        "knee {} req/s (p{} <= {} µs)",
                        crate::units::rate(k),
                        s.slo_quantile * 100.0,
                        s.slo_us
                    ),
                    (None, "done") => "no rate met the objective".into(),
                    _ => format!("failed: {}", s.reason.as_deref().unwrap_or("")),
                }
            );
            println!("{}", crate::output::terminal::text(&line));
        }
    }
    Ok(0)
}

/// How an adaptive run stopped, then each ratio the rule looked at,
/// recomputed at each look's level, as the report and `show --json` give
/// them; nothing for a fixed count.
fn print_stop(store: &Store, id: i64) -> anyhow::Result<()> {
    let stopped = store
        .stopped(id)?
        .and_then(|j| serde_json::from_str::<crate::runner::stopping::Stopped>(&j).ok());
    if let Some(s) = stopped {
        println!("{}", s.run_line());
        if let Some(stop) = super::report::stop::of(store, id)? {
            for r in &stop.ratios {
                println!("  {}", crate::output::terminal::text(&r.line()));
            }
        }
    }
    Ok(())
}
