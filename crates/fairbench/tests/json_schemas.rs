//! Every JSON document fairbench prints is valid against its schema in
//! docs/schemas/, checked on real output: the stored-run documents from
//! the fixture database, `load`'s in each of its forms against a canned
//! server, `servers` and `check` on the fixture zoo. The schemas close
//! their objects (`additionalProperties: false`), so a field added to the
//! output without its schema fails here.

mod support;

use std::path::Path;

use fairbench::report::json_doc::{Doc, SCHEMA_VERSION};
use serde_json::Value;
use support::check::{fairbench, fixture_root};
use support::load::{closed_port, run, Server, HELLO};
use support::*;

/// Validates `v` against the schema of `doc`; the error lists where and
/// why it is not valid.
fn validate(doc: Doc, v: &Value) -> Result<(), String> {
    let path = repo().join(doc.schema_path());
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let index = compiler
        .compile(path.to_str().unwrap(), &mut schemas)
        .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
    schemas.validate(v, index).map_err(|e| format!("{e:#}"))
}

/// `text` parsed, then checked to be the document `doc` and valid.
fn assert_valid(doc: Doc, what: &str, text: &str) -> Value {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
    assert_eq!(v["format"], doc.format(), "{what}");
    assert_eq!(v["schema_version"], SCHEMA_VERSION, "{what}");
    if let Err(e) = validate(doc, &v) {
        panic!("{what} is not a valid {}:\n{e}", doc.format());
    }
    v
}

#[test]
fn the_stored_run_documents_match_their_schemas() {
    let dir = fixture_db();
    let d = dir.path();
    assert_valid(
        Doc::Runs,
        "runs",
        &ok(d, &["runs", "--db", "results.db", "--json"]),
    );
    for run in ["1", "2", "3"] {
        let show = ok(d, &["show", run, "--db", "results.db", "--json"]);
        assert_valid(Doc::Show, &format!("show {run}"), &show);
        let report = ok(
            d,
            &[
                "report",
                run,
                "--db",
                "results.db",
                "--format",
                "json",
                "-o",
                "-",
            ],
        );
        assert_valid(Doc::Report, &format!("report {run}"), &report);
    }
    let compare = ok(d, &["compare", "1", "2", "--db", "results.db", "--json"]);
    assert_valid(Doc::Compare, "compare 1 2", &compare);
    let history = ok(d, &["history", "--db", "results.db", "--json"]);
    let h = assert_valid(Doc::History, "history", &history);
    assert!(!h["cases"].as_array().unwrap().is_empty(), "{history}");
    // The same documents as files, beside the table on standard output.
    let table = ok(
        d,
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--export-json",
            "c.json",
            "--export-markdown",
            "c.md",
        ],
    );
    assert!(table.contains("REQ/S A"), "{table}");
    let written = std::fs::read_to_string(d.join("c.json")).unwrap();
    assert_eq!(written, compare, "--export-json is what --json prints");
    let md = ok(
        d,
        &["compare", "1", "2", "--db", "results.db", "--format", "md"],
    );
    assert_eq!(std::fs::read_to_string(d.join("c.md")).unwrap(), md);
}

