//! Where a load's result goes: its summary or its JSON document on
//! standard output, and, once everything is printed and saved, the JSON
//! document and its tables in the `--export-*` files whatever was printed
//! (a CI log keeps the table, its artefacts the files). Every kind of load (one URL,
//! `--vs`, `--knee`, several generators) goes through here, so none can
//! ignore the flag.

use super::LoadArgs;
use crate::commands::export::{self, Kind};
use crate::output::load::tables;
use crate::output::terminal;
use crate::report::json_doc::{self, Doc};
use crate::usage_error::usage;

/// Prints the document for `--json` (or `--format json`), else the text
/// `summary` gives.
pub(super) fn print(
    args: &LoadArgs,
    doc: Doc,
    v: &serde_json::Value,
    summary: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if crate::args::wants_json(args.format, args.json) {
        println!("{}", json_doc::render(doc, v)?);
    } else {
        print!("{}", terminal::text(&summary()));
    }
    Ok(())
}

/// Writes the document to `--export-json FILE`, and its tables to
/// `--export-csv` and `--export-markdown`. Called last: a file that
/// cannot be written loses nothing measured, and exits 1 naming its flag.
pub(super) fn export(args: &LoadArgs, doc: Doc, v: &serde_json::Value) -> anyhow::Result<()> {
    for (kind, path) in exports(args) {
        let text = match kind {
            Kind::Json => format!("{}\n", json_doc::render(doc, v)?),
            Kind::Csv => tables::csv(doc, v)?,
            Kind::Markdown => tables::markdown(doc, v),
        };
        export::write(kind.flag(), path, &text)?;
    }
    Ok(())
}

/// Refuses, before the load, an export file that could never be written,
/// and exports with `--dump`, which has no result to write.
pub(super) fn check_targets(args: &LoadArgs) -> anyhow::Result<()> {
    let asked = exports(args);
    if let (true, Some((kind, _))) = (args.dump, asked.first()) {
        return Err(usage(format!(
            "{}: --dump prints the exchange; there is no result to write",
            kind.flag()
        )));
    }
    for (kind, path) in asked {
        export::check_writable(kind.flag(), path)?;
    }
    Ok(())
}

fn exports(args: &LoadArgs) -> Vec<(Kind, &std::path::Path)> {
    export::asked(
        args.export_json.as_deref(),
        args.export_csv.as_deref(),
        args.export_markdown.as_deref(),
    )
}

/// The document of a run that failed, for a machine that asked for JSON
/// (and in the export files, when `export`): the error, where a person
/// reads it on standard error.
pub(super) fn failure(args: &LoadArgs, e: &anyhow::Error, export: bool) -> anyhow::Result<()> {
    let v = serde_json::json!({
        "fairbench_version": env!("CARGO_PKG_VERSION"),
        "url": args.url,
        "error": format!("{e:#}"),
    });
    if crate::args::wants_json(args.format, args.json) {
        println!("{}", json_doc::render(Doc::LoadError, &v)?);
    }
    if export {
        self::export(args, Doc::LoadError, &v)?;
    }
    Ok(())
}
