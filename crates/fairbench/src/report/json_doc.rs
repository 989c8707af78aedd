//! Every JSON document fairbench prints or writes, made one way: it opens
//! with `format` (which document it is) and `schema_version`, and each
//! format has a JSON Schema in `docs/schemas/<format>.schema.json` that the
//! tests validate real output against. A program reading fairbench's JSON
//! can thus tell a `load` result from a `compare` one, and know whether it
//! was written for the fields it expects.

use serde::Serialize;

/// Bumped when a field of any document goes away or changes meaning (not
/// when one is added): a reader checks it once and trusts the rest.
pub const SCHEMA_VERSION: u32 = 1;

/// The documents, one per shape of output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doc {
    /// `load --json`: one run (with targets, stages, thresholds or several
    /// generators, their parts).
    Load,
    /// `load --vs URL_B --json`: the pair and its ratios.
    LoadVs,
    /// `load --knee OBJECTIVE --json`: the search's steps and knee.
    LoadKnee,
    /// `load --json` when the run failed: the error.
    LoadError,
    /// `runs --json`.
    Runs,
    /// `show --json`.
    Show,
    /// `report --format json`: the whole report model.
    Report,
    /// `compare --json`.
    Compare,
    /// `history --json`.
    History,
    /// `check --json`.
    Check,
    /// `servers --json`.
    Servers,
}

impl Doc {
    pub const ALL: [Doc; 11] = [
        Doc::Load,
        Doc::LoadVs,
        Doc::LoadKnee,
        Doc::LoadError,
        Doc::Runs,
        Doc::Show,
        Doc::Report,
        Doc::Compare,
        Doc::History,
        Doc::Check,
        Doc::Servers,
    ];

    /// The value of the document's `format` field, and its schema's name.
    pub fn format(self) -> &'static str {
        match self {
            Doc::Load => "fairbench-load",
            Doc::LoadVs => "fairbench-load-vs",
            Doc::LoadKnee => "fairbench-load-knee",
            Doc::LoadError => "fairbench-load-error",
            Doc::Runs => "fairbench-runs",
            Doc::Show => "fairbench-show",
            Doc::Report => "fairbench-report",
            Doc::Compare => "fairbench-compare",
            Doc::History => "fairbench-history",
            Doc::Check => "fairbench-check",
            Doc::Servers => "fairbench-servers",
        }
    }

    /// The schema's path from the repository's root.
    pub fn schema_path(self) -> String {
        format!("docs/schemas/{}.schema.json", self.format())
    }
}

/// The two fields first, then the body's own (which must serialise as a
/// map: a struct or a JSON object).
#[derive(Serialize)]
struct Versioned<'a, T: ?Sized> {
    format: &'static str,
    schema_version: u32,
    #[serde(flatten)]
    body: &'a T,
}

/// `body` as the document `doc`, pretty-printed, every hidden character of
/// its strings written as a JSON escape ([`fairbench_sys::text::json`]): the
/// same data, safe on a terminal. No trailing line break.
pub fn render<T: Serialize + ?Sized>(doc: Doc, body: &T) -> anyhow::Result<String> {
    let text = serde_json::to_string_pretty(&Versioned {
        format: doc.format(),
        schema_version: SCHEMA_VERSION,
        body,
    })?;
    Ok(fairbench_sys::text::json(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_fields_come_first_and_the_body_keeps_its_order() {
        #[derive(Serialize)]
        struct Body {
            zeta: u8,
            alpha: &'static str,
        }
        let s = render(
            Doc::Runs,
            &Body {
                zeta: 1,
                alpha: "a\u{202e}",
            },
        )
        .unwrap();
        let keys: Vec<&str> = s
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
            .collect();
        assert_eq!(keys, ["format", "schema_version", "zeta", "alpha"]);
        assert!(
            s.contains("\"fairbench-runs\"") && s.contains("\\u202e"),
            "{s}"
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert_eq!(v["alpha"], "a\u{202e}");
    }

    #[test]
    fn a_json_object_body_is_flattened_too() {
        let s = render(Doc::LoadError, &serde_json::json!({"error": "x"})).unwrap();
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["format"], "fairbench-load-error");
        assert_eq!(v["error"], "x");
    }

    #[test]
    fn every_format_is_distinct_and_has_its_schema_file() {
        let names: std::collections::BTreeSet<_> = Doc::ALL.iter().map(|d| d.format()).collect();
        assert_eq!(names.len(), Doc::ALL.len());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for d in Doc::ALL {
            assert!(
                root.join(d.schema_path()).is_file(),
                "{} has no schema",
                d.format()
            );
        }
    }
}
