//! The files a command writes beside what it prints (`--export-json`,
//! `--export-csv`, `--export-markdown`, and `run`'s `--report`): one rule
//! for all of them. A file that could never be written is refused before
//! the work starts (exit 2, naming its flag); each is written atomically,
//! as a report is ([`crate::report::write_atomic`]), and an error names
//! its flag.

use std::path::Path;

use crate::usage_error::usage;

/// What an export file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Json,
    Csv,
    Markdown,
}

impl Kind {
    pub(super) fn flag(self) -> &'static str {
        match self {
            Kind::Json => "--export-json",
            Kind::Csv => "--export-csv",
            Kind::Markdown => "--export-markdown",
        }
    }
}

/// The export files given, in the flags' order.
pub(super) fn asked<'a>(
    json: Option<&'a Path>,
    csv: Option<&'a Path>,
    markdown: Option<&'a Path>,
) -> Vec<(Kind, &'a Path)> {
    [
        (Kind::Json, json),
        (Kind::Csv, csv),
        (Kind::Markdown, markdown),
    ]
    .into_iter()
    .filter_map(|(k, p)| Some((k, p?)))
    .collect()
}

/// Refuses a file that could never be written (a folder, a missing
/// folder, a socket): a usage error naming `flag`.
pub(super) fn check_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    crate::report::check_target(path).map_err(|e| usage(format!("{flag}: {e:#}")))
}

/// `text` into `path`, atomically; an error names `flag`.
pub(super) fn write(flag: &str, path: &Path, text: &str) -> anyhow::Result<()> {
    crate::report::write_atomic(path, text.as_bytes()).map_err(|e| anyhow::anyhow!("{flag}: {e:#}"))
}
