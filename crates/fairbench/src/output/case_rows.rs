//! What every table of a stored run's cases shares (`show`'s for suites
//! and for URLs): the cases folded by repetition, and wrk's per-thread
//! Req/Sec with the same words wherever it shows.

use crate::store::CaseRow;
use crate::units;

/// Cases that differ only in repetition, in plan order.
pub fn groups(cases: &[CaseRow]) -> Vec<Vec<&CaseRow>> {
    let mut out: Vec<Vec<&CaseRow>> = Vec::new();
    for c in cases {
        // A ladder's rungs of one server are apart, as in the report.
        let key = crate::report::case_key::CaseKey::of;
        match out.iter_mut().find(|g| key(g[0]) == key(c)) {
            Some(g) => g.push(c),
            None => out.push(vec![c]),
        }
    }
    out
}

/// The per-thread column's header and footnote, and the note for timeouts
/// counted wrk's way: the same words in every table that shows them.
pub const PER_THREAD_HEADER: &str = "req/s per thread (wrk)";
pub const PER_THREAD_NOTE: &str = "req/s per thread (wrk): wrk's Thread Stats Req/Sec, what the studies plotted: mean ±stdev and max of each load thread's req/s over 100 ms intervals (about req/s ÷ t=)";
pub const WRK_TIMEOUTS_NOTE: &str = "errors: timeouts counted wrk's way (an answer after the timeout is a timeout, its connection kept), not fairbench's";

/// The column of wrk's printed latency and its footnote.
pub const WRK_LATENCY_HEADER: &str = "as wrk prints: mean ±stdev, p99";
pub const WRK_LATENCY_NOTE: &str = "as wrk prints: the latency wrk 4.x itself would print for the case (no answer above the timeout recorded, then its stats_correct synthetic samples for every answer of two or more expected intervals), median over repetitions: the publications' figure, not fairbench's";

/// Whether a table shows wrk's printed latency: where any case has it.
pub fn shows_wrk_latency(cases: &[CaseRow]) -> bool {
    cases.iter().any(|c| c.wrk_lat_p99.is_some())
}

/// `mean ±stdev, p99` as wrk prints them (medians), or a dash.
pub fn wrk_latency_cell(done: &[&&CaseRow]) -> String {
    let med = |f: &dyn Fn(&CaseRow) -> Option<f64>| {
        let v: Vec<f64> = done.iter().filter_map(|c| f(c)).collect();
        (!v.is_empty()).then(|| crate::report::stats::median(&v))
    };
    match (
        med(&|c| c.wrk_lat_mean),
        med(&|c| c.wrk_lat_stdev),
        med(&|c| c.wrk_lat_p99.map(|v| v as f64)),
    ) {
        (Some(m), Some(sd), Some(p99)) => format!(
            "{} ±{}, {}",
            units::micros(m),
            units::micros(sd),
            units::micros(p99)
        ),
        _ => "-".to_string(),
    }
}

/// Whether a table shows wrk's per-thread Req/Sec beside the total: where
/// the run reproduces a wrk measurement (timeouts counted its way, as the
/// study suites do) and the figure was measured; elsewhere it is a column
/// nobody asked for.
pub fn shows_per_thread(cases: &[CaseRow]) -> bool {
    cases.iter().any(counted_wrks_way) && cases.iter().any(|c| c.thread_rps_mean.is_some())
}

/// `mean ±stdev max max` of wrk's per-thread Req/Sec, or a dash.
pub fn per_thread_cell(mean: Option<f64>, stdev: Option<f64>, max: Option<f64>) -> String {
    match (mean, stdev, max) {
        (Some(m), Some(sd), Some(max)) => format!(
            "{} ±{} max {}",
            units::rate(m),
            units::rate(sd),
            units::rate(max)
        ),
        _ => "-".to_string(),
    }
}

/// Whether a case's timeouts were counted wrk's way (its stored load says).
pub fn counted_wrks_way(c: &CaseRow) -> bool {
    serde_json::from_str::<serde_json::Value>(&c.load_json)
        .ok()
        .and_then(|v| v.get("timeout_mode")?.as_str().map(|m| m == "wrk"))
        .unwrap_or(false)
}
