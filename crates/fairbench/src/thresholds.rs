//! `--threshold`: pass/fail criteria a CI job acts on, checked after the
//! run (k6's thresholds). A failed threshold makes `load` exit with
//! [`EXIT_FAILED`], distinct from 1 (the run itself failed) and 2 (usage).
//!
//! ```text
//! p99<20ms   p99.9<=50ms   mean<5ms   max<1s      the honest latency (µs, ms, s)
//! errors<0.1%   errors<5                           requests not answered or with an unexpected status: share or count
//! timeouts<0.01%   timeouts=0                      the same for timeouts
//! rps>5k                                           answered requests per second
//! p99{item}<20ms   errors{item}<1%                 one target of a request mix
//! ratio.p99<1.05   ratio.rps>0.95                  --vs: the paired ratio B/A (its upper, resp. lower 95 % bound)
//! ```

use std::fmt::Write;

use fairbench_engine::{ErrorCounts, Outcome};
use hdrhistogram::Histogram;

use crate::units::{count, micros, rate};

/// `load`'s exit code when a threshold failed (k6 uses the same).
pub const EXIT_FAILED: i32 = 99;

/// `compare --fail-on-regression`'s exit code when a case regressed: its
/// own, so that CI tells a regression from a failed step (1) and a usage
/// error (2).
pub const EXIT_REGRESSED: i32 = 98;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// A percentile of the honest latency, 0–100.
    Percentile(f64),
    Mean,
    Max,
    Errors,
    Timeouts,
    Rps,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

/// What the limit is in: latencies in µs, a share (0–1) or a count.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Micros,
    Share,
    Count,
    Rate,
    Ratio,
}

#[derive(Debug, Clone)]
pub struct Threshold {
    pub text: String,
    pub stat: Stat,
    /// `ratio.`: the paired ratio B/A of `--vs`.
    pub ratio: bool,
    /// `{name}`: one target of a request mix.
    pub target: Option<String>,
    op: Op,
    limit: f64,
    unit: Unit,
}

/// One threshold checked.
pub struct Verdict {
    pub text: String,
    /// The measured value, as shown.
    pub shown: String,
    pub pass: bool,
}

const METRICS: &str = "p50…p99.99, mean, max, errors, timeouts or rps (METRIC{target} for one target, ratio.METRIC with --vs)";

impl Threshold {
    pub fn parse(raw: &str) -> Result<Threshold, String> {
        let text: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
        let err = |why: String| format!("--threshold {raw:?}: {why}");
        let (lhs, op, value) = split_comparison(&text).map_err(err)?;
        let (ratio, stat, target) = metric(lhs).map_err(err)?;
        let (limit, unit) = limit(value, stat, ratio).map_err(err)?;
        Ok(Threshold {
            text,
            stat,
            ratio,
            target,
            op,
            limit,
            unit,
        })
    }

    fn holds(&self, v: f64) -> bool {
        match self.op {
            Op::Lt => v < self.limit,
            Op::Le => v <= self.limit,
            Op::Gt => v > self.limit,
            Op::Ge => v >= self.limit,
            Op::Eq => v == self.limit,
        }
    }

    /// Checks the threshold on a run (not `ratio.`, see [`Self::check_ratio`]).
    /// `None` when the target it names is not in the run.
    pub fn check(&self, o: &Outcome) -> Option<Verdict> {
        let (hist, planned, rps, errors): (&Histogram<u64>, u64, f64, ErrorCounts) =
            match &self.target {
                None => (&o.latency, o.planned, o.rps(), o.errors),
                Some(name) => {
                    let t = o.targets.iter().find(|t| &t.name == name)?;
                    (&t.latency, t.planned, o.target_rps(t), t.errors)
                }
            };
        let pct = |p: f64| {
            if hist.is_empty() {
                0.0
            } else {
                hist.value_at_quantile(p / 100.0) as f64
            }
        };
        let share = |n: u64| n as f64 / planned.max(1) as f64;
        let v = match self.stat {
            Stat::Percentile(p) => pct(p),
            Stat::Mean => hist.mean(),
            Stat::Max => hist.max() as f64,
            Stat::Rps => rps,
            Stat::Errors | Stat::Timeouts => {
                let n = if self.stat == Stat::Errors {
                    errors.total()
                } else {
                    errors.timeout
                };
                match self.unit {
                    Unit::Share => share(n),
                    _ => n as f64,
                }
            }
        };
        let shown = match self.unit {
            Unit::Micros => micros(v),
            Unit::Share => format!("{:.3} %", v * 100.0),
            Unit::Count => count(v as u64),
            Unit::Rate => format!("{} req/s", rate(v)),
            Unit::Ratio => format!("{v:.3}"),
        };
        // An empty distribution passes no latency threshold.
        let pass = self.holds(v) && !(self.unit == Unit::Micros && hist.is_empty());
        Some(Verdict {
            text: self.text.clone(),
            shown,
            pass,
        })
    }

