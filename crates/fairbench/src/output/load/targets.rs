//! The breakdowns of a run under its summary: per target of a request mix,
//! per stage of a rate profile. Each row is a name's ledger, statuses and
//! honest latency; the rows add up to the totals above them (they are
//! counted by the same ledger; stages by each request's planned time).
//! The rate is the one the run credits: a stage the server fell behind in
//! counts the answers that came within its span.

use std::fmt::Write;

use fairbench_engine::{Outcome, TargetOutcome};

use crate::units::{count, micros, one_line, rate};

/// Both tables, each only when the run has its breakdown.
pub fn render(s: &mut String, o: &Outcome, percentiles: &[f64]) {
    let rates: Vec<f64> = o.targets.iter().map(|t| o.target_rps(t)).collect();
    table(s, "Target", &o.targets, &rates, percentiles);
    let rates: Vec<f64> = (0..o.stages.len()).map(|i| o.stage_rps(i)).collect();
    table(s, "Stage", &o.stages, &rates, percentiles);
}

/// `rates[i]` is the rate part `i` kept (see `Outcome::stage_rps`).
fn table(
    s: &mut String,
    title: &str,
    groups: &[TargetOutcome],
    rates: &[f64],
    percentiles: &[f64],
) {
    if groups.is_empty() {
        return;
    }
    let names: Vec<String> = groups.iter().map(|t| one_line(&t.name)).collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut head = format!(
        "  {:<width$}  {:>9}  {:>9}  {:>9}  {:>7}",
        title, "planned", "answered", "errors", "req/s"
    );
    for p in percentiles {
        let _ = write!(head, "  {:>8}", format!("p{}", trim(*p)));
    }
    let _ = writeln!(s, "\n{head}  statuses");
    for ((t, name), r) in groups.iter().zip(&names).zip(rates) {
        let mut line = format!(
            "  {:<width$}  {:>9}  {:>9}  {:>9}  {:>7}",
            name,
            count(t.planned),
            count(t.requests),
            count(t.errors.total()),
            rate(*r)
        );
        for p in percentiles {
            let v = if t.latency.is_empty() {
                "-".to_string()
            } else {
                micros(t.latency.value_at_quantile(p / 100.0) as f64)
            };
            let _ = write!(line, "  {v:>8}");
        }
        let codes: Vec<String> = t
            .status_codes
            .iter()
            .map(|(c, n)| format!("{c} ×{}", count(*n)))
            .collect();
        let _ = writeln!(s, "{line}  {}", codes.join("  "));
    }
}

fn trim(p: f64) -> String {
    format!("{p}")
}
