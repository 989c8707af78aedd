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

#[cfg(test)]
mod tests {
    use super::*;

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