    /// `ratio.` thresholds on a paired ratio B/A and its 95 % interval: a
    /// "below" limit must hold for the interval's upper end, an "above" one
    /// for its lower end (the whole interval is on the right side).
    pub fn check_ratio(&self, estimate: f64, lo: f64, hi: f64) -> Verdict {
        let v = match self.op {
            Op::Lt | Op::Le => hi,
            Op::Gt | Op::Ge => lo,
            Op::Eq => estimate,
        };
        Verdict {
            text: self.text.clone(),
            shown: format!("{estimate:.3} [{lo:.3}, {hi:.3}]"),
            pass: self.holds(v),
        }
    }
}

/// "METRIC<VALUE" cut at its comparison: the metric, the comparison and
/// the value.
fn split_comparison(text: &str) -> Result<(&str, Op, &str), String> {
    let at = text
        .find(['<', '>', '='])
        .ok_or_else(|| "expected METRIC<VALUE or METRIC>VALUE, e.g. p99<20ms".to_string())?;
    let (lhs, rest) = text.split_at(at);
    let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
        (Op::Le, v)
    } else if let Some(v) = rest.strip_prefix(">=") {
        (Op::Ge, v)
    } else if let Some(v) = rest.strip_prefix("==") {
        (Op::Eq, v)
    } else if let Some(v) = rest.strip_prefix('<') {
        (Op::Lt, v)
    } else if let Some(v) = rest.strip_prefix('>') {
        (Op::Gt, v)
    } else {
        (Op::Eq, &rest[1..])
    };
    if value.is_empty() {
        return Err("no value after the comparison".into());
    }
    Ok((lhs, op, value))
}

/// The metric's side, `[ratio.]METRIC[{target}]`: whether it is a ratio,
/// the statistic and the target it names.
fn metric(lhs: &str) -> Result<(bool, Stat, Option<String>), String> {
    let (ratio, lhs) = match lhs.strip_prefix("ratio.") {
        Some(m) => (true, m),
        None => (false, lhs),
    };
    let (metric, target) = match lhs.split_once('{') {
        Some((m, t)) => {
            let t = t
                .strip_suffix('}')
                .filter(|t| !t.is_empty())
                .ok_or_else(|| "a target is written METRIC{name}".to_string())?;
            (m, Some(t.to_string()))
        }
        None => (lhs, None),
    };
    if ratio && target.is_some() {
        return Err("ratio.METRIC covers the whole run, not one target".into());
    }
    let stat = match metric {
        "mean" => Stat::Mean,
        "max" => Stat::Max,
        "errors" => Stat::Errors,
        "timeouts" => Stat::Timeouts,
        "rps" => Stat::Rps,
        m => match m.strip_prefix('p').and_then(|p| p.parse::<f64>().ok()) {
            Some(p) if p > 0.0 && p < 100.0 => Stat::Percentile(p),
            Some(_) => return Err("a percentile is between p0 and p100, e.g. p99.9".into()),
            None => return Err(format!("unknown metric {m:?}: expected {METRICS}")),
        },
    };
    if ratio && matches!(stat, Stat::Errors | Stat::Timeouts) {
        return Err("ratio.METRIC compares latency or rps (use errors<… for errors)".into());
    }
    Ok((ratio, stat, target))
}

/// The value's side: the limit in the unit `stat` (or a ratio) is
/// measured in, at least 0.
fn limit(value: &str, stat: Stat, ratio: bool) -> Result<(f64, Unit), String> {
    let bad = |what: &str| format!("{value:?} is not {what}");
    let (limit, unit) = if ratio {
        let v: f64 = value.parse().map_err(|_| bad("a ratio, e.g. 1.05"))?;
        (v, Unit::Ratio)
    } else {
        match stat {
            Stat::Percentile(_) | Stat::Mean | Stat::Max => (
                micros_of(value).ok_or_else(|| bad("a duration such as 20ms, 500us or 1.5s"))?,
                Unit::Micros,
            ),
            Stat::Errors | Stat::Timeouts => match value.strip_suffix('%') {
                Some(p) => {
                    let v: f64 = p
                        .parse()
                        .map_err(|_| bad("a share such as 0.1% or a count"))?;
                    (v / 100.0, Unit::Share)
                }
                None => {
                    let v: f64 = value
                        .parse()
                        .map_err(|_| bad("a share such as 0.1% or a count"))?;
                    (v, Unit::Count)
                }
            },
            Stat::Rps => (
                crate::args::rate(value).map_err(|_| bad("a rate such as 5k or 1200"))?,
                Unit::Rate,
            ),
        }
    };
    if !limit.is_finite() || limit < 0.0 {
        return Err(bad("a value ≥ 0"));
    }
    Ok((limit, unit))
}

/// Parses `d` with a unit (us, µs, ms, s, m) into µs.
fn micros_of(d: &str) -> Option<f64> {
    let split = d.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = d.split_at(split);
    let n: f64 = n.parse().ok()?;
    let scale = match unit {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        _ => return None,
    };
    Some(n * scale)
}

