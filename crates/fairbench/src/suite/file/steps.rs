//! The step of `Suite::parse` that checks `[[step]]`: a ladder, from a
//! publication's setup to a corrected one, one change per rung, every rung
//! measured in the same run (docs/suites.md, "Steps").

use serde::Serialize;

use super::super::timing::Timing;
use super::raw::RawLoad;
use super::{AddressFamily, Fields, LoadProfile};

/// What a step may set; anything else is refused by name.
pub const STEP_KEYS: &[&str] = &[
    "name",
    "responses",
    "address_family",
    "workers",
    "warmup",
    "load",
];

/// One rung: the suite's settings with those this step and the steps
/// before it set (each step inherits the previous one's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub name: String,
    /// What it changes from the rung before, `key = value`; empty for a
    /// first rung that is the suite as written.
    pub changes: Vec<String>,
    pub responses: Vec<String>,
    pub address_family: AddressFamily,
    /// `None`: one worker per core.
    pub workers: Option<usize>,
    pub warmup: crate::args::Warmup,
    pub loads: Vec<LoadProfile>,
}

/// The suite's own settings a first step starts from.
pub(super) struct Base<'a> {
    pub(super) responses: &'a [String],
    pub(super) address_family: AddressFamily,
    pub(super) workers: Option<usize>,
    pub(super) timing: Timing,
    pub(super) loads: &'a [LoadProfile],
    pub(super) protocols: &'a [fairbench_zoo::Protocol],
}

