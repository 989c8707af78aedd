//! `fairbench load URL_A --vs URL_B --save`: the before-and-after stored as
//! one run, its cases filed under servers `A` and `B`, repetition by
//! repetition in the order they ran, with `reference = "A"` in the stored
//! suite: `show` and `report` then give B's paired ratios to A (the same
//! statistics), and `compare` pairs two such runs case by case. The URLs
//! are kept in the suite text and each case's load. The servers were not
//! started by fairbench: their CPU and memory are unknown (left empty).

use std::path::Path;

use fairbench_engine::{LoadConfig, Outcome};

use super::adhoc::{label, load_json, url_case, SUITE};
use super::case::load_figures;
use super::metadata;
use super::vs::Pair;
use crate::store::{NewRun, RunLock, Store};

/// Stores `pair`; returns the run's id.
pub fn save_pair(
    db: &Path,
    argv: &[String],
    a: &LoadConfig,
    b: &LoadConfig,
    pair: &Pair,
) -> anyhow::Result<i64> {
    let _lock = RunLock::acquire(db)?;
    let mut store = Store::open(db)?;
    let usable = a.cpus.clone().unwrap_or_default();
    let command = argv.join(" ");
    let s = |v: &str| toml::Value::String(v.to_string());
    let suite_toml = format!(
        "# {}\nname = \"{SUITE}\"\nreference = \"A\"\na = {}\nb = {}\ncommand = {}\n",
        command.replace('\n', " "),
        s(&a.target.url),
        s(&b.target.url),
        s(&command)
    );
    let reps = pair.a.len();
    let run = store.create_run(&NewRun {
        started_at: crate::store::now_rfc3339(),
        suite: SUITE.into(),
        suite_toml,
        git_revision: None,
        host_json: serde_json::to_string(&metadata::host(&usable))?,
        toolchains_json: "{}".into(),
        planned_cases: 2 * reps,
    })?;
    for (r, sides) in pair.order.split(' ').enumerate() {
        for side in sides.chars() {
            let (o, cfg): (&Outcome, &LoadConfig) = match side {
                'A' => (&pair.a[r], a),
                _ => (&pair.b[r], b),
            };
            let load_json = load_json(cfg, o);
            let case = store.append_case(run, |seq| {
                let server = side.to_string();
                url_case(
                    seq,
                    &server,
                    SUITE,
                    label(o),
                    &load_json,
                    r + 1,
                    cfg.protocol,
                )
            })?;
            store.mark_running(case, ("", "", false))?;
            store.record_versions(case, &super::versions::of_url(None))?;
            store.record_done(case, &load_figures(o))?;
        }
    }
    store.set_run_state(run, "done", None)?;
    Ok(run)
}
