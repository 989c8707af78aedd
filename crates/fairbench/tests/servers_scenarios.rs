//! `fairbench servers` says why a server does not implement a scenario, in
//! its manifest's words (`[scenarios_unsupported]`): a line of the text
//! output and a field of the JSON, so that the skip `check` and the suites
//! make later is no surprise (issue 39, point 6: "the others declare why
//! not").

mod support;

use support::check::fairbench;
use support::root::Root;
use support::{repo, text};

/// The manifest's own reasons of `server`, as (scenario, reason).
fn declared(server: &str) -> Vec<(String, String)> {
    let path = repo().join("servers").join(server).join("server.toml");
    let manifest: toml::Table = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match manifest.get("scenarios_unsupported") {
        None => Vec::new(),
        Some(t) => t
            .as_table()
            .expect("[scenarios_unsupported] is a table")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("a reason").to_string()))
            .collect(),
    }
}

#[test]
fn servers_shows_why_a_dart_server_has_no_gzip() {
    let root = repo();
    let gzip = declared("dart-io");
    assert_eq!(gzip.len(), 1, "dart-io declares one scenario: {gzip:?}");
    let (scenario, reason) = &gzip[0];
    assert_eq!(scenario, "gzip");
    assert!(reason.contains("no Dart SDK"), "{reason}");

    let run = fairbench(
        &["servers", "--root", root.to_str().unwrap()],
        &[],
        "servers-scenarios-text",
    );
    let out = &run.stdout;
    let section = out
        .split("Scenarios not implemented (docs/server-manifest.md):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no scenarios section:\n{out}"));
    assert!(
        section.contains(&format!("  dart-io does not implement gzip: {reason}\n")),
        "{out}"
    );
    // One line per server and scenario, each in the manifest's words.
    for server in [
        "dart-alfred",
        "dart-conduit",
        "dart-frog",
        "dart-jaguar",
        "dart-shelf",
    ] {
        for (scenario, reason) in declared(server) {
            let line = format!("  {server} does not implement {scenario}: {reason}\n");
            assert!(section.contains(&line), "missing {line:?} in:\n{out}");
        }
    }
    assert!(!section.contains("go-nethttp"), "{section}");

    let json = fairbench(
        &["servers", "--root", root.to_str().unwrap(), "--json"],
        &[],
        "servers-scenarios-json",
    );
    let doc = json.json();
    for s in doc["servers"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let listed: Vec<(String, String)> = s["scenarios_unsupported"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no scenarios_unsupported: {s}"))
            .iter()
            .map(|g| {
                let field = |k: &str| g[k].as_str().unwrap().to_string();
                (field("scenario"), field("reason"))
            })
            .collect();
        assert_eq!(listed, declared(name), "{name}");
    }
}

#[test]
fn a_reason_is_one_line_escaped_for_the_terminal() {
    let root = Root::new(&[("fast-a", &[])]);
    let manifest = root.path().join("servers/fast-a/server.toml");
    let mut t = std::fs::read_to_string(&manifest).unwrap();
    t.push_str("[scenarios_unsupported]\nfile = \"two\\nlines \\u001B[31mred\\u202E\"\n");
    std::fs::write(&manifest, t).unwrap();

    let o = root.run(&["servers"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("  fast-a does not implement file: two\\nlines \\x1b[31mred\\u{202e}\n"),
        "{}",
        out.escape_debug()
    );

    let o = root.run(&["servers", "--json"]);
    let doc = support::json(&o);
    let gaps = &doc["servers"][0]["scenarios_unsupported"];
    assert_eq!(gaps[0]["scenario"], "file", "{doc}");
    assert_eq!(
        gaps[0]["reason"], "two\nlines \u{1b}[31mred\u{202e}",
        "JSON keeps the reason itself: {doc}"
    );
}
