//! `check` over HTTP/2 against the real zoo (issue 21): go-nethttp,
//! rust-hyper, node-http and nginx serve h2c and h2 (TLS with a certificate from a
//! CA made for the check); each answer passes its scenario contract with
//! HTTP/2's framing rules, carries the same fields and body as the same
//! server's HTTP/1.1 answer, and shows its HPACK header block beside the
//! HTTP/1.1 header bytes. A server that serves no HTTP/2 is refused in one
//! line. Builds the servers (cached under <root>/.fairbench/build).

mod support;

use fairbench_zoo::toolchain::Prober;
use fairbench_zoo::Zoo;
use serde_json::Value;
use support::check::*;
use support::repo;

const H2_SERVERS: [&str; 4] = ["go-nethttp", "rust-hyper", "node-http", "nginx"];

/// The h2-capable servers whose toolchain is here; on CI all four must be.
fn present() -> Vec<&'static str> {
    let zoo = Zoo::load(&repo()).unwrap();
    let mut prober = Prober::new();
    let here: Vec<&str> = H2_SERVERS
        .into_iter()
        .filter(|n| prober.probe(&zoo.server(n).unwrap().toolchain).is_present())
        .collect();
    if here.len() < H2_SERVERS.len() && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true: go, cargo, node and nginx must all be installed (scripts/setup-test-deps.sh); here: {here:?}");
    }
    here
}

fn rule<'a>(c: &'a Value, name: &str) -> Option<&'a Value> {
    c["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == name)
}

#[test]
fn the_h2_servers_pass_over_h2c_and_h2_field_for_field() {
    let servers = present();
    if servers.is_empty() {
        eprintln!("SKIPPED: none of go, cargo, node is installed");
        return;
    }
    let root = repo();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            &servers.join(","),
            "--variant",
            "normalized",
            "--scenarios",
            "static,dynamic",
            "--protocols",
            "http/1.1,h2c,h2",
            "--json",
        ],
        &[],
        "real-h2",
    );
    let r = run.json();
    let mut problems = Vec::new();
    for protocol in ["h2c", "h2"] {
        let cs = cases(&r, protocol);
        assert_eq!(
            cs.len(),
            servers.len() * 2,
            "{protocol}: one case per server and scenario\n{}",
            run.stderr
        );
        for c in cs {
            let who = format!("{} {} over {protocol}", c["server"], c["scenario"]);
            for x in c["rules"].as_array().unwrap() {
                let documented = x["detail"].as_str().unwrap().contains("known deviation");
                if x["grade"] == "fail" || (x["grade"] == "warn" && !documented) {
                    problems.push(format!(
                        "{who}: {} {}: {}",
                        x["grade"], x["rule"], x["detail"]
                    ));
                }
            }
            let row = &c["row"];
            if row.is_null() {
                problems.push(format!("{who}: no answer"));
                continue;
            }
            assert_eq!(row["framing"], "h2-frames", "{who}");
            assert_eq!(row["protocol"], protocol, "{who}");
            // HTTP/2 has no reason phrase, and forbids these.
            assert_eq!(rule(c, "status").unwrap()["detail"], ":status 200", "{who}");
            assert_eq!(
                rule(c, "connection-headers").unwrap()["grade"],
                "pass",
                "{who}"
            );
            // The same fields and body as the server's HTTP/1.1 answer.
            let same = rule(c, "http1-fields").unwrap_or_else(|| panic!("{who}: {c:#}"));
            assert_eq!(same["grade"], "pass", "{who}: {same}");
            // The HPACK block is smaller than the frames that carry it, and
            // smaller again once the dynamic table holds the first answer
            // (nginx 1.22 indexes nothing, so its repeat is the same size);
            // the HTTP/1.1 header bytes stand beside it.
            let block = row["header_block"].as_u64().unwrap();
            let repeat = row["header_block_repeat"].as_u64().unwrap();
            let h1 = row["http1_header_bytes"].as_u64().unwrap();
            assert!(
                block > 0 && block + 9 <= row["header_bytes"].as_u64().unwrap(),
                "{who}: {row}"
            );
            if c["server"] == "nginx" {
                assert_eq!(repeat, block, "{who}: nginx's encoder indexes nothing");
            } else {
                assert!(repeat < block, "{who}: repeat {repeat} vs first {block}");
            }
            assert!(block < h1, "{who}: HPACK {block} vs HTTP/1.1 {h1} bytes");
            assert_eq!(row["ipv4"], true, "{who}");
            assert_eq!(row["ipv6"], true, "{who}");
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nstderr:\n{}",
        problems.join("\n"),
        run.stderr
    );
    run.expect_code(0);
    // The table names the protocol of each row and the HPACK sizes.
    let text = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            servers[0],
            "--variant",
            "normalized",
            "--scenarios",
            "static",
            "--protocols",
            "h2c,http/1.1",
        ],
        &[],
        "real-h2-text",
    );
    text.expect_code(0);
    for needle in [
        "PROTOCOL",
        "HPACK B",
        "H1 HEADER B",
        " h2c ",
        " http/1.1 ",
        "over h2c",
    ] {
        assert!(
            text.stdout.contains(needle),
            "{needle:?} in\n{}",
            text.stdout
        );
    }
}

#[test]
fn h2_asked_of_servers_that_do_not_serve_it_is_one_clear_line() {
    let root = repo();
    // Nothing selected serves h2: a usage error naming the server and why.
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            "java-jdk",
            "--protocols",
            "h2",
        ],
        &[],
        "h2-refused",
    );
    run.expect_code(2);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("--protocols h2: no selected server serves h2 (java-jdk: com.sun.net.httpserver's HttpsServer speaks HTTP/1.1 over TLS only"),
        "{}",
        lines[0]
    );
    // A bad name is one line too.
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--protocols",
            "h4",
        ],
        &[],
        "h2-bad-name",
    );
    run.expect_code(2);
    assert!(
        run.stderr.contains(
            "--protocols: unknown protocol \"h4\"; expected \"http/1.1\", \"h2c\", \"h2\" or \"h3\""
        ),
        "{}",
        run.stderr
    );
    // Mixed with one that does: the other is skipped with its reason, and
    // the JSON records it.
    if !present().contains(&"go-nethttp") {
        return;
    }
    let run = check_skips_the_jdk(&root, "h2c", "HTTP/2 cleartext (h2c)");
    assert!(
        run.stderr.contains("skip java-jdk h2c: does not serve"),
        "{}",
        run.stderr
    );
}
