//! Counts and rates with SI suffixes, as wrk takes them: "50", "1k",
//! "1.5M", "2G" (k = 1000, M = 10^6, G = 10^9), everywhere a count or a rate
//! is taken. A count must come out a whole number: "1.5k" is 1500, but
//! "1.0005k" is refused rather than rounded.

/// The multiplier a suffix stands for, and the number before it.
fn split_suffix(s: &str) -> Result<(&str, u32), String> {
    let Some(last) = s.chars().last() else {
        return Err("is empty (expected a number, e.g. 50, 1k or 1.5M)".into());
    };
    Ok(match last {
        'k' | 'K' => (&s[..s.len() - 1], 3),
        'M' => (&s[..s.len() - 1], 6),
        'G' | 'g' => (&s[..s.len() - 1], 9),
        'm' => {
            return Err(format!(
                "{s:?}: `m` would be milli; write M for million (e.g. 1M)"
            ))
        }
        _ => (s, 0),
    })
}

fn not_a_number(s: &str) -> String {
    format!("{s:?} is not a number (expected e.g. 50, 1k or 1.5M)")
}

/// A whole number of zero or more, suffixes allowed.
pub fn count(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(format!(
            "{s:?} is negative (expected a count, e.g. 50, 1k or 1.5M)"
        ));
    }
    let (num, exp) = split_suffix(s)?;
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits_ok = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() && frac.is_empty() || !digits_ok(int) || !digits_ok(frac) {
        return Err(not_a_number(s));
    }
    // Trailing zeros of the fraction say nothing; beyond the suffix's
    // places any other digit would be a part of one.
    let frac = frac.trim_end_matches('0');
    if frac.len() > exp as usize {
        return Err(format!("{s:?} is not a whole number"));
    }
    let too_big = || format!("{s:?} is too large");
    let int = int.trim_start_matches('0');
    if int.len() + exp as usize > 20 {
        return Err(too_big());
    }
    let whole: u128 = format!("0{int}{frac}")
        .parse()
        .map_err(|_| not_a_number(s))?;
    let v = whole * 10u128.pow(exp - frac.len() as u32);
    u64::try_from(v).map_err(|_| too_big())
}

/// A whole number of one or more.
pub fn positive_count(s: &str) -> Result<u64, String> {
    match count(s)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// [`positive_count`] as a `usize` (connections, threads, repetitions).
pub fn positive_usize(s: &str) -> Result<usize, String> {
    let n = positive_count(s)?;
    usize::try_from(n).map_err(|_| format!("{s:?} is too large"))
}

/// A rate in requests per second: above zero, fractions allowed ("0.5",
/// "2.5k").
pub fn rate(s: &str) -> Result<f64, String> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(format!(
            "{s:?} is negative (expected requests per second, e.g. 500 or 10k)"
        ));
    }
    let (num, exp) = split_suffix(s)?;
    // Only plain decimals: no "inf", "NaN" or exponents hiding in a rate.
    if num.is_empty()
        || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || num.bytes().filter(|&b| b == b'.').count() > 1
        || num == "."
    {
        return Err(not_a_number(s));
    }
    let v = num.parse::<f64>().map_err(|_| not_a_number(s))? * 10f64.powi(exp as i32);
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("{s:?}: must be above 0 requests per second"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_multiply_exactly() {
        assert_eq!(count("50").unwrap(), 50);
        assert_eq!(count("1k").unwrap(), 1000);
        assert_eq!(count("10K").unwrap(), 10_000);
        assert_eq!(count("1.5k").unwrap(), 1500);
        assert_eq!(count("1.5M").unwrap(), 1_500_000);
        assert_eq!(count("2G").unwrap(), 2_000_000_000);
        assert_eq!(count("1.000k").unwrap(), 1000);
        assert_eq!(count("0.001k").unwrap(), 1);
        assert_eq!(count(" 7 ").unwrap(), 7);
        assert_eq!(count("0").unwrap(), 0);
        assert_eq!(count("18446744073709551615").unwrap(), u64::MAX);
    }

    #[test]
    fn counts_that_are_not_whole_or_not_numbers_are_refused() {
        for bad in [
            "1.0005k", "1.5", "0.0001k", "1q", "", "k", "-1", "1e3", "1,000", "1..5k", "1m", "x1",
            "inf", "1kk",
        ] {
            assert!(count(bad).is_err(), "{bad:?}");
        }
        assert!(count("18446744073709551616")
            .unwrap_err()
            .contains("too large"));
        assert!(count("99999999999G").unwrap_err().contains("too large"));
        assert!(count("1.0005k").unwrap_err().contains("not a whole number"));
        assert!(count("1m").unwrap_err().contains("M for million"));
        assert_eq!(positive_count("0").unwrap_err(), "must be at least 1");
        assert_eq!(positive_usize("1k").unwrap(), 1000);
    }

    #[test]
    fn rates_take_fractions() {
        assert_eq!(rate("10k").unwrap(), 10_000.0);
        assert_eq!(rate("2.5k").unwrap(), 2500.0);
        assert_eq!(rate("0.5").unwrap(), 0.5);
        assert_eq!(rate("1M").unwrap(), 1e6);
        for bad in ["0", "-5", "inf", "NaN", "1e3", "x", "", ".", "1.2.3", "0k"] {
            assert!(rate(bad).is_err(), "{bad:?}");
        }
    }
}
