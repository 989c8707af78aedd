//! `history --within RUN`: a long run's own drift. Each finished case of
//! the run (each repetition) is read as its per-second series (the
//! `samples` the store keeps, read by `Store::samples` as `report` reads
//! them), cut into windows of `--window` from the start of the
//! measurement; a window is a point, and the change-point search of
//! [`super::analysis`] runs on the windows as it runs on runs.
//!
//! A window's figure is the median of its seconds' figures, with the
//! order-statistics interval over them. A change's size is bootstrapped
//! over the windows' figures, not over seconds: neighbouring seconds are
//! not independent (a collection or a compaction spans several), so
//! resampling them would give intervals too narrow, and an hour's 3,600
//! seconds resampled 10,000 times costs seconds of CPU for each split.
//! Warm-up and drain seconds are left out; so is a last stretch shorter
//! than a window, which would be a point of fewer seconds than the rest.
//!
//! A window is marked, and left out of the search, as a run is: when its
//! case's figures are not the server's work or not the server's at all
//! (`off_work` of the report's bodies and bounds: the whole case, since
//! the store keeps those per repetition), and when its own seconds failed
//! over [`FAILING_SHARE`] of their requests (a stretch of errors answered
//! fast would read as a stretch of speed).

use std::time::Duration;

use super::series::{Metric, Point, Series, Window, MIB};
use crate::report::case_key::CaseKey;
use crate::report::failing::{share, share_text, FAILING_SHARE};
use crate::report::stats::Summary;
use crate::store::{CaseRow, RunRow, SampleRow, Store};

/// The method line of `--within`'s document: the search of
/// [`super::analysis::METHOD`] with windows for runs and seconds for
/// repetitions.
pub const METHOD: &str = "binary segmentation of the per-window medians of one run's per-second series with the two-level F statistic (the noise estimated inside each segment), split when it exceeds its 99th percentile on Gaussian noise of the same length (simulated, fixed seed); a change point is reported when its size exceeds the noise floor; its size is the difference of the medians of the window figures on either side, with compare's bootstrap 95 % interval over windows";

/// One case of the run as windows.
pub struct WithinCase {
    pub series: Series,
    pub repetition: i64,
    /// Seconds of measurement the series holds, and how many of them, at
    /// its end, made less than a window and were left out.
    pub measured_s: f64,
    pub left_out_s: f64,
}

/// A second's figure for `metric`; None where the second has none (no
/// answer in it, for a latency; no server reading).
fn of_second(metric: Metric, s: &SampleRow) -> Option<f64> {
    let answered = s.requests > 0;
    match metric {
        Metric::Rps => Some(s.rps()),
        Metric::P50 => answered.then_some(s.p50_us as f64),
        Metric::P99 => answered.then_some(s.p99_us as f64),
        // Cores busy during the second over its requests.
        Metric::Cpu => s
            .server_cpu
            .filter(|_| answered)
            .map(|cores| cores * s.duration_s * 1e6 / s.requests as f64),
        Metric::Rss => s.server_rss.map(|b| b as f64 / MIB),
    }
    .filter(|v| v.is_finite())
}

/// Why a window's figures are not the server's work: the case's reason
/// (`case_off`), or its own seconds' failures over [`FAILING_SHARE`].
fn window_off(case_off: Option<&str>, inside: &[&SampleRow]) -> Option<String> {
    if let Some(why) = case_off {
        return Some(why.to_string());
    }
    let failed: u64 = inside.iter().map(|s| s.errors).sum();
    let answered: u64 = inside.iter().map(|s| s.requests).sum();
    let x = share(failed, failed + answered);
    (x > FAILING_SHARE).then(|| format!("failed {} of its requests in this window", share_text(x)))
}

/// The windows of one case's measured seconds.
fn windows(
    run: &RunRow,
    c: &CaseRow,
    samples: &[SampleRow],
    metric: Metric,
    window_s: f64,
) -> (Vec<Point>, f64) {
    let case_off = crate::report::bodies::off_work(std::iter::once(c))
        .or_else(|| crate::report::bound::off_work(std::iter::once(c)));
    let measured: Vec<&SampleRow> = samples.iter().filter(|s| s.phase == "measure").collect();
    let (Some(first), Some(last)) = (measured.first(), measured.last()) else {
        return (Vec::new(), 0.0);
    };
    let t0 = first.start_s;
    let span = last.start_s + last.duration_s - t0;
    // A thousandth of a second of slack: per-second intervals are stored
    // as measured, a little over or under one second.
    let whole = ((span + 1e-3) / window_s).floor() as usize;
    let mut points = Vec::with_capacity(whole);
    for index in 0..whole {
        let (from, to) = (index as f64 * window_s, (index + 1) as f64 * window_s);
        let inside: Vec<&SampleRow> = measured
            .iter()
            .copied()
            .filter(|s| {
                let mid = s.start_s - t0 + s.duration_s / 2.0;
                mid >= from && mid < to
            })
            .collect();
        let values: Vec<f64> = inside.iter().filter_map(|s| of_second(metric, s)).collect();
        let Some(sum) = Summary::of(&values) else {
            continue;
        };
        points.push(Point {
            run: run.id,
            started_at: c
                .started_at
                .clone()
                .unwrap_or_else(|| run.started_at.clone()),
            revision: run.git_revision.clone(),
            source: None,
            declared: None,
            order_key: None,
            window: Some(Window {
                index,
                start_s: from,
                end_s: to,
                seconds: inside.len(),
            }),
            median: sum.median,
            low: sum.low,
            high: sum.high,
            confidence: sum.confidence,
            values: vec![sum.median],
            noise_floor_pct: None,
            off: window_off(case_off.as_deref(), &inside),
            ratio: None,
            ratio_low: None,
            ratio_high: None,
        });
    }
    (points, span.max(0.0))
}

