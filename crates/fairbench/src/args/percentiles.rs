//! The headline percentiles a load summary leads with: `50,90,99,99.9`.

/// The summary's headline percentiles, in the order given.
#[derive(Debug, Clone)]
pub struct Percentiles(pub Vec<f64>);

/// "50,90,99,99.9": each above 0 and at most 100.
pub fn parse_percentiles(s: &str) -> Result<Percentiles, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.trim_end_matches('%').parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => out.push(p),
            _ => {
                return Err(format!(
                    "{part:?} is not a percentile above 0 and at most 100 (expected e.g. 50,90,99,99.9)"
                ))
            }
        }
    }
    if out.is_empty() {
        return Err("must name at least one percentile, e.g. 50,90,99,99.9".into());
    }
    Ok(Percentiles(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_lists() {
        assert_eq!(
            parse_percentiles("50, 99.9,100%").unwrap().0,
            vec![50.0, 99.9, 100.0]
        );
        for bad in ["", "0", "101", "x", "50,-1"] {
            assert!(parse_percentiles(bad).is_err(), "{bad}");
        }
    }
}
