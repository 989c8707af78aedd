//! Fixture results databases for the report and compare tests, written with
//! the store's own writer API and fully deterministic (no clock, no
//! randomness): the same calls always give the same database contents, so
//! golden outputs can be compared byte for byte.
//!
//! Compiled into the unit tests, and into the library the integration
//! tests use (the `fixture` feature, which the crate's dev-dependency on
//! itself turns on): one copy for both.

#![allow(dead_code)]

use std::path::Path;

use fairbench_engine::{histogram::new_histogram, ErrorCounts, LatencySummary};
use hdrhistogram::Histogram;

use crate::store::{
    encode_histogram, CaseFigures, NewRun, PlannedCase, SampleRow, Store, SweepRow,
};

pub const HOSTILE: &str = "<script>alert(1)</script>\"q'\x07\r\nx";

/// How a run departs from the baseline, for compare tests.
#[derive(Clone, Copy)]
pub enum Flavour {
    Baseline,
    /// go-nethttp 10 % faster everywhere; dart-shelf jit/default static 1 core
    /// 20 % slower; everything else within noise.
    Changed,
}

struct Variant {
    server: &'static str,
    language: &'static str,
    framework: &'static str,
    mode: &'static str,
    response: &'static str,
    /// Closed-loop req/s at 1 core, static.
    base_rps: f64,
    header_bytes: i64,
    cpu_us: f64,
    rss: u64,
}

const VARIANTS: [Variant; 3] = [
    Variant {
        server: "go-nethttp",
        language: "go",
        framework: "net/http",
        mode: "default",
        response: "normalized",
        base_rps: 100_000.0,
        header_bytes: 116,
        cpu_us: 8.5,
        rss: 12 * 1024 * 1024,
    },
    Variant {
        server: "dart-shelf",
        language: "dart",
        framework: "shelf",
        mode: "jit",
        response: "default",
        base_rps: 60_000.0,
        header_bytes: 205,
        cpu_us: 14.25,
        rss: 150 * 1024 * 1024,
    },
    Variant {
        server: "dart-shelf",
        language: "dart",
        framework: "shelf",
        mode: "exe",
        response: "normalized",
        base_rps: 70_000.0,
        header_bytes: 116,
        cpu_us: 12.5,
        rss: 90 * 1024 * 1024,
    },
];

const SCENARIOS: [(&str, f64, i64); 2] = [("static", 1.0, 13), ("dynamic", 0.9, 25)];
const CORES: [i64; 2] = [1, 2];
const REPS: i64 = 3;
const DURATION_S: f64 = 10.0;
const WARMUP_S: i64 = 3;
const CLOSED: &str = "closed c=50 t=1";

/// Repetition noise: −1 %, 0, +1.5 %.
fn noise(rep: i64) -> f64 {
    [0.99, 1.0, 1.015][((rep - 1) % 3) as usize]
}

fn closed_json() -> String {
    r#"{"model":"closed","connections":50,"threads":1,"rate":null,"pipeline":1,"duration_s":10.0,"warmup_s":3.0,"timeout_s":2.0}"#.into()
}

fn rate_json(rate: f64) -> String {
    format!(
        r#"{{"model":"rate","connections":50,"threads":1,"rate":{rate},"pipeline":1,"duration_s":10.0,"warmup_s":3.0,"timeout_s":2.0}}"#
    )
}

/// A latency histogram around `base_us`: a spread body and a thin tail
/// (every 1000th request 20× slower), 20 000 values.
fn latency_hist(base_us: f64) -> Histogram<u64> {
    let mut h = new_histogram();
    for i in 0..20_000u64 {
        let spread = (i * 7_919 % 1_000) as f64 / 1_000.0;
        let mut v = base_us * (0.6 + 0.8 * spread);
        if i % 1_000 == 999 {
            v = base_us * 20.0;
        } else if i % 100 == 99 {
            v = base_us * 4.0;
        }
        h.record(v.round().max(1.0) as u64).unwrap();
    }
    h
}

