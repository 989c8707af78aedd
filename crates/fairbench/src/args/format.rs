//! `--format` of the commands that print a result as a table or as JSON,
//! and `--json`, kept as its alias. `report` and `compare`, which also
//! write Markdown, CSV or HTML, have their own lists and the same alias.

/// How a command prints its result.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TextFormat {
    /// Aligned tables for a terminal.
    #[default]
    Text,
    /// One JSON document (schemas: docs/cli-json.md, docs/load-json.md).
    Json,
}

/// JSON was asked for, by `--format json` or by `--json`.
pub fn wants_json(format: TextFormat, json: bool) -> bool {
    json || format == TextFormat::Json
}
