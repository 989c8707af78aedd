//! The order of cases within a repetition.
//!
//! `interleave = "repetition"` (the default) runs each repetition's cases in
//! matrix order: repetitions are the outer loop, so drift between
//! repetitions spreads over every server, but within a repetition the first
//! server always runs first. `interleave = "case"` shuffles the cases once
//! with a recorded seed and rotates that order by one place each
//! repetition, so over k repetitions every case runs once in each of the k
//! positions: a drift within repetitions (a warming machine, a neighbour
//! waking up) falls on every server alike instead of lining up with one.

use serde::Serialize;

use crate::seeded::SplitMix64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Interleave {
    /// Repetitions outermost, cases in matrix order within each.
    Repetition,
    /// Repetitions outermost, cases in a seeded shuffle rotated each repetition.
    Case,
}

impl Interleave {
    pub fn parse(s: &str) -> Option<Interleave> {
        match s {
            "repetition" => Some(Interleave::Repetition),
            "case" => Some(Interleave::Case),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Interleave::Repetition => "repetition",
            Interleave::Case => "case",
        }
    }
}

/// The positions, in matrix order, of the `k` cases of `repetition`
/// (1-based) as they are to run.
pub fn case_order(k: usize, repetition: usize, seed: u64) -> Vec<usize> {
    let mut base: Vec<usize> = (0..k).collect();
    let mut rng = SplitMix64::new(seed);
    // Fisher–Yates.
    for i in (1..k).rev() {
        base.swap(i, rng.below(i + 1));
    }
    if k > 0 {
        base.rotate_left((repetition.saturating_sub(1)) % k);
    }
    base
}

/// A fresh seed for a run that asked for interleaving without one: the
/// clock and the process id, so two runs started together still differ.
/// TOML integers are signed, so it stays below 2^63.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut rng = SplitMix64::new(nanos ^ ((std::process::id() as u64) << 32));
    rng.next_u64() >> 1
}

/// How the stored suite ordered its cases, for reports: one line.
pub fn describe_stored(suite_toml: &str) -> String {
    let table: toml::Table = suite_toml.parse().unwrap_or_default();
    let mode = table
        .get("interleave")
        .and_then(toml::Value::as_str)
        .and_then(Interleave::parse)
        .unwrap_or(Interleave::Repetition);
    match mode {
        Interleave::Repetition => "repetitions outermost; cases in matrix order within each".into(),
        Interleave::Case => format!(
            "repetitions outermost; cases shuffled (seed {}) and rotated one place each repetition",
            table
                .get("interleave_seed")
                .and_then(toml::Value::as_integer)
                .map(|s| s.to_string())
                .unwrap_or_else(|| "not recorded".into())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_reproducible_from_its_seed() {
        let a: Vec<Vec<usize>> = (1..=4).map(|r| case_order(6, r, 42)).collect();
        let b: Vec<Vec<usize>> = (1..=4).map(|r| case_order(6, r, 42)).collect();
        assert_eq!(a, b);
        // A known order, so a change of generator or algorithm shows.
        assert_eq!(case_order(6, 1, 42), [4, 3, 0, 2, 5, 1]);
        assert_eq!(case_order(6, 2, 42), [3, 0, 2, 5, 1, 4], "rotated by one");
        let other: Vec<Vec<usize>> = (1..=4).map(|r| case_order(6, r, 43)).collect();
        assert_ne!(a, other, "another seed, another order");
        for o in &a {
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, (0..6).collect::<Vec<_>>(), "a permutation: {o:?}");
        }
    }

    #[test]
    fn over_k_repetitions_every_case_takes_every_position() {
        for k in 1..=7 {
            let mut seen = vec![vec![0usize; k]; k];
            for rep in 1..=k {
                for (pos, case) in case_order(k, rep, 7).into_iter().enumerate() {
                    seen[case][pos] += 1;
                }
            }
            assert!(seen.iter().flatten().all(|&n| n == 1), "k = {k}: {seen:?}");
        }
        // Two cases (an A/A pair): they alternate.
        let firsts: Vec<usize> = (1..=4).map(|r| case_order(2, r, 9)[0]).collect();
        assert_ne!(firsts[0], firsts[1]);
        assert_eq!(firsts[0], firsts[2]);
        assert_eq!(case_order(0, 3, 1), Vec::<usize>::new());
    }

    #[test]
    fn seeds_fit_toml_and_stored_orders_describe_themselves() {
        assert!(fresh_seed() < 1 << 63);
        assert!(describe_stored("name = \"x\"").contains("matrix order"));
        assert!(describe_stored("interleave = \"case\"\ninterleave_seed = 17").contains("seed 17"));
    }
}
