//! Functions a reader can hold: none over [`MAX_FN_LINES`] lines, but for
//! those listed in [`STILL_LONG`] with the length they had when the rule
//! came (a ratchet: a listed function may shrink, never grow, and leaves
//! the list once it is short).

use std::collections::BTreeMap;

/// A function's lines, from its `fn` line to its closing brace.
pub const MAX_FN_LINES: usize = 100;

/// Each function still longer than the rule, as `path::name`, with its
/// length when the rule came (2026-11-28). The reason is the same for all:
/// written before the rule, each to be split into named steps (none is
/// generated or a table). Unit-test files (`tests.rs`) are not measured.
pub const STILL_LONG: &[(&str, usize)] = &[
    ("crates/engine/src/config.rs::validate", 126),
    ("crates/engine/src/h2/dump.rs::exchange", 109),
    ("crates/engine/src/h2/session.rs::frame", 142),
    ("crates/engine/src/merge.rs::merge", 147),
    ("crates/engine/src/outcome.rs::warnings", 141),
    ("crates/engine/src/response.rs::feed", 104),
    ("crates/engine/src/run.rs::run", 158),
    ("crates/engine/src/worker/books.rs::result", 132),
    ("crates/engine/src/worker/mod.rs::new", 107),
    ("crates/fairbench/src/checker/selection.rs::select", 123),
    ("crates/fairbench/src/commands/run_services.rs::run", 110),
    ("crates/fairbench/src/fleet/mod.rs::run", 289),
    ("crates/fairbench/src/host/server.rs::start", 157),
    ("crates/fairbench/src/host/ssh.rs::open", 133),
    ("crates/fairbench/src/host/start.rs::start", 111),
    ("crates/fairbench/src/mix/file.rs::read", 150),
    ("crates/fairbench/src/output/check_report.rs::summary", 101),
    ("crates/fairbench/src/output/load/summary.rs::render", 270),
    ("crates/fairbench/src/output/run_table.rs::render", 252),
    ("crates/fairbench/src/output/url_table.rs::render", 175),
    ("crates/fairbench/src/report/csv.rs::row", 104),
    (
        "crates/fairbench/src/report/figures/calibration.rs::calibration",
        134,
    ),
    (
        "crates/fairbench/src/report/figures/latency.rs::latency",
        101,
    ),
    ("crates/fairbench/src/report/figures/mod.rs::sections", 104),
    (
        "crates/fairbench/src/report/figures/protocols.rs::protocols",
        124,
    ),
    ("crates/fairbench/src/report/figures/ratio.rs::figure", 162),
    (
        "crates/fairbench/src/report/figures/scaling.rs::scaling",
        103,
    ),
    (
        "crates/fairbench/src/report/figures/spectrum.rs::spectra",
        108,
    ),
    ("crates/fairbench/src/report/figures/stages.rs::stages", 103),
    ("crates/fairbench/src/report/figures/sweeps.rs::sweeps", 160),
    (
        "crates/fairbench/src/report/figures/throughput.rs::throughput",
        136,
    ),
    (
        "crates/fairbench/src/report/figures/warmup.rs::warmups",
        115,
    ),
    (
        "crates/fairbench/src/report/figures/wrk.rs::as_wrk_prints",
        110,
    ),
    (
        "crates/fairbench/src/report/fixture/mod.rs::standard_run",
        165,
    ),
    ("crates/fairbench/src/report/model/group.rs::group", 120),
    ("crates/fairbench/src/report/model/mod.rs::build_for", 151),
    ("crates/fairbench/src/report/svg/bar.rs::render", 123),
    ("crates/fairbench/src/report/svg/line.rs::render", 174),
    ("crates/fairbench/src/report/svg/ratio.rs::render", 108),
    ("crates/fairbench/src/runner/case.rs::measure", 153),
    ("crates/fairbench/src/runner/mod.rs::case", 107),
    ("crates/fairbench/src/runner/mod.rs::sweep", 168),
    ("crates/fairbench/src/store/figures.rs::update_figures", 127),
    ("crates/fairbench/src/suite/file/mod.rs::parse", 348),
    ("crates/fairbench/src/suite/plan.rs::plan_on", 217),
    ("crates/fairbench/src/thresholds.rs::parse", 105),
    ("crates/fairbench/src/topology/netns.rs::create", 146),
    ("crates/sys/src/process/mod.rs::start", 104),
    ("crates/testkit/src/h2/scripted.rs::serve", 208),
    ("crates/zoo/src/database/content/mod.rs::fortunes", 145),
    ("crates/zoo/src/database/content/mod.rs::rows", 161),
    ("crates/zoo/src/manifest/parse.rs::validate", 238),
    ("crates/zoo/src/parity.rs::inspect", 108),
    ("crates/zoo/src/reference.rs::reference_rule", 127),
    ("crates/zoo/src/scenario.rs::load", 172),
];

