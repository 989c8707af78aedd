//! Durations: "10s", "500ms", "1m30s" (humantime), or a bare number of
//! seconds ("2.5"), everywhere a duration is taken.

use std::time::Duration;

/// The longest duration anything accepts: beyond it a typo is likelier than
/// intent, and deadline arithmetic stays far from overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);

/// A duration of zero or more.
pub fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let d = match s.parse::<f64>() {
        Ok(secs) => {
            if !(secs.is_finite() && secs >= 0.0) {
                return Err(format!(
                    "{s:?} is not a duration (expected e.g. 10s, 500ms)"
                ));
            }
            Duration::try_from_secs_f64(secs).map_err(|_| too_long(s))?
        }
        Err(_) => humantime::parse_duration(s).map_err(|e| match e {
            humantime::DurationError::NumberOverflow => too_long(s),
            _ => format!("{s:?} is not a duration (expected e.g. 10s, 500ms, 2m)"),
        })?,
    };
    if d > MAX_DURATION {
        return Err(too_long(s));
    }
    Ok(d)
}

/// A duration longer than zero.
pub fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = duration(s)?;
    if d.is_zero() {
        return Err("must be longer than 0".into());
    }
    Ok(d)
}

fn too_long(s: &str) -> String {
    format!("{s:?} is too long (at most 30 days)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(positive_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(
            positive_duration("250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(
            positive_duration("1.5").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(positive_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(duration("0s").unwrap(), Duration::ZERO);
        assert_eq!(duration("0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn nonsense_is_refused_with_a_reason() {
        assert!(positive_duration("0").is_err());
        assert!(positive_duration("-1s").is_err());
        assert!(duration("-1").is_err());
        assert!(duration("soon").is_err());
        assert!(duration("NaN").is_err());
        assert!(duration("inf").is_err());
        for huge in ["1e20", "1e300", "31d", "99999999999999999999999s"] {
            let e = duration(huge).unwrap_err();
            assert!(e.contains("too long"), "{huge}: {e}");
        }
        assert_eq!(duration("30d").unwrap(), MAX_DURATION);
    }
}