/// Every finished case of `run` that `selects` keeps, as windows of
/// `window`; `metric` None follows each case's primary metric.
pub fn collect(
    store: &Store,
    run: &RunRow,
    window: Duration,
    metric: Option<Metric>,
    selects: &dyn Fn(&CaseKey) -> bool,
) -> anyhow::Result<Vec<WithinCase>> {
    let window_s = window.as_secs_f64();
    let versions = store.versions(run.id)?;
    let mut out = Vec::new();
    for c in store.cases(run.id)? {
        let key = CaseKey::of(&c);
        if c.state != "done" || c.sweep.is_some() || !selects(&key) {
            continue;
        }
        let metric = metric.unwrap_or_else(|| Metric::primary(&c));
        let (mut points, measured_s) = windows(run, &c, &store.samples(c.id)?, metric, window_s);
        if let Some(v) = versions.get(&c.id) {
            for p in &mut points {
                p.source = v.source_label();
                p.declared = v.declared.clone();
            }
        }
        let whole = points
            .last()
            .map_or(0.0, |p| p.window.map_or(0.0, |w| w.end_s));
        out.push(WithinCase {
            series: Series {
                key,
                metric,
                points,
            },
            repetition: c.repetition,
            measured_s,
            left_out_s: (measured_s - whole).max(0.0),
        });
    }
    Ok(out)
}

/// The one line for a run too short to compare two windows; None when a
/// selected case has two windows or more.
pub fn too_short(run: i64, cases: &[WithinCase], window: Duration) -> Option<String> {
    if cases.iter().any(|c| c.series.points.len() >= 2) {
        return None;
    }
    let longest = cases.iter().map(|c| c.measured_s).fold(0.0, f64::max);
    let w = humantime::format_duration(window);
    Some(if longest <= 0.0 {
        format!(
            "run {run}: no per-second series stored for the selected cases, so no drift to show"
        )
    } else {
        format!(
            "run {run}: measured {longest:.0} s, shorter than two windows of {w} (--window): no drift to show"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(i: i64, rps: u64, phase: &str) -> SampleRow {
        SampleRow {
            second: i,
            phase: phase.into(),
            start_s: i as f64 + 2.0,
            duration_s: 1.0,
            requests: rps,
            errors: 0,
            bytes: 0,
            p50_us: 100,
            p99_us: 900,
            interval_hist: None,
            server_cpu: Some(0.5),
            server_rss: Some(64 << 20),
            server_threads: None,
        }
    }

    #[test]
    fn whole_windows_from_the_measurement_start_and_the_rest_left_out() {
        let run = RunRow {
            id: 3,
            started_at: "t".into(),
            finished_at: None,
            suite: String::new(),
            suite_toml: String::new(),
            state: "done".into(),
            reason: None,
            fairbench_version: String::new(),
            git_revision: None,
            host_json: String::new(),
            toolchains_json: String::new(),
            planned_cases: 1,
            cases_done: 1,
            cases_failed: 0,
            cases_skipped: 0,
            pid: None,
        };
        let mut s: Vec<SampleRow> = (-2..0).map(|i| second(i, 1, "warmup")).collect();
        s.extend((0..25).map(|i| second(i, if i < 10 { 1000 } else { 2000 }, "measure")));
        let (points, span) = windows(&run, &CaseRow::default(), &s, Metric::Rps, 10.0);
        assert_eq!(span, 25.0);
        let medians: Vec<f64> = points.iter().map(|p| p.median).collect();
        assert_eq!(medians, [1000.0, 2000.0]);
        assert_eq!(points[1].window.unwrap().seconds, 10);
        let (cpu, _) = windows(&run, &CaseRow::default(), &s, Metric::Cpu, 10.0);
        assert_eq!(cpu[0].median, 500.0, "half a core over 1000 requests");
        let (rss, _) = windows(&run, &CaseRow::default(), &s, Metric::Rss, 10.0);
        assert_eq!(rss[0].median, 64.0);
        assert!(points.iter().all(|p| p.off.is_none()));

        // A stretch answered with errors is marked, the others are not.
        let mut failing = s.clone();
        for x in failing.iter_mut().filter(|x| x.second >= 10) {
            x.errors = x.requests;
        }
        let (points, _) = windows(&run, &CaseRow::default(), &failing, Metric::Rps, 10.0);
        assert_eq!(points[0].off, None);
        assert_eq!(
            points[1].off.as_deref(),
            Some("failed 50.0 % of its requests in this window")
        );
        // A case its generator bounded marks every window.
        let saturated = CaseRow {
            saturated: Some(true),
            ..CaseRow::default()
        };
        let (points, _) = windows(&run, &saturated, &s, Metric::Rps, 10.0);
        assert!(
            points.iter().all(|p| p
                .off
                .as_deref()
                .is_some_and(|w| w.contains("load generator"))),
            "{:?}",
            points.iter().map(|p| &p.off).collect::<Vec<_>>()
        );
    }
}
