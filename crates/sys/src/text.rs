//! Bytes from servers, manifests, folders and tools are data: before they
//! reach a terminal, a CSV cell, a log line or a report, every character
//! that could move the cursor, recolour the screen, open a link or make
//! text read backwards becomes a visible escape. One rule for every output
//! ([`visible`]); the HTML and Markdown escapers of the report add their
//! own syntax on top of it.

/// One line of text with every control character, escape sequence and
/// invisible formatting character made visible: `\n`, `\r` and `\t`
/// spelled out, other C0 and C1 controls and DEL as `\x1b`, bidirectional
/// and other invisible format characters (U+202E, U+2066, U+200B, U+FEFF,
/// the line and paragraph separators) as `\u{202e}`. A terminal escape
/// sequence is thereby inert: its ESC shows as `\x1b`.
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        push_visible(&mut out, ch);
    }
    out
}

/// Pushes `c`, or its visible escape (see [`visible`]).
pub fn push_visible(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 || ('\u{7f}'..='\u{9f}').contains(&c) => {
            out.push_str(&format!("\\x{:02x}", c as u32))
        }
        c if is_invisible_format(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Whether [`visible`] shows `c` as an escape.
pub fn is_hidden(c: char) -> bool {
    (c as u32) < 0x20 || ('\u{7f}'..='\u{9f}').contains(&c) || is_invisible_format(c)
}

/// Characters that change how text around them is shown without showing
/// themselves: the bidirectional marks, embeddings, overrides and isolates,
/// zero-width characters, the line and paragraph separators, the word
/// joiner and invisible operators, and the byte-order mark.
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{061c}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}'
        | '\u{feff}'
    )
}

/// Raw bytes as printable text: `\r` and `\n` spelled out (`\n` also ends the
/// printed line, like curl -v), other control and non-ASCII bytes as `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + bytes.len() / 8);
    for &b in bytes {
        match b {
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n\n"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// Serialised JSON with every hidden character written as a `\uXXXX`
/// escape. Outside strings JSON is ASCII without controls, so only string
/// contents change, and they decode to the same value.
pub fn json(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_hidden(c) && c != '\n' {
            // Inside a string serde_json has already escaped C0 controls;
            // these are DEL, C1 and the invisible format characters.
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls() {
        assert_eq!(visible("a\x1b[31mb"), "a\\x1b[31mb");
        assert_eq!(
            visible("\x1b]8;;http://x\x07link\x1b]8;;\x07"),
            "\\x1b]8;;http://x\\x07link\\x1b]8;;\\x07"
        );
        assert_eq!(visible("tab\there\r\n"), "tab\\there\\r\\n");
        assert_eq!(visible("\u{9b}31m\u{7f}"), "\\x9b31m\\x7f");
        assert_eq!(
            visible("\u{202e}olleh\u{2066}\u{200b}\u{feff}\u{2028}"),
            "\\u{202e}olleh\\u{2066}\\u{200b}\\u{feff}\\u{2028}"
        );
        assert_eq!(visible("café ünï 日本"), "café ünï 日本");
        assert_eq!(
            escape_bytes(b"HTTP/1.1 200 OK\r\n\x00"),
            "HTTP/1.1 200 OK\\r\\n\n\\x00"
        );
    }
}