fn small_hist(base_us: u64) -> Histogram<u64> {
    let mut h = new_histogram();
    for i in 0..100u64 {
        h.record(base_us + i * base_us / 100).unwrap();
    }
    h
}

fn parity_json(v: &Variant, scenario: &str, body: i64) -> String {
    let warn = v.response == "default";
    let extra = if warn {
        r#"{"rule":"extra-headers","grade":"warn","detail":"x-powered-by: Dart with package:shelf"}"#
    } else {
        r#"{"rule":"extra-headers","grade":"pass","detail":""}"#
    };
    format!(
        r#"{{"server":"{s}","mode":"{m}","response":"{r}","variant":"{m}/{r}","scenario":"{scenario}","grade":"{g}","rules":[{{"rule":"status","grade":"pass","detail":"200"}},{{"rule":"body","grade":"pass","detail":""}},{{"rule":"framing","grade":"pass","detail":"content-length"}},{extra}],"row":{{"framing":"content-length","date":"fresh","ipv4":true,"ipv6":true,"header_names":[{names}],"header_bytes":{hb},"body_bytes":{body},"vs_reference":{vs}}}}}"#,
        s = v.server,
        m = v.mode,
        r = v.response,
        g = if warn { "warn" } else { "pass" },
        hb = v.header_bytes,
        vs = v.header_bytes - 116,
        names = if warn {
            r#""content-type","date","content-length","x-frame-options","x-xss-protection","x-content-type-options","x-powered-by""#
        } else {
            r#""Date","Content-Length","Content-Type""#
        },
    )
}

fn figures(
    rps: f64,
    lat_base_us: f64,
    cpu_us: f64,
    rss: u64,
    jit: bool,
    errors_timeout: u64,
) -> CaseFigures {
    let requests = (rps * DURATION_S).round() as u64;
    let latency = latency_hist(lat_base_us);
    let uncorrected = latency_hist(lat_base_us * 0.9);
    let mut samples = Vec::new();
    for second in -WARMUP_S..(DURATION_S as i64) {
        let warm = second < 0;
        let factor = if warm && jit {
            0.4 + 0.2 * (second + WARMUP_S) as f64
        } else if warm {
            0.97
        } else {
            1.0 + 0.01 * ((second % 3) - 1) as f64
        };
        let n = (rps * factor).round() as u64;
        samples.push(SampleRow {
            second,
            phase: if warm { "warmup" } else { "measure" }.into(),
            start_s: (second + WARMUP_S) as f64,
            duration_s: 1.0,
            requests: n,
            errors: 0,
            bytes: n * 150,
            p50_us: lat_base_us as u64,
            p99_us: (lat_base_us * 4.0) as u64,
            interval_hist: Some(encode_histogram(&small_hist(lat_base_us as u64)).unwrap()),
            server_cpu: Some(rps * cpu_us / 1e6),
            server_rss: Some(rss),
            server_threads: Some(8),
        });
    }
    CaseFigures {
        // Every request of the window answered or timed out.
        planned: requests + errors_timeout,
        outcome_requests: requests,
        duration_s: DURATION_S,
        rps,
        rps_stdev: rps * 0.008,
        rps_max: rps * 1.01,
        bytes_read: requests * 150,
        errors: ErrorCounts {
            timeout: errors_timeout,
            ..ErrorCounts::default()
        },
        timeouts_per_million: errors_timeout as f64 * 1e6 / (requests + errors_timeout) as f64,
        latency_summary: LatencySummary::of(&latency),
        unc_p50: uncorrected.value_at_quantile(0.5),
        unc_p99: uncorrected.value_at_quantile(0.99),
        lateness_p99: None,
        generator_cpu_s: 4.0,
        generator_busy: 0.4,
        saturated: false,
        server_cpu_s: Some(cpu_us * requests as f64 / 1e6),
        server_rss_peak: Some(rss),
        server_rss_mean: Some(rss - 1024 * 1024),
        server_threads_max: Some(8),
        server_group_cpu_s: None,
        server_group_memory_peak: None,
        db: None,
        generator_containment: None,
        generator_cpuset: None,
        steal_fraction: None,
        thread_req_sec: None,
        late_answers: 0,
        warnings: Vec::new(),
        answered: latency.clone(),
        latency,
        uncorrected,
        lateness: None,
        samples,
    }
}

