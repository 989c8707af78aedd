//! Status codes: which ones a run expects, and how many of each it got.

use std::collections::BTreeMap;
use std::fmt;

use crate::config_error::ConfigError;

/// Status codes are three digits; anything a parser hands us is below this.
const CODES: usize = 1000;
const WORDS: usize = CODES.div_ceil(64);

/// The status codes that count as a success; an answer with any other is a
/// status error. A bit set, so the check per answer is one shift and mask.
/// Travels (to load agents) as the text it was parsed from.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct StatusSet {
    bits: [u64; WORDS],
    /// As written, for messages and for sending to load agents.
    text: String,
}

impl Default for StatusSet {
    /// 2xx and 3xx, as wrk, ab and oha count successes.
    fn default() -> Self {
        StatusSet::parse("200-399").expect("static default is valid")
    }
}

impl From<StatusSet> for String {
    fn from(s: StatusSet) -> String {
        s.text
    }
}

impl TryFrom<String> for StatusSet {
    type Error = ConfigError;
    fn try_from(s: String) -> Result<StatusSet, ConfigError> {
        StatusSet::parse(&s)
    }
}

impl StatusSet {
    /// `"200,204,300-399"`: codes and inclusive ranges, comma-separated;
    /// `2xx` stands for 200-299.
    pub fn parse(raw: &str) -> Result<StatusSet, ConfigError> {
        let bad = |why: String| ConfigError::new("expect-status", why);
        let trimmed = raw.trim();
        let mut bits = [0u64; WORDS];
        let mut any = false;
        for part in trimmed.split(',').map(str::trim) {
            if part.is_empty() {
                continue;
            }
            let (lo, hi) =
                if let Some(class) = part.strip_suffix("xx").or_else(|| part.strip_suffix("XX")) {
                    let d: u16 = class
                        .parse()
                        .ok()
                        .filter(|d| (1..=5).contains(d))
                        .ok_or_else(|| {
                            bad(format!(
                                "{part:?} is not a status class (expected e.g. 2xx)"
                            ))
                        })?;
                    (d * 100, d * 100 + 99)
                } else if let Some((a, b)) = part.split_once('-') {
                    (code(a, part)?, code(b, part)?)
                } else {
                    let c = code(part, part)?;
                    (c, c)
                };
            if lo > hi {
                return Err(bad(format!("{part:?}: the range is empty")));
            }
            for c in lo..=hi {
                bits[c as usize / 64] |= 1 << (c % 64);
            }
            any = true;
        }
        if !any {
            return Err(bad(format!(
                "{raw:?} names no status (expected e.g. 200,204,300-399)"
            )));
        }
        Ok(StatusSet {
            bits,
            text: trimmed.to_string(),
        })
    }

    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        let c = status as usize;
        c < CODES && self.bits[c / 64] & (1 << (c % 64)) != 0
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn code(s: &str, part: &str) -> Result<u16, ConfigError> {
    s.trim()
        .parse::<u16>()
        .ok()
        // RFC 9110 §15: a status code is 100 to 599; a code past it in a
        // list is a typo that would count every answer as an error.
        .filter(|c| (100..=599).contains(c))
        .ok_or_else(|| {
            ConfigError::new(
                "expect-status",
                format!("{part:?}: {:?} is not a status code (100 to 599)", s.trim()),
            )
        })
}

impl fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatusSet({:?})", self.as_str())
    }
}

impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Answers per status code, counted into a flat table (one increment per
/// answer) and handed out as a map of the codes seen.
pub(crate) struct StatusCounts(Box<[u64]>);

impl StatusCounts {
    pub fn new() -> Self {
        StatusCounts(vec![0; CODES].into_boxed_slice())
    }

    #[inline]
    pub fn record(&mut self, status: u16) {
        // Codes outside three digits are refused by the parser; one that
        // slipped through still counts, under 0.
        let i = if (status as usize) < CODES {
            status as usize
        } else {
            0
        };
        self.0[i] += 1;
    }

    pub fn to_map(&self) -> BTreeMap<u16, u64> {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(c, &n)| (c as u16, n))
            .collect()
    }
}

/// `#[serde(with)]` for counts per number (status code, body size): keys
/// as strings both ways, so the map also survives formats and wrappers (an
/// internally tagged enum buffers its content) that do not turn a string
/// key back into a number.
pub mod keys_as_strings {
    use std::collections::BTreeMap;
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<K: Display, S: Serializer>(
        m: &BTreeMap<K, u64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k.to_string(), v)))
    }

    pub fn deserialize<'de, K: FromStr + Ord, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<K, u64>, D::Error> {
        BTreeMap::<String, u64>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| {
                k.parse::<K>()
                    .map(|k| (k, v))
                    .map_err(|_| serde::de::Error::custom(format!("{k:?} is not a number")))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_2xx_and_3xx() {
        let s = StatusSet::default();
        assert!(s.contains(200) && s.contains(204) && s.contains(399));
        assert!(!s.contains(199) && !s.contains(400) && !s.contains(503) && !s.contains(101));
    }

    #[test]
    fn codes_ranges_and_classes() {
        let s = StatusSet::parse(" 200, 204,300-302 ,5xx").unwrap();
        for c in [200, 204, 300, 301, 302, 500, 599] {
            assert!(s.contains(c), "{c}");
        }
        for c in [201, 303, 404, 600, 0, 999] {
            assert!(!s.contains(c), "{c}");
        }
        assert_eq!(s.as_str(), "200, 204,300-302 ,5xx");
    }

    #[test]
    fn bad_lists_name_the_flag() {
        for bad in [
            "", ",", "abc", "2000", "99", "399-300", "0xx", "200-x", "1e3", "999", "600", "6xx",
        ] {
            let e = StatusSet::parse(bad).unwrap_err();
            assert_eq!(e.field, "expect-status", "{bad}");
        }
    }

    #[test]
    fn counts_become_a_map_of_the_codes_seen() {
        let mut c = StatusCounts::new();
        for s in [200, 200, 404, 1000] {
            c.record(s);
        }
        let m = c.to_map();
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            vec![(0, 1), (200, 2), (404, 1)]
        );
    }
}
