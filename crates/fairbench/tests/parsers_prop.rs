//! Property tests (issue 27): no input makes a parser panic — the command
//! line's value parsers and the whole command line, the suite, manifest
//! and scenario parsers, and the load engine's response parser. Each
//! property runs a bounded number of cases (about a second each), so CI
//! runs them with every `cargo test`.

use std::str::FromStr;

use fairbench::args;
use fairbench::suite::Suite;
use fairbench_engine::response::{ResponseParser, Step};
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        // Shrinking a failure is bounded too.
        max_shrink_iters: 512,
        ..ProptestConfig::default()
    }
}

/// Text near what the parsers expect: digits, suffixes, units, separators,
/// signs, whitespace, control and wide characters.
fn near_value() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("0".to_string()),
            Just("9".to_string()),
            Just("18446744073709551616".to_string()),
            Just("9223372036854775807".to_string()),
            Just(".".to_string()),
            Just("-".to_string()),
            Just(",".to_string()),
            Just("k".to_string()),
            Just("M".to_string()),
            Just("G".to_string()),
            Just("m".to_string()),
            Just("s".to_string()),
            Just("ms".to_string()),
            Just("us".to_string()),
            Just("µs".to_string()),
            Just("days".to_string()),
            Just("e308".to_string()),
            Just("/".to_string()),
            Just("xx".to_string()),
            Just("all".to_string()),
            Just(" ".to_string()),
            Just("\u{202e}".to_string()),
            Just("\x1b".to_string()),
            any::<char>().prop_map(String::from),
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
}

fn any_value() -> impl Strategy<Value = String> {
    prop_oneof![near_value(), any::<String>()]
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn value_parsers_never_panic(s in any_value()) {
        let _ = args::count(&s);
        let _ = args::positive_count(&s);
        let _ = args::positive_usize(&s);
        let _ = args::rate(&s);
        let _ = args::duration(&s);
        let _ = args::positive_duration(&s);
        let _ = args::parse_percentiles(&s);
        let _ = args::CpuList::from_str(&s);
        let _ = args::VariantSel::from_str(&s);
        let _ = args::RunSel::from_str(&s);
        let _ = args::bounds::connections(&s);
        let _ = args::bounds::threads(&s);
        let _ = args::bounds::pipeline(&s);
        let _ = args::bounds::repetitions(&s);
        let _ = fairbench_engine::StatusSet::parse(&s);
        let _ = fairbench_engine::Target::parse(&s);
        let _ = fairbench_engine::RequestSpec::parse_header(&s);
    }

    #[test]
    fn accepted_counts_are_within_their_bounds(s in near_value()) {
        if let Ok(n) = args::bounds::connections(&s) {
            prop_assert!((1..=1_000_000).contains(&n));
        }
        if let Ok(r) = args::rate(&s) {
            prop_assert!(r.is_finite() && r > 0.0);
        }
    }
}

/// Command lines made of real flags and hostile values.
fn argv() -> impl Strategy<Value = Vec<String>> {
    let sub = prop_oneof![
        Just("load"),
        Just("run"),
        Just("check"),
        Just("servers"),
        Just("show"),
        Just("report"),
        Just("compare"),
        Just("runs"),
    ];
    let flag = prop_oneof![
        Just("-c"),
        Just("-t"),
        Just("-d"),
        Just("-n"),
        Just("-R"),
        Just("--connections"),
        Just("--threads"),
        Just("--duration"),
        Just("--rate"),
        Just("--pipeline"),
        Just("--repetitions"),
        Just("--cores"),
        Just("--cpus"),
        Just("--warmup"),
        Just("--timeout"),
        Just("--expect-status"),
        Just("--percentiles"),
        Just("--variant"),
        Just("--clients"),
        Just("--interleave-seed"),
        Just("--send-ahead"),
        Just("--format"),
        Just("--"),
    ];
    (
        sub,
        proptest::collection::vec((flag, any_value()), 0..6),
        any_value(),
    )
        .prop_map(|(sub, pairs, last)| {
            let mut v = vec!["fairbench".to_string(), sub.to_string()];
            for (f, x) in pairs {
                v.push(f.to_string());
                v.push(x);
            }
            v.push(last);
            v
        })
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn the_command_line_never_panics(v in argv()) {
        let _ = fairbench::cli::parse(&v);
    }
}