fn new_run(store: &mut Store, suite: &str, planned: usize, started: &str) -> i64 {
    store
        .create_run(&NewRun {
            started_at: started.into(),
            suite: suite.into(),
            suite_toml: format!("name = \"{suite}\"\nrepetitions = 3\n"),
            git_revision: Some("abc1234".into()),
            host_json: r#"{"cpu_model":"Fixture CPU @ 3.00GHz","cpus":4,"online_cpus":4,"kernel":"6.1.0-fixture","governor":"performance","memory_bytes":8589934592,"os":"Debian GNU/Linux 12 (bookworm)"}"#.into(),
            toolchains_json: r#"{"go-nethttp":{"toolchain":"go","version":"go1.22.1","framework":"net/http","framework_version":"stdlib"},"dart-shelf":{"toolchain":"dart","version":"3.3.0","framework":"shelf","framework_version":"1.4.1"}}"#.into(),
            planned_cases: planned,
        })
        .unwrap()
}

/// Makes the run's clock-dependent columns fixed.
fn pin_times(store: &Store, run: i64, finished: &str) {
    store
        .conn()
        .execute(
            "UPDATE runs SET finished_at = ?2, fairbench_version = '0.1.0-fixture', pid = NULL WHERE id = ?1",
            rusqlite::params![run, finished],
        )
        .unwrap();
    store
        .conn()
        .execute(
            "UPDATE cases SET started_at = '2025-01-02T03:04:05Z', finished_at = '2025-01-02T03:04:20Z' WHERE run_id = ?1",
            [run],
        )
        .unwrap();
}

