//! Numbers for people: units chosen for the magnitude.

/// Microseconds as µs, ms or s with three significant figures.
pub fn micros(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        sig3(us / 1_000.0, "ms")
    } else {
        sig3(us / 1_000_000.0, "s")
    }
}

pub fn bytes(b: u64) -> String {
    let b = b as f64;
    if b < 1024.0 {
        format!("{b:.0} B")
    } else if b < 1024.0 * 1024.0 {
        sig3(b / 1024.0, "KiB")
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        sig3(b / (1024.0 * 1024.0), "MiB")
    } else {
        sig3(b / (1024.0 * 1024.0 * 1024.0), "GiB")
    }
}

/// An integer with thousands separators: 1234567 → "1,234,567".
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A count and its noun, plural unless it is one: "1 thread", "1,000
/// connections" (the noun's plural is its `s` form).
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", count(n))
    }
}

/// A rate with one decimal below 100 and thousands separators above.
pub fn rate(r: f64) -> String {
    if r < 100.0 {
        format!("{r:.1}")
    } else {
        count(r.round() as u64)
    }
}

pub fn seconds(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.2} s")
    } else {
        format!("{}m{:04.1}s", (s / 60.0).floor(), s % 60.0)
    }
}

fn sig3(v: f64, unit: &str) -> String {
    if v < 10.0 {
        format!("{v:.2} {unit}")
    } else if v < 100.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

/// Text from a server or a log, made safe for one terminal line: newlines
/// shown as `⏎`, everything else by the one rule
/// ([`fairbench_sys::text::visible`]).
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\n' => out.push_str(" ⏎ "),
            c => fairbench_sys::text::push_visible(&mut out, c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magnitudes() {
        assert_eq!(micros(412.0), "412 µs");
        assert_eq!(micros(1_234.0), "1.23 ms");
        assert_eq!(micros(56_700.0), "56.7 ms");
        assert_eq!(micros(2_500_000.0), "2.50 s");
        assert_eq!(bytes(2048), "2.00 KiB");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(rate(123_456.7), "123,457");
        assert_eq!(counted(1, "thread"), "1 thread");
        assert_eq!(counted(0, "thread"), "0 threads");
        assert_eq!(counted(10_000, "connection"), "10,000 connections");
    }
}