#[test]
fn every_form_of_load_matches_its_schema() {
    let srv = Server::plain(HELLO);
    let url = srv.url();
    let work = tempfile::tempdir().unwrap();
    let targets = work.path().join("targets.toml");
    std::fs::write(
        &targets,
        "[[target]]\nname = \"root\"\npath = \"/\"\n[[target]]\npath = \"/item/{{seq}}\"\n",
    )
    .unwrap();
    let targets = targets.to_str().unwrap();
    let common = ["-c", "2", "-t", "1", "--json"];
    let forms: [(&str, Doc, Vec<&str>); 8] = [
        ("one URL", Doc::Load, vec!["-n", "200"]),
        (
            "targets",
            Doc::Load,
            vec!["-n", "200", "--targets", targets],
        ),
        ("stages", Doc::Load, vec!["--stages", "300ms:200,300ms:400"]),
        (
            "threshold",
            Doc::Load,
            vec!["-n", "200", "--threshold", "p99<10s"],
        ),
        (
            "two generators",
            Doc::Load,
            vec!["-n", "200", "--clients", "2"],
        ),
        (
            "vs",
            Doc::LoadVs,
            vec!["-n", "100", "--vs", &url, "--repetitions", "2"],
        ),
        (
            "vs until settled",
            Doc::LoadVs,
            vec![
                "-n",
                "100",
                "--vs",
                &url,
                "--repetitions",
                "until:50%,max:3",
            ],
        ),
        (
            "knee",
            Doc::LoadKnee,
            vec![
                "--knee",
                "p99<1s",
                "--start-rate",
                "100",
                "--max-rate",
                "150",
                "-d",
                "300ms",
            ],
        ),
    ];
    for (what, doc, extra) in forms {
        let mut args = vec!["load", url.as_str()];
        args.extend(common);
        args.extend(extra);
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{what}: {err}");
        let v = assert_valid(doc, what, &out);
        if what == "targets" {
            assert!(v["targets"].is_array(), "{what}: {out}");
        }
    }
    // A run that fails prints the error document.
    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let (code, out, _) = run(&["load", &refused, "-c", "1", "-n", "10", "--json"]);
    assert_eq!(code, 1, "{out}");
    assert_valid(Doc::LoadError, "a refused load", &out);
}