/// The standard fixture: 3 server variants × 2 scenarios × 1 and 2 cores ×
/// 3 repetitions (closed loop), one failed repetition, and a rate sweep of
/// two variants. Returns the run id.
pub fn standard_run(store: &mut Store, flavour: Flavour) -> i64 {
    let mut plan = Vec::new();
    let mut seq = 0;
    for v in &VARIANTS {
        for (scenario, _, _) in SCENARIOS {
            for cores in CORES {
                for rep in 1..=REPS {
                    plan.push(PlannedCase {
                        seq,
                        server: v.server.into(),
                        language: v.language.into(),
                        framework: v.framework.into(),
                        mode: v.mode.into(),
                        response: v.response.into(),
                        variant_params_json: "{}".into(),
                        scenario: scenario.into(),
                        cores: cores as usize,
                        cores_requested: if cores == 2 { "all".into() } else { "1".into() },
                        load_label: CLOSED.into(),
                        load_json: closed_json(),
                        sweep: None,
                        repetition: rep as usize,
                        protocol: "http/1.1".into(),
                    });
                    seq += 1;
                }
            }
        }
    }
    let sweep_rates = [1_000.0, 2_000.0, 4_000.0];
    for (vi, key) in [(0usize, "sweep-go"), (2usize, "sweep-dart")] {
        let v = &VARIANTS[vi];
        for rate in sweep_rates {
            plan.push(PlannedCase {
                seq,
                server: v.server.into(),
                language: v.language.into(),
                framework: v.framework.into(),
                mode: v.mode.into(),
                response: v.response.into(),
                variant_params_json: "{}".into(),
                scenario: "static".into(),
                cores: 1,
                cores_requested: "1".into(),
                load_label: format!("rate {rate}/s c=50 t=1"),
                load_json: rate_json(rate),
                sweep: Some(key.into()),
                repetition: 1,
                protocol: "http/1.1".into(),
            });
            seq += 1;
        }
    }
    let started = match flavour {
        Flavour::Baseline => "2025-01-02T03:04:05Z",
        Flavour::Changed => "2025-01-09T03:04:05Z",
    };
    let run = new_run(store, "fixture", plan.len(), started);
    store.insert_planned(run, &plan).unwrap();
    let cases = store.cases(run).unwrap();
    for c in &cases {
        let vi = VARIANTS
            .iter()
            .position(|v| v.server == c.server && v.mode == c.mode && v.response == c.response)
            .unwrap();
        let v = &VARIANTS[vi];
        let (_, scen_factor, body) = SCENARIOS
            .iter()
            .find(|s| s.0 == c.scenario)
            .copied()
            .unwrap();
        store.mark_running(c.id, ("1", "0", false)).unwrap();
        let pj = parity_json(v, &c.scenario, body);
        store
            .record_parity(
                c.id,
                true,
                &pj,
                Some(v.header_bytes as u64),
                Some(body as u64),
            )
            .unwrap();
        if let Some(key) = &c.sweep {
            let rate = serde_json::from_str::<serde_json::Value>(&c.load_json).unwrap()["rate"]
                .as_f64()
                .unwrap_or(0.0);
            // Latency grows with the rate; dart's p99 crosses 10 ms at 4000/s.
            let base = if key == "sweep-go" {
                200.0 * (rate / 1_000.0).powf(1.5)
            } else {
                300.0 * (rate / 1_000.0).powf(2.5)
            };
            let f = figures(rate * 0.999, base, v.cpu_us, v.rss, false, 0);
            store.record_done(c.id, &f).unwrap();
            continue;
        }
        if v.mode == "jit" && c.scenario == "dynamic" && c.cores == 2 && c.repetition == 3 {
            store
                .record_failed(
                    c.id,
                    "server exited during the measurement (status 255)",
                    Some("Unhandled exception:\nSocketException: <boom> \"quoted\"\n#0 main (file:///srv/main.dart:12)"),
                )
                .unwrap();
            continue;
        }
        let mut rps =
            v.base_rps * scen_factor * if c.cores == 2 { 1.8 } else { 1.0 } * noise(c.repetition);
        if let Flavour::Changed = flavour {
            if v.server == "go-nethttp" {
                rps *= 1.10;
            }
            if v.mode == "jit" && c.scenario == "static" && c.cores == 1 {
                rps *= 0.80;
            }
            // Within noise: repetitions in another order.
            if v.mode == "exe" {
                rps = v.base_rps
                    * scen_factor
                    * if c.cores == 2 { 1.8 } else { 1.0 }
                    * noise(4 - c.repetition);
            }
        }
        let lat = 50.0 * 1e6 / rps;
        let timeouts = if v.mode == "jit" { 3 } else { 0 };
        let mut f = figures(rps, lat, v.cpu_us, v.rss, v.mode == "jit", timeouts);
        if v.mode == "jit" {
            f.warnings = vec!["warm-up shorter than the JIT needed".into()];
        }
        store.record_done(c.id, &f).unwrap();
    }
    for (vi, key, knee) in [
        (0usize, "sweep-go", Some(4_000.0)),
        (2usize, "sweep-dart", Some(2_000.0)),
    ] {
        let v = &VARIANTS[vi];
        store
            .record_sweep(
                run,
                &SweepRow {
                    sweep: key.into(),
                    server: v.server.into(),
                    mode: v.mode.into(),
                    response: v.response.into(),
                    scenario: "static".into(),
                    cores: 1,
                    slo_quantile: 0.99,
                    slo_us: 10_000,
                    knee_rps: knee,
                    state: "done".into(),
                    reason: None,
                    protocol: "http/1.1".into(),
                },
            )
            .unwrap();
    }
    store.set_run_state(run, "done", None).unwrap();
    pin_times(store, run, "2025-01-02T04:00:00Z");
    run
}

