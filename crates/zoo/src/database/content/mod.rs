//! The database scenarios' content, graded against the tables: the right
//! row for the id asked (`db-row`), N rows for N asked (`db-count`), the
//! fortunes HTML-escaped (`html-escape`) and updates in the table
//! afterwards (`db-update`). Each rule is one line: the first wrong answer
//! found, the request that got it and what the table holds.
//!
//! The check asks several requests per scenario (ids at both ends of the
//! range and between; counts out of bounds, which must be clamped), so that
//! a server answering one request right by chance still fails.

use std::collections::BTreeMap;

use serde_json::Value;

use super::seed::ADDED_FORTUNE;
use crate::fetch::RawResponse;
use crate::rule::{Grade, Rule, RuleResult};
use crate::scenario::{DbContent, Scenario};

/// The most rows `/queries` and `/updates` answer (TechEmpower's bound).
pub const MAX_QUERIES: usize = 500;

/// What the grading reads from the database.
pub trait Tables {
    /// `world.randomnumber` of each id that exists.
    fn world(&self, ids: &[i64]) -> Result<BTreeMap<i64, i64>, String>;
    /// Every row of `fortune`.
    fn fortunes(&self) -> Result<Vec<(i64, String)>, String>;
}

impl Tables for super::Oracle {
    fn world(&self, ids: &[i64]) -> Result<BTreeMap<i64, i64>, String> {
        super::Oracle::world(self, ids)
    }
    fn fortunes(&self) -> Result<Vec<(i64, String)>, String> {
        super::Oracle::fortunes(self)
    }
}

/// One request of the check: its path, and how its answer is fetched.
pub type Fetch<'a> = dyn FnMut(&str) -> Result<RawResponse, String> + 'a;

/// Grades `scenario`'s content rules by asking the server (`fetch`) and
/// the tables.
pub fn grade(
    kind: DbContent,
    scenario: &Scenario,
    fetch: &mut Fetch<'_>,
    tables: &dyn Tables,
) -> Vec<RuleResult> {
    match kind {
        DbContent::Row => vec![row(scenario, fetch, tables)],
        DbContent::Rows => rows(scenario, fetch, tables, false),
        DbContent::Updates => rows(scenario, fetch, tables, true),
        DbContent::Fortunes => fortunes(scenario, fetch, tables),
    }
}

/// Collects the first failure of a rule and how many there were.
struct Verdict {
    rule: Rule,
    first: Option<String>,
    failed: usize,
    asked: usize,
}

impl Verdict {
    fn new(rule: Rule) -> Verdict {
        Verdict {
            rule,
            first: None,
            failed: 0,
            asked: 0,
        }
    }

    fn ok(&mut self) {
        self.asked += 1;
    }

    fn fail(&mut self, why: String) {
        self.asked += 1;
        self.failed += 1;
        self.first.get_or_insert(why);
    }

    fn result(self, pass: String) -> RuleResult {
        match self.first {
            None => RuleResult::new(self.rule, Grade::Pass, pass),
            Some(f) if self.failed > 1 => RuleResult::new(
                self.rule,
                Grade::Fail,
                format!(
                    "{f} (and {} more of {} requests)",
                    self.failed - 1,
                    self.asked
                ),
            ),
            Some(f) => RuleResult::new(self.rule, Grade::Fail, f),
        }
    }
}

/// Server text in a detail: escaped and cut short.
fn shown(b: &[u8], max: usize) -> String {
    let s = fairbench_sys::text::escape_bytes(&b[..b.len().min(max)]).replace('\n', "");
    if b.len() > max {
        format!("{s}…")
    } else {
        s
    }
}

/// The answer's body as JSON, or why not.
fn json_of(path: &str, r: &RawResponse) -> Result<Value, String> {
    if r.status != 200 {
        return Err(format!("GET {path}: status {}", r.status));
    }
    serde_json::from_slice(&r.body)
        .map_err(|_| format!("GET {path}: the body is not JSON: {}", shown(&r.body, 80)))
}

/// `{"id":I,"randomNumber":R}` → (I, R).
fn id_value(v: &Value) -> Option<(i64, i64)> {
    let o = v.as_object()?;
    Some((o.get("id")?.as_i64()?, o.get("randomNumber")?.as_i64()?))
}

/// Ids the check asks `/db` for: both ends of each range and three between
/// (fixed, so every server is asked the same).
fn picks(lo: u64, hi: u64) -> Vec<u64> {
    let span = hi - lo;
    let mut v = vec![lo, hi, lo + span / 7, lo + span * 3 / 5, lo + span * 8 / 9];
    v.dedup();
    v
}

