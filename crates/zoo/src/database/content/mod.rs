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

use crate::fetch::RawResponse;
use crate::rule::{Grade, Rule, RuleResult};
use crate::scenario::{DbContent, Scenario};

mod fortunes;
use fortunes::fortunes;

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
    let mut check = RowsCheck {
        tables,
        updates,
        asked: &asked,
        count: Verdict::new(Rule::DbCount),
        rowv: Verdict::new(Rule::DbRow),
        upd: Verdict::new(Rule::DbUpdate),
    };
    for n in &counts {
        let Some(p) = with_count(&path, n) else {
            continue;
        };
        check.ask(fetch, &p, n);
    }
    let asked_list = counts.join(", ");
    let mut out = vec![
        check.count.result(format!(
            "queries={asked_list}: the right number of rows each"
        )),
        check
            .rowv
            .result(format!("queries={asked_list}: every row the table's")),
    ];
    if updates {
        out.push(check.upd.result(format!(
            "queries={asked_list}: every returned value is in the table afterwards"
        )));
    }
    out
}

/// `world.randomnumber` by id, as the table holds it.
type World = BTreeMap<i64, i64>;

/// The rules `/queries` (and `/updates`) are graded on, over every count
/// asked: the number of rows, the rows themselves, and the updates.
struct RowsCheck<'a> {
    tables: &'a dyn Tables,
    updates: bool,
    /// The scenario's own count (the others are out of bounds).
    asked: &'a str,
    count: Verdict,
    rowv: Verdict,
    upd: Verdict,
}

impl RowsCheck<'_> {
    /// Asks `p`, the path with `queries=n`, and grades the answer.
    fn ask(&mut self, fetch: &mut Fetch<'_>, p: &str, n: &str) {
        let want = clamp(n);
        // For updates: the whole table before, to see that rows changed.
        let before = if self.updates && n == self.asked {
            match self.tables.world(&(1..=10_000).collect::<Vec<i64>>()) {
                Ok(t) => Some(t),
                Err(e) => {
                    self.upd.fail(format!("the database: {e}"));
                    None
                }
            }
        } else {
            None
        };
        let Some(list) = self.array(fetch, p) else {
            return;
        };
        if list.len() == want {
            self.count.ok();
        } else {
            self.count.fail(format!(
                "GET {p} answered {} rows; expected {want}{}",
                list.len(),
                if n == self.asked {
                    String::new()
                } else {
                    format!(" (queries={n} is clamped to 1..={MAX_QUERIES})")
                }
            ));
        }
        let Some((pairs, table)) = self.pairs(p, &list) else {
            return;
        };
        if self.updates {
            self.updated(p, &pairs, &table, before.as_ref());
        } else {
            match pairs.iter().find(|(i, r)| table.get(i) != Some(r)) {
                Some((i, r)) => self.rowv.fail(format!(
                    "GET {p} answered randomNumber {r} for id {i}; the table has {}",
                    table
                        .get(i)
                        .map_or("no such id".to_string(), |v| v.to_string())
                )),
                None => self.rowv.ok(),
            }
        }
    }

    /// The answer to `p` as a JSON array, or none (a count failure).
    fn array(&mut self, fetch: &mut Fetch<'_>, p: &str) -> Option<Vec<Value>> {
        let r = match fetch(p) {
            Ok(r) => r,
            Err(e) => {
                self.count.fail(format!("GET {p}: {e}"));
                return None;
            }
        };
        match json_of(p, &r) {
            Ok(Value::Array(a)) => Some(a),
            Ok(_) => {
                self.count.fail(format!(
                    "GET {p} answered {}: expected a JSON array",
                    shown(&r.body, 80)
                ));
                None
            }
            Err(e) => {
                self.count.fail(e);
                None
            }
        }
    }

    /// The answered rows as (id, randomNumber), and what the table holds
    /// for their ids; none (a row failure) when a row is not one, the
    /// table cannot be read, or every id is the same.
    fn pairs(&mut self, p: &str, list: &[Value]) -> Option<(Vec<(i64, i64)>, World)> {
        let pairs: Vec<Option<(i64, i64)>> = list.iter().map(id_value).collect();
        if let Some(i) = pairs.iter().position(Option::is_none) {
            self.rowv.fail(format!(
                "GET {p}: row {} is not {{\"id\":…,\"randomNumber\":…}}: {}",
                i + 1,
                shown(list[i].to_string().as_bytes(), 60)
            ));
            return None;
        }
        let pairs: Vec<(i64, i64)> = pairs.into_iter().flatten().collect();
        let ids: Vec<i64> = pairs.iter().map(|p| p.0).collect();
        let table = match self.tables.world(&ids) {
            Ok(t) => t,
            Err(e) => {
                self.rowv.fail(format!("the database: {e}"));
                return None;
            }
        };
        if pairs.len() >= 5 && pairs.iter().all(|p| p.0 == pairs[0].0) {
            self.rowv.fail(format!(
                "GET {p}: all {} rows have id {}: each id must be drawn at random",
                pairs.len(),
                pairs[0].0
            ));
            return None;
        }
        Some((pairs, table))
    }

    /// `/updates`: every returned value is in the `table` now, some row
    /// changed since `before`, and every value is in range.
    fn updated(&mut self, p: &str, pairs: &[(i64, i64)], table: &World, before: Option<&World>) {
        // Every returned value must be in the table now; an id drawn
        // twice may hold either of its values.
        let mut by_id: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for (i, r) in pairs {
            by_id.entry(*i).or_default().push(*r);
        }
        let wrong = by_id
            .iter()
            .find(|(i, vals)| table.get(i).is_none_or(|now| !vals.contains(now)));
        match wrong {
            Some((i, vals)) => self.upd.fail(format!(
                "GET {p} answered randomNumber {} for id {i}; the table has {} afterwards: the update was not written",
                vals[0],
                table.get(i).map_or("no such row".to_string(), |v| v.to_string())
            )),
            None => match before {
                Some(b) if !by_id.keys().any(|i| b.get(i) != table.get(i)) => {
                    self.upd.fail(format!(
                        "GET {p}: none of the {} rows changed in the table: the values must be new",
                        by_id.len()
                    ))
                }
                _ => self.upd.ok(),
            },
        }
        if let Some((i, r)) = pairs.iter().find(|(_, r)| !(1..=10_000).contains(r)) {
            self.rowv.fail(format!(
                "GET {p}: id {i} got randomNumber {r}, outside 1..=10000"
            ));
        } else {
            self.rowv.ok();
        }
    }
}

#[cfg(test)]
mod tests;