/// A database at `path` with the baseline run (id 1) and the changed run (id 2).
pub fn standard_db(path: &Path) -> (i64, i64) {
    let mut store = Store::open(path).unwrap();
    let a = standard_run(&mut store, Flavour::Baseline);
    let b = standard_run(&mut store, Flavour::Changed);
    (a, b)
}

/// A run whose every string a server or the database could supply is
/// hostile: markup, quotes, a bell, CR LF. Returns the run id.
pub fn hostile_run(store: &mut Store) -> i64 {
    let server = format!("evil{HOSTILE}");
    let mut plan = Vec::new();
    for (seq, rep) in [(0usize, 1usize), (1, 2)] {
        plan.push(PlannedCase {
            seq,
            server: server.clone(),
            language: format!("lang{HOSTILE}"),
            framework: format!("fw{HOSTILE}"),
            mode: format!("mode{HOSTILE}"),
            response: "default".into(),
            variant_params_json: "{}".into(),
            scenario: format!("static{HOSTILE}"),
            cores: 1,
            cores_requested: "1".into(),
            load_label: format!("closed c=50 {HOSTILE}"),
            load_json: closed_json(),
            sweep: None,
            repetition: rep,
            protocol: "http/1.1".into(),
        });
    }
    let run = store
        .create_run(&NewRun {
            started_at: "2025-01-02T03:04:05Z".into(),
            suite: format!("suite{HOSTILE}"),
            suite_toml: format!("name = \"{HOSTILE}\"\n</pre><script>alert(2)</script>"),
            git_revision: Some(format!("rev{HOSTILE}")),
            host_json:
                serde_json::json!({ "cpu_model": format!("cpu{HOSTILE}"), "kernel": HOSTILE })
                    .to_string(),
            toolchains_json:
                serde_json::json!({ server.clone(): { "toolchain": HOSTILE, "version": HOSTILE } })
                    .to_string(),
            planned_cases: 2,
        })
        .unwrap();
    store.insert_planned(run, &plan).unwrap();
    let cases = store.cases(run).unwrap();
    let parity = serde_json::json!({
        "grade": "fail",
        "rules": [{ "rule": format!("header{HOSTILE}"), "grade": "fail", "detail": format!("got header X-Evil: {HOSTILE}") }],
        "row": { "framing": HOSTILE, "date": "fresh", "ipv4": true, "ipv6": false, "header_names": [format!("X-Evil{HOSTILE}")] },
        "raw": { "response": format!("HTTP/1.1 200 OK\r\nX-Evil: {HOSTILE}\r\n\r\n</pre><script>alert(4)</script>") }
    })
    .to_string();
    store
        .record_parity(cases[0].id, false, &parity, Some(180), Some(40))
        .unwrap();
    let mut f = figures(1_000.0, 500.0, 10.0, 1 << 20, false, 1);
    f.warnings = vec![format!("warning{HOSTILE}")];
    store.record_done(cases[0].id, &f).unwrap();
    store
        .record_failed(
            cases[1].id,
            &format!("reason{HOSTILE}"),
            Some(&format!(
                "log line 1\n{HOSTILE}\n</pre><img src=x onerror=alert(3)>"
            )),
        )
        .unwrap();
    store.set_run_state(run, "done", None).unwrap();
    pin_times(store, run, "2025-01-02T04:00:00Z");
    run
}

/// Machine drift per repetition, common to every server of a repetition.
const DRIFT: [f64; 6] = [1.00, 0.82, 1.10, 0.95, 1.04, 0.88];

/// Each variant's own small noise per repetition (±0.7 %).
const OWN_NOISE: [[f64; 6]; 3] = [
    [1.000, 1.006, 0.995, 1.003, 0.998, 1.001],
    [0.996, 1.002, 1.004, 0.997, 1.005, 0.999],
    [1.004, 0.993, 1.002, 1.006, 0.995, 1.001],
];

