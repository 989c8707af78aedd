//! The server's silences: stretches of the measured window in which no
//! answer came at all.
//!
//! A closed loop sends a connection's next request only when its answer
//! has come, so while a server answers nothing for S seconds only the c
//! requests then in flight wait on it, and each is one latency among
//! millions. At its throughput X a client sending on its own schedule would
//! have had about X·S requests caught by the stall, waiting S/2 on average
//! (coordinated omission): a 1 s stall in a 6 s run at 17,000 requests/s
//! over 10 connections is 10 latencies of 100,000, and not even the p99.9
//! moves. What the stall cannot hide is the answers' arrival times: none
//! arrive. So each load thread notes the gaps between the arrivals of its
//! answers, and a silence of the run is a stretch in which no thread got
//! one: the intersection of the threads' gaps, which [`Silences::merge`]
//! takes.
//!
//! Gaps shorter than [`MIN_GAP`] are not kept: a gap of the run lies within
//! a gap of every thread, so the run's silences of at least `MIN_GAP` are
//! all found, exactly. A thread keeps at most [`MAX_GAPS`] (a slow server
//! over one connection gaps between every pair of answers); past that the
//! list is marked `truncated` and its silences are a lower bound.

use serde::{Deserialize, Serialize};

use crate::clock::{Nanos, NANOS_PER_SEC};

/// The shortest gap kept.
pub const MIN_GAP: Nanos = 20_000_000;

/// Gaps kept per load thread.
pub const MAX_GAPS: usize = 1 << 16;

/// Stretches of the window without an answer, each `[from, to)` in
/// nanoseconds from the window's start, sorted and disjoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Silences {
    pub gaps: Vec<[u64; 2]>,
    /// Some thread had more gaps than it keeps: silences may be missing.
    #[serde(default)]
    pub truncated: bool,
}

impl Silences {
    /// The stretches in which none of the parts got an answer (their
    /// windows started together). No parts, no silence.
    pub fn merge<'a>(mut parts: impl Iterator<Item = &'a Silences>) -> Silences {
        let Some(first) = parts.next() else {
            return Silences::default();
        };
        parts.fold(first.clone(), |acc, s| Silences {
            gaps: intersect(&acc.gaps, &s.gaps),
            truncated: acc.truncated || s.truncated,
        })
    }

    /// Takes out the stretches in which the generator itself did not run
    /// (`crate::stall`, relative to the window): no answer was read then
    /// whatever the server did, so those are not the server's silences.
    pub fn without(&mut self, stalls: &[[u64; 2]]) {
        let mut out = Vec::new();
        for g in &self.gaps {
            let mut from = g[0];
            for s in stalls.iter().filter(|s| s[1] > g[0] && s[0] < g[1]) {
                if s[0] >= from + MIN_GAP {
                    out.push([from, s[0]]);
                }
                from = from.max(s[1]);
            }
            if g[1] >= from + MIN_GAP {
                out.push([from, g[1]]);
            }
        }
        self.gaps = out;
    }

    /// The longest silence: where it began and how long it was, seconds.
    pub fn longest(&self) -> Option<(f64, f64)> {
        self.gaps
            .iter()
            .max_by_key(|g| g[1] - g[0])
            .map(|g| (secs(g[0]), secs(g[1] - g[0])))
    }

    /// All silences of at least `min` seconds: how many and their total.
    pub fn at_least(&self, min: f64) -> (usize, f64) {
        self.gaps
            .iter()
            .map(|g| secs(g[1] - g[0]))
            .filter(|&d| d >= min)
            .fold((0, 0.0), |(n, t), d| (n + 1, t + d))
    }
}

/// A closed-loop silence is said out loud from this long, or four times
/// the answered p99 if that is longer: a server whose every answer is slow
/// leaves gaps as long as its latency, which the percentiles already show.
pub const WARN_FROM_S: f64 = 0.05;

