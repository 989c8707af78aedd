//! Escaping, in one place. Every string that came from a server, a manifest or
//! the database goes through here before it reaches HTML, SVG or Markdown;
//! what is made visible is the one rule of every output
//! ([`fairbench_sys::text::visible`]), with each format's syntax on top.
//!
//! Control characters are not just made harmless but made *visible*
//! (`\x07`, `\r`): a report is evidence, and a header name with a stray byte
//! in it should look like one.

/// Text for HTML or SVG element content and attribute values, on one line:
/// `& < > " '` become entities, every control character (and the
/// bidirectional overrides, which could make text read backwards) becomes a
/// visible escape such as `\x07` or `\u{202e}`.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        push_html(&mut out, ch, false);
    }
    out
}

/// Like [`html`], but keeps line breaks and tabs (for `<pre>` blocks such as
/// a server's log tail). A lone `\r` is still shown as `\r`.
pub fn html_multiline(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        push_html(&mut out, ch, true);
    }
    out
}

fn push_html(out: &mut String, ch: char, multiline: bool) {
    match ch {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        '\n' | '\t' if multiline => out.push(ch),
        c => push_visible(out, c),
    }
}

use fairbench_sys::text::push_visible;

/// Plain text on one line with control characters made visible, no entity
/// escaping (for terminal tables and CSV cells, where the csv crate quotes):
/// the one rule of every output, [`fairbench_sys::text::visible`].
pub use fairbench_sys::text::visible;

/// A Markdown table cell: one line, control characters visible, and every
/// character that Markdown or the HTML it may pass through would interpret
/// escaped with a backslash (CommonMark backslash escapes).
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '\\' | '|' | '<' | '>' | '[' | ']' | '`' | '*' | '&' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(ch);
            }
            c => push_visible(&mut out, c),
        }
    }
    out
}

/// A string safe for a file name: ASCII letters, digits, `.`, `-` and `_`
/// kept, everything else (slashes included) replaced by `_`; never empty,
/// never starting with a dot.
pub fn file_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with('.') {
        out.insert(0, '_');
    }
    out.truncate(120);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_inert_and_visible() {
        assert_eq!(
            html("<script>alert(\"x\")</script>"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
        );
        assert_eq!(html("a'b&c"), "a&#39;b&amp;c");
        assert_eq!(html("bell\x07\r\nend"), "bell\\x07\\r\\nend");
        assert_eq!(html("\u{202e}evil"), "\\u{202e}evil");
        assert_eq!(html("\u{85}"), "\\x85");
        assert_eq!(html_multiline("l1\r\nl2\t<b>"), "l1\\r\nl2\t&lt;b&gt;");
    }

    #[test]
    fn markdown_cells() {
        assert_eq!(markdown("a|b"), "a\\|b");
        assert_eq!(markdown("<script>"), "\\<script\\>");
        assert_eq!(markdown("x\ny"), "x\\ny");
        assert_eq!(markdown("dart_frog"), "dart_frog");
    }

    #[test]
    fn file_names() {
        assert_eq!(file_name("../../etc/passwd"), "_.._.._etc_passwd");
        assert_eq!(file_name(""), "_");
        assert_eq!(file_name("go c=50 t=1"), "go_c_50_t_1");
    }
}
