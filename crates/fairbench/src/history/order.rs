//! `history --order revision|version`: the points of a series placed along
//! a project's history instead of by date (docs/history.md).
//!
//! Revision: the commit graph of a checkout, `git rev-list --topo-order
//! --reverse --all`, oldest first; a point's revision is its service's
//! declared version when that names a commit of the checkout (a
//! `[[service]]` measured at a commit of its own project), else its run's
//! git revision (`run` records the checkout it ran from; for the zoo's
//! servers that is their source). The zoo's build key is a content hash,
//! not a commit, so it cannot be placed. Version: the declared server
//! version in natural order (1.9 < 1.10, 1.0-rc1 < 1.0).
//!
//! Points are sorted stably from date order, so several runs of one
//! revision or version stay in date order; points that cannot be placed
//! follow the placed ones, in date order, and are counted for a warning.

use std::cmp::Ordering;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fairbench_sys::process::bounded;
use serde::Serialize;

use super::series::{Point, Series};

/// How the points of a series are ordered.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// By the run's start time.
    #[default]
    Date,
    /// By the commit graph of --repo.
    Revision,
    /// By the server's declared version, in natural order.
    Version,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Date => "date",
            Order::Revision => "revision",
            Order::Version => "version",
        }
    }
}

/// The commits of a checkout in topological order, oldest first.
pub struct Commits {
    /// Where they were read, for messages.
    pub dir: String,
    /// (full hash, position), sorted by hash for prefix look-ups.
    by_hash: Vec<(String, usize)>,
}

/// A git on a network file system may hang; the history is not worth more.
const GIT_BOUND: Duration = Duration::from_secs(120);

impl Commits {
    /// Reads the commit graph of `dir`; the error is one line naming
    /// `--repo`.
    pub fn read(dir: &Path) -> Result<Commits, String> {
        let shown = dir.display().to_string();
        let mut git = Command::new("git");
        git.arg("-C")
            .arg(dir)
            .args(["rev-list", "--topo-order", "--reverse", "--all"]);
        let f = bounded::run(git, None, GIT_BOUND)
            .map_err(|e| format!("--repo {shown}: git could not be run ({e})"))?;
        if !f.status.is_some_and(|s| s.success()) {
            let why = f.stderr_text();
            let why = why.lines().next().unwrap_or("git failed").trim();
            return Err(format!(
                "--repo {shown}: expected a git checkout of the measured project ({why})"
            ));
        }
        Ok(Commits::from_list(shown, &f.stdout_text()))
    }

    /// `list`: one hash a line, oldest first.
    pub fn from_list(dir: String, list: &str) -> Commits {
        let mut by_hash: Vec<(String, usize)> = list
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .enumerate()
            .map(|(i, h)| (h.to_ascii_lowercase(), i))
            .collect();
        by_hash.sort();
        Commits { dir, by_hash }
    }

    /// The position of the one commit `rev` abbreviates (a `-dirty` suffix
    /// names the commit its changes were made on); None when no commit or
    /// several match.
    pub fn position(&self, rev: &str) -> Option<usize> {
        let rev = rev.trim().trim_end_matches("-dirty").to_ascii_lowercase();
        // Git abbreviates to 7 at least; shorter, a version number such as
        // 2024 could pass for a commit.
        if rev.len() < 7 || !rev.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let from = self
            .by_hash
            .partition_point(|(h, _)| h.as_str() < rev.as_str());
        let mut hits = self.by_hash[from..]
            .iter()
            .take_while(|(h, _)| h.starts_with(&rev));
        match (hits.next(), hits.next()) {
            (Some((_, at)), None) => Some(*at),
            _ => None,
        }
    }
}

/// The order chosen, with what it needs.
pub enum How {
    Date,
    Revision(Commits),
    Version,
}

impl How {
    pub fn order(&self) -> Order {
        match self {
            How::Date => Order::Date,
            How::Revision(_) => Order::Revision,
            How::Version => Order::Version,
        }
    }

    /// The line that says what the order is, for the text output.
    pub fn header(&self) -> Option<String> {
        match self {
            How::Date => None,
            How::Revision(c) => Some(format!(
                "in commit order of {} (git rev-list --topo-order); a point's revision: its service's declared version when that is a commit there, else its run's git revision",
                c.dir
            )),
            How::Version => Some(
                "in the order of the server's declared version (natural: 1.9 < 1.10); runs of one version by date".into(),
            ),
        }
    }
}

/// Why points could not be placed, over every series.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Unplaced {
    /// No revision (or no declared version) at all.
    pub missing: usize,
    /// A revision that names no single commit of the checkout.
    pub unknown: usize,
}

/// Reorders every series; returns the warning line when some points could
/// not be placed.
pub fn apply(series: &mut [Series], how: &How) -> Option<String> {
    let mut u = Unplaced::default();
    for s in series.iter_mut() {
        let n = match how {
            How::Date => Unplaced::default(),
            How::Revision(c) => by_revision(&mut s.points, c),
            How::Version => by_version(&mut s.points),
        };
        u.missing += n.missing;
        u.unknown += n.unknown;
    }
    warning(how, u)
}