impl Silences {
    /// The closed loop's loud line for its silences, if its percentiles
    /// hide them: the longest at least [`WARN_FROM_S`] and four times
    /// `p99_s` (the run's latency p99). A client sending on its own schedule at the run's `rps`
    /// would have had `rps · Σ Sᵢ` requests due during silences of lengths
    /// `Sᵢ`, each held up until the silence ended: `Sᵢ / 2` on average, so
    /// `Σ Sᵢ² / (2 Σ Sᵢ)` over them all. `generator_waited_s`: how long
    /// the busiest load thread was ready to run but held off its CPU (by
    /// another process or a quota) in the window; a thread held off reads
    /// nothing, so from a tenth of the longest silence the line says that
    /// a silence may be partly the generator's own.
    pub fn warning(&self, p99_s: f64, rps: f64, generator_waited_s: f64) -> Option<String> {
        let from = WARN_FROM_S.max(4.0 * p99_s);
        let (at, longest) = self.longest().filter(|&(_, d)| d >= from)?;
        let long: Vec<f64> = self
            .gaps
            .iter()
            .map(|g| secs(g[1] - g[0]))
            .filter(|&d| d >= from)
            .collect();
        let total: f64 = long.iter().sum();
        let mean_wait = long.iter().map(|d| d * d).sum::<f64>() / (2.0 * total);
        let lower = if self.truncated { "at least " } else { "" };
        let own = if generator_waited_s >= 0.1 * longest {
            format!("; a load thread was itself held off its CPU {generator_waited_s:.3} s in the window, and reads nothing then, so part of a silence may be the generator's own")
        } else {
            String::new()
        };
        Some(format!(
            "the server answered nothing for {longest:.3} s from {at:.3} s into the window ({lower}{n} silence{s} of {from_ms:.0} ms or more, {total:.3} s in all) while requests waited on it: a closed loop sends nothing new meanwhile, so only the requests in flight carry a silence and the percentiles hide it (p99 {p99_ms:.3} ms: coordinated omission); at this run's {rps:.0} requests/s a client sending on its own schedule would have had about {due:.0} requests due during them, held up {mean_wait:.3} s on average: measure at a constant rate to charge it to them{own}",
            n = long.len(),
            s = if long.len() == 1 { "" } else { "s" },
            from_ms = from * 1e3,
            p99_ms = p99_s * 1e3,
            due = rps * total,
        ))
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / NANOS_PER_SEC as f64
}

/// The stretches in both lists (each sorted and disjoint), of at least
/// `MIN_GAP`.
fn intersect(a: &[[u64; 2]], b: &[[u64; 2]]) -> Vec<[u64; 2]> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let from = a[i][0].max(b[j][0]);
        let to = a[i][1].min(b[j][1]);
        if to >= from + MIN_GAP {
            out.push([from, to]);
        }
        if a[i][1] < b[j][1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// One load thread's watch on its answers' arrivals.
pub(crate) struct SilenceWatch {
    start: Nanos,
    end: Nanos,
    /// The latest arrival so far (the window's start before the first).
    last: Nanos,
    gaps: Vec<[Nanos; 2]>,
    truncated: bool,
}

impl SilenceWatch {
    pub fn new(measure_start: Nanos, window_end: Nanos) -> Self {
        SilenceWatch {
            start: measure_start,
            end: window_end,
            last: measure_start,
            gaps: Vec::new(),
            truncated: false,
        }
    }

    /// The window ends at `end` at the latest (a request budget used up).
    pub fn close_window(&mut self, end: Nanos) {
        self.end = self.end.min(end);
    }

    /// An answer's last byte arrived at `at`.
    #[inline]
    pub fn answer(&mut self, at: Nanos) {
        if at < self.start || at >= self.end {
            return;
        }
        if at > self.last {
            let from = self.last;
            self.last = at;
            self.gap(from, at);
        } else if let Some(&[from, to]) = self.gaps.last() {
            // Answers read late are timed by the kernel's stamps, which
            // come out of order across connections: one may fall in the
            // last gap noted, which it splits.
            if at > from && at < to {
                self.gaps.pop();
                self.gap(from, at);
                self.gap(at, to);
            }
        }
    }

    fn gap(&mut self, from: Nanos, to: Nanos) {
        if to < from + MIN_GAP {
            return;
        }
        if self.gaps.len() < MAX_GAPS {
            self.gaps.push([from, to]);
        } else {
            self.truncated = true;
        }
    }

    /// The window is over: the gap from the last answer to its end counts.
    pub fn finish(&mut self) -> Silences {
        if self.end > self.last {
            self.gap(self.last, self.end);
            self.last = self.end;
        }
        let start = self.start;
        Silences {
            gaps: std::mem::take(&mut self.gaps)
                .into_iter()
                .map(|[a, b]| [a - start, b - start])
                .collect(),
            truncated: self.truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generator's stalls are cut out of the server's silences; what
    /// is left of a silence counts only if still long enough.
    #[test]
    fn a_stall_of_the_generator_is_no_silence_of_the_servers() {
        let mut s = Silences {
            gaps: vec![[100 * MS, 1100 * MS], [2000 * MS, 2100 * MS]],
            truncated: false,
        };
        s.without(&[[110 * MS, 1090 * MS], [2050 * MS, 2060 * MS]]);
        assert_eq!(s.gaps, vec![[2000 * MS, 2050 * MS], [2060 * MS, 2100 * MS]]);
        s.without(&[]);
        assert_eq!(s.gaps.len(), 2);
    }

    const MS: Nanos = 1_000_000;

    fn watch(answers: &[u64], end_ms: u64) -> Silences {
        let mut w = SilenceWatch::new(1000 * MS, (1000 + end_ms) * MS);
        for &a in answers {
            w.answer((1000 + a) * MS);
        }
        w.finish()
    }

    #[test]
    fn a_thread_notes_its_gaps_from_the_windows_start_to_its_end() {
        let s = watch(&[5, 10, 500, 510, 900], 1000);
        assert_eq!(
            s.gaps,
            vec![
                [10 * MS, 500 * MS],
                [510 * MS, 900 * MS],
                [900 * MS, 1000 * MS]
            ]
        );
        assert_eq!(s.longest(), Some((0.01, 0.49)));
        let (n, total) = s.at_least(0.2);
        assert_eq!(n, 2);
        assert!((total - 0.88).abs() < 1e-9);
    }

    #[test]
    fn a_thread_without_answers_was_silent_all_window() {
        assert_eq!(watch(&[], 300).gaps, vec![[0, 300 * MS]]);
    }

    #[test]
    fn an_answer_stamped_out_of_order_splits_the_gap_it_falls_in() {
        let s = watch(&[0, 200, 100, 300], 300);
        assert_eq!(
            s.gaps,
            vec![[0, 100 * MS], [100 * MS, 200 * MS], [200 * MS, 300 * MS]]
        );
    }

    /// Answers every 10 ms of `[0, end_ms]`, but none strictly inside the
    /// stretches given.
    fn steady_except(quiet: &[(u64, u64)], end_ms: u64) -> Vec<u64> {
        let mut at: Vec<u64> = (0..=end_ms / 10)
            .map(|i| i * 10)
            .filter(|&t| !quiet.iter().any(|&(a, b)| t > a && t < b))
            .collect();
        at.extend(quiet.iter().flat_map(|&(a, b)| [a, b]));
        at.sort_unstable();
        at
    }

    #[test]
    fn a_run_is_silent_only_where_every_thread_was() {
        // One thread is without answers 100–600 ms, the other 400–900 ms:
        // no answer came 400–600 ms.
        let a = watch(&steady_except(&[(100, 600)], 1000), 1000);
        let b = watch(&steady_except(&[(400, 900)], 1000), 1000);
        assert_eq!(a.gaps, vec![[100 * MS, 600 * MS]]);
        let m = Silences::merge([&a, &b].into_iter());
        assert_eq!(m.gaps, vec![[400 * MS, 600 * MS]]);
        // A thread that answered steadily throughout silences nothing.
        let c = watch(&steady_except(&[], 1000), 1000);
        assert!(Silences::merge([&a, &b, &c].into_iter()).gaps.is_empty());
        assert_eq!(Silences::merge(std::iter::empty()), Silences::default());
    }

    #[test]
    fn the_closed_loop_is_warned_of_silences_its_percentiles_hide() {
        // Silences of 1 s and 0.5 s in a 3 s window.
        let s = watch(&steady_except(&[(1000, 2000), (2500, 3000)], 3000), 3000);
        let w = s.warning(0.005, 10_000.0, 0.099).expect("a warning");
        assert!(w.starts_with("the server answered nothing for 1.000 s from 1.000 s into the window (2 silences of 50 ms or more, 1.500 s in all)"), "{w}");
        // 10,000/s × 1.5 s due; mean hold (1 + 0.25)/(2 × 1.5) = 0.417 s.
        assert!(
            w.contains("about 15000 requests due during them, held up 0.417 s"),
            "{w}"
        );
        // A load thread held off its CPU a tenth of the longest silence or
        // more may have made part of it.
        assert!(!w.contains("generator's own"), "{w}");
        let own = s.warning(0.005, 10_000.0, 0.1).unwrap();
        assert!(
            own.contains("held off its CPU 0.100 s in the window"),
            "{own}"
        );
        assert!(
            own.ends_with("part of a silence may be the generator's own"),
            "{own}"
        );
        // Gaps no longer than four times the p99 are the latency itself.
        assert_eq!(s.warning(0.26, 10_000.0, 0.0), None);
        // Under 50 ms, whatever the p99.
        assert_eq!(watch(&[0, 40, 80], 80).warning(0.001, 1.0, 0.0), None);
    }

    #[test]
    fn short_gaps_are_not_kept_and_too_many_are_marked() {
        let s = watch(&[0, 15, 30], 40);
        assert!(s.gaps.is_empty(), "{s:?}");
        let mut w = SilenceWatch::new(0, u64::MAX / 2);
        for i in 0..=(MAX_GAPS as u64 + 1) {
            w.answer(i * 2 * MIN_GAP);
        }
        let s = w.finish();
        assert_eq!(s.gaps.len(), MAX_GAPS);
        assert!(s.truncated);
    }
}
