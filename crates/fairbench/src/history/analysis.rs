//! A case's series with its change points: where the level moved, by how
//! much (with an interval) and whether the move is beyond the noise floor.

use serde::Serialize;

use super::changepoint::{self, FALSE_ALARM};
use super::series::{Point, Series};
use crate::compare::model::diff;
use crate::report::case_key::CaseKey;
use crate::seeded::fnv1a;

pub const METHOD: &str = "binary segmentation of the per-run medians with the two-level F statistic (the noise estimated inside each segment), split when it exceeds its 99th percentile on Gaussian noise of the same length (simulated, fixed seed); a change point is reported when its size exceeds the noise floor; its size is the difference of the medians of the repetitions of the runs on either side, with compare's bootstrap 95 % interval";

/// One change point of a series.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The index of the first point of the new level.
    pub index: usize,
    /// The last run before the change and the first run after it.
    pub run_before: i64,
    pub run_after: i64,
    pub revision_before: Option<String>,
    pub revision_after: Option<String>,
    /// What the server ran on either side (Point::source).
    pub source_before: Option<String>,
    pub source_after: Option<String>,
    /// The medians of the repetitions of the segment before and after.
    pub median_before: f64,
    pub median_after: f64,
    /// (after − before) / before in percent, with compare's bootstrap
    /// interval (None with fewer than 2 repetitions on a side).
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// `better` or `worse` for this metric.
    pub direction: &'static str,
    /// The segmentation's statistic at this split.
    pub statistic: f64,
}

/// A case's history: the series, the floor a change must exceed, and the
/// changes found.
#[derive(Debug, Clone, Serialize)]
pub struct CaseHistory {
    pub key: CaseKey,
    /// `server mode/response — scenario · cores · load`.
    pub label: String,
    pub metric: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// The smallest change reported, percent: the larger of `--min-change`
    /// and the widest A/A noise floor of the series' runs.
    pub floor_pct: f64,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
}

impl CaseHistory {
    /// The newest run starts a change for the worse: the CI verdict.
    pub fn newest_regressed(&self) -> bool {
        self.changes
            .last()
            .is_some_and(|c| c.index + 1 == self.points.len() && c.direction == "worse")
    }

    /// Why the newest run's figures are not the work asked for: the CI
    /// gate fails on it whatever its speed, as `compare`'s does.
    pub fn newest_off(&self) -> Option<&str> {
        self.points.last()?.off.as_deref()
    }

    pub fn latest_change(&self) -> Option<&Change> {
        self.changes.last()
    }
}

/// The settings of the analysis.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// A change smaller than this percentage is not reported.
    pub min_change_pct: f64,
}

/// The change points of a series. Points whose run was off its work
/// (`Point::off`) are left out of the search: a server answering errors
/// or other bodies fast would read as a change for the better.
pub fn analyse(s: Series, settings: Settings) -> CaseHistory {
    let kept: Vec<usize> = (0..s.points.len())
        .filter(|&i| s.points[i].off.is_none())
        .collect();
    let points: Vec<&Point> = kept.iter().map(|&i| &s.points[i]).collect();
    let medians: Vec<f64> = points.iter().map(|p| p.median).collect();
    let splits = changepoint::find(&medians);
    let floor_pct = s
        .points
        .iter()
        .filter_map(|p| p.noise_floor_pct)
        .fold(settings.min_change_pct, f64::max);
    let higher = s.metric.higher_is_better();
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(splits.iter().map(|sp| sp.at));
    bounds.push(points.len());
    let pooled = |a: usize, b: usize| -> Vec<f64> {
        points[a..b]
            .iter()
            .flat_map(|p| p.values.iter().copied())
            .collect()
    };
    let mut changes = Vec::new();
    for (i, sp) in splits.iter().enumerate() {
        let (a, t, b) = (bounds[i], sp.at, bounds[i + 2]);
        let seed = fnv1a(&format!("{}|{}|{t}", s.key.label(), s.metric.as_str()));
        let Some(d) = diff(&pooled(a, t), &pooled(t, b), higher, seed) else {
            continue;
        };
        let size = d.change_pct.unwrap_or(if d.median_b == d.median_a {
            0.0
        } else {
            f64::INFINITY
        });
        if size.abs() <= floor_pct {
            continue;
        }
        let worse = (d.median_b > d.median_a) != higher;
        let (before, after) = (points[t - 1], points[t]);
        changes.push(Change {
            index: kept[t],
            run_before: before.run,
            run_after: after.run,
            revision_before: before.revision.clone(),
            revision_after: after.revision.clone(),
            source_before: before.source.clone(),
            source_after: after.source.clone(),
            median_before: d.median_a,
            median_after: d.median_b,
            change_pct: d.change_pct,
            ci_low_pct: d.ci_low_pct,
            ci_high_pct: d.ci_high_pct,
            direction: if worse { "worse" } else { "better" },
            statistic: sp.statistic,
        });
    }
    CaseHistory {
        label: s.key.label(),
        key: s.key,
        metric: s.metric.as_str(),
        unit: s.metric.label(),
        higher_is_better: higher,
        floor_pct,
        points: s.points,
        changes,
    }
}