fn warning(how: &How, u: Unplaced) -> Option<String> {
    let total = u.missing + u.unknown;
    if total == 0 {
        return None;
    }
    let why = match how {
        How::Date => return None,
        How::Revision(c) => format!(
            "{} with no recorded revision, {} whose revision is not one commit of {}",
            u.missing, u.unknown, c.dir
        ),
        How::Version => format!("{} with no declared server version", u.missing),
    };
    Some(format!(
        "history --order {}: {total} point(s) could not be placed ({why}); they follow the placed ones, in date order",
        how.order().as_str()
    ))
}

/// The revision a point is placed by, and where.
fn place(p: &Point, c: &Commits) -> Option<(String, usize)> {
    let declared = p.declared.as_ref().and_then(|d| Some((d, c.position(d)?)));
    let run = p.revision.as_ref().and_then(|r| Some((r, c.position(r)?)));
    declared.or(run).map(|(r, at)| (r.clone(), at))
}

pub fn by_revision(points: &mut Vec<Point>, c: &Commits) -> Unplaced {
    let mut u = Unplaced::default();
    let mut keyed: Vec<(usize, Point)> = std::mem::take(points)
        .into_iter()
        .map(|mut p| match place(&p, c) {
            Some((rev, at)) => {
                p.order_key = Some(rev);
                (at, p)
            }
            None => {
                if p.revision.is_none() {
                    u.missing += 1;
                } else {
                    u.unknown += 1;
                }
                p.order_key = None;
                (usize::MAX, p)
            }
        })
        .collect();
    // Stable: one revision's runs, and the unplaced, stay in date order.
    keyed.sort_by_key(|(at, _)| *at);
    *points = keyed.into_iter().map(|(_, p)| p).collect();
    u
}

pub fn by_version(points: &mut [Point]) -> Unplaced {
    let mut u = Unplaced::default();
    for p in points.iter_mut() {
        p.order_key = p.declared.clone();
        u.missing += usize::from(p.order_key.is_none());
    }
    points.sort_by(|a, b| match (&a.order_key, &b.order_key) {
        (Some(x), Some(y)) => natural(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    });
    u
}

/// A piece of a version string.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Token<'a> {
    /// Text starting with `-`: a pre-release, before the release itself.
    Pre(&'a str),
    /// The end of the string.
    End,
    /// A number, compared by value: its digits without leading zeros,
    /// shorter first.
    Number(usize, &'a str),
    Text(&'a str),
}

fn tokens(s: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let digit = b[i].is_ascii_digit();
        let j = (i..b.len())
            .find(|&j| b[j].is_ascii_digit() != digit)
            .unwrap_or(b.len());
        let piece = &s[i..j];
        out.push(if digit {
            let v = piece.trim_start_matches('0');
            Token::Number(v.len(), v)
        } else if piece.starts_with('-') {
            Token::Pre(piece)
        } else {
            Token::Text(piece)
        });
        i = j;
    }
    out.push(Token::End);
    out
}

/// Natural, semver-aware order: numbers by value (1.9 < 1.10), a
/// pre-release before its release (1.0-rc1 < 1.0); a string with no
/// digits compares as plain text. Ties (`01` and `1`) fall back to text.
pub fn natural(a: &str, b: &str) -> Ordering {
    tokens(a).cmp(&tokens(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_in_natural_order() {
        let mut v = vec![
            "1.10",
            "1.9",
            "1.0",
            "1.0-rc1",
            "axum 0.8.0",
            "axum 0.7.5",
            "beta",
            "alpha",
            "1.0.1",
        ];
        v.sort_by(|a, b| natural(a, b));
        assert_eq!(
            v,
            [
                "1.0-rc1",
                "1.0",
                "1.0.1",
                "1.9",
                "1.10",
                "alpha",
                "axum 0.7.5",
                "axum 0.8.0",
                "beta"
            ]
        );
        assert_eq!(natural("v2", "v10"), Ordering::Less);
        assert_eq!(natural("x", "x"), Ordering::Equal);
    }

    #[test]
    fn revisions_by_prefix_and_ambiguity() {
        let c = Commits::from_list(
            "repo".into(),
            "aaaa111111\nbbbb222222\naaaa111122\nCCCC444444\n",
        );
        assert_eq!(c.position("bbbb222"), Some(1));
        assert_eq!(c.position("cccc444444"), Some(3));
        assert_eq!(c.position("aaaa11112-dirty"), Some(2));
        assert_eq!(c.position("aaaa1111"), None, "two commits match");
        assert_eq!(c.position("aaaa"), None, "too short to name one");
        assert_eq!(c.position("dddd444"), None);
        assert_eq!(c.position("axum 0.7"), None);
    }
}
