//! Templated values in a request's path, header values and body, rendered
//! before the run (never on the hot path).
//!
//! ```text
//! {{seq}}              0, 1, 2, … (this target's requests in the pool, in order)
//! {{seq START}}        START, START+1, …
//! {{uniform LO HI}}    a random integer in LO..=HI, each equally likely
//! {{zipf S LO HI}}     a random integer in LO..=HI, LO the most frequent:
//!                      P(LO+k-1) ∝ 1/k^S (S > 0; 1.1 is a typical cache skew)
//! {{line FILE}}        the lines of FILE in turn (relative to the targets file)
//! ```
//!
//! Random values come from the run's seed, so a seed gives the same requests.

use std::path::Path;
use std::sync::Arc;

use crate::seeded::SplitMix64;

/// The most values a Zipf range may hold (its table is built up front).
const MAX_ZIPF: u64 = 1_000_000;

pub const SYNTAX: &str =
    "{{seq}}, {{seq START}}, {{uniform LO HI}}, {{zipf S LO HI}} or {{line FILE}}";

enum Piece {
    Text(String),
    Seq(u64),
    Uniform(u64, u64),
    Zipf {
        lo: u64,
        cdf: Arc<Vec<f64>>,
    },
    Line {
        lines: Arc<Vec<String>>,
        next: usize,
    },
}

pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parses `text`; `dir` is where `{{line FILE}}` looks. The error says
    /// what is wrong, without the place (the caller knows the field).
    pub fn parse(text: &str, dir: &Path) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| format!("{{{{ without a closing }}}} in {text:?}"))?;
            pieces.push(piece(after[..close].trim(), dir)?);
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(Template { pieces })
    }

    /// No template in it: every request gets the same text.
    pub fn is_constant(&self) -> bool {
        self.pieces.iter().all(|p| matches!(p, Piece::Text(_)))
    }

    /// The next value: sequences and lines move on, random values are drawn.
    pub fn render(&mut self, rng: &mut SplitMix64) -> String {
        let mut out = String::new();
        for p in &mut self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Seq(n) => {
                    out.push_str(&n.to_string());
                    *n += 1;
                }
                Piece::Uniform(lo, hi) => {
                    let span = *hi - *lo + 1;
                    let v = if span == 0 {
                        rng.next_u64()
                    } else {
                        *lo + below(rng, span)
                    };
                    out.push_str(&v.to_string());
                }
                Piece::Zipf { lo, cdf } => {
                    let u = unit(rng) * cdf.last().copied().unwrap_or(1.0);
                    let k = cdf.partition_point(|&c| c < u).min(cdf.len() - 1);
                    out.push_str(&(*lo + k as u64).to_string());
                }
                Piece::Line { lines, next } => {
                    out.push_str(&lines[*next]);
                    *next = (*next + 1) % lines.len();
                }
            }
        }
        out
    }
}