/// The nominal false-alarm rate, for the method's line.
pub fn false_alarm_pct() -> f64 {
    FALSE_ALARM * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::series::Metric;

    fn point(run: i64, v: f64) -> Point {
        Point {
            run,
            started_at: format!("2026-01-{run:02}T00:00:00Z"),
            revision: Some(format!("rev{run}")),
            source: None,
            declared: None,
            order_key: None,
            window: None,
            median: v,
            low: v,
            high: v,
            confidence: 0.75,
            values: vec![v * 0.99, v, v * 1.01],
            noise_floor_pct: None,
            ratio: None,
            ratio_low: None,
            ratio_high: None,
            off: None,
        }
    }

    fn key() -> CaseKey {
        CaseKey {
            server: "s".into(),
            mode: "native".into(),
            response: "default".into(),
            scenario: "static".into(),
            cores: 1,
            load: "closed c=50 t=1".into(),
            host: String::new(),
            protocol: "http/1.1".into(),
            step: String::new(),
        }
    }

    #[test]
    fn a_slowdown_is_a_worse_change_with_its_revisions_and_interval() {
        let vals = [1000.0, 1004.0, 998.0, 1002.0, 999.0, 700.0, 702.0, 698.0];
        let points = vals
            .iter()
            .enumerate()
            .map(|(i, v)| point(i as i64 + 1, *v))
            .collect();
        let h = analyse(
            Series {
                key: key(),
                metric: Metric::Rps,
                points,
            },
            Settings {
                min_change_pct: 5.0,
            },
        );
        assert_eq!(h.changes.len(), 1, "{h:?}");
        let c = &h.changes[0];
        assert_eq!((c.index, c.run_before, c.run_after), (5, 5, 6));
        assert_eq!(c.revision_after.as_deref(), Some("rev6"));
        assert_eq!(c.direction, "worse");
        assert!((c.change_pct.unwrap() + 30.0).abs() < 1.0, "{c:?}");
        assert!(c.ci_high_pct.unwrap() < 0.0);
        assert!(!h.newest_regressed(), "the change began three runs ago");
    }

    /// Points of `vals`, those above 2,000 marked as failing.
    fn off_above_2000(vals: &[f64]) -> Vec<Point> {
        vals.iter()
            .enumerate()
            .map(|(i, v)| Point {
                off: (*v > 2000.0).then(|| "failed 50.0 % of its requests".into()),
                ..point(i as i64 + 1, *v)
            })
            .collect()
    }

    /// A run that answered errors fast is not a change for the better: it
    /// is kept and marked, the search runs around it, and the gate sees it
    /// when it is the newest.
    #[test]
    fn a_point_off_its_work_is_left_out_of_the_search() {
        let vals = [
            1000.0, 1001.0, 999.0, 1000.0, 1002.0, 998.0, 5000.0, 4990.0, 5010.0,
        ];
        let points = off_above_2000(&vals);
        let series = |points| Series {
            key: key(),
            metric: Metric::Rps,
            points,
        };
        let settings = Settings {
            min_change_pct: 1.0,
        };
        let h = analyse(series(points.clone()), settings);
        assert!(h.changes.is_empty(), "{:?}", h.changes);
        assert_eq!(h.points.len(), 9);
        assert_eq!(h.newest_off(), Some("failed 50.0 % of its requests"));
        // Counted, the same points are a change for the better.
        let counted = points
            .into_iter()
            .map(|p| Point { off: None, ..p })
            .collect();
        let c = analyse(series(counted), settings).changes;
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].index, c[0].direction), (6, "better"));
        // A real change after an off point is found at its own run.
        let vals = [
            1000.0, 1001.0, 999.0, 9000.0, 1000.0, 1002.0, 500.0, 499.0, 501.0,
        ];
        let points = off_above_2000(&vals);
        let c = analyse(series(points), settings).changes;
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            (c[0].index, c[0].run_before, c[0].direction),
            (6, 6, "worse")
        );
    }

    #[test]
    fn a_change_below_the_noise_floor_is_not_reported() {
        let vals = [1000.0, 1001.0, 999.0, 1000.0, 1030.0, 1031.0, 1029.0];
        let mk = |floor: Option<f64>| {
            let points = vals
                .iter()
                .enumerate()
                .map(|(i, v)| Point {
                    noise_floor_pct: floor,
                    ..point(i as i64 + 1, *v)
                })
                .collect();
            analyse(
                Series {
                    key: key(),
                    metric: Metric::Rps,
                    points,
                },
                Settings {
                    min_change_pct: 1.0,
                },
            )
        };
        assert_eq!(mk(None).changes.len(), 1);
        let quiet = mk(Some(4.0));
        assert!(quiet.changes.is_empty() && quiet.floor_pct == 4.0);
    }
}
