//! Two runs, case by case: which differences are real.
//!
//! Cases match on server, variant (mode and response), scenario, cores and
//! load label. For each metric (req/s, p99 latency, server CPU per request;
//! for the database scenarios also the database's and server + database)
//! the repetitions of A and of B give a bootstrap 95 % confidence interval of
//! median(B) − median(A) (10,000 resamples, seeded from the case key, so the
//! same databases always give the same verdicts). A difference is
//! significant when the interval excludes zero and both sides have at least
//! two repetitions. The case's verdict follows its primary metric: req/s for
//! closed-loop cases, p99 latency for constant-rate ones (whose req/s is
//! fixed by the schedule). See docs/compare.md.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::report::case_key::CaseKey;
use crate::report::machines::host_label;
use crate::report::model::LoadInfo;
use crate::report::ratio_stats::RatioSummary;
use crate::report::stats::{bootstrap_median_diff, median};
use crate::report::{bound, failing};
use crate::seeded::fnv1a;
use crate::store::{CaseRow, RunRow};

pub const RESAMPLES: usize = 10_000;
pub const LEVEL: f64 = 0.95;
pub const METHOD: &str = "bootstrap percentile 95 % confidence interval of the difference of medians (B − A), 10,000 resamples per metric with a seed derived from the case key; significant when the interval excludes 0 and each run has at least 2 repetitions";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Faster,
    Slower,
    NoSignificantDifference,
    /// A side failed too many of its requests to be compared on speed
    /// (crate::report::failing).
    NotCompared,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::NotCompared => "not compared",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    pub db: String,
    pub id: i64,
    pub suite: String,
    pub started_at: String,
    pub state: String,
    /// The machine the run measured on, as its stored host record names it
    /// ("Xeon … · 8 CPUs"): two runs from two machines side by side say so.
    pub host: String,
}

