//! The body sizes of the answers a run credited as successes.
//!
//! A server that answers some requests with less (an empty 200, a short
//! "busy" page under load) does less work for them and looks faster for
//! it, while every answer counts and its status says success. The engine
//! does not read bodies, but it counts their bytes as it frames them
//! (HTTP/1.1: `Content-Length`, chunk data or bytes until the close; h2
//! and h3: DATA bytes), so each run knows how many answers carried each
//! size.
//!
//! A fixed endpoint answers with one size (or a few, a date header's width
//! aside: bodies do not carry one); an endpoint whose bodies vary by design
//! shows many. The rule for a warning ([`BodySizes::short`]): more than
//! [`DISTINCT`] sizes means varied by design and no warning; otherwise the
//! answers whose body is under half the largest are *short*, and a share
//! over [`SHORT_SHARE`] of the answers is named.

use std::collections::BTreeMap;

/// The most distinct sizes counted one by one; answers of any further size
/// are counted together (`other`) with the range of all.
pub const DISTINCT: usize = 16;

/// The share of short answers above which a run is warned about.
pub const SHORT_SHARE: f64 = 0.01;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BodySizes {
    /// Answers per body size in bytes, for the first [`DISTINCT`] sizes seen.
    #[serde(default, with = "crate::status::keys_as_strings")]
    pub counts: BTreeMap<u64, u64>,
    /// Answers whose size came after those.
    #[serde(default)]
    pub other: u64,
    /// The smallest and largest body of all (0 and 0 with no answer).
    #[serde(default)]
    pub min: u64,
    #[serde(default)]
    pub max: u64,
}

/// Answers with a body under half the largest one (see the module).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShortBodies {
    pub short: u64,
    pub answers: u64,
    /// The largest of the short bodies, and the largest of all.
    pub short_max: u64,
    pub max: u64,
}

impl ShortBodies {
    pub fn share(&self) -> f64 {
        self.short as f64 / self.answers.max(1) as f64
    }
}

impl BodySizes {
    #[inline]
    pub fn record(&mut self, bytes: u64) {
        self.add(bytes, 1);
    }

    fn add(&mut self, bytes: u64, n: u64) {
        if self.counts.is_empty() && self.other == 0 {
            self.min = bytes;
            self.max = bytes;
        } else {
            self.min = self.min.min(bytes);
            self.max = self.max.max(bytes);
        }
        if let Some(c) = self.counts.get_mut(&bytes) {
            *c += n;
        } else if self.counts.len() < DISTINCT {
            self.counts.insert(bytes, n);
        } else {
            self.other += n;
        }
    }

