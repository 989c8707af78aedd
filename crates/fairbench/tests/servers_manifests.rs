//! Every server definition in the repo validates, `fairbench servers` says
//! which toolchains are missing and why, and manifest errors name the file,
//! the field and what was expected.

mod support;

use fairbench_zoo::toolchain::{probe, ToolchainStatus};
use fairbench_zoo::Zoo;
use support::check::*;
use support::repo;

#[test]
fn every_server_manifest_and_scenario_in_the_repo_validates() {
    let zoo = Zoo::load(&repo()).unwrap();
    let errors: Vec<String> = zoo.errors.iter().map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "invalid definitions:\n{}",
        errors.join("\n")
    );
    // Every folder under servers/ is a server (none was skipped silently).
    let folders = std::fs::read_dir(repo().join("servers"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(zoo.servers.len(), folders);
    assert!(
        zoo.server("go-nethttp").is_some(),
        "the reference server is missing"
    );
    for s in ["static", "dynamic", "file"] {
        assert!(zoo.scenario(s).is_some(), "scenario {s} is missing");
    }
    let fixtures = Zoo::load(&fixture_root()).unwrap();
    assert!(fixtures.errors.is_empty(), "{:?}", fixtures.errors);
}

#[test]
fn dart_servers_are_unavailable_when_dart_is_not_on_path() {
    let path = path_without_dart();
    let run = fairbench(
        &["servers", "--root", repo().to_str().unwrap(), "--json"],
        &[("PATH", &path)],
        "servers-dart",
    );
    run.expect_code(0);
    let r = run.json();
    let dart: Vec<&serde_json::Value> = r["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("dart-"))
        .collect();
    assert!(!dart.is_empty(), "no dart-* servers in the repo");
    for s in dart {
        assert_eq!(s["toolchain"]["status"], "unavailable", "{s:#}");
        assert_eq!(s["toolchain"]["reason"], "dart not found on PATH", "{s:#}");
        assert!(
            s["toolchain"]["install"]
                .as_str()
                .unwrap()
                .starts_with("sudo apt-get install dart"),
            "{s:#}"
        );
        for v in s["variants"].as_array().unwrap() {
            assert_eq!(v["runnable"], false);
        }
    }
    // The table says the same, one row per mode.
    let table = fairbench(
        &["servers", "--root", repo().to_str().unwrap()],
        &[("PATH", &path)],
        "servers-dart-table",
    );
    table.expect_code(0);
    assert!(table
        .stdout
        .lines()
        .any(|l| l.starts_with("dart-") && l.contains("unavailable: dart not found on PATH")));
    // Then one line per server (not per mode) with the command that would
    // install the SDK.
    let install: Vec<&str> = table
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("To install a missing toolchain"))
        .skip(1)
        .collect();
    let names: Vec<&str> = install
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("dart-"))
        .collect();
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(names, unique, "{}", table.stdout);
    assert_eq!(names.len(), 6, "{}", table.stdout);
    for l in install
        .iter()
        .filter(|l| l.trim_start().starts_with("dart-"))
    {
        assert!(
            l.contains("dart: sudo apt-get install dart  (from Google's Dart apt repository"),
            "{l}"
        );
    }
}

#[test]
fn check_skips_unavailable_dart_servers_with_one_line_each() {
    let zoo = Zoo::load(&repo()).unwrap();
    let dart: Vec<&str> = zoo
        .servers
        .iter()
        .filter(|s| s.name.starts_with("dart-"))
        .map(|s| s.name.as_str())
        .collect();
    let path = path_without_dart();
    let work = tempfile::tempdir().unwrap();
    let run = fairbench(
        &[
            "check",
            "--root",
            repo().to_str().unwrap(),
            "--work-dir",
            work.path().to_str().unwrap(),
            "--servers",
            "dart-*",
            "--json",
        ],
        &[("PATH", &path)],
        "check-dart",
    );
    run.expect_code(0);
    for name in &dart {
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains(&format!("{name}:")) || l.contains(&format!("{name} ")))
            .collect();
        assert_eq!(
            lines,
            vec![format!("skip {name}: dart not found on PATH")],
            "{}",
            run.stderr
        );
    }
    let r = run.json();
    assert_eq!(r["ok"], true);
    assert_eq!(r["cases"].as_array().unwrap().len(), 0);
    assert_eq!(r["skipped"].as_array().unwrap().len(), dart.len());
}

