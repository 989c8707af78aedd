//! `fairbench load --save`: an ad-hoc load stored as a run of one case, so
//! `show`, `report` and `compare` read it like any suite's. The server was
//! not started by fairbench, so its CPU and memory are unknown (left empty,
//! never zero).

use std::path::Path;

use fairbench_engine::{LoadConfig, LoadModel, Observer, Outcome, SecondSample};
use hdrhistogram::Histogram;

use super::case::load_figures;
use super::metadata;
use crate::report::url_case::StageRow;
use crate::store::{NewRun, PlannedCase, RunLock, SampleRow, Store};

/// The per-second series with each interval's histogram, as stored.
#[derive(Default)]
pub struct SampleLog {
    pub samples: Vec<SampleRow>,
}

impl Observer for SampleLog {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        self.samples.push(SampleRow::of_interval(s, h));
    }
}

pub use crate::report::url_case::ADHOC_SUITE as SUITE;

/// Stores the load as a finished run of one case; returns the run's id.
/// `argv` is the command line, kept with the run as its "suite".
pub fn save(
    db: &Path,
    argv: &[String],
    cfg: &LoadConfig,
    o: &Outcome,
    samples: Vec<SampleRow>,
) -> anyhow::Result<i64> {
    let _lock = RunLock::acquire(db)?;
    let mut store = Store::open(db)?;
    let usable = cfg.cpus.clone().unwrap_or_default();
    let command = argv.join(" ");
    let suite_toml = format!(
        "# {}\nname = \"{SUITE}\"\nurl = {}\ncommand = {}\n",
        command.replace('\n', " "),
        toml::Value::String(cfg.target.url.clone()),
        toml::Value::String(command.clone())
    );
    let run = store.create_run(&NewRun {
        started_at: crate::store::now_rfc3339(),
        suite: SUITE.into(),
        suite_toml,
        git_revision: None,
        host_json: serde_json::to_string(&metadata::host(&usable))?,
        toolchains_json: "{}".into(),
        planned_cases: 1,
    })?;
    let load_json = load_json(cfg, o);
    let case = store.append_case(run, |seq| {
        url_case(
            seq,
            &cfg.target.url,
            SUITE,
            label(o),
            &load_json,
            1,
            cfg.protocol,
        )
    })?;
    let cpus = cfg
        .cpus
        .as_deref()
        .map(crate::args::format_cpus)
        .unwrap_or_default();
    store.mark_running(case, ("", &cpus, false))?;
    store.record_versions(case, &super::versions::of_url(None))?;
    let mut figures = load_figures(o);
    figures.samples = SampleRow::number_finally(samples, o);
    store.record_done(case, &figures)?;
    store.set_run_state(
        run,
        if o.interrupted { "interrupted" } else { "done" },
        o.interrupted
            .then_some("interrupted by a signal (Ctrl-C or SIGTERM)"),
    )?;
    Ok(run)
}

/// One stored case of a load at a URL, from `load --save` or a suite's
/// `[[service]]`: no zoo server, mode or cores (crate::report::url_case
/// reads it back).
pub(crate) fn url_case(
    seq: usize,
    server: &str,
    scenario: &str,
    load_label: String,
    load_json: &serde_json::Value,
    repetition: usize,
    protocol: fairbench_engine::Protocol,
) -> PlannedCase {
    PlannedCase {
        seq,
        server: server.to_string(),
        language: String::new(),
        framework: String::new(),
        mode: "-".into(),
        response: "default".into(),
        variant_params_json: "{}".into(),
        scenario: scenario.into(),
        cores: 0,
        cores_requested: "-".into(),
        load_label,
        load_json: load_json.to_string(),
        sweep: None,
        repetition,
        // What the load spoke (`--http2`), as a zoo case records it.
        protocol: protocol.as_str().into(),
        step: None,
    }
}

/// What a stored URL case keeps of its load: the URL, the method, the
/// model, rate and stages (planned against achieved), for `show`, `report`
/// and `compare`.
pub(crate) fn load_json(cfg: &LoadConfig, o: &Outcome) -> serde_json::Value {
    let mut v = serde_json::json!({
        "model": match o.model { LoadModel::ClosedLoop => "closed", LoadModel::ConstantRate { .. } => "rate" },
        "rate": match o.model { LoadModel::ConstantRate { rps } => Some(rps), LoadModel::ClosedLoop => None },
        "connections": o.connections,
        "threads": o.threads,
        "pipeline": o.pipeline,
        "keepalive": o.keepalive,
        "requests": cfg.requests,
        "warmup_s": o.warmup_s,
        "duration_s": cfg.duration.as_secs_f64(),
        "timeout_s": o.timeout_s,
        "timeout_mode": o.timeout_mode.as_str(),
        "method": cfg.request.method,
        "url": cfg.target.url,
        "expect_status": o.expect_status,
        "status_codes": o.status_codes,
    });
    let stages = stage_rows(o);
    if let Some(m) = v.as_object_mut() {
        if !stages.is_empty() {
            m.insert("stages".into(), serde_json::json!(stages));
        }
        // As a zoo case's (runner::planned_case): the report shows what
        // an `auto` warm-up took.
        if let Some(a) = cfg.warmup_auto {
            m.insert("warmup".into(), "auto".into());
            m.insert("warmup_ceiling_s".into(), a.ceiling.as_secs_f64().into());
        }
    }
    v
}

/// Each stage of a rate profile, planned against achieved.
pub(crate) fn stage_rows(o: &Outcome) -> Vec<StageRow> {
    let mut at = 0.0;
    o.stages
        .iter()
        .zip(&o.stage_plan)
        .enumerate()
        .map(|(i, (t, plan))| {
            let l = t.latency_summary();
            let d = plan.duration.as_secs_f64();
            let row = StageRow {
                name: t.name.clone(),
                start_s: at,
                duration_s: d,
                from_rps: plan.from,
                to_rps: plan.to,
                planned: t.planned,
                requests: t.requests,
                errors: t.errors.total(),
                p50_us: l.p50,
                p99_us: l.p99,
                rps: Some(o.stage_rps(i)),
            };
            at += d;
            row
        })
        .collect()
}

/// As a suite's profiles are labelled, so equal loads pair in `compare`.
pub(crate) fn label(o: &Outcome) -> String {
    let t = format!(" t={}", o.threads);
    let ends = if o.keepalive { "" } else { " no-keepalive" };
    match o.model {
        LoadModel::ClosedLoop => {
            let p = if o.pipeline > 1 {
                format!(" p={}", o.pipeline)
            } else {
                String::new()
            };
            format!("closed c={}{t}{p}{ends}", o.connections)
        }
        LoadModel::ConstantRate { .. } if !o.stage_plan.is_empty() => {
            let names: Vec<String> = o.stage_plan.iter().map(|s| s.label()).collect();
            format!("stages {} c={}{t}{ends}", names.join(","), o.connections)
        }
        LoadModel::ConstantRate { rps } => format!("rate {rps}/s c={}{t}{ends}", o.connections),
    }
}
