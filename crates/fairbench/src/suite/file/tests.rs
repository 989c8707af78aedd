//! The unit tests of `file`.

use super::*;

const OK: &str = r#"
name = "t"
scenarios = ["static"]
cores = [1, "all"]
duration = "2s"
warmup = "1s"
[[load]]
model = "closed"
connections = 10
[[load]]
model = "sweep"
connections = 20
start_rate = 100
max_rate = 1000
"#;

#[test]
fn the_study_literal_suites_count_timeouts_wrks_way() {
    for name in ["study-literal", "study-literal-all"] {
        let path = format!("{}/../../suites/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let s = Suite::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
        assert_eq!(s.timeout_mode, fairbench_engine::TimeoutMode::Wrk, "{name}");
    }
    let s = Suite::parse(
        &std::fs::read_to_string(format!(
            "{}/../../suites/study-corrected.toml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
        "study-corrected",
    )
    .unwrap();
    assert_eq!(s.timeout_mode, fairbench_engine::TimeoutMode::Fairbench);
}

#[test]
fn parses_with_defaults() {
    let s = Suite::parse(OK, "t.toml").unwrap();
    assert_eq!(s.cores, vec![CoreCount::N(1), CoreCount::All]);
    assert_eq!(s.repetitions, 3);
    assert_eq!(s.responses, vec!["default", "normalized"]);
    assert_eq!(s.timeout, Duration::from_secs(2));
    assert_eq!(s.timeout_mode, fairbench_engine::TimeoutMode::Fairbench);
    assert_eq!(s.loads[0].label(), "closed c=10");
    let ab = Suite::parse(
        &OK.replace(
            "connections = 10",
            "connections = 2\nrequests = 10000\nkeepalive = false",
        ),
        "t.toml",
    )
    .unwrap();
    assert_eq!(ab.loads[0].label(), "closed c=2 n=10000 no-keepalive");
    // Profiles without them keep their stored form.
    let json = serde_json::to_string(&s.loads[0]).unwrap();
    assert!(
        !json.contains("requests") && !json.contains("keepalive"),
        "{json}"
    );
    assert_eq!(s.interleave, Interleave::Repetition);
    assert_eq!(s.interleave_seed, None);
    assert_eq!(s.pairing.reference.label(), "go-nethttp");
    assert_eq!(s.pairing.reference_from, "default");
    assert!(s.pairing.aa.is_empty());
    let aa = Suite::parse(
        &OK.replace(
            "name = \"t\"",
            "name = \"t\"\nreference = \"go-nethttp/native/normalized\"\naa = [\"go-nethttp/native/default\"]\ninterleave = \"case\"\ninterleave_seed = 5",
        ),
        "t.toml",
    )
    .unwrap();
    assert_eq!(
        (aa.interleave, aa.interleave_seed),
        (Interleave::Case, Some(5))
    );
    assert_eq!(aa.pairing.reference_from, "suite");
    assert!(aa.pairing.is_aa("go-nethttp", "native", "default"));
    match &s.loads[1] {
        LoadProfile::Sweep(w) => {
            assert_eq!(w.slo, Duration::from_millis(10));
            assert_eq!(w.slo_quantile, 0.99);
            assert_eq!(w.step_duration, Duration::from_secs(2));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_shipped_suites_parse_and_aa_declares_its_twins() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for name in ["quick", "study", "sweep", "aa", "ab2012", "h2", "h3"] {
        let (s, _) = Suite::resolve(&root, name).unwrap();
        assert_eq!(s.name, name);
    }
    let (h3, _) = Suite::resolve(&root, "h3").unwrap();
    assert_eq!(
        h3.protocols,
        [
            fairbench_zoo::Protocol::Http1,
            fairbench_zoo::Protocol::H2,
            fairbench_zoo::Protocol::H3
        ]
    );
    let (aa, _) = Suite::resolve(&root, "aa").unwrap();
    assert_eq!(aa.interleave, Interleave::Case);
    assert_eq!(aa.pairing.reference.label(), "go-nethttp/native/normalized");
    assert!(aa.pairing.is_aa("go-nethttp", "native", "default"));
    assert!(!aa.pairing.is_aa("go-nethttp", "native", "normalized"));
    assert_eq!(
        aa.scenarios,
        ["static"],
        "the twins are identical for static"
    );
}

#[test]
fn workers_and_the_study_response() {
    assert_eq!(Suite::parse(OK, "t.toml").unwrap().workers, None);
    let s = Suite::parse(
        &OK.replace(
            "cores = [1, \"all\"]",
            "cores = [\"all\"]\nworkers = 1\nresponses = [\"study\"]",
        ),
        "t.toml",
    )
    .unwrap();
    assert_eq!(
        (s.workers, s.cores.as_slice()),
        (Some(1), &[CoreCount::All][..])
    );
    assert_eq!(s.responses, ["study"]);
    let s = Suite::parse(
        &OK.replace(
            "name = \"t\"",
            "name = \"t\"\nresponses = [\"default\", \"post2012-session\"]",
        ),
        "t.toml",
    )
    .unwrap();
    assert_eq!(s.responses, ["default", "post2012-session"]);
    let e = Suite::parse(
        &OK.replace("name = \"t\"", "name = \"t\"\nresponses = [\"post2012\"]"),
        "t.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("\"post2012-local\""), "the names it takes: {e}");
    for (bad, field) in [
        ("workers = 0", "field workers"),
        ("responses = [\"literal\"]", "field responses"),
    ] {
        let e = Suite::parse(
            &OK.replace("name = \"t\"", &format!("name = \"t\"\n{bad}")),
            "t.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(field), "{bad}: {e}");
    }
}

#[test]
fn protocols_default_to_http1_and_are_checked() {
    use fairbench_zoo::Protocol;
    assert_eq!(
        Suite::parse(OK, "t.toml").unwrap().protocols,
        vec![Protocol::Http1]
    );
    let s = Suite::parse(
        &OK.replace(
            "name = \"t\"",
            "name = \"t\"\nprotocols = [\"http/1.1\", \"h2c\", \"h2\", \"h3\"]",
        ),
        "t.toml",
    )
    .unwrap();
    assert_eq!(s.protocols, Protocol::ALL.to_vec());
    for (bad, needle) in [
        ("protocols = []", "field protocols: expected at least one"),
        (
            "protocols = [\"h4\"]",
            "field protocols: \"h4\": expected \"http/1.1\", \"h2c\", \"h2\" or \"h3\"",
        ),
        (
            "protocols = [\"h2\", \"h2\"]",
            "field protocols: \"h2\" is listed twice",
        ),
    ] {
        let e = Suite::parse(
            &OK.replace("name = \"t\"", &format!("name = \"t\"\n{bad}")),
            "suites/t.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("suites/t.toml: ") && e.contains(needle),
            "{bad}: {e}"
        );
    }
}

#[test]
fn streams_apply_to_the_http2_cases_are_labelled_and_checked() {
    let h2 = OK.replace(
        "name = \"t\"",
        "name = \"t\"\nprotocols = [\"http/1.1\", \"h2c\"]",
    );
    let s = Suite::parse(
        &h2.replace("connections = 10", "connections = 10\nstreams = 8")
            .replace("connections = 20", "connections = 20\nstreams = 4"),
        "t.toml",
    )
    .unwrap();
    assert_eq!((s.loads[0].streams(), s.loads[1].streams()), (8, 4));
    assert_eq!(s.loads[0].label(), "closed c=10 streams=8");
    assert!(
        s.loads[1].label().ends_with("c=20 streams=4"),
        "{}",
        s.loads[1].label()
    );
    // Stored with the case: the profile's JSON carries it.
    let j = serde_json::to_value(&s.loads[0]).unwrap();
    assert_eq!(j["streams"], 8);
    // Left out: one stream, and neither label nor JSON changes.
    let one = Suite::parse(&h2, "t.toml").unwrap();
    assert_eq!(one.loads[0].streams(), 1);
    assert_eq!(one.loads[0].label(), "closed c=10");
    assert!(serde_json::to_value(&one.loads[0])
        .unwrap()
        .get("streams")
        .is_none());
    let rate = h2.replace(
        "model = \"closed\"\nconnections = 10",
        "model = \"rate\"\nrate = 500\nconnections = 10\nstreams = 2",
    );
    let r = Suite::parse(&rate, "t.toml").unwrap();
    assert_eq!(r.loads[0].label(), "rate 500/s c=10 streams=2");
    for (suite, needle) in [
        (
            h2.replace("connections = 10", "connections = 10\nstreams = 0"),
            "suites/t.toml: field load[0].streams: 0: expected 1 to 100000",
        ),
        (
            h2.replace("connections = 10", "connections = 10\nstreams = 100001"),
            "field load[0].streams: 100001: expected 1 to 100000",
        ),
        (
            OK.replace("connections = 10", "connections = 10\nstreams = 2"),
            "field load[0].streams: applies to HTTP/2 and HTTP/3 cases only",
        ),
        (
            h2.replace(
                "connections = 10",
                "connections = 10\nstreams = 2\npipeline = 2",
            ),
            "field load[0].streams: cannot be combined with pipeline",
        ),
        (
            h2.replace(
                "connections = 10",
                "connections = 10\nstreams = 2\nkeepalive = false",
            ),
            "field load[0].streams: cannot be combined with keepalive = false",
        ),
    ] {
        let e = Suite::parse(&suite, "suites/t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{needle}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn errors_name_file_and_field() {
    let cases = [
        (
            OK.replace("cores = [1, \"all\"]", "cores = [0]"),
            "field cores",
        ),
        (
            OK.replace("duration = \"2s\"", "duration = \"soon\""),
            "field duration",
        ),
        (
            OK.replace("model = \"closed\"", "model = \"open\""),
            "field load[0].model",
        ),
        (
            OK.replace("connections = 10", "connections = 0"),
            "field load[0].connections",
        ),
        (
            OK.replace("start_rate = 100", "start_rate = -1"),
            "field load[1].start_rate",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\ncolour = 1"),
            "unknown field",
        ),
        (
            OK.replace("connections = 10", "connections = 10\nrequests = 0"),
            "field load[0].requests",
        ),
        (
            OK.replace(
                "connections = 10",
                "connections = 10\nkeepalive = false\npipeline = 2",
            ),
            "field load[0].pipeline",
        ),
        (
            OK.replace("connections = 20", "connections = 20\nrequests = 100"),
            "field load[1].model",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\ninterleave = \"random\""),
            "field interleave: \"random\"",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\ninterleave_seed = -1"),
            "field interleave_seed",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\nreference = \"go/x\""),
            "field reference",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\naa = [\"go//x\"]"),
            "field aa",
        ),
        // Values that would silently change or crash a measurement.
        (
            OK.replace("connections = 10", "connections = 10\npipeline = 0"),
            "field load[0].pipeline: must be at least 1",
        ),
        (
            OK.replace("connections = 10", "connections = 10\npipeline = 2000"),
            "field load[0].pipeline",
        ),
        (
            OK.replace("start_rate = 100", "start_rate = 1e-300"),
            "field load[1].start_rate: must be at least 0.001",
        ),
        (
            OK.replace("max_rate = 1000", "max_rate = 1e9"),
            "field load[1].max_rate",
        ),
        (
            OK.replace("max_rate = 1000", "max_rate = 1000\nstep_factor = 1.000001"),
            "field load[1].step_factor",
        ),
        (
            OK.replace("max_rate = 1000", "max_rate = 1000\nbisect_steps = 1000000"),
            "field load[1].step_factor",
        ),
        (
            OK.replace(
                "max_rate = 1000",
                "max_rate = 1000\nstep_duration = \"31days\"",
            ),
            "field load[1].step_duration",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\nrepetitions = 1001"),
            "field repetitions",
        ),
        (
            OK.replace("connections = 10", "connections = 10\nthreads = 5000"),
            "field load[0].threads",
        ),
        (
            OK.replace("connections = 10", "connections = 2000000"),
            "field load[0].connections",
        ),
        (
            OK.replace("connections = 10", "connections = 10\nmodel2 = 1")
                .replace("model = \"closed\"\n", "model = \"rate\"\nrate = 1e9\n")
                .replace("model2 = 1", ""),
            "field load[0].rate",
        ),
        (
            OK.replace("warmup = \"1s\"", "warmup = \"40days\""),
            "field warmup",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\ntimeout = \"2h\""),
            "field timeout",
        ),
        (
            OK.replace("name = \"t\"", "name = \"t\"\ntimeout_mode = \"abort\""),
            "field timeout_mode: expected fairbench or wrk, got \"abort\"",
        ),
    ];
    for (text, needle) in cases {
        let e = Suite::parse(&text, "suites/t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("suites/t.toml"), "{e}");
        assert!(e.contains(needle), "{needle}: {e}");
    }
}

#[test]
fn a_suite_is_found_by_one_rule_and_a_name_needs_a_root() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for path in ["x.toml", "dir/x", "./x"] {
        assert!(Suite::is_path(path), "{path}");
    }
    assert!(!Suite::is_path("quick"));
    let (shown, text) = Suite::read(Some(&root), "quick").unwrap();
    assert!(shown.ends_with("suites/quick.toml"), "{shown}");
    // A path is read as given, root or none.
    let (again, same) = Suite::read(None, &shown).unwrap();
    assert_eq!((again, same), (shown, text));
    let no_root = Suite::read(None, "quick").unwrap_err().to_string();
    assert!(
        no_root.starts_with("--suite: quick is a suite name"),
        "{no_root}"
    );
    let unknown = Suite::read(Some(&root), "no-such-suite")
        .unwrap_err()
        .to_string();
    assert!(
        unknown.starts_with("--suite: cannot read")
            && unknown.contains("suites here: ")
            && unknown.contains("quick"),
        "{unknown}"
    );
}

#[test]
fn repetitions_are_a_count_or_a_precision_and_bad_ones_say_both_forms() {
    let with = |v: &str| OK.replace("name = \"t\"", &format!("name = \"t\"\nrepetitions = {v}"));
    let fixed = Suite::parse(&with("5"), "t.toml").unwrap();
    assert_eq!((fixed.repetitions, fixed.adaptive), (5, None));
    let want = Some(Repetitions::Until {
        half_width_pct: 3.0,
        max: 12,
    });
    for v in ["\"until:3%,max:12\"", "\"until ±3 % or 12\""] {
        let s = Suite::parse(&with(v), "t.toml").unwrap();
        assert_eq!((s.repetitions, s.adaptive), (12, want), "{v}");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["adaptive"], "until:3%,max:12");
    }
    for v in ["0", "\"until:3\"", "\"until ±3 % or 2\"", "2.5", "\"lots\""] {
        let e = Suite::parse(&with(v), "suites/t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("suites/t.toml: field repetitions: ")
                && e.contains("expected")
                && !e.contains('\n'),
            "{v}: {e}"
        );
    }
    let e = Suite::parse(&with("0"), "t.toml").unwrap_err().to_string();
    assert!(e.contains("until:PRECISION%"), "{e}");
}
