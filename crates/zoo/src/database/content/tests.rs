use std::cell::RefCell;
use std::path::Path;

use super::fortunes::unescape;
use super::*;
use crate::database::seed::{world_value, ADDED_FORTUNE, FORTUNES};
use crate::fetch::parse;

/// The seeded tables, in memory; updates write here.
struct Mem {
    world: RefCell<BTreeMap<i64, i64>>,
}

impl Mem {
    fn new() -> Mem {
        Mem {
            world: RefCell::new(
                (1..=10_000)
                    .map(|i| (i, world_value(i as u32) as i64))
                    .collect(),
            ),
        }
    }
}

impl Tables for Mem {
    fn world(&self, ids: &[i64]) -> Result<BTreeMap<i64, i64>, String> {
        let w = self.world.borrow();
        Ok(ids.iter().filter_map(|i| Some((*i, *w.get(i)?))).collect())
    }
    fn fortunes(&self) -> Result<Vec<(i64, String)>, String> {
        Ok(FORTUNES
            .iter()
            .map(|(i, m)| (*i as i64, m.to_string()))
            .collect())
    }
}

fn scenario(name: &str, path: &str, db: &str) -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join(format!("{name}.toml"));
    std::fs::write(
        &f,
        format!(
            "name = \"{name}\"\nmethod = \"GET\"\npath = \"{path}\"\n[expect]\nstatus = 200\nbody_regex = \".\"\ndatabase = \"{db}\"\n"
        ),
    )
    .unwrap();
    Scenario::load(&f, Path::new("x.toml")).unwrap()
}

fn ok(body: &str) -> Result<RawResponse, String> {
    let text = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    Ok(parse(text.as_bytes()).unwrap())
}

fn query(path: &str, key: &str) -> Option<String> {
    let q = path.split_once('?')?.1;
    q.split('&')
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")).map(str::to_string))
}

fn obj(i: i64, r: i64) -> String {
    format!("{{\"id\":{i},\"randomNumber\":{r}}}")
}

fn failing(rs: &[RuleResult]) -> Vec<(&'static str, &str)> {
    rs.iter()
        .filter(|r| r.grade == Grade::Fail)
        .map(|r| (r.rule.name(), r.detail.as_str()))
        .collect()
}

#[test]
fn the_right_row_passes_and_a_wrong_one_fails_with_one_line() {
    let t = Mem::new();
    let sc = scenario("db", "/db?id={{uniform 1 10000}}", "row");
    let mut good = |p: &str| {
        let id: i64 = query(p, "id").unwrap().parse().unwrap();
        ok(&obj(id, world_value(id as u32) as i64))
    };
    let rs = grade(DbContent::Row, &sc, &mut good, &t);
    assert_eq!(failing(&rs), vec![], "{rs:?}");
    assert!(
        rs[0].detail.starts_with("5 ids (1, 10000,"),
        "{}",
        rs[0].detail
    );

    // Off by one in the value: caught, with the id and the table's value.
    let mut wrong = |p: &str| {
        let id: i64 = query(p, "id").unwrap().parse().unwrap();
        ok(&obj(id, world_value(id as u32) as i64 % 10_000 + 1))
    };
    let rs = grade(DbContent::Row, &sc, &mut wrong, &t);
    let f = failing(&rs);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0, "db-row");
    assert!(
        f[0].1.starts_with(&format!(
            "GET /db?id=1 answered randomNumber {}; the table has {} for id 1 (and 4 more of 5 requests)",
            world_value(1) % 10_000 + 1,
            world_value(1)
        )),
        "{}",
        f[0].1
    );
    assert!(!f[0].1.contains('\n'));

    // Always the same row, whatever was asked.
    let mut same = |_: &str| ok(&obj(42, world_value(42) as i64));
    let f = grade(DbContent::Row, &sc, &mut same, &t);
    assert!(
        failing(&f)[0]
            .1
            .starts_with("GET /db?id=1 answered the row of id 42"),
        "{f:?}"
    );
}

fn queries_server(t: &Mem, p: &str, count: impl Fn(usize) -> usize, write: bool) -> String {
    let n = query(p, "queries")
        .and_then(|q| q.parse::<i64>().ok())
        .map_or(1, |q| q.clamp(1, 500) as usize);
    let mut out = Vec::new();
    for k in 0..count(n) {
        let id = (k as i64 * 7919 + n as i64) % 10_000 + 1;
        let v = if write {
            let nv = (t.world.borrow()[&id] % 10_000) + 1;
            t.world.borrow_mut().insert(id, nv);
            nv
        } else {
            t.world.borrow()[&id]
        };
        out.push(obj(id, v));
    }
    format!("[{}]", out.join(","))
}