#[test]
fn probe_reads_versions_and_explains_absence() {
    let zoo = Zoo::load(&fixture_root()).unwrap();
    let py = zoo.server("ok").unwrap();
    assert!(
        matches!(probe(&py.toolchain), ToolchainStatus::Present { version: Some(v) } if v.starts_with('3'))
    );
    let missing = zoo.server("missing-toolchain").unwrap();
    assert_eq!(
        probe(&missing.toolchain),
        ToolchainStatus::Unavailable {
            reason: "fairbench-no-such-tool not found on PATH".into()
        }
    );
}

#[test]
fn servers_lists_modes_unsupported_reasons_and_missing_toolchains() {
    let run = fairbench(
        &["servers", "--root", fixture_root().to_str().unwrap()],
        &[],
        "servers-table",
    );
    run.expect_code(0);
    let row = |server: &str, mode: &str| -> String {
        run.stdout
            .lines()
            .find(|l| {
                let mut w = l.split_whitespace();
                w.next() == Some(server) && w.next() == Some(mode)
            })
            .unwrap_or_else(|| panic!("no row {server} {mode}:\n{}", run.stdout))
            .to_string()
    };
    assert!(row("ok", "native").contains("default, normalized"));
    assert!(row("ok", "native").contains("present (python3 3."));
    assert!(row("unsupported-mode", "aot")
        .contains("unsupported: test: this framework needs run-time reflection"));
    assert!(row("missing-toolchain", "native")
        .contains("unavailable: fairbench-no-such-tool not found on PATH"));
    let install = run
        .stdout
        .split("To install a missing toolchain (fairbench runs none of these):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no install lines:\n{}", run.stdout));
    let missing: Vec<&str> = install.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(missing.len(), 1, "{install}");
    assert!(missing[0].trim_start().starts_with("missing-toolchain"));
    assert!(missing[0].contains("fairbench-no-such-tool: no install command in"));
    assert!(missing[0].ends_with("missing-toolchain/server.toml"));
    assert!(
        row("security-headers-documented", "native").contains("normalized (3 known deviations)")
    );
}

#[test]
fn manifest_errors_name_the_file_the_field_and_the_expectation() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("servers/bad")).unwrap();
    std::fs::create_dir_all(r.join("servers/worse")).unwrap();
    std::fs::create_dir_all(r.join("servers/empty")).unwrap();
    std::fs::create_dir_all(r.join("scenarios")).unwrap();
    std::fs::write(
        r.join("servers/bad/server.toml"),
        r#"name = "bad"
language = "Go"
framework = "net/http"
framework_version = "stdlib"
[toolchain]
name = "go"
probe = ["go", "version"]
[modes.native]
run = "./server"
[responses.default]
[responses.normalized]
"#,
    )
    .unwrap();
    std::fs::write(
        r.join("servers/worse/server.toml"),
        r#"name = "other"
language = "Go"
framework = "net/http"
framework_version = "stdlib"
[toolchain]
name = "go"
probe = []
[modes.native]
run = ["{out}/server", "{nope}"]
[responses.default]
[responses.normalized]
known_deviations = [{ header = "X-Powered-By", reason = "always added" }, { rule = "ipv5", reason = "?" }]
"#,
    )
    .unwrap();
    // A syntax-level (serde) error is reported alone: later fields are not
    // checked until it is fixed.
    std::fs::create_dir_all(r.join("servers/worst")).unwrap();
    std::fs::write(
        r.join("servers/worst/server.toml"),
        r#"name = "worst"
language = "Go"
framework = "net/http"
framework_version = "stdlib"
[toolchain]
name = "go"
probe = ["go"]
[modes.native]
run = ["x"]
[responses.default]
[responses.normalized]
known_deviations = [{ header = "X-Powered-By" }]
"#,
    )
    .unwrap();
    std::fs::write(
        r.join("scenarios/static.toml"),
        "name = \"static\"\nmethod = \"GET\"\npath = \"/\"\n[expect]\nstatus = 200\n",
    )
    .unwrap();

    let run = fairbench(
        &["servers", "--root", r.to_str().unwrap()],
        &[],
        "manifest-errors",
    );
    run.expect_code(1);
    let e = &run.stderr;
    for needle in [
        "servers/bad/server.toml:9: field modes.native.run: expected an array",
        "servers/worse/server.toml: field name: expected the folder name \"worse\", found \"other\"",
        "servers/worse/server.toml: field toolchain.probe: expected a non-empty array of strings",
        "servers/worse/server.toml: field modes.native.run[1]: unknown placeholder {nope}",
        "servers/worse/server.toml: field responses.normalized.known_deviations[1].rule: unknown rule \"ipv5\"; expected one of status, body,",
        "servers/worst/server.toml:12: field responses.normalized.known_deviations[0].reason: required field is missing",
        "servers/empty/server.toml: missing: every folder under servers/ needs a server.toml",
        "scenarios/static.toml: field expect: expected exactly one of `body`, `body_regex` or `body_file`",
    ] {
        assert!(e.contains(needle), "missing {needle:?} in:\n{e}");
    }
    assert!(!e.contains("panicked") && !e.contains("backtrace"), "{e}");

    let json = fairbench(
        &["servers", "--root", r.to_str().unwrap(), "--json"],
        &[],
        "manifest-errors-json",
    );
    json.expect_code(1);
    let errs = json.json()["errors"].as_array().unwrap().clone();
    assert!(errs
        .iter()
        .any(|x| x["file"] == "servers/bad/server.toml" && x["field"] == "modes.native.run"));
}

