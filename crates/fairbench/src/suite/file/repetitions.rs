//! How many repetitions a suite or `load --vs` asks for: a fixed count,
//! or a precision to reach with at most so many (`until:3%,max:20`), and
//! the fixed grid of looks the precision is checked at. The stopping
//! rule and why it keeps its coverage: `runner::stopping`.

use crate::args::bounds::{self, MAX_REPETITIONS};

/// The first look: two repetitions give a t-interval with one degree of
/// freedom, too wide at any spent level to settle anything.
const FIRST_LOOK: usize = 3;

/// How far apart the looks are, as a factor.
const LOOK_GROWTH: f64 = 1.4;

/// The maximum when none is asked for.
const DEFAULT_MAX: usize = 20;

/// `M` of `max:M` or `or M`: a whole number from the first look on.
fn parse_max(n: &str) -> Result<usize, String> {
    n.trim()
        .parse::<usize>()
        .ok()
        .filter(|m| (FIRST_LOOK..=MAX_REPETITIONS).contains(m))
        .ok_or_else(|| {
            format!(
                "max {}: expected a whole number from {FIRST_LOOK} to {MAX_REPETITIONS}",
                n.trim()
            )
        })
}

/// How many repetitions, as asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repetitions {
    Fixed(usize),
    /// Until every ratio is within ±`half_width_pct` % (or its verdict is
    /// settled), at most `max` repetitions.
    Until {
        half_width_pct: f64,
        max: usize,
    },
}

impl Repetitions {
    /// What [`Repetitions::parse`] takes, for error messages.
    pub const EXPECTED: &'static str =
        "a count (e.g. 5), until:PRECISION%,max:N (e.g. until:3%,max:20) or \"until ±3 % or 20\"";

    /// `N`, or `until:H%,max:M` (also `until:H%` with max 20), or the
    /// same said as a suite file may say it: `until ±H % or M`.
    pub fn parse(s: &str) -> Result<Repetitions, String> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("until").filter(|r| !r.starts_with(':')) {
            return Repetitions::parse_human(rest);
        }
        let Some(rest) = s.strip_prefix("until:") else {
            return bounds::repetitions(s)
                .map(Repetitions::Fixed)
                .map_err(|e| format!("{e}; expected {}", Repetitions::EXPECTED));
        };
        let mut parts = rest.split(',');
        let pct = parts.next().unwrap_or("").trim();
        let half_width_pct = pct
            .strip_suffix('%')
            .and_then(|p| p.trim().parse::<f64>().ok())
            .filter(|p| p.is_finite() && *p > 0.0 && *p < 100.0)
            .ok_or_else(|| {
                format!("{pct:?}: expected a precision in percent above 0, e.g. until:3%")
            })?;
        let mut max = DEFAULT_MAX;
        for part in parts {
            let part = part.trim();
            let n = part.strip_prefix("max:").ok_or_else(|| {
                format!("{part:?}: expected max:N after the precision, e.g. until:3%,max:20")
            })?;
            max = parse_max(n)?;
        }
        Ok(Repetitions::Until {
            half_width_pct,
            max,
        })
    }

    /// `±H % or M` (after `until`): the `±` and the `or M` may be left
    /// out, and the spaces.
    fn parse_human(rest: &str) -> Result<Repetitions, String> {
        let rest = rest.trim();
        let rest = ["±", "+/-", "+-"]
            .iter()
            .find_map(|p| rest.strip_prefix(p))
            .unwrap_or(rest)
            .trim_start();
        let Some((pct, after)) = rest.split_once('%') else {
            return Err(format!(
                "{rest:?}: expected a precision in percent after until, e.g. \"until ±3 % or 20\""
            ));
        };
        let human = format!("until:{}%", pct.trim());
        let Repetitions::Until { half_width_pct, .. } = Repetitions::parse(&human)? else {
            unreachable!("an until: form parses as Until or not at all")
        };
        let after = after.trim();
        let max = if after.is_empty() {
            DEFAULT_MAX
        } else {
            let n = after.strip_prefix("or").ok_or_else(|| {
                format!(
                    "{after:?}: expected \"or N\" after the precision, e.g. \"until ±3 % or 20\""
                )
            })?;
            parse_max(n)?
        };
        Ok(Repetitions::Until {
            half_width_pct,
            max,
        })
    }

    /// The form [`Repetitions::parse`] reads back: `N` or `until:H%,max:M`.
    pub fn canonical(&self) -> String {
        match *self {
            Repetitions::Fixed(n) => n.to_string(),
            Repetitions::Until {
                half_width_pct,
                max,
            } => format!("until:{half_width_pct}%,max:{max}"),
        }
    }

    /// The most repetitions this may run.
    pub fn max(&self) -> usize {
        match *self {
            Repetitions::Fixed(n) => n,
            Repetitions::Until { max, .. } => max,
        }
    }

    /// After which repetitions the data is looked at (none for a fixed
    /// count).
    pub fn looks(&self) -> Vec<usize> {
        let Repetitions::Until { max, .. } = *self else {
            return Vec::new();
        };
        let mut looks = vec![];
        let mut at = FIRST_LOOK as f64;
        while (at.round() as usize) < max {
            let n = at.round() as usize;
            if looks.last() != Some(&n) {
                looks.push(n);
            }
            at = (at * LOOK_GROWTH).max(at + 1.0);
        }
        looks.push(max);
        looks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_parse_and_bad_ones_say_what_was_expected() {
        assert_eq!(Repetitions::parse("7"), Ok(Repetitions::Fixed(7)));
        assert_eq!(
            Repetitions::parse("until:3%,max:20"),
            Ok(Repetitions::Until {
                half_width_pct: 3.0,
                max: 20
            })
        );
        assert_eq!(
            Repetitions::parse("until:2.5%"),
            Ok(Repetitions::Until {
                half_width_pct: 2.5,
                max: 20
            })
        );
        for bad in [
            "0",
            "x",
            "until:3",
            "until:0%",
            "until:3%,max:2",
            "until:3%,at:9",
        ] {
            let e = Repetitions::parse(bad).unwrap_err();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_human_form_reads_as_the_short_one() {
        let want = Ok(Repetitions::Until {
            half_width_pct: 3.0,
            max: 20,
        });
        for s in [
            "until ±3 % or 20",
            "until ±3%",
            "until 3 % or 20",
            "until +-3% or 20",
        ] {
            assert_eq!(Repetitions::parse(s), want, "{s}");
        }
        assert_eq!(
            Repetitions::parse("until ±2.5 % or 8").map(|r| r.canonical()),
            Ok("until:2.5%,max:8".to_string())
        );
        for bad in [
            "until ±3",
            "until ±3 % and 20",
            "until ±3 % or 2",
            "until ± % or 9",
        ] {
            let e = Repetitions::parse(bad).unwrap_err();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
        let r = Repetitions::parse("until:3%,max:9").unwrap();
        assert_eq!(Repetitions::parse(&r.canonical()), Ok(r));
        assert_eq!(Repetitions::Fixed(4).canonical(), "4");
    }
}