#[test]
fn queries_count_and_clamp() {
    let t = Mem::new();
    let sc = scenario("queries", "/queries?queries=20", "rows");
    let rs = grade(
        DbContent::Rows,
        &sc,
        &mut |p: &str| ok(&queries_server(&t, p, |n| n, false)),
        &t,
    );
    assert_eq!(failing(&rs), vec![], "{rs:?}");

    let rs = grade(
        DbContent::Rows,
        &sc,
        &mut |p: &str| ok(&queries_server(&t, p, |n| n - 1, false)),
        &t,
    );
    let f = failing(&rs);
    assert_eq!(f[0].0, "db-count");
    assert!(
        f[0].1.starts_with(
            "GET /queries?queries=20 answered 19 rows; expected 20 (and 3 more of 4 requests)"
        ),
        "{}",
        f[0].1
    );

    // No clamp at 500: only that request fails.
    let rs = grade(
        DbContent::Rows,
        &sc,
        &mut |p: &str| {
            let big = query(p, "queries").unwrap() == "501";
            ok(&queries_server(&t, p, |n| if big { 501 } else { n }, false))
        },
        &t,
    );
    let f = failing(&rs);
    assert_eq!(
        f[0].1,
        "GET /queries?queries=501 answered 501 rows; expected 500 (queries=501 is clamped to 1..=500)"
    );
}

#[test]
fn updates_must_be_in_the_table_afterwards() {
    let t = Mem::new();
    let sc = scenario("updates", "/updates?queries=20", "updates");
    let rs = grade(
        DbContent::Updates,
        &sc,
        &mut |p: &str| ok(&queries_server(&t, p, |n| n, true)),
        &t,
    );
    assert_eq!(failing(&rs), vec![], "{rs:?}");
    assert_eq!(rs.len(), 3);

    // New values answered but never written.
    let rs = grade(
        DbContent::Updates,
        &sc,
        &mut |p: &str| {
            let before = t.world.borrow().clone();
            let body = queries_server(&t, p, |n| n, true);
            *t.world.borrow_mut() = before;
            ok(&body)
        },
        &t,
    );
    let f = failing(&rs);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "db-update");
    assert!(f[0].1.contains("the update was not written"), "{}", f[0].1);

    // The old values answered, nothing changed.
    let rs = grade(
        DbContent::Updates,
        &sc,
        &mut |p: &str| ok(&queries_server(&t, p, |n| n, false)),
        &t,
    );
    let f = failing(&rs);
    assert_eq!(f[0].0, "db-update");
    assert!(f[0].1.contains("none of the 20 rows changed"), "{}", f[0].1);
}

fn fortunes_page(rows: &[(i64, String)], escape: bool) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html>\n<head><title>Fortunes</title></head>\n<body>\n<table>\n<tr><th>id</th><th>message</th></tr>\n",
    );
    for (i, m) in rows {
        let m = if escape {
            m.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&#34;")
                .replace('\'', "&#39;")
        } else {
            m.clone()
        };
        s.push_str(&format!("<tr><td>{i}</td><td>{m}</td></tr>\n"));
    }
    s.push_str("</table>\n</body>\n</html>\n");
    s
}

fn sorted_fortunes() -> Vec<(i64, String)> {
    let mut all: Vec<(i64, String)> = FORTUNES
        .iter()
        .map(|(i, m)| (*i as i64, m.to_string()))
        .collect();
    all.push((0, ADDED_FORTUNE.into()));
    all.sort_by(|a, b| a.1.cmp(&b.1));
    all
}

#[test]
fn fortunes_sorted_escaped_and_complete() {
    let t = Mem::new();
    let sc = scenario("fortunes", "/fortunes", "fortunes");
    let all = sorted_fortunes();
    assert_eq!(all[0].0, 11, "the <script> one sorts first");
    assert_eq!(all.last().unwrap().0, 12, "the Japanese one sorts last");
    let rs = grade(
        DbContent::Fortunes,
        &sc,
        &mut |_: &str| ok(&fortunes_page(&all, true)),
        &t,
    );
    assert_eq!(failing(&rs), vec![], "{rs:?}");

    let rs = grade(
        DbContent::Fortunes,
        &sc,
        &mut |_: &str| ok(&fortunes_page(&all, false)),
        &t,
    );
    let f = failing(&rs);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "html-escape");
    assert!(
        f[0].1.starts_with(
            "GET /fortunes: row 1 (id 11) is not HTML-escaped (a raw <): <script>alert("
        ),
        "{}",
        f[0].1
    );

    let without_added: Vec<_> = all.iter().filter(|r| r.0 != 0).cloned().collect();
    let f = grade(
        DbContent::Fortunes,
        &sc,
        &mut |_: &str| ok(&fortunes_page(&without_added, true)),
        &t,
    );
    let f = failing(&f);
    assert_eq!(
        f.iter().map(|x| x.0).collect::<Vec<_>>(),
        ["db-count", "db-row"]
    );
    assert!(
        f[1].1
            .contains("left out id 0 `Additional fortune added at request time.`"),
        "{}",
        f[1].1
    );

    let mut by_id = all.clone();
    by_id.sort();
    let f = grade(
        DbContent::Fortunes,
        &sc,
        &mut |_: &str| ok(&fortunes_page(&by_id, true)),
        &t,
    );
    let f = failing(&f);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].1
            .contains("not sorted by message: row 1 is id 0, expected id 11"),
        "{}",
        f[0].1
    );
}

#[test]
fn unescape_accepts_every_reference_form() {
    assert_eq!(
        unescape("a &amp; &lt;b&gt; &quot;&#39;&#x27;&apos;").unwrap(),
        "a & <b> \"'''"
    );
    assert_eq!(unescape("it's \"fine\"").unwrap(), "it's \"fine\"");
    assert_eq!(unescape("a & b").unwrap_err(), "a raw &");
    assert_eq!(
        unescape("&bogus;").unwrap_err(),
        "an unknown reference &bogus;"
    );
}
