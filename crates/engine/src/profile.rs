//! A rate profile: stages of a constant rate or a linear ramp, planned like
//! the constant rate (k6's stages, vegeta's most asked-for feature).
//!
//! The pacer integrates the rate: with N(t) the requests due from the start
//! of the schedule until t, the j-th request (from 0) is due when
//! N(t) = j. Over a stage of length D ramping from a to b (b = a for a
//! step), at τ into it, N grows by a·τ + (b − a)·τ²/(2D), which is solved
//! for τ exactly. Each load thread takes every T-th slot, as with a
//! constant rate, and every request keeps its planned time: latency counts
//! from it, whatever the generator did.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{Nanos, NANOS_PER_SEC};
use crate::config_error::ConfigError;
use crate::pacer::Pacer;

/// One stage: `duration` long, the rate going linearly from `from` to `to`
/// requests per second (equal: a step).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateStage {
    pub duration: Duration,
    pub from: f64,
    pub to: f64,
}

impl RateStage {
    /// Requests due over the whole stage.
    pub fn requests(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.duration.as_secs_f64()
    }

    /// "10s:1k-20k" style, as given.
    pub fn label(&self) -> String {
        let d = humanize(self.duration);
        if self.from == self.to {
            format!("{d}:{}", short(self.from))
        } else {
            format!("{d}:{}-{}", short(self.from), short(self.to))
        }
    }
}

fn short(r: f64) -> String {
    if r >= 1e6 && (r / 1e6).fract() == 0.0 {
        format!("{}M", r / 1e6)
    } else if r >= 1e3 && (r / 1e3).fract() == 0.0 {
        format!("{}k", r / 1e3)
    } else {
        format!("{r}")
    }
}

fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The most requests per second a stage may ask for.
const MAX_RATE: f64 = 100_000_000.0;

pub fn validate(stages: &[RateStage]) -> Result<(), ConfigError> {
    if stages.is_empty() {
        return Err(ConfigError::new("stages", "needs at least one stage"));
    }
    for (i, s) in stages.iter().enumerate() {
        let n = i + 1;
        if s.duration.is_zero() {
            return Err(ConfigError::new(
                "stages",
                format!("stage {n}: its duration must be longer than 0"),
            ));
        }
        for r in [s.from, s.to] {
            if !r.is_finite() || r < 0.0 {
                return Err(ConfigError::new(
                    "stages",
                    format!("stage {n}: a rate must be 0 or more requests per second, got {r}"),
                ));
            }
            if r > MAX_RATE {
                return Err(ConfigError::new(
                    "stages",
                    format!("stage {n}: more than 100,000,000 requests/s is not plausible"),
                ));
            }
        }
    }
    if stages.iter().all(|s| s.requests() < 1.0) {
        return Err(ConfigError::new(
            "stages",
            "no stage plans a single request",
        ));
    }
    Ok(())
}

/// Slots of the whole schedule (warm-up included) paced by a profile.
#[derive(Debug, Clone)]
pub struct ProfilePacer {
    start: Nanos,
    worker: u64,
    workers: u64,
    /// Per stage: its start (ns from `start`), length (ns), rates, and the
    /// requests due before it.
    stages: Vec<(f64, f64, f64, f64, f64)>,
    total: f64,
}

impl ProfilePacer {
    /// `warmup`: a first stage at the first stage's starting rate.
    pub fn new(
        start: Nanos,
        worker: usize,
        workers: usize,
        warmup: Duration,
        profile: &[RateStage],
    ) -> Self {
        let mut all = Vec::with_capacity(profile.len() + 1);
        if !warmup.is_zero() {
            let r = profile.first().map_or(0.0, |s| s.from);
            all.push(RateStage {
                duration: warmup,
                from: r,
                to: r,
            });
        }
        all.extend_from_slice(profile);
        let (mut at, mut before) = (0.0, 0.0);
        let stages = all
            .iter()
            .map(|s| {
                let len = s.duration.as_nanos() as f64;
                let row = (at, len, s.from, s.to, before);
                at += len;
                before += s.requests();
                row
            })
            .collect();
        ProfilePacer {
            start,
            worker: worker as u64,
            workers: workers as u64,
            stages,
            total: before,
        }
    }

    /// Requests due from the start until `t` ns after it (N above).
    fn count_at(&self, t: f64) -> f64 {
        for &(at, len, a, b, before) in &self.stages {
            if t < at + len {
                let tau = (t - at).max(0.0) / NANOS_PER_SEC as f64;
                let d = len / NANOS_PER_SEC as f64;
                return before + a * tau + (b - a) * tau * tau / (2.0 * d);
            }
        }
        self.total
    }

    /// When (ns from the start) the `j`-th request of the schedule is due;
    /// `None` beyond the profile.
    fn time_of(&self, j: f64) -> Option<f64> {
        for &(at, len, a, b, before) in &self.stages {
            let d = len / NANOS_PER_SEC as f64;
            let here = (a + b) / 2.0 * d;
            if j < before + here {
                let n = j - before;
                let c = (b - a) / (2.0 * d);
                let tau = if c.abs() < 1e-12 {
                    n / a
                } else {
                    // c·τ² + a·τ − n = 0, the root in [0, d]; written to
                    // stay exact when a is 0 or c is small.
                    2.0 * n / (a + (a * a + 4.0 * c * n).max(0.0).sqrt())
                };
                return Some(at + (tau * NANOS_PER_SEC as f64).clamp(0.0, len));
            }
        }
        None
    }
}

