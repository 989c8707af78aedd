//! Functions a reader can hold: none over [`MAX_FN_LINES`] lines, but for
//! those listed in [`STILL_LONG`] with the length they had when the rule
//! came (a ratchet: a listed function may shrink, never grow, and leaves
//! the list once it is short).

use std::collections::BTreeMap;

/// A function's lines, from its `fn` line to its closing brace.
pub const MAX_FN_LINES: usize = 100;

/// Each function still longer than the rule, as `path::name`, with its
/// length when it was listed and why (only generated or table-like code
/// may be listed). Empty since 2026-11-28: the 55 functions written before
/// the rule were split into named steps.
pub const STILL_LONG: &[(&str, usize)] = &[];

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