impl RunRef {
    pub fn of(db: &str, r: &RunRow) -> RunRef {
        RunRef {
            db: db.to_string(),
            id: r.id,
            suite: r.suite.clone(),
            started_at: r.started_at.clone(),
            state: r.state.clone(),
            host: host_label(&r.host_json),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: RunRef,
    pub b: RunRef,
    pub method: &'static str,
    pub resamples: usize,
    pub level: f64,
    pub cases: Vec<CaseDiff>,
    pub only_in_a: Vec<CaseKey>,
    pub only_in_b: Vec<CaseKey>,
    /// `--fail-on-regression` when given.
    pub regression_threshold_pct: Option<f64>,
    pub regressions: usize,
    /// The paired view (compare::paired), when asked for.
    pub pairing: Option<Pairing>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseDiff {
    pub key: CaseKey,
    /// `req/s` or `p99`: what the verdict is about.
    pub primary: &'static str,
    pub rps: Option<MetricDiff>,
    pub p99_us: Option<MetricDiff>,
    pub cpu_us_per_request: Option<MetricDiff>,
    /// The database's CPU per request (the database scenarios), and the
    /// server's and the database's added up per repetition: a server whose
    /// own CPU per request fell because its work moved into the database
    /// shows here. Left out for cases without a database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_cpu_us_per_request: Option<MetricDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cpu_us_per_request: Option<MetricDiff>,
    /// Said when the server's CPU per request is significantly lower in B
    /// but the whole stack's (server + database) is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_note: Option<String>,
    pub verdict: Verdict,
    /// Why there is no verdict, when there cannot be one.
    pub note: Option<String>,
    /// Slower by more than the `--fail-on-regression` threshold.
    pub regression: bool,
    /// The change relative to the reference, when the runs pair.
    pub paired: Option<PairedChange>,
    /// `paired` when the verdict and the regression gate come from the
    /// paired change (runs of URLs whose repetitions pair); left out when
    /// they come from the unpaired medians.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict_from: Option<&'static str>,
    /// Whether A's, B's load generator bounded the case's figures
    /// (crate::report::bound): the paired verdict obeys it too.
    #[serde(skip)]
    pub limited: [bool; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricDiff {
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub median_a: f64,
    pub median_b: f64,
    /// (median B − median A) / median A, in percent (None when A is 0).
    pub change_pct: Option<f64>,
    /// The interval of the difference, as a percentage of median A.
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// The interval in the metric's own unit.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub significant: bool,
    /// `better`, `worse` or `same` (not significant), for this metric.
    pub direction: &'static str,
}

/// Done repetitions of one case key in one run.
struct Reps {
    first_seq: i64,
    load: LoadInfo,
    rps: Vec<f64>,
    p99: Vec<f64>,
    cpu: Vec<f64>,
    db_cpu: Vec<f64>,
    total_cpu: Vec<f64>,
    /// The done repetitions' requests: failed, and planned.
    requests: (u64, u64),
    /// The done repetitions' successes: off the checked body, and all
    /// (crate::report::bodies).
    bodies: (u64, u64),
    /// The body size the check proved, from the first done repetition.
    checked_body: Option<i64>,
    /// A done repetition's figures were its generator's bound
    /// (crate::report::bound).
    limited: bool,
    /// A done repetition had connects fail on the generator's machine:
    /// its failures are the generator's too.
    local: bool,
}

impl Reps {
    /// The share of the done repetitions' requests that failed.
    fn failed(&self) -> f64 {
        failing::share(self.requests.0, self.requests.1)
    }

    /// The share of the done repetitions' successes off the checked body.
    fn off_body(&self) -> f64 {
        failing::share(self.bodies.0, self.bodies.1)
    }
}

fn collect(cases: &[CaseRow]) -> BTreeMap<CaseKey, Reps> {
    let mut out: BTreeMap<CaseKey, Reps> = BTreeMap::new();
    for c in cases {
        let e = out.entry(CaseKey::of(c)).or_insert_with(|| Reps {
            first_seq: c.seq,
            load: LoadInfo::parse(&c.load_json, &c.load_label),
            rps: Vec::new(),
            p99: Vec::new(),
            cpu: Vec::new(),
            db_cpu: Vec::new(),
            total_cpu: Vec::new(),
            requests: (0, 0),
            bodies: (0, 0),
            checked_body: None,
            limited: false,
            local: false,
        });
        if c.state != "done" {
            continue;
        }
        let (failed, planned) = failing::case_counts(c);
        e.requests = (e.requests.0 + failed, e.requests.1 + planned);
        e.checked_body = e.checked_body.or(c.body_bytes);
        e.limited |= c.limited_by_generator();
        e.local |= c.failed_connects_here();
        let (off, answered) = crate::report::bodies::case_counts(c);
        e.bodies = (e.bodies.0 + off, e.bodies.1 + answered);
        if let Some(v) = c.rps {
            e.rps.push(v);
        }
        if let Some(v) = c.lat_p99 {
            e.p99.push(v as f64);
        }
        if let Some(v) = c.server_cpu_us_per_request {
            e.cpu.push(v);
        }
        if let Some(v) = c.db_cpu_us_per_request {
            e.db_cpu.push(v);
        }
        if let Some(v) = c.total_cpu_us_per_request() {
            e.total_cpu.push(v);
        }
    }
    out
}

/// Compares the metric; `higher_is_better` sets what "better" means.
pub fn diff(a: &[f64], b: &[f64], higher_is_better: bool, seed: u64) -> Option<MetricDiff> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (median(a), median(b));
    let pct = |d: f64| (ma != 0.0).then(|| d / ma.abs() * 100.0);
    let interval = if a.len() >= 2 && b.len() >= 2 {
        bootstrap_median_diff(a, b, RESAMPLES, LEVEL, seed)
    } else {
        None
    };
    let significant = interval.is_some_and(|i| i.low > 0.0 || i.high < 0.0);
    let direction = if !significant {
        "same"
    } else if (mb > ma) == higher_is_better {
        "better"
    } else {
        "worse"
    };
    Some(MetricDiff {
        a: a.to_vec(),
        b: b.to_vec(),
        median_a: ma,
        median_b: mb,
        change_pct: pct(mb - ma),
        ci_low_pct: interval.and_then(|i| pct(i.low)),
        ci_high_pct: interval.and_then(|i| pct(i.high)),
        ci_low: interval.map(|i| i.low),
        ci_high: interval.map(|i| i.high),
        significant,
        direction,
    })
}

/// The line a reader must see when B's server CPU per request is
/// significantly lower but the server's and the database's together are not
/// (work moved into the database, or only moved about).
fn moved_into_database(server: &Option<MetricDiff>, total: &Option<MetricDiff>) -> Option<String> {
    let (s, t) = (server.as_ref()?, total.as_ref()?);
    work_moved(
        (s.direction, s.change_pct),
        (t.direction, t.change_pct, t.significant),
    )
}

/// The "work moved" line from the server's change (direction, percent) and
/// the whole stack's (direction, percent, significant), unpaired or paired.
pub fn work_moved(server: (&str, Option<f64>), total: (&str, Option<f64>, bool)) -> Option<String> {
    if server.0 != "better" || total.0 == "better" {
        return None;
    }
    let pct = |p: Option<f64>| {
        p.map(|p| format!("{p:+.1} %"))
            .unwrap_or_else(|| "—".into())
    };
    Some(format!(
        "server CPU per request {} but server + database {} ({}): work moved into the database is not work saved",
        pct(server.1),
        pct(total.1),
        if total.2 {
            "significant"
        } else {
            "no significant change"
        }
    ))
}

/// A case's verdict on its primary metric `m`, why there is none when
/// there cannot be one, and whether it regressed past `fail_pct`. `x` is
/// A's repetitions, `y` B's.
fn case_verdict(
    m: &Option<MetricDiff>,
    x: &Reps,
    y: &Reps,
    closed: bool,
    fail_pct: Option<f64>,
) -> (Verdict, Option<String>, bool) {
    let limited = [x.limited, y.limited];
    if x.local || y.local {
        // The failures are the generator's: its bound is the reason, and
        // no gate can vouch for the case.
        if let (_, Some(why)) = bounded(Verdict::NoSignificantDifference, limited) {
            return (Verdict::NotCompared, Some(why), fail_pct.is_some());
        }
    }
    let (ea, eb) = (x.failed(), y.failed());
    if let Some(why) = failing::not_compared(ea, eb) {
        // B failing more than it may, and more than A did, is a
        // regression whatever its speed.
        let regression = fail_pct.is_some() && eb > failing::FAILING_SHARE && eb > ea;
        return (Verdict::NotCompared, Some(why), regression);
    }
    let (oa, ob) = (x.off_body(), y.off_body());
    if let Some(why) = crate::report::bodies::not_compared_named((oa, "A"), (ob, "B")) {
        // B doing other work than the check proved is a regression too.
        let regression = fail_pct.is_some() && ob > failing::FAILING_SHARE && ob > oa;
        return (Verdict::NotCompared, Some(why), regression);
    }
    let (verdict, note) = match m {
        None => (
            Verdict::NoSignificantDifference,
            Some(format!(
                "no finished repetition in {}",
                if x.rps.is_empty() { "A" } else { "B" }
            )),
        ),
        Some(d) if d.a.len() < 2 || d.b.len() < 2 => (
            Verdict::NoSignificantDifference,
            Some(format!(
                "{} and {} repetitions: at least 2 on each side are needed for a verdict",
                d.a.len(),
                d.b.len()
            )),
        ),
        Some(d) => (
            match d.direction {
                "better" => Verdict::Faster,
                "worse" => Verdict::Slower,
                _ => Verdict::NoSignificantDifference,
            },
            None,
        ),
    };
    let (verdict, note) = match note {
        Some(n) => (verdict, Some(n)),
        None => bounded(verdict, limited),
    };
    let regression = match (fail_pct, m) {
        // Withheld for a generator's bound: no gate can vouch for the case.
        (Some(_), _) if verdict == Verdict::NotCompared => true,
        (Some(limit), Some(d)) if verdict == Verdict::Slower => {
            // Worse by more than `limit` percent of A.
            d.change_pct
                .is_some_and(|p| if closed { -p > limit } else { p > limit })
        }
        _ => false,
    };
    (verdict, note, regression)
}

/// A verdict with a side whose generator bounded its figures: withheld
/// unless it favours that side, then a lower bound (crate::report::bound).
pub(super) fn bounded(verdict: Verdict, limited: [bool; 2]) -> (Verdict, Option<String>) {
    let better = match verdict {
        Verdict::Faster => Some(1),
        Verdict::Slower => Some(0),
        _ => None,
    };
    match bound::not_compared(limited, ["A", "B"], better) {
        Some(why) => (Verdict::NotCompared, Some(why)),
        None => (verdict, bound::at_least(limited, ["A", "B"])),
    }
}

/// The line a reader must see when the check proved answers of other
/// sizes in the two runs (a release that changed its answer): the speeds
/// compared are of different work.
fn other_bodies(x: &Reps, y: &Reps) -> Option<String> {
    match (x.checked_body, y.checked_body) {
        (Some(a), Some(b)) if a != b => Some(format!(
            "the check proved a body of {a} B in A and {b} B in B: the two runs did not do the same work"
        )),
        _ => None,
    }
}

pub fn compare_runs(
    a: RunRef,
    a_cases: &[CaseRow],
    b: RunRef,
    b_cases: &[CaseRow],
    fail_pct: Option<f64>,
) -> Comparison {
    let ra = collect(a_cases);
    let rb = collect(b_cases);
    let mut keys: Vec<(&CaseKey, &Reps)> = ra.iter().filter(|(k, _)| rb.contains_key(*k)).collect();
    keys.sort_by_key(|(_, r)| r.first_seq);
    let mut cases = Vec::new();
    for (key, x) in keys {
        let y = &rb[key];
        let seed = |metric: &str| fnv1a(&format!("{}|{}|{metric}", key.label(), key.cores));
        let rps = diff(&x.rps, &y.rps, true, seed("rps"));
        let p99 = diff(&x.p99, &y.p99, false, seed("p99"));
        let cpu = diff(&x.cpu, &y.cpu, false, seed("cpu"));
        let db_cpu = diff(&x.db_cpu, &y.db_cpu, false, seed("db_cpu"));
        let total_cpu = diff(&x.total_cpu, &y.total_cpu, false, seed("total_cpu"));
        let db_note = moved_into_database(&cpu, &total_cpu);
        let closed = x.load.is_closed();
        let (primary, m) = if closed {
            ("req/s", &rps)
        } else {
            ("p99", &p99)
        };
        let (verdict, mut note, regression) = case_verdict(m, x, y, closed, fail_pct);
        if let Some(other) = other_bodies(x, y) {
            note = Some(match note {
                Some(n) => format!("{n}; {other}"),
                None => other,
            });
        }
        cases.push(CaseDiff {
            key: key.clone(),
            primary,
            rps,
            p99_us: p99,
            cpu_us_per_request: cpu,
            db_cpu_us_per_request: db_cpu,
            total_cpu_us_per_request: total_cpu,
            db_note,
            verdict,
            note,
            regression,
            paired: None,
            verdict_from: None,
            limited: [x.limited, y.limited],
        });
    }
    let only = |x: &BTreeMap<CaseKey, Reps>, y: &BTreeMap<CaseKey, Reps>| {
        let mut v: Vec<(&CaseKey, i64)> = x
            .iter()
            .filter(|(k, _)| !y.contains_key(*k))
            .map(|(k, r)| (k, r.first_seq))
            .collect();
        v.sort_by_key(|(_, s)| *s);
        v.into_iter().map(|(k, _)| k.clone()).collect::<Vec<_>>()
    };
    let regressions = cases.iter().filter(|c| c.regression).count();
    Comparison {
        only_in_a: only(&ra, &rb),
        only_in_b: only(&rb, &ra),
        a,
        b,
        method: METHOD,
        resamples: RESAMPLES,
        level: LEVEL,
        cases,
        regression_threshold_pct: fail_pct,
        regressions,
        pairing: None,
    }
}

// The paired view's figures (computed in paired.rs), here with the
// comparison that holds them.

/// Whether compare could pair the runs, and on what.
#[derive(Debug, Clone, Serialize)]
pub struct Pairing {
    pub reference: String,
    pub paired: bool,
    /// Why not, when not.
    pub reason: Option<String>,
    pub method: &'static str,
}

/// One case's change relative to the reference.
#[derive(Debug, Clone, Serialize)]
pub struct PairedChange {
    /// The reference variant of the case's context (the same in both runs).
    pub reference: String,
    /// This case is the reference: its ratios are 1 by definition.
    pub is_reference: bool,
    pub rps: Option<RatioChange>,
    pub p99_us: Option<RatioChange>,
    pub cpu_us_per_request: Option<RatioChange>,
    /// The server's and the database's CPU per request added up, relative
    /// to the reference's (the database scenarios); left out without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cpu_us_per_request: Option<RatioChange>,
    pub note: Option<String>,
    /// Said when the server's CPU per request fell relative to the
    /// reference's but the server's and the database's together did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RatioChange {
    /// The case ÷ the reference in A and in B (geometric means).
    pub ratio_a: f64,
    pub ratio_b: f64,
    /// B's ratio ÷ A's, repetition by repetition, summarised.
    pub change: RatioSummary,
    pub repetitions: Vec<i64>,
    /// (change − 1) in percent, and its interval.
    pub change_pct: f64,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub significant: bool,
    /// `better`, `worse` or `same`.
    pub direction: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_changes_are_significant_noise_is_not() {
        let a = [100.0, 101.0, 99.0];
        let faster = diff(&a, &[120.0, 121.0, 119.0], true, 1).unwrap();
        assert!(faster.significant);
        assert_eq!(faster.direction, "better");
        assert!((faster.change_pct.unwrap() - 20.0).abs() < 1e-9);
        let noise = diff(&a, &[100.5, 98.5, 101.5], true, 1).unwrap();
        assert!(!noise.significant);
        assert_eq!(noise.direction, "same");
        let slower_latency =
            diff(&[500.0, 510.0, 490.0], &[800.0, 790.0, 810.0], false, 1).unwrap();
        assert_eq!(slower_latency.direction, "worse");
        let single = diff(&[100.0], &[200.0], true, 1).unwrap();
        assert!(!single.significant, "one repetition cannot be significant");
        assert!(single.ci_low.is_none());
    }

    /// A side whose generator bounded its figures is at least as fast as
    /// measured: only "it was faster" survives, as a lower bound.
    #[test]
    fn a_bounded_side_is_only_ever_found_faster() {
        let (v, note) = bounded(Verdict::Slower, [false, true]);
        assert_eq!(v, Verdict::NotCompared);
        assert!(note.unwrap().contains("the load generator limited B "));
        let (v, _) = bounded(Verdict::NoSignificantDifference, [true, false]);
        assert_eq!(v, Verdict::NotCompared);
        let (v, note) = bounded(Verdict::Faster, [false, true]);
        assert_eq!(v, Verdict::Faster);
        assert_eq!(
            note.as_deref(),
            Some("at least: B's load generator was limited")
        );
        assert_eq!(
            bounded(Verdict::Slower, [false, false]),
            (Verdict::Slower, None)
        );
    }

    /// Requests whose connects failed on the generator's own machine are
    /// its failures: the case is withheld for its bound, not charged
    /// with failing, and still no gate vouches for it.
    #[test]
    fn failures_on_the_generators_machine_are_its_bound() {
        let reps = |failed: i64, local: i64| {
            let rows: Vec<CaseRow> = (1..=2)
                .map(|repetition| CaseRow {
                    state: "done".into(),
                    repetition,
                    rps: Some(100.0),
                    requests: Some(100 - failed),
                    planned: Some(100),
                    err_connect: Some(failed),
                    generator_limited: Some(local > 0),
                    connect_local: Some(local),
                    ..Default::default()
                })
                .collect();
            collect(&rows).into_values().next().unwrap()
        };
        let (a, b) = (reps(0, 0), reps(40, 40));
        let (v, note, gated) = case_verdict(&None, &a, &b, true, Some(10.0));
        assert_eq!((v, gated), (Verdict::NotCompared, true));
        let note = note.unwrap();
        assert!(
            note.starts_with("not compared: the load generator limited B "),
            "{note}"
        );
        // Failures the server caused are the server's.
        let (_, note, _) = case_verdict(&None, &a, &reps(40, 0), true, Some(10.0));
        assert!(note.unwrap().contains("B failed over 1 %"));
    }
}