fn row(scenario: &Scenario, fetch: &mut Fetch<'_>, tables: &dyn Tables) -> RuleResult {
    let ranges = scenario.path_ranges();
    let Some(&(lo, hi)) = ranges.first() else {
        return RuleResult::new(
            Rule::DbRow,
            Grade::Fail,
            "the scenario's path draws no id ({{uniform LO HI}})",
        );
    };
    let ids = picks(lo, hi);
    let table = match tables.world(&ids.iter().map(|&i| i as i64).collect::<Vec<_>>()) {
        Ok(t) => t,
        Err(e) => return RuleResult::new(Rule::DbRow, Grade::Fail, format!("the database: {e}")),
    };
    let mut v = Verdict::new(Rule::DbRow);
    for id in &ids {
        let path = scenario.render_path(|_, _| *id);
        let r = match fetch(&path) {
            Ok(r) => r,
            Err(e) => {
                v.fail(format!("GET {path}: {e}"));
                continue;
            }
        };
        let got = match json_of(&path, &r) {
            Ok(j) => j,
            Err(e) => {
                v.fail(e);
                continue;
            }
        };
        let want = table.get(&(*id as i64)).copied();
        match (id_value(&got), want) {
            (Some((gi, gr)), Some(w)) if gi == *id as i64 && gr == w => v.ok(),
            (Some((gi, _)), _) if gi != *id as i64 => v.fail(format!(
                "GET {path} answered the row of id {gi}: {}",
                shown(&r.body, 80)
            )),
            (Some((_, gr)), Some(w)) => v.fail(format!(
                "GET {path} answered randomNumber {gr}; the table has {w} for id {id}"
            )),
            (Some(_), None) => v.fail(format!("GET {path}: the table has no id {id}")),
            (None, _) => v.fail(format!(
                "GET {path} answered {}: expected one object {{\"id\":{id},\"randomNumber\":…}}",
                shown(&r.body, 80)
            )),
        }
    }
    v.result(format!(
        "{} ids ({}) answered with the table's rows",
        ids.len(),
        ids.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The scenario's path with its `queries=` value replaced.
fn with_count(path: &str, n: &str) -> Option<String> {
    let (before, after) = path.split_once("queries=")?;
    let rest = after.find('&').map_or("", |i| &after[i..]);
    Some(format!("{before}queries={n}{rest}"))
}

/// The rows a `/queries` or `/updates` request must answer for `n`.
fn clamp(n: &str) -> usize {
    n.parse::<i64>()
        .map(|v| v.clamp(1, MAX_QUERIES as i64) as usize)
        .unwrap_or(1)
}

fn rows(
    scenario: &Scenario,
    fetch: &mut Fetch<'_>,
    tables: &dyn Tables,
    updates: bool,
) -> Vec<RuleResult> {
    let path = scenario.check_path();
    let Some(asked) = path
        .split_once("queries=")
        .map(|(_, a)| a.split('&').next().unwrap_or("").to_string())
    else {
        return vec![RuleResult::new(
            Rule::DbCount,
            Grade::Fail,
            "the scenario's path has no queries= parameter",
        )];
    };
    // The scenario's count, then out-of-bounds counts the server must clamp.
    let mut counts = vec![asked.clone(), "0".to_string(), "foo".to_string()];
    if !updates {
        counts.push((MAX_QUERIES + 1).to_string());
    }
    let mut count = Verdict::new(Rule::DbCount);
    let mut rowv = Verdict::new(Rule::DbRow);
    let mut upd = Verdict::new(Rule::DbUpdate);
    for n in &counts {
        let Some(p) = with_count(&path, n) else {
            continue;
        };
        let want = clamp(n);
        // For updates: the whole table before, to see that rows changed.
        let before = if updates && n == &asked {
            match tables.world(&(1..=10_000).collect::<Vec<i64>>()) {
                Ok(t) => Some(t),
                Err(e) => {
                    upd.fail(format!("the database: {e}"));
                    None
                }
            }
        } else {
            None
        };
        let r = match fetch(&p) {
            Ok(r) => r,
            Err(e) => {
                count.fail(format!("GET {p}: {e}"));
                continue;
            }
        };
        let list = match json_of(&p, &r) {
            Ok(Value::Array(a)) => a,
            Ok(_) => {
                count.fail(format!(
                    "GET {p} answered {}: expected a JSON array",
                    shown(&r.body, 80)
                ));
                continue;
            }
            Err(e) => {
                count.fail(e);
                continue;
            }
        };
        if list.len() == want {
            count.ok();
        } else {
            count.fail(format!(
                "GET {p} answered {} rows; expected {want}{}",
                list.len(),
                if n == &asked {
                    String::new()
                } else {
                    format!(" (queries={n} is clamped to 1..={MAX_QUERIES})")
                }
            ));
        }
        let pairs: Vec<Option<(i64, i64)>> = list.iter().map(id_value).collect();
        if let Some(i) = pairs.iter().position(Option::is_none) {
            rowv.fail(format!(
                "GET {p}: row {} is not {{\"id\":…,\"randomNumber\":…}}: {}",
                i + 1,
                shown(list[i].to_string().as_bytes(), 60)
            ));
            continue;
        }
        let pairs: Vec<(i64, i64)> = pairs.into_iter().flatten().collect();
        let ids: Vec<i64> = pairs.iter().map(|p| p.0).collect();
        let table = match tables.world(&ids) {
            Ok(t) => t,
            Err(e) => {
                rowv.fail(format!("the database: {e}"));
                continue;
            }
        };
        if pairs.len() >= 5 && pairs.iter().all(|p| p.0 == pairs[0].0) {
            rowv.fail(format!(
                "GET {p}: all {} rows have id {}: each id must be drawn at random",
                pairs.len(),
                pairs[0].0
            ));
            continue;
        }
        if updates {
            // Every returned value must be in the table now; an id drawn
            // twice may hold either of its values.
            let mut by_id: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for (i, r) in &pairs {
                by_id.entry(*i).or_default().push(*r);
            }
            let wrong = by_id
                .iter()
                .find(|(i, vals)| table.get(i).is_none_or(|now| !vals.contains(now)));
            match wrong {
                Some((i, vals)) => upd.fail(format!(
                    "GET {p} answered randomNumber {} for id {i}; the table has {} afterwards: the update was not written",
                    vals[0],
                    table.get(i).map_or("no such row".to_string(), |v| v.to_string())
                )),
                None => match &before {
                    Some(b) if !by_id.keys().any(|i| b.get(i) != table.get(i)) => {
                        upd.fail(format!(
                            "GET {p}: none of the {} rows changed in the table: the values must be new",
                            by_id.len()
                        ))
                    }
                    _ => upd.ok(),
                },
            }
            if let Some((i, r)) = pairs.iter().find(|(_, r)| !(1..=10_000).contains(r)) {
                rowv.fail(format!(
                    "GET {p}: id {i} got randomNumber {r}, outside 1..=10000"
                ));
            } else {
                rowv.ok();
            }
        } else {
            match pairs.iter().find(|(i, r)| table.get(i) != Some(r)) {
                Some((i, r)) => rowv.fail(format!(
                    "GET {p} answered randomNumber {r} for id {i}; the table has {}",
                    table
                        .get(i)
                        .map_or("no such id".to_string(), |v| v.to_string())
                )),
                None => rowv.ok(),
            }
        }
    }
    let asked_list = counts.join(", ");
    let mut out = vec![
        count.result(format!(
            "queries={asked_list}: the right number of rows each"
        )),
        rowv.result(format!("queries={asked_list}: every row the table's")),
    ];
    if updates {
        out.push(upd.result(format!(
            "queries={asked_list}: every returned value is in the table afterwards"
        )));
    }
    out
}

/// The body with the whitespace between tags removed.
fn squeeze(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut pending = String::new();
    let mut after_tag = true;
    for c in html.chars() {
        if c.is_whitespace() && after_tag {
            pending.push(c);
            continue;
        }
        if c == '<' {
            pending.clear();
        } else {
            out.push_str(&pending);
            pending.clear();
        }
        after_tag = c == '>';
        out.push(c);
    }
    out
}

/// HTML text with its character references decoded; `Err` names the first
/// raw `<`, `>` or `&` that is not a reference.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(['&', '<', '>']) {
        out.push_str(&rest[..i]);
        let c = rest.as_bytes()[i];
        if c != b'&' {
            return Err(format!("a raw {}", c as char));
        }
        let after = &rest[i + 1..];
        let end = after.find(';').filter(|&e| e <= 10);
        let Some(end) = end else {
            return Err("a raw &".into());
        };
        let name = &after[..end];
        let ch = match name {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(h) = name.strip_prefix("#x").or(name.strip_prefix("#X")) {
                    u32::from_str_radix(h, 16).ok()
                } else if let Some(d) = name.strip_prefix('#') {
                    d.parse().ok()
                } else {
                    None
                };
                match code.and_then(char::from_u32) {
                    Some(c) => c,
                    None => return Err(format!("an unknown reference &{name};")),
                }
            }
        };
        out.push(ch);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

const FORTUNES_HEAD: &str = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>";
const FORTUNES_TAIL: &str = "</table></body></html>";

fn fortunes(scenario: &Scenario, fetch: &mut Fetch<'_>, tables: &dyn Tables) -> Vec<RuleResult> {
    let fail3 = |why: String| {
        vec![
            RuleResult::new(Rule::DbCount, Grade::Fail, why.clone()),
            RuleResult::new(Rule::DbRow, Grade::Fail, why.clone()),
            RuleResult::new(Rule::HtmlEscape, Grade::Fail, why),
        ]
    };
    let mut want = match tables.fortunes() {
        Ok(f) => f,
        Err(e) => return fail3(format!("the database: {e}")),
    };
    want.push((0, ADDED_FORTUNE.to_string()));
    // Sorted by message as the servers sort strings: by code point.
    want.sort_by(|a, b| a.1.cmp(&b.1));
    let path = scenario.check_path();
    let r = match fetch(&path) {
        Ok(r) if r.status == 200 => r,
        Ok(r) => return fail3(format!("GET {path}: status {}", r.status)),
        Err(e) => return fail3(format!("GET {path}: {e}")),
    };
    let text = String::from_utf8_lossy(&r.body);
    let body = squeeze(&text);
    let table = body
        .strip_prefix(FORTUNES_HEAD)
        .or_else(|| {
            // The doctype's case is the template's business.
            let lower = body.get(..15)?.to_ascii_lowercase();
            (lower == "<!doctype html>")
                .then(|| body.get(15..))
                .flatten()
                .and_then(|b| b.strip_prefix(&FORTUNES_HEAD[15..]))
        })
        .and_then(|b| b.strip_suffix(FORTUNES_TAIL));
    let Some(table) = table else {
        return fail3(format!(
            "GET {path}: not the page of the contract ({FORTUNES_HEAD}… rows …{FORTUNES_TAIL}): {}",
            shown(body.as_bytes(), 120)
        ));
    };
    // Rows end in </td></tr>, which no message holds, escaped or not.
    let mut got: Vec<(String, String)> = Vec::new();
    for (i, piece) in table.split_terminator("</td></tr>").enumerate() {
        let parsed = piece
            .strip_prefix("<tr><td>")
            .and_then(|p| p.split_once("</td><td>"));
        match parsed {
            Some((id, msg)) => got.push((id.to_string(), msg.to_string())),
            None => {
                return fail3(format!(
                    "GET {path}: row {} is not <tr><td>ID</td><td>MESSAGE</td></tr>: {}",
                    i + 1,
                    shown(piece.as_bytes(), 80)
                ))
            }
        }
    }
    let count = if got.len() == want.len() {
        RuleResult::new(
            Rule::DbCount,
            Grade::Pass,
            format!(
                "{} rows: the table's {} and the added one",
                got.len(),
                want.len() - 1
            ),
        )
    } else {
        RuleResult::new(
            Rule::DbCount,
            Grade::Fail,
            format!(
                "GET {path} answered {} rows; expected {} (the table's {} and the one added at request time)",
                got.len(),
                want.len(),
                want.len() - 1
            ),
        )
    };
    let mut escape = RuleResult::new(Rule::HtmlEscape, Grade::Pass, "every message HTML-escaped");
    let mut decoded = Vec::new();
    for (i, (id, m)) in got.iter().enumerate() {
        match unescape(m) {
            Ok(d) => decoded.push((id.clone(), d)),
            Err(why) => {
                if escape.grade == Grade::Pass {
                    escape = RuleResult::new(
                        Rule::HtmlEscape,
                        Grade::Fail,
                        format!(
                            "GET {path}: row {} (id {}) is not HTML-escaped ({why}): {}",
                            i + 1,
                            shown(id.as_bytes(), 10),
                            shown(m.as_bytes(), 60)
                        ),
                    );
                }
                decoded.push((id.clone(), m.clone()));
            }
        }
    }
    let mut row = RuleResult::new(
        Rule::DbRow,
        Grade::Pass,
        "the table's rows and the added one, sorted by message",
    );
    let want_sorted: Vec<(String, String)> = want
        .iter()
        .map(|(i, m)| (i.to_string(), m.clone()))
        .collect();
    if decoded != want_sorted {
        let mut a = decoded.clone();
        let mut b = want_sorted.clone();
        a.sort();
        b.sort();
        let detail = if a == b {
            let i = decoded
                .iter()
                .zip(&want_sorted)
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            format!(
                "GET {path}: the rows are not sorted by message: row {} is id {}, expected id {}",
                i + 1,
                shown(decoded[i].0.as_bytes(), 10),
                want_sorted[i].0
            )
        } else if let Some((id, m)) = decoded.iter().find(|x| !want_sorted.contains(x)) {
            format!(
                "GET {path} answered id {} `{}`, which is not a row of the table nor the added one",
                shown(id.as_bytes(), 10),
                shown(m.as_bytes(), 60)
            )
        } else {
            let missing = want_sorted
                .iter()
                .find(|x| !decoded.contains(x))
                .map(|(i, m)| format!("id {i} `{}`", shown(m.as_bytes(), 60)))
                .unwrap_or_default();
            format!("GET {path} left out {missing}")
        };
        row = RuleResult::new(Rule::DbRow, Grade::Fail, detail);
    }
    vec![count, row, escape]
}

#[cfg(test)]
mod tests;
