//! What a run's ratios are relative to: the suite's `reference` (default
//! go-nethttp, the study's yardstick) and its `aa` variants, which run the
//! same code as the reference so that their ratio measures the machine's
//! noise, not a server (docs/suites.md).

use serde::Serialize;

/// The reference when neither the suite nor `--reference` names one.
pub const DEFAULT_REFERENCE: &str = "go-nethttp";

/// A server, or one variant of it: `go-nethttp` or
/// `go-nethttp/native/normalized`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariantSpec {
    pub server: String,
    /// Mode and response, when one variant is meant.
    pub variant: Option<(String, String)>,
}

impl VariantSpec {
    pub fn parse(s: &str) -> Result<VariantSpec, String> {
        let parts: Vec<&str> = s.split('/').map(str::trim).collect();
        let empty = parts.iter().any(|p| p.is_empty());
        match parts.as_slice() {
            [server] if !empty => Ok(VariantSpec {
                server: server.to_string(),
                variant: None,
            }),
            [server, mode, response] if !empty => Ok(VariantSpec {
                server: server.to_string(),
                variant: Some((mode.to_string(), response.to_string())),
            }),
            _ => Err(format!(
                "{s:?}: expected a server name (go-nethttp) or SERVER/MODE/RESPONSE (go-nethttp/native/normalized)"
            )),
        }
    }

    pub fn matches(&self, server: &str, mode: &str, response: &str) -> bool {
        self.server == server
            && self
                .variant
                .as_ref()
                .is_none_or(|(m, r)| m == mode && r == response)
    }

    /// As written: `server` or `server/mode/response`.
    pub fn label(&self) -> String {
        match &self.variant {
            Some((m, r)) => format!("{}/{m}/{r}", self.server),
            None => self.server.clone(),
        }
    }
}

/// The reference and the A/A variants of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pairing {
    pub reference: VariantSpec,
    /// `--reference`, `suite` or `default`.
    pub reference_from: &'static str,
    pub aa: Vec<VariantSpec>,
}

impl Pairing {
    /// From a run's stored suite text and an optional `--reference`. The
    /// stored text was valid when the run started; a value that no longer
    /// reads (an older or hand-made run) falls back to the default, with the
    /// reason in the second element.
    pub fn from_stored_suite(
        suite_toml: &str,
        flag: Option<&str>,
    ) -> Result<(Pairing, Option<String>), String> {
        let table: toml::Table = suite_toml.parse().unwrap_or_default();
        let mut note = None;
        let mut aa = Vec::new();
        if let Some(list) = table.get("aa").and_then(toml::Value::as_array) {
            for v in list {
                match v.as_str().map(VariantSpec::parse) {
                    Some(Ok(spec)) => aa.push(spec),
                    _ => {
                        note = Some(format!(
                            "the suite's aa entry {v} is not a variant; ignored"
                        ))
                    }
                }
            }
        }
        let stored = table
            .get("reference")
            .and_then(toml::Value::as_str)
            .map(VariantSpec::parse);
        let (reference, reference_from) = match (flag, stored) {
            (Some(f), _) => (
                VariantSpec::parse(f).map_err(|e| format!("--reference {e}"))?,
                "--reference",
            ),
            (None, Some(Ok(s))) => (s, "suite"),
            (None, Some(Err(e))) => {
                note = Some(format!(
                    "the suite's reference {e}; using {DEFAULT_REFERENCE}"
                ));
                (default_reference(), "default")
            }
            (None, None) => (default_reference(), "default"),
        };
        Ok((
            Pairing {
                reference,
                reference_from,
                aa,
            },
            note,
        ))
    }

    /// Every server and variant named in the suite exists in `zoo` (a
    /// typo would silently leave the ratios without a reference or the A/A
    /// twins unmarked): the field and why, when one does not. The built-in
    /// default is not checked: a zoo without it has no reference to name.
    pub fn check(&self, zoo: &fairbench_zoo::Zoo) -> Result<(), (&'static str, String)> {
        let named = std::iter::once(("reference", &self.reference))
            .filter(|_| self.reference_from != "default")
            .chain(self.aa.iter().map(|a| ("aa", a)));
        for (field, spec) in named {
            let Some(server) = zoo.servers.iter().find(|s| s.name == spec.server) else {
                if zoo.invalid_server_names().contains(&spec.server) {
                    continue;
                }
                let known: Vec<&str> = zoo.servers.iter().map(|s| s.name.as_str()).collect();
                return Err((
                    field,
                    format!(
                        "{:?}: no server named {:?} (servers here: {})",
                        spec.label(),
                        spec.server,
                        known.join(", ")
                    ),
                ));
            };
            if let Some((mode, response)) = &spec.variant {
                if !server.modes.contains_key(mode) {
                    let modes: Vec<&str> = server.modes.keys().map(String::as_str).collect();
                    return Err((
                        field,
                        format!(
                            "{:?}: {} has no mode {mode:?} (its modes: {})",
                            spec.label(),
                            server.name,
                            modes.join(", ")
                        ),
                    ));
                }
                if !matches!(response.as_str(), "default" | "normalized") {
                    return Err((
                        field,
                        format!(
                            "{:?}: response {response:?}: expected \"default\" or \"normalized\"",
                            spec.label()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether this variant is one of the A/A twins of the reference.
    pub fn is_aa(&self, server: &str, mode: &str, response: &str) -> bool {
        self.aa.iter().any(|a| a.matches(server, mode, response))
    }
}

fn default_reference() -> VariantSpec {
    VariantSpec {
        server: DEFAULT_REFERENCE.into(),
        variant: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_match() {
        let s = VariantSpec::parse("go-nethttp").unwrap();
        assert!(s.matches("go-nethttp", "native", "default"));
        assert!(!s.matches("node-http", "native", "default"));
        let v = VariantSpec::parse("go-nethttp/native/normalized").unwrap();
        assert!(v.matches("go-nethttp", "native", "normalized"));
        assert!(!v.matches("go-nethttp", "native", "default"));
        assert_eq!(v.label(), "go-nethttp/native/normalized");
        for bad in ["", "a/b", "a//c", "a/b/c/d"] {
            assert!(
                VariantSpec::parse(bad).unwrap_err().contains("expected"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_flag_beats_the_suite_which_beats_the_default() {
        let toml = "name = \"aa\"\nreference = \"go-nethttp/native/normalized\"\naa = [\"go-nethttp/native/default\"]\n";
        let (p, note) = Pairing::from_stored_suite(toml, None).unwrap();
        assert_eq!(
            (p.reference.label().as_str(), p.reference_from),
            ("go-nethttp/native/normalized", "suite")
        );
        assert!(p.is_aa("go-nethttp", "native", "default"));
        assert!(note.is_none());
        let (p, _) = Pairing::from_stored_suite(toml, Some("node-http")).unwrap();
        assert_eq!(
            (p.reference.label().as_str(), p.reference_from),
            ("node-http", "--reference")
        );
        let (p, _) = Pairing::from_stored_suite("not toml [", None).unwrap();
        assert_eq!(
            (p.reference.label().as_str(), p.reference_from),
            ("go-nethttp", "default")
        );
        let (_, note) = Pairing::from_stored_suite("reference = \"a/b\"", None).unwrap();
        assert!(note.unwrap().contains("using go-nethttp"));
        assert!(Pairing::from_stored_suite(toml, Some("x/y"))
            .unwrap_err()
            .starts_with("--reference"));
    }
}
