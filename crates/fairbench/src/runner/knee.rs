//! Finding the knee: the highest offered rate whose latency still meets the
//! objective.
//!
//! Coarse steps multiply the rate by `factor` from `start` until a step
//! misses the objective (or `max` is reached); then `bisect` steps halve the
//! bracket [last pass, first miss]. After n bisections the knee is known to
//! within (first miss − last pass) / 2ⁿ, e.g. 1/16 of one coarse step for
//! n = 4. Latency rises steeply past saturation, so the pass/miss boundary is
//! sharp and bisection on it is stable despite noise.

#[derive(Debug, Clone)]
pub struct KneeSearch {
    factor: f64,
    max: f64,
    bisect: usize,
    phase: Phase,
    best: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Coarse { rate: f64 },
    Bisect { lo: f64, hi: f64, left: usize },
    Done,
}

impl KneeSearch {
    pub fn new(start: f64, max: f64, factor: f64, bisect: usize) -> KneeSearch {
        KneeSearch {
            factor,
            max,
            bisect,
            phase: Phase::Coarse {
                rate: start.min(max),
            },
            best: None,
        }
    }

    /// The next rate to measure, or None when the search is over.
    pub fn next(&self) -> Option<f64> {
        match self.phase {
            Phase::Coarse { rate } => Some(rate),
            Phase::Bisect { lo, hi, left } if left > 0 => Some((lo + hi) / 2.0),
            _ => None,
        }
    }

    /// Whether the step at `next()` met the objective.
    pub fn record(&mut self, passed: bool) {
        let Some(rate) = self.next() else { return };
        self.phase = match self.phase {
            Phase::Coarse { rate: r } => {
                if passed {
                    self.best = Some(r);
                    if r >= self.max {
                        Phase::Done
                    } else {
                        Phase::Coarse {
                            rate: (r * self.factor).min(self.max),
                        }
                    }
                } else {
                    match self.best {
                        Some(lo) if self.bisect > 0 => Phase::Bisect {
                            lo,
                            hi: r,
                            left: self.bisect,
                        },
                        _ => Phase::Done,
                    }
                }
            }
            Phase::Bisect { lo, hi, left } => {
                if passed {
                    self.best = Some(rate);
                }
                let (lo, hi) = if passed { (rate, hi) } else { (lo, rate) };
                if left <= 1 {
                    Phase::Done
                } else {
                    Phase::Bisect {
                        lo,
                        hi,
                        left: left - 1,
                    }
                }
            }
            Phase::Done => Phase::Done,
        };
    }

    /// The highest rate that met the objective so far.
    pub fn knee(&self) -> Option<f64> {
        self.best
    }
}

/// A knee search's latency objective: latency at `quantile` at most
/// `limit_us`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    /// e.g. 0.99
    pub quantile: f64,
    pub limit_us: u64,
}

impl Objective {
    /// `p99<=20ms`, `p99<20ms`, `p99.9<=5ms`, `p50<=800us`.
    pub fn parse(s: &str) -> Result<Objective, String> {
        let expect =
            || format!("{s:?}: expected a latency objective PERCENTILE<=DURATION, e.g. p99<=20ms");
        let (q, limit) = s
            .split_once("<=")
            .or_else(|| s.split_once('<'))
            .ok_or_else(expect)?;
        let p: f64 = q
            .trim()
            .strip_prefix('p')
            .and_then(|p| p.parse().ok())
            .ok_or_else(expect)?;
        if !(p > 0.0 && p < 100.0) {
            return Err(format!(
                "{s:?}: the percentile must be between 0 and 100, e.g. p99"
            ));
        }
        let limit = crate::args::duration(limit.trim()).map_err(|m| format!("{s:?}: {m}"))?;
        if limit.is_zero() {
            return Err(format!("{s:?}: the limit must be longer than 0"));
        }
        Ok(Objective {
            quantile: p / 100.0,
            limit_us: limit.as_micros() as u64,
        })
    }
}

/// What one constant-rate step measured, as far as the search judges it.
#[derive(Debug, Clone, Copy)]
pub struct StepFigures {
    /// Latency at the objective's quantile, from each request's planned time.
    pub at_quantile_us: u64,
    /// Requests of the step not answered with an expected status.
    pub errors: u64,
    /// Answered per second.
    pub rps: f64,
    /// The generator's own send lateness, p99.
    pub lateness_p99_us: u64,
}

/// The judgement of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    Met,
    Missed,
    /// Not counted: measure this rate once more.
    Again,
}

