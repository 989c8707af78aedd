//! The gzip scenario over the real zoo (docs/scenarios.md, "A compressed
//! answer"): every runnable server that compresses answers `Accept-Encoding:
//! gzip` with a gzip body that decodes to the text, `Content-Encoding` and
//! `Vary`; the others declare why not and are skipped with that reason.
//! Builds every such server (cached under <root>/.fairbench/build), so the
//! first run takes minutes.

mod support;

use std::collections::BTreeSet;

use fairbench_zoo::manifest::ResponseKind;
use fairbench_zoo::runnable::{runnable, Gap, Wanted};
use fairbench_zoo::toolchain::{Prober, ToolchainStatus};
use fairbench_zoo::{Protocol, Scenario, Zoo};
use support::check::*;
use support::repo;

#[test]
fn every_runnable_server_that_compresses_meets_the_gzip_contract() {
    let root = repo();
    let zoo = Zoo::load(&root).unwrap();
    let mut prober = Prober::new();
    let expected: BTreeSet<String> = zoo
        .servers
        .iter()
        .filter(|s| s.implements("gzip") && prober.probe(&s.toolchain).is_present())
        .map(|s| s.name.clone())
        .collect();
    assert!(expected.contains("go-nethttp"), "{expected:?}");

    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--scenarios",
            "gzip",
            "--json",
        ],
        &[],
        "real-gzip",
    );
    let r = run.json();
    let cases = r["cases"].as_array().unwrap();
    let checked: BTreeSet<String> = cases
        .iter()
        .map(|c| c["server"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(checked, expected, "{}", run.stderr);

    let mut problems = Vec::new();
    for c in cases {
        let who = format!("{} {}", c["server"], c["variant"]);
        for must in ["body", "content-encoding", "vary"] {
            match rule(c, must) {
                Some((g, _)) if g == "pass" => {}
                other => problems.push(format!("{who}: {must} {other:?}")),
            }
        }
        let normalized = c["response"] == "normalized";
        for x in c["rules"].as_array().unwrap() {
            let (grade, name) = (x["grade"].as_str().unwrap(), x["rule"].as_str().unwrap());
            let documented = x["detail"].as_str().unwrap().contains("known deviation");
            // `default` is what users get: its own headers and spelling warn.
            let users_own = !normalized && ["content-type", "extra-headers"].contains(&name);
            if grade == "fail" || (grade == "warn" && !documented && !users_own) {
                problems.push(format!("{who}: {grade} {name}: {}", x["detail"]));
            }
        }
        if normalized && c["server"] != "go-nethttp" {
            let (g, detail) = rule(c, "reference-bytes").unwrap_or_default();
            let compared = g == "pass" && detail.contains("a difference of compressors and levels");
            if !compared && !detail.contains("known deviation") {
                problems.push(format!("{who}: reference-bytes {g}: {detail}"));
            }
        }
        // What the row counts is the compressed body on the wire.
        let (wire, text) = (c["row"]["body_bytes"].as_u64().unwrap(), 2643);
        if wire >= text {
            problems.push(format!("{who}: {wire} body bytes on the wire for {text}"));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nstderr:\n{}",
        problems.join("\n"),
        run.stderr
    );
    run.expect_code(0);
}

/// Over HTTP/2 the check sends the scenario's header too, and the
/// reference comparison is of the fields, the compressed sizes shown.
#[test]
fn over_h2c_the_gzip_contract_holds_and_the_fields_are_compared() {
    let root = repo();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            "go-nethttp,node-http",
            "--scenarios",
            "gzip",
            "--protocols",
            "h2c",
            "--raw",
            "--json",
        ],
        &[],
        "real-gzip-h2c",
    );
    run.expect_code(0);
    let r = run.json();
    let node = case(&r, "node-http", "gzip", "normalized");
    for must in ["body", "content-encoding", "vary"] {
        assert_eq!(rule(node, must).unwrap().0, "pass", "{must}: {node:#}");
    }
    let (g, detail) = rule(node, "reference-bytes").unwrap();
    assert_eq!(g, "pass", "{detail}");
    assert!(detail.contains("the compressed body"), "{detail}");
    let raw = node["raw"]["request"].as_str().unwrap();
    assert!(raw.contains("accept-encoding: gzip"), "{raw}");
}

