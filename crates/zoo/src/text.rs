//! Bytes from servers and tools are data: before they reach a terminal,
//! control characters become visible escapes.

/// One line of text with control characters (and invalid UTF-8) escaped;
/// tabs kept.
pub fn escape_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\t' => out.push('\t'),
            c if c.is_control() => push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
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

fn push_escape(out: &mut String, c: char) {
    let n = c as u32;
    if n <= 0xff {
        out.push_str(&format!("\\x{n:02x}"));
    } else {
        out.push_str(&format!("\\u{{{n:x}}}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls() {
        assert_eq!(escape_line("a\x1b[31mb"), "a\\x1b[31mb");
        assert_eq!(
            escape_bytes(b"HTTP/1.1 200 OK\r\n\x00"),
            "HTTP/1.1 200 OK\\r\\n\n\\x00"
        );
    }
}
