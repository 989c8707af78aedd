//! Paired ratios within one run: for every case, per repetition, its figure
//! divided by the reference's figure from the same repetition, in the same
//! scenario, cores and load (they differ only in server or variant).
//! Because repetitions are the outer loop, both halves of a ratio ran
//! minutes apart under the same conditions of the machine; the ratio is far
//! steadier than either figure (docs/report.md, "Paired ratios").
//!
//! The reference variant of a context is the reference server's variant
//! there — the one `--reference`/the suite names, else its `normalized`
//! variant, else its first — never one of its A/A twins. The A/A twins'
//! ratios say how far this run's machine moved identical code: the run's
//! noise floor.

use std::collections::BTreeMap;

use serde::Serialize;

use super::case_key::CaseKey;
use super::ratio_stats::{RatioSummary, LEVEL};
use super::{bodies, bound, failing};
use crate::store::CaseRow;
use crate::suite::pairing::Pairing;

pub const METHOD: &str = "per repetition, the case's figure divided by the reference's in the same repetition, scenario, cores and load; summarised by the geometric mean with a 95 % Student t interval on the log ratios (exact when the log ratios are independent and normal; with 2 repetitions t = 12.7, so intervals are wide; 1 repetition: no interval)";

/// What a row is to the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The reference itself: its ratios are 1 by definition.
    Reference,
    /// Runs the reference's code: its ratio should contain 1.
    Aa,
    Compared,
}

/// One metric's ratios, with the repetitions they came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    #[serde(flatten)]
    pub summary: RatioSummary,
    pub repetitions: Vec<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RatioRow {
    pub key: CaseKey,
    /// The reference variant of this row's context.
    pub reference: CaseKey,
    pub role: Role,
    /// Higher is better.
    pub rps: Option<Ratio>,
    /// Lower is better.
    pub cpu_us_per_request: Option<Ratio>,
    /// The server's and the database's CPU per request added up (the
    /// database scenarios); lower is better. Left out without a database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cpu_us_per_request: Option<Ratio>,
    /// Lower is better.
    pub p99_us: Option<Ratio>,
    /// Why some repetitions did not pair, or none did; and why the row is
    /// not compared on speed, when it is not (`failed`).
    pub note: Option<String>,
    /// Set when this case or its reference failed over 1 % of its
    /// requests, or answered over 1 % of its successes with another body
    /// than the check proved, or had its figures bounded by its load
    /// generator: the ratios are shown but no verdict is drawn from them
    /// (crate::report::failing, crate::report::bodies,
    /// crate::report::bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl RatioRow {
    /// The metric a reader should look at first: req/s for closed loop,
    /// p99 for constant rate (whose req/s the schedule sets).
    pub fn primary(&self) -> (&'static str, Option<&Ratio>) {
        if self.key.load.starts_with("closed") {
            ("req/s", self.rps.as_ref())
        } else {
            ("p99", self.p99_us.as_ref())
        }
    }
}

/// The A/A check: the reference's twins, their req/s ratios, and the
/// noise floor they imply.
#[derive(Debug, Clone, Serialize)]
pub struct AaCheck {
    /// Every twin's interval contains 1; None when some twin has no interval.
    pub passed: Option<bool>,
    /// The farthest any twin's req/s interval reaches from 1, in percent.
    pub noise_floor_pct: Option<f64>,
    /// One line for the top of a report.
    pub headline: String,
    /// Set when the check failed: the headline is a warning.
    pub warning: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Paired {
    /// As asked: `go-nethttp` or `go-nethttp/native/normalized`.
    pub reference: String,
    /// `--reference`, `suite` or `default`.
    pub reference_from: &'static str,
    pub level: f64,
    pub method: &'static str,
    /// One per case key (sweep steps excepted), in plan order.
    pub rows: Vec<RatioRow>,
    /// Present when the suite names A/A variants.
    pub aa: Option<AaCheck>,
    /// Contexts without a reference, and such.
    pub notes: Vec<String>,
}

impl Paired {
    pub fn row(&self, key: &CaseKey) -> Option<&RatioRow> {
        self.rows.iter().find(|r| &r.key == key)
    }

