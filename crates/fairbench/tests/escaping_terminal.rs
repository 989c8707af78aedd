//! One escaping rule for every output (issue 27): escape sequences, OSC 8
//! links, C1 controls and bidirectional overrides carried by a server's
//! folder name, its manifest, a suite and a server's header reach no
//! terminal, CSV or JSON raw — in `servers`, `check`, `run`, `show`, `runs`,
//! `compare` and `report --format csv`; the JSON outputs decode to the
//! very same strings.

mod support;

use support::root::Root;
use support::text;

/// The folder (and manifest) name: a colour escape and a right-to-left override.
const NAME: &str = "ev\x1b[31mil\u{202e}";

/// No character a terminal would act on or that reorders text.
fn assert_shown(what: &str, s: &str) {
    for (i, c) in s.char_indices() {
        let hidden = fairbench_sys::text::is_hidden(c) && c != '\n';
        // CSV rows end in CRLF: the csv crate's terminator, not data.
        let crlf = c == '\r' && s[i + 1..].starts_with('\n') && what.starts_with("csv");
        assert!(
            !hidden || crlf,
            "{what}: raw {c:?} at {i} in:\n{}",
            s.escape_debug()
        );
    }
}

fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c.is_control() || fairbench_sys::text::is_hidden(c) {
            out.push_str(&format!("\\u{:04X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[test]
fn hostile_names_manifests_suites_and_headers_are_shown_escaped_everywhere() {
    let root = Root::new(&[("fast-a", &["--evil"])]);
    // A second server whose folder name, language and description are hostile.
    let src = root.path().join("servers/fast-a");
    let dst = root.path().join("servers").join(NAME);
    std::fs::create_dir(&dst).unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dst.join(f.file_name())).unwrap();
    }
    let manifest = std::fs::read_to_string(dst.join("server.toml"))
        .unwrap()
        .replace("name = \"fast-a\"", &format!("name = {}", toml_str(NAME)))
        .replace(
            "language = \"Python\"",
            &format!(
                "language = {}\ndescription = {}",
                toml_str("Python\u{202e}\u{9b}31m"),
                toml_str("\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07 \x1b[2J")
            ),
        );
    std::fs::write(dst.join("server.toml"), manifest).unwrap();
    root.suite(
        "s",
        &format!(
            r#"name = {}
description = {}
responses = ["default"]
scenarios = ["static"]
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#,
            toml_str("s\u{202e}\x1b[2Jx"),
            toml_str("d\x1b]8;;http://x\x07")
        ),
    );

    let both = |args: &[&str]| {
        let o = root.run(args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            text(&o),
        )
    };
    let escaped_name = "ev\\x1b[31mil\\u{202e}";

    let (code, out, err, all) = both(&["servers"]);
    assert_eq!(code, Some(0), "{all}");
    assert_shown("servers", &out);
    assert_shown("servers stderr", &err);
    assert!(
        out.contains(escaped_name) && out.contains("Python\\u{202e}\\x9b31m"),
        "{out}"
    );

    let (_, out, err, all) = both(&["check", "--scenarios", "static", "--variant", "default"]);
    assert_shown("check", &out);
    assert_shown("check stderr", &err);
    assert!(out.contains(escaped_name), "{all}");

    let (_, out, err, all) = both(&[
        "check",
        "--scenarios",
        "static",
        "--variant",
        "default",
        "--raw",
        "--all-rules",
    ]);
    assert_shown("check --raw", &out);
    assert_shown("check --raw stderr", &err);
    // The server's header: its override shown, as bytes or as a character.
    assert!(
        out.contains("exe.txt") && !out.contains('\u{202e}'),
        "{all}"
    );

    let (code, out, err, all) = both(&["run", "--suite", "s", "--dry-run"]);
    assert_eq!(code, Some(0), "{all}");
    assert_shown("run --dry-run", &out);
    assert!(
        out.contains("suite s\\u{202e}\\x1b[2Jx: d\\x1b]8;;http://x\\x07"),
        "{out}"
    );
    assert!(out.contains(escaped_name), "{out}");
    assert_shown("run --dry-run stderr", &err);

    let (code, out, err, all) = both(&["run", "--suite", "s"]);
    assert_eq!(code, Some(0), "{all}");
    assert_shown("run", &out);
    assert_shown("run stderr", &err);
    assert!(
        out.contains(escaped_name) && err.contains(escaped_name),
        "{all}"
    );

    for args in [
        &["show"][..],
        &["runs"][..],
        &["compare", "1", "1"][..],
        &["report", "--format", "md", "-o", "-"][..],
    ] {
        let (code, out, err, all) = both(args);
        assert_eq!(code, Some(0), "{args:?}: {all}");
        assert_shown(&format!("{args:?}"), &out);
        assert_shown(&format!("{args:?} stderr"), &err);
    }

    let (code, out, _, all) = both(&["report", "--format", "csv", "-o", "-"]);
    assert_eq!(code, Some(0), "{all}");
    assert_shown("csv", &out);
    assert!(out.contains(escaped_name), "{out}");

    // JSON: no raw character either, and the data decodes unchanged.
    for args in [
        &["servers", "--json"][..],
        &["show", "--json"][..],
        &["runs", "--json"][..],
        &[
            "check",
            "--scenarios",
            "static",
            "--variant",
            "default",
            "--json",
        ][..],
    ] {
        let (_, out, _, all) = both(args);
        assert_shown(&format!("{args:?}"), &out);
        let j: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {all}"));
        assert!(
            has_string(&j, NAME) || has_string(&j, "s\u{202e}\x1b[2Jx"),
            "{args:?}: the exact strings survive as data: {out}"
        );
    }
}

/// Whether `s` is one of the strings in `v`.
fn has_string(v: &serde_json::Value, s: &str) -> bool {
    match v {
        serde_json::Value::String(x) => x == s,
        serde_json::Value::Array(a) => a.iter().any(|x| has_string(x, s)),
        serde_json::Value::Object(o) => o.values().any(|x| has_string(x, s)),
        _ => false,
    }
}