fn piece(inner: &str, dir: &Path) -> Result<Piece, String> {
    let words: Vec<&str> = inner.split_whitespace().collect();
    let int = |w: &str, what: &str| {
        w.parse::<u64>()
            .map_err(|_| format!("{{{{{inner}}}}}: {what} must be a whole number ≥ 0, got {w:?}"))
    };
    let range = |lo: &str, hi: &str| -> Result<(u64, u64), String> {
        let (lo, hi) = (int(lo, "LO")?, int(hi, "HI")?);
        if lo > hi {
            return Err(format!("{{{{{inner}}}}}: LO must not exceed HI"));
        }
        Ok((lo, hi))
    };
    match words.as_slice() {
        ["seq"] => Ok(Piece::Seq(0)),
        ["seq", start] => Ok(Piece::Seq(int(start, "START")?)),
        ["uniform", lo, hi] => {
            let (lo, hi) = range(lo, hi)?;
            Ok(Piece::Uniform(lo, hi))
        }
        ["zipf", s, lo, hi] => {
            let s: f64 = s
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s > 0.0)
                .ok_or_else(|| format!("{{{{{inner}}}}}: S must be a number above 0, got {s:?}"))?;
            let (lo, hi) = range(lo, hi)?;
            if hi - lo >= MAX_ZIPF {
                return Err(format!(
                    "{{{{{inner}}}}}: a Zipf range holds at most {MAX_ZIPF} values"
                ));
            }
            let mut acc = 0.0;
            let cdf = (1..=hi - lo + 1)
                .map(|k| {
                    acc += (k as f64).powf(-s);
                    acc
                })
                .collect();
            Ok(Piece::Zipf {
                lo,
                cdf: Arc::new(cdf),
            })
        }
        ["line", file] => {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("{{{{{inner}}}}}: cannot read {}: {e}", path.display()))?;
            let lines: Vec<String> = text
                .lines()
                .map(|l| l.trim_end_matches('\r').to_string())
                .filter(|l| !l.is_empty())
                .collect();
            if lines.is_empty() {
                return Err(format!("{{{{{inner}}}}}: {} has no line", path.display()));
            }
            Ok(Piece::Line {
                lines: Arc::new(lines),
                next: 0,
            })
        }
        _ => Err(format!(
            "unknown template {{{{{inner}}}}}: expected {SYNTAX}"
        )),
    }
}

fn below(rng: &mut SplitMix64, n: u64) -> u64 {
    rng.below(n.min(usize::MAX as u64) as usize) as u64
}

/// Uniform in [0, 1).
fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_n(t: &str, n: usize) -> Vec<String> {
        let mut t = Template::parse(t, Path::new(".")).unwrap();
        let mut rng = SplitMix64::new(7);
        (0..n).map(|_| t.render(&mut rng)).collect()
    }

    #[test]
    fn text_and_sequences() {
        assert_eq!(render_n("/a/{{seq}}/b", 3), ["/a/0/b", "/a/1/b", "/a/2/b"]);
        assert_eq!(render_n("{{ seq 10 }}", 2), ["10", "11"]);
        assert!(Template::parse("/plain", Path::new("."))
            .unwrap()
            .is_constant());
    }

    #[test]
    fn uniform_stays_in_range_and_covers_it() {
        let v: Vec<u64> = render_n("{{uniform 5 9}}", 2000)
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for x in 5..=9 {
            let n = v.iter().filter(|&&y| y == x).count();
            assert!((300..500).contains(&n), "{x}: {n} of 2000");
        }
        assert!(v.iter().all(|x| (5..=9).contains(x)));
    }

    #[test]
    fn zipf_favours_the_low_end_as_declared() {
        let v: Vec<u64> = render_n("{{zipf 1 1 100}}", 20_000)
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let count = |x: u64| v.iter().filter(|&&y| y == x).count() as f64;
        // P(1)/P(2) = 2 and P(1)/P(10) = 10 for S = 1.
        assert!((count(1) / count(2) - 2.0).abs() < 0.3);
        assert!((count(1) / count(10) - 10.0).abs() < 3.0);
        assert!(v.iter().all(|x| (1..=100).contains(x)));
    }

    #[test]
    fn lines_go_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ids.txt"), "a\r\nb\n\nc\n").unwrap();
        let mut t = Template::parse("{{line ids.txt}}", dir.path()).unwrap();
        let mut rng = SplitMix64::new(1);
        let v: Vec<String> = (0..4).map(|_| t.render(&mut rng)).collect();
        assert_eq!(v, ["a", "b", "c", "a"]);
    }

    #[test]
    fn mistakes_are_named() {
        let e = |t: &str| Template::parse(t, Path::new(".")).err().unwrap();
        assert!(e("/{{random}}").contains("unknown template {{random}}"));
        assert!(e("/{{uniform 9 1}}").contains("LO must not exceed HI"));
        assert!(e("/{{zipf 0 1 9}}").contains("S must be"));
        assert!(e("/{{seq").contains("closing"));
        assert!(e("{{line /nonexistent/x}}").contains("cannot read"));
    }
}