#[test]
fn servers_says_who_serves_http2_and_http3_and_why_the_others_do_not() {
    let run = fairbench(
        &["servers", "--root", repo().to_str().unwrap(), "--json"],
        &[],
        "servers-protocols",
    );
    let r = run.json();
    for s in r["servers"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let served: Vec<&str> = s["protocols"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        let gaps = s["protocols_unsupported"].as_array().unwrap();
        // Every protocol not served says why, in the server's own words.
        for g in gaps {
            assert_eq!(g["declared"], true, "{name}: {g}");
            assert!(g["reason"].as_str().unwrap().len() > 20, "{name}: {g}");
        }
        let h3_gap = gaps.iter().find(|g| g["protocol"] == "h3");
        if ["go-nethttp", "rust-hyper"].contains(&name) {
            assert_eq!(served, ["http/1.1", "h2c", "h2", "h3"], "{name}");
            assert!(gaps.is_empty(), "{name}: {gaps:?}");
            continue;
        }
        // Everyone else says why not h3.
        assert!(h3_gap.is_some(), "{name}: {gaps:?}");
        if ["node-http", "nginx"].contains(&name) {
            assert_eq!(served, ["http/1.1", "h2c", "h2"], "{name}");
            assert_eq!(gaps.len(), 1, "{name}: {gaps:?}");
            continue;
        }
        assert_eq!(served, ["http/1.1"], "{name}");
        assert_eq!(gaps.len(), 3, "{name}: {gaps:?}");
        if name.starts_with("dart-") {
            for g in gaps {
                assert!(
                    g["reason"]
                        .as_str()
                        .unwrap()
                        .contains("dart:io's HttpServer"),
                    "{name}: {g}"
                );
            }
        }
    }
    let text = fairbench(
        &["servers", "--root", repo().to_str().unwrap()],
        &[],
        "servers-protocols-text",
    );
    assert!(
        text.stdout.contains("Protocols not served (docs/server-manifest.md):\n")
            && text.stdout.contains("  java-jdk does not serve h2c: com.sun.net.httpserver's HttpServer speaks HTTP/1.1 only"),
        "{}",
        text.stdout
    );
    let row = text
        .stdout
        .lines()
        .find(|l| l.starts_with("go-nethttp "))
        .unwrap();
    assert!(row.contains("http/1.1, h2c, h2, h3"), "{row}");
    assert!(
        text.stdout.contains(
            "  nginx does not serve h3: Debian's nginx 1.22.1 is built without ngx_http_v3_module"
        ),
        "{}",
        text.stdout
    );
}

/// Each server folder is self-contained, so the two node servers carry the
/// same database code twice (db.js says so): a fix made to one and not the
/// other would make their database cases measure different code.
#[test]
fn the_node_servers_database_code_is_one_copy() {
    let read = |server: &str| {
        std::fs::read_to_string(repo().join("servers").join(server).join("db.js"))
            .unwrap_or_else(|e| panic!("servers/{server}/db.js: {e}"))
    };
    let (http, express) = (read("node-http"), read("node-express"));
    assert!(
        http == express,
        "servers/node-http/db.js and servers/node-express/db.js differ: change both (they are one copy)"
    );
}