/// Every function of `text` longer than `max` lines: (name, first line,
/// lines). Braces in strings, characters and comments do not count.
pub fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let depth_after = line_depths(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        // The body opens on this line or a later one (a long signature);
        // the function ends where the depth falls back below its start.
        let start_depth = if k == 0 { 0 } else { depth_after[k - 1] };
        let Some(open) = (k..lines.len()).find(|&j| {
            depth_after[j] > start_depth
                || lines[j].contains('{')
                || lines[j].trim_end().ends_with(';')
        }) else {
            continue;
        };
        if depth_after[open] <= start_depth {
            continue; // a body on one line, or a declaration without one
        }
        let Some(end) = (open..lines.len()).find(|&j| depth_after[j] <= start_depth) else {
            continue;
        };
        let n = end - k + 1;
        if n > max {
            out.push((name, k + 1, n));
        }
    }
    out
}

/// The name of the function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return None;
    }
    let at = t.find("fn ")?;
    let before = &t[..at];
    let words_ok = before.split_whitespace().all(|w| {
        w.starts_with("pub")
            || ["const", "async", "unsafe", "extern", "\"C\"", "default"].contains(&w)
    });
    if !words_ok || (at > 0 && !before.ends_with(' ')) {
        return None;
    }
    let rest = &t[at + 3..];
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The brace depth at the end of each line (as `str::lines` counts them),
/// outside strings, character literals and comments.
fn line_depths(text: &str) -> Vec<usize> {
    let braces = braces(text);
    let mut out = Vec::new();
    let (mut depth, mut k, mut at) = (0i64, 0, 0);
    for line in text.lines() {
        // `lines` drops the "\n" (and a "\r" before it).
        at += line.len();
        while k < braces.len() && braces[k].0 < at {
            depth += braces[k].1;
            k += 1;
        }
        out.push(depth.max(0) as usize);
        at += 1;
        if text[..at.min(text.len())].ends_with("\r\n") {
            at += 1;
        }
    }
    out
}

/// The byte offset of every brace of code, +1 opening and -1 closing.
fn braces(text: &str) -> Vec<(usize, i64)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => out.push((i, 1)),
            b'}' => out.push((i, -1)),
            b'/' if b[i..].starts_with(b"//") => {
                i += b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .unwrap_or(b.len() - i);
                continue;
            }
            b'/' if b[i..].starts_with(b"/*") => {
                let mut nested = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        nested += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        nested -= 1;
                        i += 2;
                        if nested == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            b'r' if !ident_before(b, i) && raw_string_start(&b[i..]).is_some() => {
                let hashes = raw_string_start(&b[i..]).unwrap_or(0);
                i += 2 + hashes;
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                while i < b.len() && !b[i..].starts_with(&close) {
                    i += 1;
                }
                i += close.len();
                continue;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' => {
                // A character literal ('x', '\n', '\'', '\u{7f}'), not a
                // lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    if let Some(k) = b[i + 3..].iter().position(|&x| x == b'\'') {
                        i += k + 4;
                        continue;
                    }
                } else if let Some(ch) = text[i + 1..].chars().next() {
                    let l = ch.len_utf8();
                    if b.get(i + 1 + l) == Some(&b'\'') {
                        i += l + 2;
                        continue;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `r"` or `r#…#"`: the number of `#`.
fn raw_string_start(b: &[u8]) -> Option<usize> {
    let hashes = b[1..].iter().take_while(|&&c| c == b'#').count();
    (b.get(1 + hashes) == Some(&b'"')).then_some(hashes)
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// `path::name` → lines, for every function over `max` in `files`
/// (path, text); the names of one file's functions that share a name are
/// told apart by their line.
pub fn long_in(files: &[(String, String)], max: usize) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (path, text) in files {
        for (name, _line, n) in long_functions(text, max) {
            let key = format!("{path}::{name}");
            let slot = out.entry(key).or_insert(0);
            *slot = (*slot).max(n);
        }
    }
    out
}

#[test]
fn the_function_measure_counts_bodies_not_braces_in_text() {
    let text = "fn short() {\n    let s = \"}}}\";\n}\n\
                fn long<'a>(x: &'a str) -> char {\n    // }\n    let c = '}';\n    let r = r#\"{\"#;\n    /* { */\n    c\n}\n\
                trait T {\n    fn decl(&self);\n}\n";
    let found = long_functions(text, 3);
    assert_eq!(found, vec![("long".to_string(), 4, 7)], "{found:?}");
    assert!(long_functions(text, 7).is_empty());
}