/// A server that does not compress says why in `[scenarios_unsupported]`,
/// and that reason is what a check or a suite prints when it skips it.
#[test]
fn the_servers_that_do_not_compress_declare_why() {
    let zoo = Zoo::load(&repo()).unwrap();
    let gzip: Vec<&Scenario> = zoo.scenarios.iter().filter(|s| s.name == "gzip").collect();
    assert_eq!(gzip.len(), 1);
    let wanted = Wanted {
        scenarios: &gzip,
        responses: &ResponseKind::STANDARD,
        protocols: &[Protocol::Http1],
    };
    let present = ToolchainStatus::Present { version: None };
    let mut declared = Vec::new();
    for s in &zoo.servers {
        let r = runnable(s, &present, &wanted, s.modes.keys().map(String::as_str));
        let Some(why) = s.scenarios_unsupported.get("gzip") else {
            assert!(
                s.implements("gzip"),
                "{}: neither serves gzip nor says why",
                s.name
            );
            continue;
        };
        declared.push(s.name.clone());
        assert!(r.scenarios.is_empty(), "{}", s.name);
        let gap = r
            .gaps
            .iter()
            .find(|g| matches!(g, Gap::Scenario { .. }))
            .unwrap_or_else(|| panic!("{}: no scenario gap", s.name));
        assert_eq!(gap.reason(), format!("not implemented: {why}"));
    }
    for dart in ["dart-conduit", "dart-io", "dart-shelf"] {
        assert!(declared.iter().any(|d| d == dart), "{declared:?}");
    }
}

/// `[scenarios_unsupported]` names a scenario of the root, one the server
/// does not also list, with a reason.
#[test]
fn scenarios_unsupported_is_validated() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("servers/s")).unwrap();
    std::fs::create_dir_all(r.join("scenarios")).unwrap();
    std::fs::write(
        r.join("scenarios/static.toml"),
        "name = \"static\"\nmethod = \"GET\"\npath = \"/\"\n[expect]\nstatus = 200\nbody = \"a\"\n",
    )
    .unwrap();
    let manifest = |extra: &str| {
        format!(
            "name = \"s\"\nlanguage = \"Go\"\nframework = \"f\"\nframework_version = \"1\"\n{extra}\n\
             [toolchain]\nname = \"go\"\nprobe = [\"go\", \"version\"]\n[modes.native]\nrun = [\"x\"]\n\
             [responses.default]\n[responses.normalized]\n"
        )
    };
    let errors = |extra: &str| -> Vec<String> {
        std::fs::write(r.join("servers/s/server.toml"), manifest(extra)).unwrap();
        let zoo = Zoo::load(r).unwrap();
        zoo.errors.iter().map(|e| e.to_string()).collect()
    };
    let e = errors("scenarios = [\"static\"]\n[scenarios_unsupported]\nstatic = \"no\"\n");
    assert!(
        e.iter()
            .any(|e| e.contains("scenarios_unsupported.static: static is in scenarios")),
        "{e:?}"
    );
    let e = errors("[scenarios_unsupported]\nnope = \"no\"\n");
    assert!(
        e.iter().any(|e| e.contains("scenarios_unsupported.nope")
            && e.contains("no scenario named \"nope\"")),
        "{e:?}"
    );
    let e = errors("[scenarios_unsupported]\nstatic = \"\"\n");
    assert!(
        e.iter().any(|e| e.contains("scenarios_unsupported.static")),
        "{e:?}"
    );
    assert_eq!(
        errors("[scenarios_unsupported]\nstatic = \"why\"\n"),
        Vec::<String>::new()
    );
    let zoo = Zoo::load(r).unwrap();
    assert!(!zoo.server("s").unwrap().implements("static"));
}