/// How a paired run departs from the ideal, for ratio tests.
#[derive(Clone, Copy)]
pub struct PairedShape {
    pub repetitions: usize,
    /// node-http's req/s as a fraction of go-nethttp's.
    pub node: f64,
    /// The A/A twin's req/s as a fraction of the reference's (1 = healthy).
    pub twin: f64,
    /// Every figure of the run multiplied by this (a slower or faster machine).
    pub machine: f64,
}

pub const PAIRED_SUITE: &str = "name = \"aa\"\nservers = [\"go-nethttp\", \"node-http\"]\nresponses = [\"default\", \"normalized\"]\nscenarios = [\"static\"]\nduration = \"3s\"\nreference = \"go-nethttp/native/normalized\"\naa = [\"go-nethttp/native/default\"]\ninterleave = \"case\"\ninterleave_seed = 11\n[[load]]\nmodel = \"closed\"\nconnections = 50\n";

/// A run shaped like the `aa` suite plus node-http: go-nethttp
/// native/normalized (the reference), native/default (its A/A twin) and
/// node-http native/normalized, static, 1 core, closed loop; every
/// repetition scaled by a drift common to all three and a small noise of
/// each variant's own. Returns the run id.
pub fn paired_run(store: &mut Store, shape: PairedShape, started: &str) -> i64 {
    let variants: [(&str, &str, &str, &str, f64, f64); 3] = [
        ("go-nethttp", "go", "net/http", "normalized", 1.0, 8.0),
        ("go-nethttp", "go", "net/http", "default", shape.twin, 8.0),
        (
            "node-http",
            "javascript",
            "node:http",
            "normalized",
            shape.node,
            14.0,
        ),
    ];
    let mut plan = Vec::new();
    for rep in 1..=shape.repetitions {
        for v in &variants {
            plan.push(PlannedCase {
                seq: plan.len(),
                server: v.0.into(),
                language: v.1.into(),
                framework: v.2.into(),
                mode: "native".into(),
                response: v.3.into(),
                variant_params_json: "{}".into(),
                scenario: "static".into(),
                cores: 1,
                cores_requested: "1".into(),
                load_label: "closed c=50".into(),
                load_json: closed_json(),
                sweep: None,
                repetition: rep,
                protocol: "http/1.1".into(),
            });
        }
    }
    let run = store
        .create_run(&NewRun {
            started_at: started.into(),
            suite: "aa".into(),
            suite_toml: PAIRED_SUITE.into(),
            git_revision: None,
            host_json: r#"{"cpus":2}"#.into(),
            toolchains_json: "{}".into(),
            planned_cases: plan.len(),
        })
        .unwrap();
    store.insert_planned(run, &plan).unwrap();
    for c in store.cases(run).unwrap() {
        let vi = variants
            .iter()
            .position(|v| v.0 == c.server && v.3 == c.response)
            .unwrap();
        let v = &variants[vi];
        let r = (c.repetition - 1) as usize;
        let rps = 80_000.0 * v.4 * DRIFT[r % 6] * OWN_NOISE[vi][r % 6] * shape.machine;
        let cpu_us = v.5 / OWN_NOISE[vi][(r + 1) % 6];
        let f = figures(rps, 50.0 * 1e6 / rps, cpu_us, 20 << 20, false, 0);
        store.mark_running(c.id, ("1", "0", false)).unwrap();
        store.record_done(c.id, &f).unwrap();
    }
    store.set_run_state(run, "done", None).unwrap();
    pin_times(store, run, "2025-01-02T04:00:00Z");
    run
}

/// How a database run departs from the baseline, for the database columns'
/// tests.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DbFlavour {
    Baseline,
    /// node-http's `db` scenario: its own CPU per request 30 % lower, the
    /// database's nearly doubled, so server + database is 6 % higher —
    /// work moved into the database, not saved.
    Moved,
}