    /// The notes as sentences to follow the method, each escaped by `esc`.
    pub fn notes_text(&self, esc: impl Fn(&str) -> String) -> String {
        self.notes.iter().map(|n| format!(" {}.", esc(n))).collect()
    }
}

/// Done repetitions of one case key: repetition → row.
struct Reps<'a> {
    first_seq: i64,
    by_rep: BTreeMap<i64, &'a CaseRow>,
}

/// The per-repetition values of one metric for cases of one key.
fn values(r: &Reps, f: fn(&CaseRow) -> Option<f64>) -> BTreeMap<i64, f64> {
    r.by_rep
        .iter()
        .filter_map(|(rep, c)| {
            f(c).filter(|v| v.is_finite() && *v > 0.0)
                .map(|v| (*rep, v))
        })
        .collect()
}

/// The ratios x/y over the repetitions both have, at the usual level.
pub fn pair(x: &BTreeMap<i64, f64>, y: &BTreeMap<i64, f64>) -> Option<Ratio> {
    pair_at(x, y, LEVEL)
}

fn pair_at(x: &BTreeMap<i64, f64>, y: &BTreeMap<i64, f64>, level: f64) -> Option<Ratio> {
    let reps: Vec<i64> = x.keys().filter(|r| y.contains_key(r)).copied().collect();
    let ratios: Vec<f64> = reps.iter().map(|r| x[r] / y[r]).collect();
    RatioSummary::of(&ratios, level).map(|summary| Ratio {
        summary,
        repetitions: reps,
    })
}

/// One metric of every finished case (sweep steps left out), by case key
/// and repetition: the values [`build`] pairs.
pub fn by_key(
    cases: &[CaseRow],
    f: fn(&CaseRow) -> Option<f64>,
) -> BTreeMap<CaseKey, BTreeMap<i64, f64>> {
    let mut reps: BTreeMap<CaseKey, Reps> = BTreeMap::new();
    for c in cases
        .iter()
        .filter(|c| c.sweep.is_none() && c.state == "done")
    {
        reps.entry(CaseKey::of(c))
            .or_insert_with(|| Reps {
                first_seq: c.seq,
                by_rep: BTreeMap::new(),
            })
            .by_rep
            .insert(c.repetition, c);
    }
    reps.iter()
        .map(|(k, r)| (k.clone(), values(r, f)))
        .collect()
}

pub const RPS: fn(&CaseRow) -> Option<f64> = |c| c.rps;
pub const CPU: fn(&CaseRow) -> Option<f64> = |c| c.server_cpu_us_per_request;
pub const P99: fn(&CaseRow) -> Option<f64> = |c| c.lat_p99.map(|v| v as f64);
pub const TOTAL_CPU: fn(&CaseRow) -> Option<f64> = CaseRow::total_cpu_us_per_request;

/// The context a case's ratio is taken in: what the key holds but the variant.
/// A case over HTTP/2 is paired with the reference over the same protocol,
/// a ladder's rung with the reference at the same rung. A URL case is not:
/// its protocol is part of what it names (`load --vs-protocol`, a service's
/// `http3`), so B over h3 is compared with A over h2.
fn context(k: &CaseKey) -> (String, i64, String) {
    let protocol = if k.is_url() {
        String::new()
    } else {
        crate::report::case_key::protocol_label(&k.protocol)
    };
    (
        k.scenario.clone(),
        k.cores,
        format!(
            "{}{}{}",
            k.load,
            protocol,
            if k.step.is_empty() {
                String::new()
            } else {
                format!(" · step {}", k.step)
            }
        ),
    )
}

/// Chooses, for every context of `keys`, the reference variant.
pub fn reference_keys(
    keys: &[CaseKey],
    pairing: &Pairing,
) -> BTreeMap<(String, i64, String), CaseKey> {
    let mut out: BTreeMap<(String, i64, String), CaseKey> = BTreeMap::new();
    for k in keys {
        let eligible = pairing.reference.matches(&k.server, &k.mode, &k.response)
            && !pairing.is_aa(&k.server, &k.mode, &k.response);
        if !eligible {
            continue;
        }
        match out.get(&context(k)) {
            // Keep the first, unless this one is `normalized` and it is not.
            Some(have) if have.response == "normalized" || k.response != "normalized" => {}
            _ => {
                out.insert(context(k), k.clone());
            }
        }
    }
    out
}

