//! Under a run's table: what the original tool printed on each calibrated
//! case, beside fairbench's figures computed its way, one line a case.

use std::fmt::Write;

use crate::calibration::ToolFigures;
use crate::report::case_key::protocol_label;
use crate::store::{CalibrationRow, CaseRow};
use crate::units;

/// Nothing when no case was calibrated.
pub fn render(cases: &[CaseRow], calibrations: &[CalibrationRow]) -> String {
    if calibrations.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\ncalibration: the original tool on the same server, right after fairbench (fairbench's figures computed its way, ratio fairbench/tool):\n",
    );
    for k in calibrations {
        let Some(c) = cases.iter().find(|c| c.id == k.case_id) else {
            continue;
        };
        let label = format!(
            "{} {}/{}{} {} {}c #{}",
            c.server,
            c.mode,
            c.response,
            protocol_label(&c.protocol),
            c.scenario,
            c.cores,
            c.repetition
        );
        let figures: Option<ToolFigures> = k
            .figures_json
            .as_deref()
            .and_then(|j| serde_json::from_str(j).ok());
        let body = match (k.state.as_str(), figures) {
            ("done", Some(f)) => done_line(&k.tool, c, &f),
            (state, _) => format!(
                "{} {state}: {}",
                k.tool,
                k.reason.as_deref().unwrap_or("no reason given")
            ),
        };
        let _ = writeln!(
            s,
            "  {}: {}",
            units::one_line(&label),
            units::one_line(&body)
        );
    }
    s
}

fn done_line(tool: &str, c: &CaseRow, f: &ToolFigures) -> String {
    // wrk's printed figures where the case has them, else fairbench's own.
    let (p99, requests) = match c.wrk_lat_p99 {
        Some(p) => (Some(p as f64), c.wrk_requests.map(|n| n as f64)),
        None => (c.lat_p99.map(|v| v as f64), c.requests.map(|n| n as f64)),
    };
    let pair =
        |tool_v: Option<f64>, ours: Option<f64>, show: &dyn Fn(f64) -> String| match (tool_v, ours)
        {
            (Some(t), Some(o)) if t > 0.0 => {
                format!("{} (fairbench {}, ×{:.3})", show(t), show(o), o / t)
            }
            (Some(t), _) => show(t),
            _ => "-".into(),
        };
    format!(
        "{tool}: {}; p99 {}; {}",
        pair(f.rps, c.rps, &|v| format!("{} req/s", units::rate(v))),
        pair(f.at(99.0), p99, &|v| units::micros(v)),
        pair(f.requests.map(|n| n as f64), requests, &|v| {
            format!("{} requests", units::count(v as u64))
        }),
    )
}
