//! The last step before text reaches a terminal: whatever a table or a
//! message carries from a server, a manifest, a folder name or a suite —
//! escape sequences, OSC 8 links, bidirectional overrides — is shown as a
//! visible escape (the one rule, [`fairbench_sys::text::visible`]); only
//! the line breaks between lines stay. JSON keeps its data exact: those
//! characters become JSON's own `\uXXXX` escapes, which decode to the same
//! string.

use fairbench_sys::text::visible;

/// `eprintln!` for lines that carry names from servers, manifests, folders
/// or suites: the line goes through [`text`].
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::output::terminal::text(&format!($($arg)*)))
    };
}

/// Multi-line text for the terminal: each line made visible, line breaks
/// kept.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&visible(line));
    }
    out
}

/// Serialised JSON with every hidden character written as a `\uXXXX`
/// escape: the same data, safe on a terminal (the rule lives in `sys`, so
/// that every document is escaped by it, wherever it is made).
pub use fairbench_sys::text::json;

#[cfg(test)]
mod tests {
    use super::*;
    use fairbench_sys::text::is_hidden;

    #[test]
    fn text_keeps_lines_and_shows_the_rest() {
        assert_eq!(
            text("a\x1b[2Jb\n\u{202e}c\r\n"),
            "a\\x1b[2Jb\n\\u{202e}c\\r\n"
        );
    }

    #[test]
    fn json_stays_the_same_data() {
        let v = serde_json::json!({"name": "ev\x1b[31mil\u{202e}\u{9b}\u{7f}", "n": 1});
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let safe = json(&pretty);
        assert!(!safe.chars().any(|c| is_hidden(c) && c != '\n'), "{safe}");
        assert!(
            safe.contains("\\u202e") && safe.contains("\\u009b"),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
    }
}