/// The paired ratios of one run's cases (sweep steps are left out: their
/// rates are chosen per server, so no two share a context).
pub fn build(cases: &[CaseRow], pairing: &Pairing) -> Paired {
    build_at(cases, pairing, LEVEL)
}

/// As [`build`], every interval at `level`: a run whose repetitions
/// stopped when the data said so shows them at the level of each look,
/// the only one at which its stated coverage holds (docs/suites.md,
/// "Repetitions until a precision").
pub fn build_at(cases: &[CaseRow], pairing: &Pairing, level: f64) -> Paired {
    let mut reps: BTreeMap<CaseKey, Reps> = BTreeMap::new();
    for c in cases.iter().filter(|c| c.sweep.is_none()) {
        let e = reps.entry(CaseKey::of(c)).or_insert_with(|| Reps {
            first_seq: c.seq,
            by_rep: BTreeMap::new(),
        });
        if c.state == "done" {
            e.by_rep.insert(c.repetition, c);
        }
    }
    let mut keys: Vec<CaseKey> = reps.keys().cloned().collect();
    keys.sort_by_key(|k| reps[k].first_seq);
    let refs = reference_keys(&keys, pairing);

    let mut notes = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for k in &keys {
        let Some(rk) = refs.get(&context(k)) else {
            let ctx = k.context();
            if !missing.contains(&ctx) {
                notes.push(format!(
                    "{ctx}: no {} case, so no ratios",
                    pairing.reference.label()
                ));
                missing.push(ctx);
            }
            continue;
        };
        let role = if k == rk {
            Role::Reference
        } else if pairing.is_aa(&k.server, &k.mode, &k.response) {
            Role::Aa
        } else {
            Role::Compared
        };
        let (x, y) = (&reps[k], &reps[rk]);
        let mut row = RatioRow {
            key: k.clone(),
            reference: rk.clone(),
            role,
            rps: None,
            cpu_us_per_request: None,
            total_cpu_us_per_request: None,
            p99_us: None,
            note: None,
            failed: None,
        };
        if role != Role::Reference {
            row.rps = pair_at(&values(x, RPS), &values(y, RPS), level);
            row.cpu_us_per_request = pair_at(&values(x, CPU), &values(y, CPU), level);
            row.total_cpu_us_per_request =
                pair_at(&values(x, TOTAL_CPU), &values(y, TOTAL_CPU), level);
            row.p99_us = pair_at(&values(x, P99), &values(y, P99), level);
            let (ry, rx) = (y.by_rep.values().copied(), x.by_rep.values().copied());
            let withheld = failing::not_compared_named(
                (failing::case_share(ry.clone()), "the reference"),
                (failing::case_share(rx.clone()), "this case"),
            )
            .or_else(|| {
                bodies::not_compared_named(
                    (bodies::case_share(ry.clone()), "the reference"),
                    (bodies::case_share(rx.clone()), "this case"),
                )
            });
            let local = bound::connects_failed_here(ry.clone().chain(rx.clone()));
            let bounded = bound::cases_not_compared(ry, rx);
            row.failed = bound::first_reason(bounded, withheld, local);
            row.note = match (row.failed.clone(), unpaired_note(x, y)) {
                (Some(f), Some(n)) => Some(format!("{f}; {n}")),
                (f, n) => f.or(n),
            };
        }
        rows.push(row);
    }
    let aa = (!pairing.aa.is_empty()).then(|| aa_check(&rows, pairing));
    Paired {
        reference: pairing.reference.label(),
        reference_from: pairing.reference_from,
        level,
        method: METHOD,
        rows,
        aa,
        notes,
    }
}