impl Fields<'_> {
    /// The `[[step]]`s, resolved: none for a suite without a ladder.
    pub(super) fn steps(&self, base: Base<'_>) -> anyhow::Result<Vec<Step>> {
        let raw = &self.raw.steps;
        if raw.is_empty() {
            return Ok(Vec::new());
        }
        if !self.raw.services.is_empty() {
            return Err(self.bad(
                "step",
                "a ladder measures zoo servers, not [[service]]s".into(),
            ));
        }
        if base
            .loads
            .iter()
            .any(|l| matches!(l, LoadProfile::Sweep(_)))
        {
            return Err(self.bad("step", "a ladder's rungs are cases: no sweep load".into()));
        }
        let mut prev = Step {
            name: String::new(),
            changes: Vec::new(),
            responses: base.responses.to_vec(),
            address_family: base.address_family,
            workers: base.workers,
            warmup: base.timing.warmup,
            loads: base.loads.to_vec(),
        };
        let mut out: Vec<Step> = Vec::new();
        for (i, table) in raw.iter().enumerate() {
            let step = self.step(i, table, &prev, &base)?;
            if out.iter().any(|s| s.name == step.name) {
                return Err(self.bad(
                    &format!("step[{i}].name"),
                    format!("{:?} is given twice", step.name),
                ));
            }
            if i > 0 && step.changes.len() != 1 {
                return Err(self.bad(
                    &format!("step[{i}]"),
                    format!(
                        "{:?} changes {} things from the step before ({}): a rung after the first changes exactly one",
                        step.name,
                        step.changes.len(),
                        if step.changes.is_empty() { "none".into() } else { step.changes.join(", ") }
                    ),
                ));
            }
            prev = step.clone();
            out.push(step);
        }
        Ok(out)
    }

    /// Step `i`: `prev` with what the table sets; `changes` lists what
    /// differs from `prev`.
    fn step(
        &self,
        i: usize,
        t: &toml::Table,
        prev: &Step,
        base: &Base<'_>,
    ) -> anyhow::Result<Step> {
        let at = |k: &str| format!("step[{i}].{k}");
        if let Some(k) = t.keys().find(|k| !STEP_KEYS.contains(&k.as_str())) {
            return Err(self.bad(
                &at(k),
                format!(
                    "a step cannot set {k} (it may set {})",
                    STEP_KEYS[1..].join(", ")
                ),
            ));
        }
        let name = match t.get("name") {
            Some(toml::Value::String(s))
                if !s.trim().is_empty() && !s.contains(char::is_whitespace) =>
            {
                s.clone()
            }
            _ => {
                return Err(self.bad(
                    &at("name"),
                    "expected a name without spaces, e.g. \"equal-bytes\"".into(),
                ))
            }
        };
        let mut s = Step {
            name,
            changes: Vec::new(),
            ..prev.clone()
        };
        for (k, v) in t.iter().filter(|(k, _)| k.as_str() != "name") {
            let shown = self.apply(k, v, &at(k), &mut s, base)?;
            let same = match k.as_str() {
                "responses" => s.responses == prev.responses,
                "address_family" => s.address_family == prev.address_family,
                "workers" => s.workers == prev.workers,
                "warmup" => s.warmup == prev.warmup,
                _ => s.loads == prev.loads,
            };
            if !same {
                s.changes.push(shown);
            }
        }
        Ok(s)
    }

    /// Sets key `k` of a step to `v` on `s`; what it set, `key = value`.
    fn apply(
        &self,
        k: &str,
        v: &toml::Value,
        field: &str,
        s: &mut Step,
        base: &Base<'_>,
    ) -> anyhow::Result<String> {
        Ok(match k {
            "responses" => {
                s.responses = self.step_responses(field, v)?;
                format!("responses = {}", s.responses.join(","))
            }
            "address_family" => {
                let f = v.as_str().ok_or_else(|| {
                    self.bad(field, format!("expected {}", AddressFamily::EXPECTED))
                })?;
                s.address_family = AddressFamily::parse(f).map_err(|e| self.bad(field, e))?;
                format!("address_family = {f}")
            }
            "workers" => {
                s.workers = match v {
                    toml::Value::Integer(n) if *n >= 1 => Some(*n as usize),
                    toml::Value::String(p) if p == "per-core" => None,
                    _ => {
                        return Err(self.bad(
                            field,
                            "expected a count of 1 or more, or \"per-core\"".into(),
                        ))
                    }
                };
                format!(
                    "workers = {}",
                    s.workers.map_or("per-core".into(), |w| w.to_string())
                )
            }
            "warmup" => {
                let w = v.as_str().ok_or_else(|| {
                    self.bad(
                        field,
                        "expected a duration, e.g. \"10s\", or \"auto\"".into(),
                    )
                })?;
                s.warmup = crate::args::Warmup::parse(w).map_err(|e| self.bad(field, e))?;
                format!("warmup = {w}")
            }
            _ => {
                let raw: RawLoad = v.clone().try_into().map_err(|e: toml::de::Error| {
                    self.bad(field, e.message().replace('\n', " "))
                })?;
                let timing = Timing {
                    warmup: s.warmup,
                    ..base.timing
                };
                let load = self.step_load(field, &raw, base.protocols, timing)?;
                if matches!(load, LoadProfile::Sweep(_)) {
                    return Err(self.bad(field, "a ladder's rungs are cases: no sweep load".into()));
                }
                s.loads = vec![load];
                format!("load = {}", s.loads[0].label())
            }
        })
    }

    /// A step's `responses`: shapes there are, or "*".
    fn step_responses(&self, field: &str, v: &toml::Value) -> anyhow::Result<Vec<String>> {
        let list: Option<Vec<String>> = v
            .as_array()
            .map(|a| a.iter().map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or(None);
        let list = list.filter(|l| !l.is_empty()).ok_or_else(|| {
            self.bad(
                field,
                "expected a list of response shapes, e.g. [\"normalized\"]".into(),
            )
        })?;
        for r in &list {
            if r != "*" && fairbench_zoo::manifest::ResponseKind::parse(r).is_none() {
                return Err(self.bad(field, format!("{r:?} is no response shape")));
            }
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Suite;
    use super::*;
    use std::time::Duration;

    const LADDER: &str = r#"
name = "l"
responses = ["study"]
scenarios = ["static"]
workers = 1
warmup = "0s"
duration = "2s"
[[load]]
model = "closed"
connections = 10
[[step]]
name = "literal"
[[step]]
name = "equal-bytes"
responses = ["normalized"]
[[step]]
name = "binding"
address_family = "ipv6"
[[step]]
name = "per-core"
workers = "per-core"
[[step]]
name = "warm-up"
warmup = "1s"
[[step]]
name = "rate"
load = { model = "rate", rate = 100, connections = 10 }
"#;

    #[test]
    fn each_rung_inherits_the_one_before_and_names_its_change() {
        let s = Suite::parse(LADDER, "l.toml").unwrap();
        let names: Vec<&str> = s.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "literal",
                "equal-bytes",
                "binding",
                "per-core",
                "warm-up",
                "rate"
            ]
        );
        assert!(s.steps[0].changes.is_empty());
        let last = &s.steps[5];
        assert_eq!(last.responses, ["normalized"]);
        assert_eq!(last.address_family, AddressFamily::Ipv6);
        assert_eq!(last.workers, None);
        assert_eq!(
            last.warmup,
            crate::args::Warmup::Fixed(Duration::from_secs(1))
        );
        assert_eq!(last.loads[0].label(), "rate 100/s c=10");
        assert_eq!(s.steps[0].workers, Some(1));
        assert_eq!(s.steps[3].changes, ["workers = per-core"]);
        // A suite without steps has none, and serializes as before.
        let plain = LADDER.split("[[step]]").next().unwrap();
        let p = Suite::parse(plain, "p.toml").unwrap();
        assert!(p.steps.is_empty());
        assert!(!serde_json::to_string(&p).unwrap().contains("steps"));
    }

    #[test]
    fn a_key_a_step_may_not_set_is_one_line_naming_it() {
        let bad = LADDER.replace("warmup = \"1s\"", "duration = \"9s\"");
        let e = Suite::parse(&bad, "l.toml").unwrap_err().to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with("l.toml: field step[4].duration: a step cannot set duration"),
            "{e}"
        );
        assert!(
            e.contains("responses, address_family, workers, warmup, load"),
            "{e}"
        );
    }

    #[test]
    fn a_rung_changes_exactly_one_thing() {
        for (from, to, says) in [
            (
                "address_family = \"ipv6\"",
                "address_family = \"ipv4\"",
                "changes 0 things",
            ),
            (
                "address_family = \"ipv6\"",
                "address_family = \"ipv6\"\nwarmup = \"3s\"",
                "changes 2 things",
            ),
            ("name = \"binding\"", "name = \"literal\"", "is given twice"),
            (
                "workers = \"per-core\"",
                "workers = 0",
                "a count of 1 or more",
            ),
            ("rate = 100,", "rate = -1,", "step[5].load.rate"),
            (
                "responses = [\"normalized\"]",
                "responses = [\"nope\"]",
                "no response shape",
            ),
        ] {
            let e = Suite::parse(&LADDER.replace(from, to), "l.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{to}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
