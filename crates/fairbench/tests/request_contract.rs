//! The request is part of the scenario contract: `fairbench check` and the
//! load engine under `fairbench run` send the request line and the headers of
//! `fairbench_zoo::scenario::REQUEST_HEADERS`, nothing else (docs/scenarios.md,
//! "The request"). A server that records every distinct set of header names it
//! is sent proves it for both senders at once. A scenario that declares its
//! own `headers` (gzip's `Accept-Encoding`) adds exactly those, from both.

mod support;

use fairbench_zoo::scenario::REQUEST_HEADERS;
use support::root::Root;
use support::{repo, serial, text};

const ONE_CASE: &str = r#"
name = "one"
servers = ["*"]
responses = ["normalized"]
scenarios = ["static", "file"]
cores = [1]
warmup = "1s"
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#;

#[test]
fn check_and_load_send_exactly_the_contracts_request_headers() {
    let _serial = serial();
    let record = tempfile::tempdir().unwrap();
    let log = record.path().join("headers.txt");
    let log_arg = log.display().to_string();
    let root = Root::new(&[("recorder", &["--record-headers", &log_arg])]);
    root.suite("one", ONE_CASE);

    let out = root.run(&["check", "--servers", "recorder"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let after_check = std::fs::read_to_string(&log).unwrap();

    let out = root.run(&["run", "--suite", "one", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    assert!(
        root.sql::<i64>("SELECT sum(requests) FROM cases") > 10,
        "the load engine sent requests"
    );

    let expected: Vec<String> = vec![REQUEST_HEADERS
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",")];
    let sets = |s: &str| -> Vec<String> {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(sets(&after_check), expected, "fairbench check sent");
    assert_eq!(
        sets(&std::fs::read_to_string(&log).unwrap()),
        expected,
        "fairbench check and run sent"
    );
}

/// `file`, asked with a request header of its own: the Python server
/// answers it as it answers `file`.
const ASKED: &str = r#"
name = "asked"
method = "GET"
path = "/hello-16k.txt"
headers = ["Accept-Encoding: gzip"]
[expect]
status = 200
body_file = "files/hello-16k.txt"
"#;

#[test]
fn a_scenarios_own_headers_are_sent_by_check_and_load_alike() {
    let _serial = serial();
    let record = tempfile::tempdir().unwrap();
    let log = record.path().join("headers.txt");
    let log_arg = log.display().to_string();
    let root = Root::new(&[("recorder", &["--record-headers", &log_arg])]);
    std::fs::write(root.path().join("scenarios/asked.toml"), ASKED).unwrap();
    root.suite(
        "one",
        &ONE_CASE.replace(
            r#"scenarios = ["static", "file"]"#,
            r#"scenarios = ["asked"]"#,
        ),
    );

    let out = root.run(&["check", "--servers", "recorder", "--scenarios", "asked"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let after_check = std::fs::read_to_string(&log).unwrap();
    let out = root.run(&["run", "--suite", "one", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    assert!(root.sql::<i64>("SELECT sum(requests) FROM cases") > 10);

    let mut names: Vec<String> = REQUEST_HEADERS
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    names.push("accept-encoding".into());
    names.sort();
    let expected = vec![names.join(",")];
    let sets = |s: &str| -> Vec<String> {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(sets(&after_check), expected, "fairbench check sent");
    assert_eq!(
        sets(&std::fs::read_to_string(&log).unwrap()),
        expected,
        "fairbench check and run sent"
    );
}

#[test]
fn the_docs_state_the_request() {
    let doc = std::fs::read_to_string(repo().join("docs/scenarios.md")).unwrap();
    let section = doc
        .split("## The request")
        .nth(1)
        .expect("docs/scenarios.md has a section \"The request\"");
    let section = section.split("\n## ").next().unwrap();
    let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
    for h in REQUEST_HEADERS {
        assert!(section.contains(&format!("`{h}`")), "{h} is not named");
    }
    assert!(section.contains("nothing else"));
    assert!(
        section.contains("`headers`"),
        "a scenario's own headers are documented"
    );
}
