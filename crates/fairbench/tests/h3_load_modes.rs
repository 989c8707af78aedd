//! What `load` can do over HTTP/1.1 and h2 it does over HTTP/3 too, against
//! a real HTTP/3 server (quic-go's, from the test kit): thresholds, a rate
//! profile (`--stages`), the knee search, a targets file and a load split
//! over generators (`--clients`).

mod support;

use fairbench_testkit::h3::{start, H3Options};
use serde_json::Value;
use support::load::{json, reach_h3, run};
use support::serial;

#[test]
fn thresholds_judge_an_http3_load() {
    let _serial = serial();
    let srv = start(&H3Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = reach_h3(&srv, &dir);
    let load = |threshold: &str| {
        run(&[
            "load",
            "--http3",
            "--cacert",
            &ca,
            "-c",
            "2",
            "-n",
            "200",
            "--threshold",
            "errors=0",
            "--threshold",
            threshold,
            "--json",
            &url,
        ])
    };
    // Generous: a local answer well under 5 s.
    let (code, out, err) = load("p99<5s");
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    support::assert_schema("load", &v);
    assert_eq!(v["protocol"], "h3");
    let passed: Vec<bool> = v["thresholds"]
        .as_array()
        .expect("thresholds in the JSON")
        .iter()
        .map(|t| t["pass"].as_bool().unwrap())
        .collect();
    assert_eq!(passed, [true, true], "{v}");
    // No answer comes within a microsecond: the threshold fails, exit 99.
    let (code, out, err) = load("p50<1us");
    assert_eq!(code, 99, "{out}{err}");
    assert_eq!(json(&out)["thresholds"][1]["pass"], false);
}

#[test]
fn stages_plan_an_http3_load_stage_by_stage() {
    let _serial = serial();
    let srv = start(&H3Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = reach_h3(&srv, &dir);
    let (code, out, err) = run(&[
        "load",
        "--http3",
        "--cacert",
        &ca,
        "-c",
        "4",
        "--stages",
        "1s:200,1s:200-400",
        "--json",
        &url,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    assert_eq!(v["protocol"], "h3");
    let stages = v["stages"].as_array().expect("stages in the JSON");
    let planned: Vec<u64> = stages
        .iter()
        .map(|s| s["planned"].as_u64().unwrap())
        .collect();
    // 200 in the first second, then a ramp from 200 to 400: 300 on average.
    assert_eq!(planned, [200, 300], "{stages:?}");
    assert_eq!(v["ledger"]["planned"], 500);
    let answered: u64 = stages.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert_eq!(answered, v["requests"].as_u64().unwrap());
    assert_eq!(v["ledger"]["answered"], 500, "{}", v["ledger"]);
}

#[test]
fn the_knee_is_searched_over_http3() {
    let _serial = serial();
    let srv = start(&H3Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = reach_h3(&srv, &dir);
    // Two steps (50 and 100 req/s), each well within a generous objective:
    // the knee is the highest. A step needs 90 % of its rate answered, so
    // 1 s steps survive a 100 ms hiccup (500 ms ones only 50 ms).
    let (code, out, err) = run(&[
        "load",
        "--http3",
        "--cacert",
        &ca,
        "-c",
        "2",
        "-d",
        "1s",
        "--knee",
        "p99<=5s",
        "--start-rate",
        "50",
        "--max-rate",
        "100",
        "--json",
        &url,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    support::assert_schema("load-knee", &v);
    let steps = v["knee"]["steps"].as_array().expect("steps");
    assert!(!steps.is_empty(), "{v}");
    assert!(
        steps
            .iter()
            .all(|s| s["errors"] == 0 && s["answered_rps"].as_f64().unwrap() > 0.0),
        "{v}"
    );
    assert_eq!(v["knee"]["knee_rps"], 100.0, "{v}");
}

#[test]
fn a_targets_file_is_sent_over_http3_and_counted_by_target() {
    let _serial = serial();
    let srv = start(&H3Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = reach_h3(&srv, &dir);
    let file = dir.path().join("targets.toml");
    std::fs::write(
        &file,
        format!(
            "[[target]]\nname = \"item\"\npath = \"/items/{{{{uniform 1 50}}}}\"\nweight = 3\n\
             headers = [\"X-Request-Id: {{{{seq}}}}\"]\n\n\
             [[target]]\nname = \"create\"\nmethod = \"POST\"\nurl = \"{url}items\"\nbody = '{{\"n\": 1}}'\n"
        ),
    )
    .unwrap();
    let (code, out, err) = run(&[
        "load",
        "--http3",
        "--streams",
        "2",
        "--cacert",
        &ca,
        "-c",
        "2",
        "-n",
        "400",
        "--pool",
        "100",
        "--targets",
        file.to_str().unwrap(),
        "--json",
        &url,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    assert_eq!(v["protocol"], "h3");
    let targets = v["targets"].as_array().expect("targets in the JSON");
    let by = |name: &str| -> &Value {
        targets
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {targets:?}"))
    };
    // Weights 3:1 of 400: 300 and 100, every one answered.
    assert_eq!(by("item")["planned"], 300, "{targets:?}");
    assert_eq!(by("create")["planned"], 100, "{targets:?}");
    assert_eq!(by("item")["requests"], 300, "{targets:?}");
    assert_eq!(by("create")["requests"], 100, "{targets:?}");
}

#[test]
fn a_load_split_over_generators_speaks_http3() {
    let _serial = serial();
    let srv = start(&H3Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = reach_h3(&srv, &dir);
    // Two generator processes here, two connections each: nothing listens
    // on the URL's TCP port, so no generator may ask TCP first.
    let (code, out, err) = run(&[
        "load",
        "--http3",
        "--cacert",
        &ca,
        "--clients",
        "2",
        "-c",
        "4",
        "-n",
        "400",
        "--json",
        &url,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    assert_eq!(v["protocol"], "h3");
    assert_eq!(v["http3"]["handshakes"], 4, "{}", v["http3"]);
    assert_eq!(v["topology"]["clients"].as_array().unwrap().len(), 2);
    assert_eq!(v["ledger"]["planned"], 400, "{}", v["ledger"]);
    assert_eq!(v["ledger"]["answered"], 400, "{}", v["ledger"]);
}