/// A knee search with the sweep's honesty rules, shared by the `sweep`
/// suites and `load --knee`. A step meets the objective only when its
/// latency at the quantile is within the limit, no request failed, and at
/// least 90 % of the offered rate was answered (a server that sheds load
/// fast must not look fast). When the generator itself fell behind its
/// schedule (send lateness p99 over 1 ms) the whole machine stalled — it
/// shares the kernel and, in a VM, the hypervisor with the server — so a
/// miss then says nothing about the server: that rate is measured once
/// more before a miss counts.
#[derive(Debug, Clone)]
pub struct KneeSweep {
    search: KneeSearch,
    pub objective: Objective,
    remeasured: Option<f64>,
}

/// Lateness past which a miss is measured again.
const STALLED_US: u64 = 1_000;

impl KneeSweep {
    pub fn new(search: KneeSearch, objective: Objective) -> KneeSweep {
        KneeSweep {
            search,
            objective,
            remeasured: None,
        }
    }

    /// The next rate to measure, or None when the search is over.
    pub fn next(&self) -> Option<f64> {
        self.search.next()
    }

    /// Judges the step measured at `next()`, and moves the search on
    /// unless the step is to be measured again.
    pub fn judge(&mut self, f: &StepFigures) -> Judged {
        let Some(rate) = self.search.next() else {
            return Judged::Missed;
        };
        let passed =
            f.at_quantile_us <= self.objective.limit_us && f.errors == 0 && f.rps >= 0.9 * rate;
        if !passed && f.lateness_p99_us > STALLED_US && self.remeasured != Some(rate) {
            self.remeasured = Some(rate);
            return Judged::Again;
        }
        self.search.record(passed);
        if passed {
            Judged::Met
        } else {
            Judged::Missed
        }
    }

    /// The highest rate that met the objective so far.
    pub fn knee(&self) -> Option<f64> {
        self.search.knee()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_and_bad_ones_say_why() {
        assert_eq!(
            Objective::parse("p99<=20ms").unwrap(),
            Objective {
                quantile: 0.99,
                limit_us: 20_000
            }
        );
        assert_eq!(Objective::parse("p99.9<5ms").unwrap().limit_us, 5_000);
        for bad in ["p99", "q99<1ms", "p100<1ms", "p99<soon", "p99<0ms"] {
            let e = Objective::parse(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn the_honesty_rules() {
        let o = Objective::parse("p99<=10ms").unwrap();
        let step = |q: u64, errors: u64, rps: f64, late: u64| StepFigures {
            at_quantile_us: q,
            errors,
            rps,
            lateness_p99_us: late,
        };
        let mut k = KneeSweep::new(KneeSearch::new(100.0, 1_000.0, 2.0, 0), o);
        assert_eq!(k.judge(&step(5_000, 0, 100.0, 0)), Judged::Met);
        // 200 offered, 150 answered: fast, but it shed a quarter.
        assert_eq!(k.next(), Some(200.0));
        let mut again = k.clone();
        assert_eq!(k.judge(&step(5_000, 0, 150.0, 0)), Judged::Missed);
        assert_eq!(k.knee(), Some(100.0));
        // An error fails a step too.
        let mut e = KneeSweep::new(KneeSearch::new(100.0, 1_000.0, 2.0, 0), o);
        assert_eq!(e.judge(&step(5_000, 1, 100.0, 0)), Judged::Missed);
        // A stalled generator: measured once more, then it counts.
        assert_eq!(again.judge(&step(50_000, 0, 200.0, 5_000)), Judged::Again);
        assert_eq!(again.next(), Some(200.0));
        assert_eq!(again.judge(&step(50_000, 0, 200.0, 5_000)), Judged::Missed);
    }

    fn search(capacity: f64, start: f64, max: f64) -> (Option<f64>, usize) {
        let mut k = KneeSearch::new(start, max, 2.0, 4);
        let mut steps = 0;
        while let Some(r) = k.next() {
            k.record(r <= capacity);
            steps += 1;
            assert!(steps < 100);
        }
        (k.knee(), steps)
    }

    #[test]
    fn finds_the_capacity_within_a_sixteenth_of_a_step() {
        // Coarse 1000, 2000, 4000 (miss); bisect in [2000, 4000]: ±125.
        let (knee, steps) = search(3_700.0, 1_000.0, 1_000_000.0);
        let knee = knee.unwrap();
        assert!(knee <= 3_700.0 && knee > 3_700.0 - 2_000.0 / 16.0, "{knee}");
        assert_eq!(steps, 3 + 4);
    }

    #[test]
    fn nothing_meets_the_objective() {
        assert_eq!(search(500.0, 1_000.0, 10_000.0).0, None);
    }

    #[test]
    fn everything_meets_it_up_to_max() {
        assert_eq!(search(1e9, 1_000.0, 5_000.0).0, Some(5_000.0));
    }
}