/// Suite files: the shipped structure with hostile values, and raw text.
fn suite_text() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1e-300".to_string()),
        Just("1e308".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("9223372036854775807".to_string()),
        Just("\"1s\"".to_string()),
        Just("\"\u{202e}\"".to_string()),
        Just("[]".to_string()),
        Just("true".to_string()),
        (0u64..100_000).prop_map(|n| n.to_string()),
        (0.0f64..1e9).prop_map(|f| format!("{f:?}")),
    ];
    let field = prop_oneof![
        Just("connections"),
        Just("threads"),
        Just("pipeline"),
        Just("requests"),
        Just("rate"),
        Just("start_rate"),
        Just("max_rate"),
        Just("step_factor"),
        Just("bisect_steps"),
        Just("slo_quantile"),
        Just("slo"),
        Just("step_duration"),
    ];
    let top = prop_oneof![
        Just("repetitions"),
        Just("duration"),
        Just("warmup"),
        Just("timeout"),
        Just("cores"),
        Just("interleave_seed"),
    ];
    let model = prop_oneof![Just("closed"), Just("rate"), Just("sweep"), Just("x")];
    prop_oneof![
        (
            top,
            value.clone(),
            model,
            proptest::collection::vec((field, value), 0..6)
        )
            .prop_map(|(t, tv, m, fields)| {
                let mut s = format!(
                    "name = \"p\"\nscenarios = [\"static\"]\nduration = \"1s\"\n{t}2 = 0\n"
                )
                .replace(&format!("{t}2 = 0\n"), &format!("{t} = {tv}\n"));
                s.push_str(&format!("[[load]]\nmodel = \"{m}\"\n"));
                for (f, v) in fields {
                    s.push_str(&format!("{f} = {v}\n"));
                }
                s
            }),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config(1500))]

    #[test]
    fn suites_never_panic(text in suite_text()) {
        if let Ok(s) = Suite::parse(&text, "p.toml") {
            // Whatever is accepted has a plan estimate, which once panicked.
            prop_assert!(s.repetitions >= 1);
        }
    }
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn manifests_and_scenarios_never_panic(
        name in "[a-z]{1,8}",
        run in any_value(),
        regex in any_value(),
        junk in any::<String>(),
        pick in 0usize..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let server = dir.path().join(&name);
        std::fs::create_dir(&server).unwrap();
        let esc = |s: &str| s.escape_default().to_string();
        let manifest = match pick {
            0 => junk.clone(),
            _ => format!(
                "name = \"{name}\"\nlanguage = \"{}\"\nframework = \"f\"\nframework_version = \"1\"\n[toolchain]\nname = \"t\"\nprobe = [\"{}\"]\nversion_regex = \"{}\"\n[modes.native]\nrun = [\"{}\"]\n[responses.default]\n[responses.normalized]\n",
                esc(&junk), esc(&run), esc(&regex), esc(&run)
            ),
        };
        std::fs::write(server.join("server.toml"), manifest).unwrap();
        let _ = fairbench_zoo::Server::load(&server, std::path::Path::new(&name));
        let scenario = dir.path().join(format!("{name}.toml"));
        let text = match pick {
            0 => junk,
            _ => format!(
                "name = \"{name}\"\nmethod = \"{}\"\npath = \"{}\"\n[expect]\nstatus = {}\nbody_regex = \"{}\"\n",
                esc(&run), esc(&run), if pick == 1 { "200".into() } else { esc(&regex) }, esc(&regex)
            ),
        };
        std::fs::write(&scenario, text).unwrap();
        let _ = fairbench_zoo::Scenario::load(&scenario, std::path::Path::new("s.toml"));
    }
}

/// Response bytes: well-formed heads with hostile framing, and noise; fed
/// whole and in random pieces.
fn response_bytes() -> impl Strategy<Value = Vec<u8>> {
    let header = prop_oneof![
        Just("Content-Length: 5\r\n".to_string()),
        Just("Content-Length: 18446744073709551616\r\n".to_string()),
        Just("Content-Length: -1\r\n".to_string()),
        Just("Content-Length: 3\r\nContent-Length: 4\r\n".to_string()),
        Just("Transfer-Encoding: chunked\r\n".to_string()),
        Just("Transfer-Encoding: gzip, chunked\r\n".to_string()),
        Just("Connection: close\r\n".to_string()),
        Just("X-Evil: \u{202e}\x1b[31m\r\n".to_string()),
    ];
    let body = prop_oneof![
        Just(b"hello".to_vec()),
        Just(b"5\r\nhello\r\n0\r\n\r\n".to_vec()),
        Just(b"ffffffffffffffffff\r\n".to_vec()),
        Just(b"3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..64),
    ];
    let status = prop_oneof![
        Just("HTTP/1.1 200 OK\r\n".to_string()),
        Just("HTTP/1.1 204 No Content\r\n".to_string()),
        Just("HTTP/1.1 304 Not Modified\r\n".to_string()),
        Just("HTTP/1.0 200 OK\r\n".to_string()),
        Just("HTTP/1.1 999 X\r\n".to_string()),
        Just("HTTP/1.1 100 Continue\r\n\r\n".to_string()),
    ];
    prop_oneof![
        (status, proptest::collection::vec(header, 0..4), body).prop_map(|(s, h, b)| {
            let mut v = s.into_bytes();
            v.extend(h.concat().into_bytes());
            v.extend(b"\r\n");
            v.extend(b);
            v
        }),
        proptest::collection::vec(any::<u8>(), 0..512),
    ]
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn the_response_parser_never_panics(
        bytes in response_bytes(),
        cuts in proptest::collection::vec(1usize..64, 0..8),
        head in any::<bool>(),
    ) {
        // Whole, then in pieces as a socket would hand them over.
        let mut whole = ResponseParser::new(head, 8192);
        let _ = whole.feed(&bytes);
        let _ = whole.on_eof(0);
        let mut p = ResponseParser::new(head, 8192);
        let mut pending: Vec<u8> = Vec::new();
        let mut rest = &bytes[..];
        let mut cuts = cuts.into_iter();
        while !rest.is_empty() {
            let n = cuts.next().unwrap_or(rest.len()).min(rest.len());
            pending.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            loop {
                match p.feed(&pending) {
                    Ok(Step::NeedMore { consumed }) => {
                        prop_assert!(consumed <= pending.len());
                        pending.drain(..consumed);
                        break;
                    }
                    Ok(Step::Done { consumed, .. }) => {
                        prop_assert!(consumed <= pending.len());
                        pending.drain(..consumed);
                        if pending.is_empty() {
                            break;
                        }
                    }
                    Err(_) => {
                        pending.clear();
                        rest = &[];
                        break;
                    }
                }
            }
        }
        let _ = p.on_eof(pending.len());
        let _ = fairbench_zoo::fetch::parse(&bytes);
    }
}
