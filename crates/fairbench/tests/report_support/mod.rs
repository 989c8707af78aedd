//! Helpers for the report and compare tests: running the binary, golden
//! files, and reading the tables of an HTML report.
//!
//! The fixture databases come from src/report/fixture.rs, which each test
//! file includes with `#[path]` beside the store module itself, so fixtures
//! are written by the real store writer API.

#![allow(dead_code)]

pub mod chrome;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fairbench")
}

/// Runs fairbench in `dir` (so `--db results.db` stays relative and outputs
/// name no temporary path).
pub fn fairbench(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("run fairbench")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let o = fairbench(dir, args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "fairbench {args:?} failed:\n{}",
        stderr(&o)
    );
    stdout(&o)
}

pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `actual` with tests/golden/`name`; with UPDATE_GOLDEN=1 writes it
/// instead. On a difference, prints the differing lines and fails.
pub fn assert_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        eprintln!("updated {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read golden file {} ({e}); run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut diff = String::new();
    let mut shown = 0;
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x != y {
            if let Some(x) = x {
                diff.push_str(&format!("{:>5} - {x}\n", i + 1));
            }
            if let Some(y) = y {
                diff.push_str(&format!("{:>5} + {y}\n", i + 1));
            }
            shown += 1;
            if shown >= 40 {
                diff.push_str("  … (more differences)\n");
                break;
            }
        }
    }
    panic!(
        "{} differs from the output ({} vs {} lines; - golden, + actual):\n{diff}\nIf the change is intended: UPDATE_GOLDEN=1 cargo test -p fairbench --test report_golden --test compare_cli",
        path.display(),
        e.len(),
        a.len()
    );
}

/// One table of an HTML report: per row, per cell, (text, data-value).
pub type Rows = Vec<Vec<(String, Option<f64>)>>;

/// The header names and body rows of `<table id="{id}">`.
pub fn html_table(html: &str, id: &str) -> (Vec<String>, Rows) {
    let start = html
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("table {id} not in the report"));
    let end = start + html[start..].find("</table>").expect("table end");
    let t = &html[start..end];
    let mut header = Vec::new();
    for th in t.split("<th>").skip(1) {
        header.push(unescape(&th[..th.find("</th>").unwrap()]));
    }
    let mut rows = Vec::new();
    let body = &t[t.find("<tbody>").expect("tbody")..];
    for tr in body.split("<tr>").skip(1) {
        let mut cells = Vec::new();
        for td in tr.split("<td").skip(1) {
            let open_end = td.find('>').unwrap();
            let attrs = &td[..open_end];
            let value = attrs.find("data-value=\"").map(|i| {
                let rest = &attrs[i + 12..];
                rest[..rest.find('"').unwrap()].parse::<f64>().unwrap()
            });
            let inner = &td[open_end + 1..td.find("</td>").unwrap()];
            // Drop the colour swatch span.
            let text = match inner.find("</span>") {
                Some(i) if inner.starts_with("<span class=\"sw\"") => &inner[i + 7..],
                _ => inner,
            };
            cells.push((unescape(text), value));
        }
        rows.push(cells);
    }
    (header, rows)
}

pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Standard base64 (for screenshots and interval-log histograms).
pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("base64 {c}"),
        }
    };
    let bytes: Vec<u8> = s
        .bytes()
        .filter(|b| *b != b'=' && !b.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, b) in chunk.iter().enumerate() {
            n |= val(*b) << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}
