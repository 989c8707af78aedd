//! `{name}` placeholders in manifest argv elements and env values.

use std::collections::HashMap;

/// Placeholders valid in build commands and build env.
pub const BUILD_PLACEHOLDERS: &[&str] = &["dir", "out", "files"];
/// Placeholders valid in the run command and run env: build ones plus the
/// per-start values.
pub const RUN_PLACEHOLDERS: &[&str] = &[
    "dir", "out", "files", "port", "cores", "scenario", "response", "mode",
];

/// The placeholder names used in `s`: `{word}` where word is lowercase
/// letters/underscores. Anything else in braces (JSON, Go templates) is text.
pub fn names(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        match after.find('}') {
            Some(j) if is_word(&after[..j]) => {
                out.push(&after[..j]);
                rest = &after[j + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

fn is_word(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// The first placeholder in `s` not in `allowed`, if any.
pub fn first_unknown<'a>(s: &'a str, allowed: &[&str]) -> Option<&'a str> {
    names(s).into_iter().find(|n| !allowed.contains(n))
}

/// Replaces every known placeholder; unknown ones were rejected at load time
/// and are left as they are.
pub fn substitute(s: &str, values: &HashMap<&str, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.find('}') {
            Some(j) if is_word(&after[..j]) && values.contains_key(&after[..j]) => {
                out.push_str(&values[&after[..j]]);
                rest = &after[j + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_words_only() {
        assert_eq!(
            names("{out}/server --x={\"a\":1} {port}"),
            vec!["out", "port"]
        );
        assert_eq!(
            first_unknown("{out}/{oops}", BUILD_PLACEHOLDERS),
            Some("oops")
        );
        assert_eq!(first_unknown("{port}", BUILD_PLACEHOLDERS), Some("port"));
    }

    #[test]
    fn substitutes_known() {
        let mut v = HashMap::new();
        v.insert("out", "/o".to_string());
        assert_eq!(
            substitute("{out}/s {\"k\":1} {x}", &v),
            "/o/s {\"k\":1} {x}"
        );
    }
}
