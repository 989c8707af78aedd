//! `--warmup` and a suite's `warmup`: a fixed duration, or `auto` — warm
//! up until the server is steady, at most a ceiling (the rule:
//! `fairbench_engine::warmup`).

use std::time::Duration;

use fairbench_engine::warmup::AutoWarmup;
use fairbench_engine::LoadConfig;

use super::duration::duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    Fixed(Duration),
    Auto(AutoWarmup),
}

impl Default for Warmup {
    fn default() -> Self {
        Warmup::Fixed(Duration::ZERO)
    }
}

const EXPECTED: &str = "expected a duration (e.g. 10s) or auto[:CEILING] (e.g. auto, auto:60s)";

impl Warmup {
    /// "10s", "auto" or "auto:60s".
    pub fn parse(s: &str) -> Result<Warmup, String> {
        let s = s.trim();
        let Some(rest) = s.strip_prefix("auto") else {
            return duration(s)
                .map(Warmup::Fixed)
                .map_err(|e| format!("{e}; {EXPECTED}"));
        };
        let mut auto = AutoWarmup::default();
        match rest.strip_prefix(':') {
            None if rest.is_empty() => {}
            None => return Err(format!("{s:?}: {EXPECTED}")),
            Some(c) => {
                auto.ceiling = duration(c).map_err(|e| format!("auto's ceiling: {e}"))?;
                auto.check()?;
            }
        }
        Ok(Warmup::Auto(auto))
    }

    /// Sets the load's warm-up.
    pub fn apply(self, cfg: &mut LoadConfig) {
        match self {
            Warmup::Fixed(d) => {
                cfg.warmup = d;
                cfg.warmup_auto = None;
            }
            Warmup::Auto(a) => {
                cfg.warmup = Duration::ZERO;
                cfg.warmup_auto = Some(a);
            }
        }
    }

    /// The longest it takes: what estimates and progress bars count.
    pub fn at_most(self) -> Duration {
        match self {
            Warmup::Fixed(d) => d,
            Warmup::Auto(a) => a.ceiling + fairbench_engine::warmup::RECONNECT,
        }
    }

    /// As a suite file spells it.
    pub fn as_toml(self) -> String {
        match self {
            Warmup::Fixed(d) => humantime::format_duration(d).to_string(),
            Warmup::Auto(a) => format!("auto:{}", humantime::format_duration(a.ceiling)),
        }
    }

    /// As a plan or a dry run shows it.
    pub fn label(self) -> String {
        match self {
            Warmup::Fixed(d) => format!("{}s", d.as_secs_f64()),
            Warmup::Auto(a) => format!("auto ≤{}s", a.ceiling.as_secs()),
        }
    }
}

/// A fixed warm-up serializes as the duration it is (as before `auto`);
/// `auto` as the suite file spells it.
impl serde::Serialize for Warmup {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Warmup::Fixed(d) => d.serialize(s),
            Warmup::Auto(_) => s.serialize_str(&self.as_toml()),
        }
    }
}

/// For clap.
pub fn warmup(s: &str) -> Result<Warmup, String> {
    Warmup::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_auto_and_auto_with_a_ceiling() {
        assert_eq!(
            Warmup::parse("2s"),
            Ok(Warmup::Fixed(Duration::from_secs(2)))
        );
        assert_eq!(
            Warmup::parse("auto"),
            Ok(Warmup::Auto(AutoWarmup::default()))
        );
        let Ok(Warmup::Auto(a)) = Warmup::parse("auto:90s") else {
            panic!("auto:90s")
        };
        assert_eq!(a.ceiling, Duration::from_secs(90));
        assert_eq!(
            Warmup::parse("auto:90s").unwrap().at_most(),
            Duration::from_secs(91)
        );
    }

    #[test]
    fn each_mistake_says_what_was_expected() {
        for (bad, says) in [
            ("soon", "auto[:CEILING]"),
            ("autox", "auto[:CEILING]"),
            ("auto:later", "auto's ceiling"),
            ("auto:2s", "at least its 5s window"),
            ("auto:2h", "at most 1h"),
        ] {
            let e = Warmup::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
