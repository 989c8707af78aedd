//! The publications' quantitative claims, each judged against a run: the
//! same ratio computed from the run's paired repetitions, its interval,
//! and a verdict.
//!
//! A claim is a ratio of req/s between two servers in one context
//! (scenario · cores · load), claimed to lie in `[low, high]` (a single
//! published figure gets ±10 %, said in its range). Each compared row of
//! the run's paired ratios (docs/report.md, "Paired ratios") whose
//! reference is one side of the claim gives that ratio with its interval:
//! the reference as denominator as paired, or inverted when the reference
//! is the numerator. The verdict:
//!
//! - **holds**: the whole interval lies inside the claimed range;
//! - **refuted**: the whole interval lies outside it;
//! - **cannot tell here**: the interval straddles an edge (too wide to
//!   decide), a single repetition (no interval), or the run has no case of
//!   the claim's servers, or pairs them with another reference.

use serde::Serialize;

use super::case_key::CaseKey;
use super::paired::{Paired, Role};

/// Which cases of a run a claim is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cores {
    One,
    /// Exactly this many: a claim about eight cores is not judged at two.
    Exactly(i64),
}

/// One published claim.
#[derive(Debug, Clone, Serialize)]
pub struct Claim {
    pub id: &'static str,
    pub source: &'static str,
    /// As the publication put it.
    pub quote: &'static str,
    /// The ratio's numerator and denominator: server name prefixes.
    pub numerator: &'static [&'static str],
    pub denominator: &'static [&'static str],
    /// How the sides read in a table: no server a `--servers` view left
    /// out is named.
    pub numerator_label: &'static str,
    pub denominator_label: &'static str,
    pub cores: Cores,
    pub low: f64,
    pub high: f64,
}

/// Every quantitative claim fairbench can set a run against.
pub const CLAIMS: &[Claim] = &[
    Claim {
        id: "study-single-core",
        source: "the Dart-vs-Go study",
        quote: "the Dart servers max out around 5,000–6,000 requests per second on one core, Go at almost 13,000: a 2–2.5 times difference",
        numerator: &["go-nethttp"],
        denominator: &["dart-io", "dart-shelf", "dart-alfred", "dart-jaguar", "dart-conduit"],
        numerator_label: "go-nethttp",
        denominator_label: "each Dart server (dart-*)",
        cores: Cores::One,
        low: 2.0,
        high: 2.5,
    },
    Claim {
        id: "study-eight-cores-conduit",
        source: "the Dart-vs-Go study",
        quote: "Go on eight cores achieved 3.3 times as much throughput as the Conduit server achieved with eight cores (range ±10 %)",
        numerator: &["go-nethttp"],
        denominator: &["dart-conduit"],
        numerator_label: "go-nethttp",
        denominator_label: "Conduit (dart-conduit)",
        cores: Cores::Exactly(8),
        low: 2.97,
        high: 3.63,
    },
    Claim {
        id: "post-2012-express-faster",
        source: "the 2012 static-file post",
        quote: "the same file through express was faster than through the Dart server",
        numerator: &["node-express"],
        denominator: &["dart-io", "dart-shelf"],
        numerator_label: "node-express",
        denominator_label: "the Dart file server (dart-*)",
        cores: Cores::One,
        low: 1.0,
        high: f64::INFINITY,
    },
];

/// How a claim fared in one context of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The compared variant's case key (the non-reference side).
    pub key: CaseKey,
    /// numerator / denominator: the geometric mean over paired repetitions.
    pub ratio: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub verdict: Verdict,
    pub why: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    Refuted,
    CannotTell,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Refuted => "refuted",
            Verdict::CannotTell => "cannot tell here",
        }
    }
}

/// A claim judged against a run: one finding per context it applies to,
/// or why none does.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    pub claim: Claim,
    pub findings: Vec<Finding>,
    /// Set when there is no finding: why the run cannot judge the claim.
    pub not_judged: Option<String>,
}

fn is(server: &str, names: &[&str]) -> bool {
    names.contains(&server)
}

fn range(c: &Claim) -> String {
    if c.high.is_infinite() {
        format!("above {}", c.low)
    } else {
        format!("{}–{}", c.low, c.high)
    }
}

/// The verdict on an interval (or a lone ratio) against `[low, high]`.
pub fn verdict(c: &Claim, ratio: f64, interval: Option<(f64, f64)>) -> (Verdict, String) {
    let Some((l, h)) = interval else {
        return (
            Verdict::CannotTell,
            format!(
                "one repetition: {ratio:.2} has no interval to set against {}",
                range(c)
            ),
        );
    };
    if l >= c.low && h <= c.high {
        (
            Verdict::Holds,
            format!("the interval {l:.2}–{h:.2} lies within {}", range(c)),
        )
    } else if h < c.low || l > c.high {
        (
            Verdict::Refuted,
            format!("the interval {l:.2}–{h:.2} lies outside {}", range(c)),
        )
    } else {
        (
            Verdict::CannotTell,
            format!(
                "the interval {l:.2}–{h:.2} straddles {}: more repetitions or a quieter machine",
                range(c)
            ),
        )
    }
}

/// Whether a claim names this server: a run with none of them has no
/// claim to judge.
pub fn mentions(server: &str) -> bool {
    CLAIMS
        .iter()
        .any(|c| is(server, c.numerator) || is(server, c.denominator))
}

/// Every claim, judged against a run's paired ratios.
pub fn judge(paired: &Paired) -> Vec<Judged> {
    CLAIMS.iter().map(|c| judge_one(c, paired)).collect()
}