/// Why some repetitions of a case (`x`) and its reference (`y`) did not
/// pair, or none did.
fn unpaired_note(x: &Reps, y: &Reps) -> Option<String> {
    let unpaired: Vec<String> = x
        .by_rep
        .keys()
        .chain(y.by_rep.keys())
        .filter(|r| !(x.by_rep.contains_key(r) && y.by_rep.contains_key(r)))
        .map(|r| r.to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if x.by_rep.is_empty() || y.by_rep.is_empty() {
        Some(format!(
            "no finished repetition of {}",
            if x.by_rep.is_empty() {
                "this case"
            } else {
                "the reference"
            }
        ))
    } else if !unpaired.is_empty() {
        Some(format!(
            "repetition {} did not finish for both this case and the reference, so it is left out",
            unpaired.join(", ")
        ))
    } else {
        None
    }
}

fn aa_check(rows: &[RatioRow], pairing: &Pairing) -> AaCheck {
    let twins: Vec<&RatioRow> = rows.iter().filter(|r| r.role == Role::Aa).collect();
    let names: Vec<String> = pairing.aa.iter().map(|a| a.label()).collect();
    if twins.is_empty() {
        return AaCheck {
            passed: None,
            noise_floor_pct: None,
            headline: format!(
                "A/A check: {} has no case beside {} in this run, so this run's noise floor is unknown.",
                names.join(", "),
                pairing.reference.label()
            ),
            warning: true,
        };
    }
    let describe = |r: &RatioRow| {
        format!(
            "{} vs {} ({})",
            r.key.variant_label(),
            r.reference.variant_label(),
            r.key.context()
        )
    };
    let mut reach: Option<f64> = None;
    let mut failed = Vec::new();
    let mut no_interval = Vec::new();
    for r in &twins {
        match r
            .rps
            .as_ref()
            .and_then(|q| q.summary.reach_pct().map(|p| (q, p)))
        {
            Some((q, p)) => {
                reach = Some(reach.map_or(p, |m: f64| m.max(p)));
                if q.summary.contains(1.0) == Some(false) {
                    failed.push(format!("{}: {}", describe(r), q.summary.text()));
                }
            }
            None => no_interval.push(describe(r)),
        }
    }
    let widest = twins
        .iter()
        .filter_map(|r| r.rps.as_ref().map(|q| (r, q)))
        .max_by(|a, b| {
            let p = |q: &Ratio| q.summary.reach_pct().unwrap_or(-1.0);
            p(a.1).total_cmp(&p(b.1))
        });
    let floor = reach.map(|p| format!("±{} %", pct(p)));
    if !failed.is_empty() {
        return AaCheck {
            passed: Some(false),
            noise_floor_pct: reach,
            headline: format!(
                "A/A CHECK FAILED: identical code measured differently — {}. The machine moved between the twins, not the servers: in this run no difference smaller than {} means anything, and larger ones deserve a second run.",
                failed.join("; "),
                floor.unwrap_or_else(|| "the twins' gap".into())
            ),
            warning: true,
        };
    }
    if !no_interval.is_empty() {
        return AaCheck {
            passed: None,
            noise_floor_pct: reach,
            headline: format!(
                "A/A check: {} has fewer than 2 paired repetitions, so no interval and no noise floor (run 2 or more repetitions).",
                no_interval.join("; ")
            ),
            warning: true,
        };
    }
    let (r, q) = widest.expect("every twin has an interval here");
    AaCheck {
        passed: Some(true),
        noise_floor_pct: reach,
        headline: format!(
            "A/A check passed: {} req/s ratio {} ({} % interval, {} repetitions) contains 1.00. This run can tell apart differences larger than {}.",
            describe(r),
            q.summary.text(),
            pct(q.summary.level * 100.0),
            q.summary.n,
            floor.expect("an interval")
        ),
        warning: false,
    }
}

/// A percentage for prose: one decimal below 10, none above.
fn pct(p: f64) -> String {
    if p < 10.0 {
        format!("{p:.1}")
    } else {
        format!("{p:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::pairing::VariantSpec;

    fn case(server: &str, response: &str, rep: i64, rps: f64, seq: i64) -> CaseRow {
        CaseRow {
            seq,
            server: server.into(),
            mode: "native".into(),
            response: response.into(),
            scenario: "static".into(),
            cores: 1,
            load_label: "closed c=50".into(),
            repetition: rep,
            state: "done".into(),
            rps: Some(rps),
            server_cpu_us_per_request: Some(1e6 / rps),
            lat_p99: Some((5e7 / rps) as i64),
            ..CaseRow::default()
        }
    }

    fn pairing(aa: &[&str]) -> Pairing {
        Pairing {
            reference: VariantSpec::parse("go").unwrap(),
            reference_from: "default",
            aa: aa.iter().map(|a| VariantSpec::parse(a).unwrap()).collect(),
        }
    }

    /// A case that failed over 1 % of its requests keeps its ratios, and
    /// says it is not compared; one within it does not.
    #[test]
    fn a_case_that_failed_its_requests_is_marked_not_compared() {
        let mut cases = Vec::new();
        for rep in 1..=3 {
            cases.push(case("go", "normalized", rep, 1000.0, rep * 10));
            let mut fast = case("node", "normalized", rep, 2000.0, rep * 10 + 1);
            (fast.planned, fast.requests, fast.err_status) = (Some(2000), Some(2000), Some(1000));
            cases.push(fast);
            let mut fine = case("hyper", "normalized", rep, 1000.0, rep * 10 + 2);
            (fine.planned, fine.err_timeout) = (Some(1000), Some(10));
            cases.push(fine);
        }
        let p = build(&cases, &pairing(&[]));
        let node = p.rows.iter().find(|r| r.key.server == "node").unwrap();
        assert!((node.rps.as_ref().unwrap().summary.geomean - 2.0).abs() < 1e-9);
        let f = node.failed.as_deref().unwrap();
        assert_eq!(
            f,
            "not compared: this case failed over 1 % of its requests (the reference 0.00 %, this case 50.0 %)"
        );
        assert!(node.note.as_deref().unwrap().starts_with(f));
        let hyper = p.rows.iter().find(|r| r.key.server == "hyper").unwrap();
        assert_eq!(hyper.failed, None, "1.00 % is within the share");
    }

    /// A case whose successes carried another body than the check proved
    /// keeps its ratios, and says it is not compared.
    #[test]
    fn a_case_that_answered_other_bodies_is_marked_not_compared() {
        let sizes = r#"{"counts":{"12":500,"13":500},"other":0,"min":12,"max":13}"#;
        let mut cases = Vec::new();
        for rep in 1..=3 {
            cases.push(case("go", "normalized", rep, 1000.0, rep * 10));
            let mut odd = case("node", "normalized", rep, 1500.0, rep * 10 + 1);
            (odd.body_sizes_json, odd.body_unlike) = (Some(sizes.into()), Some(500));
            cases.push(odd);
        }
        let p = build(&cases, &pairing(&[]));
        let node = p.rows.iter().find(|r| r.key.server == "node").unwrap();
        assert!((node.rps.as_ref().unwrap().summary.geomean - 1.5).abs() < 1e-9);
        assert_eq!(
            node.failed.as_deref(),
            Some("not compared: this case answered over 1 % of its successes with another body than the check proved (or a short one) (the reference 0.00 %, this case 50.0 %)")
        );
    }

    /// A case whose generator was saturated, or sent a constant rate late,
    /// in one repetition bounds its server's figures: its ratios are kept,
    /// and no verdict or claim is drawn from them.
    #[test]
    fn a_case_bounded_by_its_generator_is_marked_not_compared() {
        let mut cases = Vec::new();
        for rep in 1..=3 {
            cases.push(case("go", "normalized", rep, 1000.0, rep * 10));
            let mut bounded = case("node", "normalized", rep, 500.0, rep * 10 + 1);
            bounded.saturated = Some(rep == 2);
            let mut late = case("hyper", "normalized", rep, 1000.0, rep * 10 + 2);
            late.lateness_p99 = Some(1_000 + i64::from(rep == 3));
            let mut fine = case("rust", "normalized", rep, 1000.0, rep * 10 + 3);
            (fine.saturated, fine.lateness_p99) = (Some(false), Some(1_000));
            cases.extend([bounded, late, fine]);
        }
        let p = build(&cases, &pairing(&[]));
        let row = |s: &str| p.rows.iter().find(|r| r.key.server == s).unwrap();
        assert!((row("node").rps.as_ref().unwrap().summary.geomean - 0.5).abs() < 1e-9);
        for s in ["node", "hyper"] {
            let f = row(s).failed.clone().unwrap_or_default();
            assert!(
                f.starts_with("not compared: the load generator limited this case "),
                "{s}: {f}"
            );
        }
        assert_eq!(row("rust").failed, None);
    }

    /// Machine drift of ±20 % between repetitions hits every server alike;
    /// the paired ratio sees none of it.
    #[test]
    fn drift_cancels_in_the_ratio() {
        let drift = [1.0, 0.8, 1.2, 0.9];
        let mut cases = Vec::new();
        let mut seq = 0;
        for (i, d) in drift.iter().enumerate() {
            let rep = i as i64 + 1;
            for (server, response, base) in [
                ("go", "default", 100_000.0),
                ("go", "normalized", 100_000.0),
                ("node", "normalized", 50_000.0),
            ] {
                cases.push(case(server, response, rep, base * d, seq));
                seq += 1;
            }
        }
        let p = build(&cases, &pairing(&["go/native/default"]));
        assert_eq!(p.rows.len(), 3);
        let by = |s: &str, r: &str| {
            p.rows
                .iter()
                .find(|x| x.key.server == s && x.key.response == r)
                .unwrap()
        };
        let go = by("go", "normalized");
        assert_eq!(
            go.role,
            Role::Reference,
            "normalized is preferred as the reference"
        );
        assert!(go.rps.is_none());
        let node = by("node", "normalized");
        assert_eq!(node.role, Role::Compared);
        let q = node.rps.as_ref().unwrap();
        assert_eq!(q.repetitions, [1, 2, 3, 4]);
        assert!((q.summary.geomean - 0.5).abs() < 1e-12);
        assert!((q.summary.high.unwrap() - q.summary.low.unwrap()).abs() < 1e-9);
        // CPU per request doubles, p99 doubles.
        assert!((node.cpu_us_per_request.as_ref().unwrap().summary.geomean - 2.0).abs() < 1e-9);
        assert!((node.p99_us.as_ref().unwrap().summary.geomean - 2.0).abs() < 5e-3);
        let twin = by("go", "default");
        assert_eq!(twin.role, Role::Aa);
        let aa = p.aa.as_ref().unwrap();
        assert_eq!(aa.passed, Some(true));
        assert!(aa.noise_floor_pct.unwrap() < 1e-6);
        assert!(
            aa.headline
                .contains("can tell apart differences larger than ±0.0 %"),
            "{}",
            aa.headline
        );
        assert!(!aa.warning);
        assert_eq!(q.summary.text(), "0.50× [0.50–0.50]");
    }

    #[test]
    fn a_twin_that_differs_fails_the_check_loudly() {
        let mut cases = Vec::new();
        for (rep, (a, b)) in [(100.0, 90.0), (102.0, 91.0), (99.0, 90.5)]
            .iter()
            .enumerate()
        {
            cases.push(case("go", "normalized", rep as i64 + 1, *a, 2 * rep as i64));
            cases.push(case(
                "go",
                "default",
                rep as i64 + 1,
                *b,
                2 * rep as i64 + 1,
            ));
        }
        let p = build(&cases, &pairing(&["go/native/default"]));
        let aa = p.aa.unwrap();
        assert_eq!(aa.passed, Some(false));
        assert!(aa.warning);
        assert!(
            aa.headline.starts_with("A/A CHECK FAILED"),
            "{}",
            aa.headline
        );
        assert!(aa.noise_floor_pct.unwrap() > 5.0);
    }

    #[test]
    fn missing_pieces_are_said_not_hidden() {
        let mut cases = vec![
            case("go", "normalized", 1, 100.0, 0),
            case("node", "normalized", 1, 50.0, 1),
            case("go", "normalized", 2, 100.0, 2),
            case("node", "normalized", 2, 55.0, 3),
        ];
        cases[2].state = "failed".into();
        // A context without the reference.
        let mut lone = case("node", "normalized", 1, 50.0, 4);
        lone.scenario = "dynamic".into();
        cases.push(lone);
        let p = build(&cases, &pairing(&["go/native/default"]));
        let node = p
            .rows
            .iter()
            .find(|r| r.key.server == "node" && r.key.scenario == "static")
            .unwrap();
        let q = node.rps.as_ref().unwrap();
        assert_eq!((q.summary.n, q.repetitions.clone()), (1, vec![1]));
        assert!(q.summary.low.is_none());
        assert!(
            node.note.as_ref().unwrap().contains("repetition 2"),
            "{:?}",
            node.note
        );
        assert_eq!(p.notes.len(), 1);
        assert!(
            p.notes[0].starts_with("dynamic · 1 core · closed c=50: no go case"),
            "{:?}",
            p.notes
        );
        // The A/A twin was never run.
        let aa = p.aa.unwrap();
        assert_eq!(aa.passed, None);
        assert!(
            aa.warning && aa.headline.contains("noise floor is unknown"),
            "{}",
            aa.headline
        );
        // No aa declared: no check.
        assert!(build(&cases, &pairing(&[])).aa.is_none());
    }
}