pub const DB_SUITE: &str = "name = \"stack\"\nservers = [\"go-nethttp\", \"node-http\"]\nscenarios = [\"json\", \"db\", \"fortunes\"]\nreference = \"go-nethttp/native/normalized\"\n[[load]]\nmodel = \"closed\"\nconnections = 50\n";

/// A server of [`db_run`]: name, language, framework, req/s, server
/// CPU-µs per request, database CPU-µs per request, pool, database memory.
pub type DbVariant = (
    &'static str,
    &'static str,
    &'static str,
    f64,
    f64,
    f64,
    usize,
    u64,
);

pub const DB_VARIANTS: [DbVariant; 2] = [
    (
        "go-nethttp",
        "go",
        "net/http",
        20_000.0,
        30.0,
        20.0,
        8,
        64 << 20,
    ),
    (
        "node-http",
        "javascript",
        "node:http",
        9_000.0,
        60.0,
        25.0,
        10,
        80 << 20,
    ),
];

/// A run shaped like the `stack` suite: go-nethttp and node-http
/// native/normalized, scenarios `json` (no database), `db` and `fortunes`
/// (PostgreSQL's figures stored beside the server's), 1 core, closed loop,
/// 3 repetitions interleaved. Every figure is deterministic; the server's
/// and the database's CPU per request move by the same repetition noise.
pub fn db_run(store: &mut Store, flavour: DbFlavour, started: &str) -> i64 {
    const SCENARIOS: [&str; 3] = ["json", "db", "fortunes"];
    let mut plan = Vec::new();
    for rep in 1..=REPS as usize {
        for v in &DB_VARIANTS {
            for scenario in SCENARIOS {
                plan.push(PlannedCase {
                    seq: plan.len(),
                    server: v.0.into(),
                    language: v.1.into(),
                    framework: v.2.into(),
                    mode: "native".into(),
                    response: "normalized".into(),
                    variant_params_json: "{}".into(),
                    scenario: scenario.into(),
                    cores: 1,
                    cores_requested: "1".into(),
                    load_label: CLOSED.into(),
                    load_json: closed_json(),
                    sweep: None,
                    repetition: rep,
                    protocol: "http/1.1".into(),
                });
            }
        }
    }
    let run = store
        .create_run(&NewRun {
            started_at: started.into(),
            suite: "stack".into(),
            suite_toml: DB_SUITE.into(),
            git_revision: None,
            host_json: r#"{"cpu_model":"Fixture CPU @ 3.00GHz","cpus":4}"#.into(),
            toolchains_json: "{}".into(),
            planned_cases: plan.len(),
        })
        .unwrap();
    store.insert_planned(run, &plan).unwrap();
    for c in store.cases(run).unwrap() {
        let v = DB_VARIANTS.iter().find(|v| v.0 == c.server).unwrap();
        let n = noise(c.repetition);
        let (mut server_us, mut db_us) = (v.4, v.5);
        if flavour == DbFlavour::Moved && v.0 == "node-http" && c.scenario == "db" {
            server_us *= 0.7;
            db_us = 48.0;
        }
        let (rps, server_us) = match c.scenario.as_str() {
            // Serialising a small object: no database, less CPU.
            "json" => (v.3 * 3.0, server_us / 3.0),
            _ => (v.3, server_us),
        };
        let rps = rps * n;
        let mut f = figures(rps, 50.0 * 1e6 / rps, server_us * n, 40 << 20, false, 0);
        if c.scenario != "json" {
            f.db = Some(crate::store::DbFigures {
                cpu_s: Some(db_us * n * f.outcome_requests as f64 / 1e6),
                memory_peak: Some(v.7 + (c.repetition as u64) * (1 << 20)),
                cpus: Some("0".into()),
                pool: v.6,
            });
        }
        store.mark_running(c.id, ("1", "0", false)).unwrap();
        store.record_done(c.id, &f).unwrap();
    }
    store.set_run_state(run, "done", None).unwrap();
    pin_times(store, run, "2025-01-02T04:00:00Z");
    run
}