    pub fn merge(&mut self, o: &BodySizes) {
        if o.total() == 0 {
            return;
        }
        for (&bytes, &n) in &o.counts {
            self.add(bytes, n);
        }
        if o.other > 0 {
            self.other += o.other;
            self.min = self.min.min(o.min);
            self.max = self.max.max(o.max);
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum::<u64>() + self.other
    }

    /// The answers whose body was not `bytes` long.
    pub fn other_than(&self, bytes: u64) -> u64 {
        self.total() - self.counts.get(&bytes).copied().unwrap_or(0)
    }

    /// Every answer carried the same number of bytes.
    pub fn uniform(&self) -> bool {
        self.min == self.max
    }

    /// The most common size (the smaller on a tie); `None` with no answer.
    pub fn mode(&self) -> Option<u64> {
        let mut best: Option<(u64, u64)> = None;
        for (&bytes, &n) in &self.counts {
            if best.is_none_or(|(_, m)| n > m) {
                best = Some((bytes, n));
            }
        }
        best.map(|(b, _)| b)
    }

    /// The short answers, when the sizes are few enough to be fixed by
    /// the endpoint and some are under half the largest; `None` otherwise.
    pub fn short(&self) -> Option<ShortBodies> {
        if self.other > 0 || self.max == 0 {
            return None;
        }
        let half = self.max / 2 + self.max % 2;
        let short: Vec<(u64, u64)> = self
            .counts
            .iter()
            .filter(|(&b, _)| b < half)
            .map(|(&b, &n)| (b, n))
            .collect();
        let n: u64 = short.iter().map(|(_, n)| n).sum();
        (n > 0).then(|| ShortBodies {
            short: n,
            answers: self.total(),
            short_max: short.iter().map(|(b, _)| *b).max().unwrap_or(0),
            max: self.max,
        })
    }

    /// Short answers over [`SHORT_SHARE`] of them.
    pub fn short_enough_to_warn(&self) -> Option<ShortBodies> {
        self.short().filter(|s| s.share() > SHORT_SHARE)
    }

    /// "13 B ×26,320, 0 B ×13,161": the sizes, most answers first, and
    /// the answers of other sizes with the range of all.
    pub fn describe(&self, count: impl Fn(u64) -> String) -> String {
        let mut sizes: Vec<(u64, u64)> = self.counts.iter().map(|(&b, &n)| (b, n)).collect();
        sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut parts: Vec<String> = sizes
            .iter()
            .take(4)
            .map(|(b, n)| format!("{} B ×{}", count(*b), count(*n)))
            .collect();
        let rest: u64 = sizes.iter().skip(4).map(|(_, n)| n).sum::<u64>() + self.other;
        if rest > 0 {
            parts.push(format!("{} of other sizes", count(rest)));
        }
        format!(
            "{} (from {} to {} B)",
            parts.join(", "),
            count(self.min),
            count(self.max)
        )
    }
}

impl BodySizes {
    /// A warning when answers carried a body of another size than
    /// `expected`, the one every correct answer has (a scenario of a
    /// fixed body, its size proved before the load): those answers did
    /// other work than the one measured. Quiet when the short answers
    /// were already named ([`Self::short_enough_to_warn`]).
    pub fn warn_unlike(&self, expected: u64) -> Option<String> {
        let off = self.other_than(expected);
        if off == 0 || self.short_enough_to_warn().is_some() {
            return None;
        }
        Some(format!(
            "{off} of {} answers with an expected status ({:.2}%) carried a body other than the {expected} B the check proved before the load (sizes: {}): the server did other work for those, and its throughput and latency are those of the mix",
            self.total(),
            100.0 * off as f64 / self.total() as f64,
            self.describe(|n| n.to_string())
        ))
    }
}

impl crate::Outcome {
    /// Successes whose bodies were short of the others' (see
    /// [`crate::bodies`]): per target when there are several, whose
    /// bodies may differ by design.
    pub(crate) fn warn_bodies(&self, w: &mut Vec<String>) {
        let parts: Vec<(Option<&str>, &BodySizes)> = if self.targets.is_empty() {
            vec![(None, &self.body_sizes)]
        } else {
            let named = self
                .targets
                .iter()
                .map(|t| (Some(t.name.as_str()), &t.body_sizes));
            named.collect()
        };
        for (name, sizes) in parts {
            let Some(s) = sizes.short_enough_to_warn() else {
                continue;
            };
            w.push(format!(
                "{} of {} answers{} with an expected status ({:.1}%) carried a body under half the largest ({} against {} B): unless the endpoint's bodies vary by design, the server answered those requests with less (an empty or error page), and its throughput and latency are those of the mix",
                s.short,
                s.answers,
                name.map(|n| format!(" of target {n}")).unwrap_or_default(),
                s.share() * 100.0,
                if s.short_max == 0 {
                    "empty".to_string()
                } else {
                    format!("at most {} B", s.short_max)
                },
                s.max
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_of_another_size_than_the_proved_one_are_named() {
        assert_eq!(sizes(&[(13, 500)]).warn_unlike(13), None);
        let w = sizes(&[(13, 495), (14, 5)]).warn_unlike(13).unwrap();
        assert!(w.starts_with("5 of 500 answers"), "{w}");
        assert!(
            w.contains("(1.00%)") && w.contains("the 13 B the check"),
            "{w}"
        );
        assert!(w.contains("14 B ×5"), "{w}");
        // Every answer of one other size: no short ones, still named.
        let w = sizes(&[(20, 100)]).warn_unlike(13).unwrap();
        assert!(w.starts_with("100 of 100 answers"), "{w}");
        // Short answers over the share already warn; not twice.
        assert_eq!(sizes(&[(13, 50), (0, 50)]).warn_unlike(13), None);
    }

    fn sizes(v: &[(u64, u64)]) -> BodySizes {
        let mut s = BodySizes::default();
        for &(b, n) in v {
            for _ in 0..n {
                s.record(b);
            }
        }
        s
    }

    #[test]
    fn one_size_is_uniform_and_never_short() {
        let s = sizes(&[(13, 1000)]);
        assert!(s.uniform());
        assert_eq!(s.mode(), Some(13));
        assert_eq!(s.short(), None);
    }

    #[test]
    fn empty_answers_beside_full_ones_are_short() {
        let s = sizes(&[(13, 990), (0, 10)]);
        let short = s.short().unwrap();
        assert_eq!(
            (short.short, short.answers, short.short_max, short.max),
            (10, 1000, 0, 13)
        );
        assert_eq!(s.short_enough_to_warn(), None, "1 % is not over 1 %");
        let s = sizes(&[(13, 980), (4, 20)]);
        assert_eq!(s.short_enough_to_warn().unwrap().short, 20);
    }

    #[test]
    fn sizes_within_half_of_the_largest_are_not_short() {
        // A body that varies a little (a counter's digits) is not a fault.
        assert_eq!(sizes(&[(100, 500), (51, 500), (99, 3)]).short(), None);
        assert_eq!(sizes(&[(100, 500), (49, 500)]).short().unwrap().short, 500);
        // Odd: under half of 13 is 6 and less.
        assert_eq!(sizes(&[(13, 5), (7, 5)]).short(), None);
        assert_eq!(sizes(&[(13, 5), (6, 5)]).short().unwrap().short, 5);
    }

    #[test]
    fn many_sizes_are_varied_by_design_and_kept_in_bounds() {
        let mut s = BodySizes::default();
        for b in 0..1000u64 {
            s.record(b);
        }
        assert_eq!(s.counts.len(), DISTINCT);
        assert_eq!(s.total(), 1000);
        assert_eq!((s.min, s.max), (0, 999));
        assert_eq!(s.short(), None);
    }

    #[test]
    fn merged_counts_are_the_sum_and_keep_the_range() {
        let mut a = sizes(&[(13, 5), (0, 1)]);
        let mut wide = BodySizes::default();
        for b in 100..200u64 {
            wide.record(b);
        }
        a.merge(&sizes(&[(13, 2)]));
        assert_eq!(a.counts[&13], 7);
        a.merge(&wide);
        assert_eq!(a.total(), 108);
        assert_eq!((a.min, a.max), (0, 199));
        assert!(a.other > 0);
        let mut none = BodySizes::default();
        none.merge(&BodySizes::default());
        assert_eq!(none.total(), 0);
        none.merge(&a);
        assert_eq!(none, a);
    }

    #[test]
    fn described_most_answers_first() {
        let s = sizes(&[(0, 3), (13, 7)]);
        assert_eq!(
            s.describe(|n| n.to_string()),
            "13 B ×7, 0 B ×3 (from 0 to 13 B)"
        );
    }
}