impl Pacer for ProfilePacer {
    fn owner(&self) -> (u64, u64) {
        (self.worker, self.workers)
    }

    fn slot(&self, j: u64) -> Nanos {
        match self.time_of(j as f64) {
            Some(t) => self.start.saturating_add(t as Nanos),
            // Beyond the profile: never due within the run.
            None => Nanos::MAX,
        }
    }

    fn slots_before(&self, t: Nanos) -> u64 {
        if t <= self.start {
            return 0;
        }
        // Slots strictly before t: those j with due(j) < t.
        let n = self.count_at((t - self.start) as f64);
        let mut slots = n.ceil() as u64;
        // Rounding at a slot's own time: the brute count decides.
        while slots > 0
            && self
                .time_of((slots - 1) as f64)
                .is_none_or(|x| self.start + x as Nanos >= t)
        {
            slots -= 1;
        }
        while self
            .time_of(slots as f64)
            .is_some_and(|x| self.start + (x as Nanos) < t)
        {
            slots += 1;
        }
        slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NANOS_PER_SEC;

    fn stage(secs: u64, from: f64, to: f64) -> RateStage {
        RateStage {
            duration: Duration::from_secs(secs),
            from,
            to,
        }
    }

    #[test]
    fn a_step_is_the_constant_rate() {
        let p = ProfilePacer::new(1000, 0, 1, Duration::ZERO, &[stage(10, 100.0, 100.0)]);
        let c = crate::pacer::ConstantPacer::new(1000, 0, 1, 100.0);
        for i in [0, 1, 57, 999] {
            assert!(p.due(i).abs_diff(c.due(i)) <= 1, "{i}");
        }
        assert_eq!(p.due(1000), Nanos::MAX);
    }

    #[test]
    fn a_ramp_plans_its_integral_second_by_second() {
        // 0 → 1000/s over 10 s: second k holds (k + 0.5)·100 requests.
        let p = ProfilePacer::new(0, 0, 1, Duration::ZERO, &[stage(10, 0.0, 1000.0)]);
        for k in 0..10u64 {
            let n = p.due_before((k + 1) * S) - p.due_before(k * S);
            let want = (k as f64 + 0.5) * 100.0;
            assert!((n as f64 - want).abs() <= 1.0, "second {k}: {n} vs {want}");
        }
        assert_eq!(p.due_before(11 * S), 5000);
    }

    #[test]
    fn due_before_counts_exactly_across_stages_and_threads() {
        let profile = [
            stage(1, 50.0, 50.0),
            stage(2, 50.0, 250.0),
            stage(1, 0.0, 0.0),
            stage(1, 80.0, 80.0),
        ];
        for w in 0..3 {
            let p = ProfilePacer::new(0, w, 3, Duration::from_millis(500), &profile);
            for t in [
                0,
                1,
                S / 3,
                S,
                3 * S / 2,
                2 * S + 7,
                4 * S,
                4 * S + S / 2,
                6 * S,
                9 * S,
            ] {
                let brute = (0..10_000).take_while(|&i| p.due(i) < t).count() as u64;
                assert_eq!(p.due_before(t), brute, "worker {w} t={t}");
            }
        }
    }

    #[test]
    fn mistakes_are_named() {
        let e = |s: &[RateStage]| validate(s).err().unwrap().message;
        assert!(e(&[stage(0, 1.0, 1.0)]).contains("stage 1: its duration"));
        assert!(e(&[stage(1, 1.0, 1.0), stage(1, -1.0, 5.0)])
            .contains("stage 2: a rate must be 0 or more"));
        assert!(e(&[stage(1, 0.0, 0.0)]).contains("no stage plans"));
        assert_eq!(stage(30, 1000.0, 20000.0).label(), "30s:1k-20k");
    }
}

/// The pacer of a load thread: a constant rate or a profile.
#[derive(Debug, Clone)]
pub(crate) enum AnyPacer {
    Constant(crate::pacer::ConstantPacer),
    Profile(ProfilePacer),
}

impl Pacer for AnyPacer {
    #[inline]
    fn slot(&self, j: u64) -> Nanos {
        match self {
            AnyPacer::Constant(p) => p.slot(j),
            AnyPacer::Profile(p) => p.slot(j),
        }
    }

    fn slots_before(&self, t: Nanos) -> u64 {
        match self {
            AnyPacer::Constant(p) => p.slots_before(t),
            AnyPacer::Profile(p) => p.slots_before(t),
        }
    }

    #[inline]
    fn owner(&self) -> (u64, u64) {
        match self {
            AnyPacer::Constant(p) => p.owner(),
            AnyPacer::Profile(p) => p.owner(),
        }
    }
}
