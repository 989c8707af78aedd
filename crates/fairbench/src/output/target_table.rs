//! The per-target breakdown of a run with a request mix: a table under the
//! summary, each name's ledger, statuses and honest latency. The names add
//! up to the totals above it (they are counted by the same ledger).

use std::fmt::Write;

use fairbench_engine::Outcome;

use crate::units::{count, micros, one_line};

/// Nothing without a mix.
pub fn render(s: &mut String, o: &Outcome, percentiles: &[f64]) {
    if o.targets.is_empty() {
        return;
    }
    let names: Vec<String> = o.targets.iter().map(|t| one_line(&t.name)).collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut head = format!(
        "  {:<width$}  {:>9}  {:>9}  {:>7}",
        "Target", "planned", "answered", "errors"
    );
    for p in percentiles {
        let _ = write!(head, "  {:>8}", format!("p{}", trim(*p)));
    }
    let _ = writeln!(s, "\n{head}  statuses");
    for (t, name) in o.targets.iter().zip(&names) {
        let mut line = format!(
            "  {:<width$}  {:>9}  {:>9}  {:>7}",
            name,
            count(t.planned),
            count(t.requests),
            count(t.errors.total())
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