fn judge_one(c: &Claim, paired: &Paired) -> Judged {
    let mut findings = Vec::new();
    let mut other_reference = None;
    for row in paired.rows.iter().filter(|r| r.role == Role::Compared) {
        let cores_fit = match c.cores {
            Cores::One => row.key.cores == 1,
            Cores::Exactly(n) => row.key.cores == n,
        };
        if !cores_fit {
            continue;
        }
        let (server, reference) = (row.key.server.as_str(), row.reference.server.as_str());
        // numerator/denominator from variant/reference, inverted as needed.
        let invert = if is(server, c.numerator) && is(reference, c.denominator) {
            false
        } else if is(server, c.denominator) && is(reference, c.numerator) {
            true
        } else {
            if is(server, c.denominator) || is(server, c.numerator) {
                other_reference = Some(reference.to_string());
            }
            continue;
        };
        let Some(r) = &row.rps else { continue };
        let s = &r.summary;
        let flip = |v: f64| if invert { 1.0 / v } else { v };
        let ratio = flip(s.geomean);
        let interval = match (s.low, s.high) {
            (Some(l), Some(h)) if invert => Some((1.0 / h, 1.0 / l)),
            (Some(l), Some(h)) => Some((l, h)),
            _ => None,
        };
        let (verdict, why) = match &row.failed {
            // A server that failed its requests fast is not judged by the
            // rate it kept.
            Some(f) => (Verdict::CannotTell, f.clone()),
            None => verdict(c, ratio, interval),
        };
        findings.push(Finding {
            key: row.key.clone(),
            ratio,
            low: interval.map(|i| i.0),
            high: interval.map(|i| i.1),
            verdict,
            why,
        });
    }
    let not_judged = findings.is_empty().then(|| match other_reference {
        Some(r) => format!(
            "this run pairs the claim's servers with {r}; the claim is relative to {}",
            c.numerator_label
        ),
        None => format!(
            "no case of {} beside {} at {} in this view of the run (the Dart servers need a Dart SDK)",
            c.denominator_label,
            c.numerator_label,
            match c.cores {
                Cores::One => "one core".to_string(),
                Cores::Exactly(n) => format!("{n} cores"),
            }
        ),
    });
    Judged {
        claim: c.clone(),
        findings,
        not_judged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_inside_holds_outside_refutes_and_across_cannot_tell() {
        let c = &CLAIMS[0];
        assert_eq!(verdict(c, 2.2, Some((2.1, 2.3))).0, Verdict::Holds);
        assert_eq!(verdict(c, 1.5, Some((1.4, 1.6))).0, Verdict::Refuted);
        assert_eq!(verdict(c, 2.9, Some((2.6, 3.1))).0, Verdict::Refuted);
        assert_eq!(verdict(c, 2.0, Some((1.9, 2.1))).0, Verdict::CannotTell);
        let (v, why) = verdict(c, 2.2, None);
        assert_eq!(v, Verdict::CannotTell);
        assert!(why.contains("one repetition"), "{why}");
    }

    /// A claim is not judged on a server that failed its requests: the
    /// same ratio that holds from healthy runs cannot tell when the Dart
    /// side answered half its requests with errors.
    #[test]
    fn a_server_that_failed_its_requests_is_not_judged() {
        use crate::store::CaseRow;
        use crate::suite::pairing::{Pairing, VariantSpec};
        let rows = |failed: i64| -> Vec<CaseRow> {
            (1..=3)
                .flat_map(|rep| {
                    [("go-nethttp", 2200.0), ("dart-io", 1000.0)].map(|(server, rps)| CaseRow {
                        seq: rep * 10 + i64::from(server == "dart-io"),
                        server: server.into(),
                        mode: "native".into(),
                        response: "normalized".into(),
                        scenario: "static".into(),
                        cores: 1,
                        load_label: "closed c=50".into(),
                        repetition: rep,
                        state: "done".into(),
                        rps: Some(rps * (1.0 + rep as f64 / 1000.0)),
                        planned: Some(2000),
                        requests: Some(2000),
                        err_status: Some(if server == "dart-io" { failed } else { 0 }),
                        ..CaseRow::default()
                    })
                })
                .collect()
        };
        let pairing = Pairing {
            reference: VariantSpec::parse("go-nethttp").unwrap(),
            reference_from: "default",
            aa: Vec::new(),
        };
        let judged = |failed| {
            let p = crate::report::paired::build(&rows(failed), &pairing);
            judge_one(&CLAIMS[0], &p).findings.remove(0)
        };
        assert_eq!(judged(0).verdict, Verdict::Holds);
        let f = judged(1000);
        assert_eq!(f.verdict, Verdict::CannotTell);
        assert!(f.why.contains("this case failed over 1 %"), "{}", f.why);
    }

    #[test]
    fn docs_study_lists_every_claim() {
        let doc = include_str!("../../../../docs/study.md");
        for c in CLAIMS {
            assert!(
                doc.contains(&format!("`{}`", c.id)),
                "docs/study.md lacks {}",
                c.id
            );
            assert!(
                doc.contains(c.quote.split(" (").next().unwrap()),
                "{}",
                c.id
            );
        }
    }

    #[test]
    fn an_open_range_holds_above_its_floor() {
        let c = &CLAIMS[2];
        assert_eq!(verdict(c, 1.3, Some((1.2, 1.4))).0, Verdict::Holds);
        assert_eq!(verdict(c, 0.8, Some((0.7, 0.9))).0, Verdict::Refuted);
    }
}
