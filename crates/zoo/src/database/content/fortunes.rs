//! The fortunes page (`/fortunes`): every row of the table plus the one
//! added at request time, sorted by message and HTML-escaped.

use super::{shown, Fetch, Tables};
use crate::database::seed::ADDED_FORTUNE;
use crate::rule::{Grade, Rule, RuleResult};
use crate::scenario::Scenario;

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
pub(super) fn unescape(s: &str) -> Result<String, String> {
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

pub(super) fn fortunes(
    scenario: &Scenario,
    fetch: &mut Fetch<'_>,
    tables: &dyn Tables,
) -> Vec<RuleResult> {
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
    let got = match fortune_rows(&path, &r.body) {
        Ok(got) => got,
        Err(why) => return fail3(why),
    };
    let count = fortune_count(&path, &got, &want);
    let (escape, decoded) = fortunes_escaped(&path, &got);
    let row = fortunes_sorted(&path, &decoded, &want);
    vec![count, row, escape]
}

/// The same failure for each of the three fortunes rules.
fn fail3(why: String) -> Vec<RuleResult> {
    vec![
        RuleResult::new(Rule::DbCount, Grade::Fail, why.clone()),
        RuleResult::new(Rule::DbRow, Grade::Fail, why.clone()),
        RuleResult::new(Rule::HtmlEscape, Grade::Fail, why),
    ]
}

/// The rows of the fortunes page at `path` as (id, message), both as sent;
/// `Err` when the page is not the contract's.
fn fortune_rows(path: &str, body: &[u8]) -> Result<Vec<(String, String)>, String> {
    let text = String::from_utf8_lossy(body);
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
        return Err(format!(
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
                return Err(format!(
                    "GET {path}: row {} is not <tr><td>ID</td><td>MESSAGE</td></tr>: {}",
                    i + 1,
                    shown(piece.as_bytes(), 80)
                ))
            }
        }
    }
    Ok(got)
}

/// `db-count`: the table's rows and the added one, no more, no fewer.
fn fortune_count(path: &str, got: &[(String, String)], want: &[(i64, String)]) -> RuleResult {
    if got.len() == want.len() {
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
    }
}

/// `html-escape`: every message escaped; and the rows decoded (a message
/// that is not escaped kept as sent).
fn fortunes_escaped(path: &str, got: &[(String, String)]) -> (RuleResult, Vec<(String, String)>) {
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
    (escape, decoded)
}

/// `db-row`: the decoded rows are the table's and the added one, sorted by
/// message; else the first difference named.
fn fortunes_sorted(path: &str, decoded: &[(String, String)], want: &[(i64, String)]) -> RuleResult {
    let want_sorted: Vec<(String, String)> = want
        .iter()
        .map(|(i, m)| (i.to_string(), m.clone()))
        .collect();
    if decoded == want_sorted {
        return RuleResult::new(
            Rule::DbRow,
            Grade::Pass,
            "the table's rows and the added one, sorted by message",
        );
    }
    let mut a = decoded.to_vec();
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
    RuleResult::new(Rule::DbRow, Grade::Fail, detail)
}
