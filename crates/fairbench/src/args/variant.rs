//! `--variant`, the same on `check` and `run`: a server's build mode, its
//! response shape, or both as MODE/RESPONSE (e.g. `normalized`, `native`,
//! `jit/default`). The response shapes are `default`, `normalized` and
//! `study` (only the servers a publication measured have it);
//! any other word is a mode.

use std::str::FromStr;

use fairbench_zoo::ResponseKind;

/// Which variants of each server: unset parts mean all of them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VariantSel {
    pub mode: Option<String>,
    pub response: Option<ResponseKind>,
}

impl FromStr for VariantSel {
    type Err = String;

    fn from_str(s: &str) -> Result<VariantSel, String> {
        let bad = || {
            format!(
                "{s:?}: expected MODE, RESPONSE (default, normalized or study) or MODE/RESPONSE, e.g. jit/normalized"
            )
        };
        let word_ok = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        };
        match s.trim().split_once('/') {
            Some((m, r)) => {
                let response = ResponseKind::parse(r.trim()).ok_or_else(bad)?;
                if !word_ok(m.trim()) {
                    return Err(bad());
                }
                Ok(VariantSel {
                    mode: Some(m.trim().to_string()),
                    response: Some(response),
                })
            }
            None => {
                let w = s.trim();
                if let Some(r) = ResponseKind::parse(w) {
                    return Ok(VariantSel {
                        mode: None,
                        response: Some(r),
                    });
                }
                if !word_ok(w) {
                    return Err(bad());
                }
                Ok(VariantSel {
                    mode: Some(w.to_string()),
                    response: None,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_response_or_both() {
        let v: VariantSel = "normalized".parse().unwrap();
        assert_eq!((v.mode, v.response), (None, Some(ResponseKind::Normalized)));
        let v: VariantSel = "jit".parse().unwrap();
        assert_eq!((v.mode.as_deref(), v.response), (Some("jit"), None));
        let v: VariantSel = "native/default".parse().unwrap();
        assert_eq!(
            (v.mode.as_deref(), v.response),
            (Some("native"), Some(ResponseKind::Default))
        );
        for bad in ["", "jit/", "/default", "jit/fast", "a b", "a/b/c"] {
            assert!(bad.parse::<VariantSel>().is_err(), "{bad:?}");
        }
    }
}