/// Parses every `--threshold` and checks each names what the run will
/// have: a target of its mix (`names`), a paired ratio only with `--vs`.
pub fn parse_all(raw: &[String], names: &[String], vs: bool) -> Result<Vec<Threshold>, String> {
    let mut out = Vec::new();
    for r in raw {
        let t = Threshold::parse(r)?;
        if let Some(name) = &t.target {
            if !names.iter().any(|n| n == name) {
                return Err(format!(
                    "--threshold {r:?}: no target named {name:?} in this run{}",
                    if names.is_empty() {
                        " (METRIC{name} needs --targets)".to_string()
                    } else {
                        format!(" (its targets: {})", names.join(", "))
                    }
                ));
            }
        }
        if t.ratio && !vs {
            return Err(format!(
                "--threshold {r:?}: ratio.METRIC compares two URLs: it needs --vs URL_B"
            ));
        }
        out.push(t);
    }
    Ok(out)
}

/// Every threshold that is not a ratio, checked on `o`.
pub fn check_all(ts: &[Threshold], o: &Outcome) -> Vec<Verdict> {
    let limited = o.generator_limited();
    ts.iter()
        .filter(|t| !t.ratio)
        .filter_map(|t| t.check(o))
        .map(|mut v| {
            // A generator's bound shows the server slower than it was: a
            // pass holds all the more, a failure may be the generator's.
            if limited && !v.pass {
                v.shown += BOUND;
            }
            v
        })
        .collect()
}

/// What a failed threshold's figure adds when the load generator limited
/// the run (crate::report::bound).
const BOUND: &str = " (bounded by the load generator: see its warning)";

/// `thresholds` of `--json`: `[{threshold, measured, pass}]`.
pub fn json(verdicts: &[Verdict]) -> serde_json::Value {
    verdicts
        .iter()
        .map(|v| serde_json::json!({"threshold": v.text, "measured": v.shown, "pass": v.pass}))
        .collect()
}

/// The pass/fail table printed after the run.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut s = String::new();
    if verdicts.is_empty() {
        return s;
    }
    let w = verdicts
        .iter()
        .map(|v| v.text.chars().count())
        .max()
        .unwrap_or(9)
        .max(9);
    let _ = writeln!(s, "\n  {:<w$}  {:<24}  result", "Threshold", "measured");
    for v in verdicts {
        let _ = writeln!(
            s,
            "  {:<w$}  {:<24}  {}",
            v.text,
            v.shown,
            if v.pass { "pass" } else { "FAIL" }
        );
    }
    let failed = verdicts.iter().filter(|v| !v.pass).count();
    if failed > 0 {
        let _ = writeln!(
            s,
            "\n{failed} of {} thresholds failed (exit code {EXIT_FAILED})",
            verdicts.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_parse() {
        let t = Threshold::parse("p99 < 20ms").unwrap();
        assert_eq!(
            (t.stat, t.limit, t.text.as_str()),
            (Stat::Percentile(99.0), 20_000.0, "p99<20ms")
        );
        let t = Threshold::parse("errors<0.1%").unwrap();
        assert_eq!((t.stat, t.unit), (Stat::Errors, Unit::Share));
        assert!((t.limit - 0.001).abs() < 1e-12);
        assert_eq!(Threshold::parse("rps>5k").unwrap().limit, 5000.0);
        assert_eq!(Threshold::parse("p99.9<=1.5s").unwrap().limit, 1_500_000.0);
        let t = Threshold::parse("ratio.p99<1.05").unwrap();
        assert!(t.ratio && t.limit == 1.05);
        let t = Threshold::parse("p99{item}<50us").unwrap();
        assert_eq!((t.target.as_deref(), t.limit), (Some("item"), 50.0));
        assert_eq!(Threshold::parse("timeouts=0").unwrap().unit, Unit::Count);
    }

    #[test]
    fn mistakes_are_named() {
        let e = |s: &str| Threshold::parse(s).err().unwrap();
        assert!(e("latency<20ms").contains("unknown metric \"latency\""));
        assert!(e("p99<20").contains("not a duration"));
        assert!(e("p99").contains("expected METRIC<VALUE"));
        assert!(e("p100<1s").contains("between p0 and p100"));
        assert!(e("errors<lots").contains("share"));
        assert!(e("ratio.errors<1.1").contains("ratio.METRIC compares"));
        assert!(e("p99<").contains("no value"));
    }

    #[test]
    fn a_ratio_must_hold_for_its_whole_interval() {
        let t = Threshold::parse("ratio.p99<1.05").unwrap();
        assert!(t.check_ratio(1.0, 0.98, 1.04).pass);
        assert!(!t.check_ratio(1.0, 0.98, 1.06).pass);
        let t = Threshold::parse("ratio.rps>0.95").unwrap();
        assert!(!t.check_ratio(1.0, 0.94, 1.06).pass);
    }
}