#[test]
fn exports_write_the_document_and_its_tables_beside_the_summary_in_every_form() {
    let srv = Server::plain(HELLO);
    let url = srv.url();
    let work = tempfile::tempdir().unwrap();
    let knee = [
        "--knee",
        "p99<1s",
        "--start-rate",
        "100",
        "--max-rate",
        "150",
        "-d",
        "300ms",
    ];
    for (what, doc, extra, header) in [
        (
            "one URL",
            Doc::Load,
            vec!["-n", "100"],
            "second,phase,start_s",
        ),
        (
            "vs",
            Doc::LoadVs,
            vec!["-n", "100", "--vs", &url, "--repetitions", "2"],
            "side,url,repetition,requests",
        ),
        (
            "knee",
            Doc::LoadKnee,
            knee.to_vec(),
            "offered_rps,answered_rps",
        ),
        (
            "two generators",
            Doc::Load,
            vec!["-n", "100", "--clients", "2"],
            "second,phase",
        ),
    ] {
        let stem = work.path().join(what.replace(' ', "-"));
        let file = |ext: &str| stem.with_extension(ext).to_str().unwrap().to_string();
        let (json, csv, md) = (file("json"), file("csv"), file("md"));
        let mut args = vec!["load", url.as_str(), "-c", "2", "-t", "1"];
        args.extend(["--export-json", &json, "--export-csv", &csv]);
        args.extend(["--export-markdown", &md]);
        args.extend(extra);
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{what}: {err}");
        assert!(
            !out.trim_start().starts_with('{'),
            "{what}: the summary is printed: {out}"
        );
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_valid(doc, what, &read(&json));
        let csv = read(&csv);
        assert!(
            csv.starts_with(header) && csv.lines().count() >= 2,
            "{what}: {csv}"
        );
        let md = read(&md);
        assert!(
            md.starts_with("# fairbench load ") && md.contains("|---|"),
            "{what}: {md}"
        );
    }
    // A folder for a file: refused before the load, one line naming the flag.
    let before = srv.accepted.load(std::sync::atomic::Ordering::SeqCst);
    let dir = work.path().to_str().unwrap();
    let (code, _, err) = run(&["load", &url, "-n", "10", "--export-markdown", dir]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--export-markdown") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert_eq!(
        before,
        srv.accepted.load(std::sync::atomic::Ordering::SeqCst)
    );
    // With --dump there is no result to write: one line naming the flag.
    let file = work.path().join("dump.json");
    let (code, _, err) = run(&[
        "load",
        &url,
        "--dump",
        "--export-json",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--export-json") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!file.exists());
}

#[test]
fn servers_and_check_documents_match_their_schemas() {
    let root = fixture_root();
    let root = root.to_str().unwrap();
    let listing = ok(Path::new("."), &["servers", "--root", root, "--json"]);
    assert_valid(Doc::Servers, "servers (fixture zoo)", &listing);
    let real = repo();
    let listing = ok(
        Path::new("."),
        &["servers", "--root", real.to_str().unwrap(), "--json"],
    );
    assert_valid(Doc::Servers, "servers (the zoo)", &listing);

    let work = tempfile::tempdir().unwrap();
    let args = [
        "check",
        "--root",
        root,
        "--work-dir",
        work.path().to_str().unwrap(),
        "--servers",
        "ok,missing-date",
        "--reference",
        "ok",
        "--scenarios",
        "static",
        "--ready-timeout",
        "10",
        "--stop-grace",
        "1",
        "--json",
    ];
    let checked = fairbench(&args, &[], "schema-check");
    checked.expect_code(1);
    assert_valid(Doc::Check, "check", &checked.stdout);
}

#[test]
fn a_document_that_breaks_its_schema_is_refused() {
    let dir = fixture_db();
    let text = ok(dir.path(), &["runs", "--db", "results.db", "--json"]);
    let good: Value = serde_json::from_str(&text).unwrap();
    assert!(validate(Doc::Runs, &good).is_ok());
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("runs");
    assert!(
        validate(Doc::Runs, &missing).is_err(),
        "a required field is missing"
    );
    let mut extra = good.clone();
    extra["undocumented"] = Value::from(1);
    assert!(validate(Doc::Runs, &extra).is_err(), "an unknown field");
    let mut newer = good.clone();
    newer["schema_version"] = Value::from(SCHEMA_VERSION + 1);
    assert!(validate(Doc::Runs, &newer).is_err(), "another version");
    let mut inner = good;
    inner["runs"][0]["undocumented"] = Value::from(1);
    assert!(
        validate(Doc::Runs, &inner).is_err(),
        "an unknown field in a run"
    );
    // Another document's schema does not take it.
    assert!(validate(Doc::Show, &serde_json::from_str(&text).unwrap()).is_err());
}

#[test]
fn run_exports_its_report_in_each_format_when_it_ends() {
    let srv = Server::plain(HELLO);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("svc.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"svc\"\nduration = \"1s\"\nwarmup = \"0s\"\nrepetitions = 1\n\n\
             [[service]]\nname = \"canned\"\nurl = \"{}\"\n\n\
             [[load]]\nmodel = \"closed\"\nconnections = 2\n",
            srv.url()
        ),
    )
    .unwrap();
    let suite = suite.to_str().unwrap();
    let o = run_in(
        dir.path(),
        &[
            "run",
            "--suite",
            suite,
            "--db",
            "r.db",
            "--export-json",
            "r.json",
            "--export-csv",
            "r.csv",
            "--export-markdown",
            "r.md",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let json = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    let v = assert_valid(Doc::Report, "run --export-json", &json);
    assert_eq!(v["run"]["suite"], "svc", "{json}");
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "a header and the one case: {csv}");
    assert!(csv.contains("canned"), "{csv}");
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    assert!(md.starts_with('#') && md.contains("canned"), "{md}");
    // A file that could never be written is refused before the run.
    let before = srv.accepted.load(std::sync::atomic::Ordering::SeqCst);
    let o = run_in(
        dir.path(),
        &["run", "--suite", suite, "--db", "r.db", "--export-csv", "."],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--export-csv") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert_eq!(
        before,
        srv.accepted.load(std::sync::atomic::Ordering::SeqCst)
    );
}
