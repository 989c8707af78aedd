//! The `study` response shape of the servers that run here (go-nethttp,
//! node-http, node-express), checked for real: graded against the scenario
//! rules with every difference declared in the manifest (never a silent
//! pass as `normalized`), and its bytes those of the code the publications
//! quote in docs/servers/study-code.md.

mod support;

use serde_json::Value;
use support::check::*;
use support::repo;

/// The Go handler's quoted `fmt.Fprintln(w, "…")` literals, in order.
fn quoted_go_literals() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/servers/study-code.md")).unwrap();
    let go = doc
        .split("<!-- quote: go-nethttp -->")
        .nth(1)
        .expect("docs/servers/study-code.md quotes go-nethttp")
        .split("```")
        .nth(1)
        .unwrap()
        .to_string();
    go.split("fmt.Fprintln(w, \"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect()
}

/// Go's time.RFC3339: `2006-01-02T15:04:05Z07:00`, the zone `Z` or `±hh:mm`.
fn is_rfc3339_seconds(s: &str) -> bool {
    let shape = |s: &str, pattern: &str| {
        s.len() == pattern.len()
            && s.bytes().zip(pattern.bytes()).all(|(c, p)| match p {
                b'd' => c.is_ascii_digit(),
                b's' => c == b'+' || c == b'-',
                _ => c == p,
            })
    };
    shape(s, "dddd-dd-ddTdd:dd:ddZ") || shape(s, "dddd-dd-ddTdd:dd:ddsdd:dd")
}

fn case<'a>(cases: &'a [Value], server: &str, scenario: &str) -> &'a Value {
    cases
        .iter()
        .find(|c| c["server"] == server && c["scenario"] == scenario)
        .unwrap_or_else(|| panic!("no case {server} {scenario}"))
}

fn wire_body(c: &Value) -> String {
    let resp = c["raw"]["response"].as_str().unwrap();
    resp.split_once("\r\n\r\n").unwrap().1.to_string()
}

fn grade_of<'a>(c: &'a Value, rule: &str) -> (&'a str, &'a str) {
    let r = c["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == rule)
        .unwrap_or_else(|| panic!("no rule {rule} in {c}"));
    (r["grade"].as_str().unwrap(), r["detail"].as_str().unwrap())
}

#[test]
fn study_shapes_of_go_node_and_express_are_the_published_code_with_declared_deviations() {
    let root = repo();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            "go-nethttp,node-http,node-express",
            "--variant",
            "study",
            // The publications measured these three; their code has no
            // database routes (issue 26's scenarios).
            "--scenarios",
            "static,dynamic,file",
            "--json",
            "--raw",
        ],
        &[],
        "study-shapes",
    );
    let r = run.json();
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 9, "3 servers × 3 scenarios\n{}", run.stderr);
    for c in cases {
        assert_eq!(c["response"], "study", "{c}");
        // Graded, not passed off: no failure, and every failure the rules
        // would give is a warn naming the manifest's reason.
        for rule in c["rules"].as_array().unwrap() {
            assert_ne!(
                rule["grade"], "fail",
                "{} {}: {rule}",
                c["server"], c["scenario"]
            );
        }
    }
    assert_eq!(r["ok"], true, "{}", run.stderr);

    // go-nethttp: the study's own handler, byte for byte.
    let lits = quoted_go_literals();
    assert_eq!(lits, ["Hello World!", "The time is: "], "{lits:?}");
    let go_static = case(cases, "go-nethttp", "static");
    assert_eq!(wire_body(go_static), format!("{}\n", lits[0]));
    assert_eq!(grade_of(go_static, "body").0, "pass");
    let go_dynamic = case(cases, "go-nethttp", "dynamic");
    let body = wire_body(go_dynamic);
    let time = body
        .strip_prefix(lits[1].as_str())
        .and_then(|t| t.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{body:?} is not {:?} + time + newline", lits[1]));
    assert!(is_rfc3339_seconds(time), "{body:?}");
    assert!(!is_rfc3339_seconds("2026-11-26T08:19:49.5Z"));
    let (grade, detail) = grade_of(go_dynamic, "body");
    assert_eq!(grade, "warn", "{detail}");
    assert!(detail.contains("known deviation"), "{detail}");

    // node-http: the 2012-style file server, piped after writeHead: chunked,
    // and said so.
    let node_file = case(cases, "node-http", "file");
    let raw = node_file["raw"]["response"].as_str().unwrap();
    assert!(
        raw.to_ascii_lowercase()
            .contains("transfer-encoding: chunked\r\n"),
        "{raw}"
    );
    let (grade, detail) = grade_of(node_file, "framing");
    assert_eq!(grade, "warn", "{detail}");
    assert!(detail.contains("known deviation"), "{detail}");
    assert_eq!(grade_of(node_file, "body").0, "pass");

    // express: the 2012 post's express.static, every validator on.
    let express_file = case(cases, "node-express", "file");
    let raw = express_file["raw"]["response"]
        .as_str()
        .unwrap()
        .to_ascii_lowercase();
    for h in ["etag:", "last-modified:", "x-powered-by:", "accept-ranges:"] {
        assert!(raw.contains(h), "{h} missing from\n{raw}");
    }
}
