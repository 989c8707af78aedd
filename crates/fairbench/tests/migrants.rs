//! Habits from wrk, wrk2, ab, hey and oha: each either works (where it means
//! the same here) or fails with one line naming the fairbench equivalent,
//! exit 2; and the first mistakes of a new user (no URL, no scheme, a CA
//! certificate served as the server's own) read as sentences.

mod support;

use support::load::{ca_as_server, run, Server, HELLO};

const URL: &str = "http://127.0.0.1:1/";

/// Exit 2 and exactly one line on stderr, which contains every needle.
fn one_usage_line(args: &[&str], needles: &[&str]) {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "{args:?}: {out}{err}");
    assert!(out.is_empty(), "{args:?}: {out}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("fairbench: "), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} not in {err}");
    }
    assert!(!err.contains("use '--"), "{args:?}: clap's advice: {err}");
}

#[test]
fn other_tools_flags_name_the_fairbench_equivalent() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["-z", "3s"],
            &["`-z` is hey's and oha's duration: use `-d 3s`"],
        ),
        (&["-z3s"], &["use `-d 3s`"]),
        (&["-q", "100"], &["`-q` is oha's rate: use `-R 100`"]),
        (&["-k"], &["keep-alive", "drop it", "--insecure"]),
        (&["-x", "127.0.0.1:3128"], &["`-x`", "proxy"]),
        (&["-h2"], &["`-h2` is hey's", "use `--http2`"]),
        (&["--http-version", "2"], &["use `--http2`"]),
        (
            &["-p", "body.json"],
            &["use `-m POST --body-file body.json`"],
        ),
        (&["-u", "put.json"], &["use `-m PUT --body-file put.json`"]),
        (
            &["-T", "application/json"],
            &["use `-H 'Content-Type: application/json'`"],
        ),
        (&["-D", "body.json"], &["use `--body-file body.json`"]),
        (&["-A", "text/plain"], &["use `-H 'Accept: text/plain'`"]),
        (&["-a", "u:p"], &["Authorization: Basic"]),
        (&["-C", "a=b"], &["use `-H 'Cookie: a=b'`"]),
        (&["--host", "example.test"], &["-H 'Host: example.test'"]),
        (&["-host", "example.test"], &["-H 'Host: example.test'"]),
        (&["-s", "script.lua"], &["no scripting", "--timeout"]),
        (&["--script", "script.lua"], &["no scripting"]),
        (&["-i"], &["use `-m HEAD`"]),
        (&["-o", "csv"], &["--format json"]),
        (&["--output-format", "json"], &["use `--format json`"]),
        (&["-e", "p.csv"], &["--format json"]),
        (&["-g", "p.tsv"], &["--hdr-log"]),
        (&["-w"], &["the drain"]),
        (&["--wait-ongoing-requests-after-deadline"], &["the drain"]),
        (&["--latency-correction"], &["planned time", "drop it"]),
        (&["--u_latency"], &["service time", "drop it"]),
        (&["--no-tui"], &["drop it"]),
        (&["--stats-success-breakdown"], &["every status code"]),
        (&["-r"], &["drop it"]),
        (&["--redirect", "0"], &["never follows redirects"]),
        (&["--disable-redirects"], &["never follows redirects"]),
        (&["-disable-redirects"], &["never follows redirects"]),
        (&["--disable-compression"], &["no Accept-Encoding"]),
        (&["-disable-compression"], &["no Accept-Encoding"]),
        (&["-disable-keepalive"], &["use `--no-keepalive`"]),
        (&["-cpus", "2"], &["-t N", "--cpus"]),
        (&["--ipv6"], &["http://[::1]:8080/"]),
        (&["--ipv4"], &["http://127.0.0.1:8080/"]),
        (&["-v"], &["--dump"]),
        (
            &["-T", "5s"],
            &["`-T` is wrk's timeout: use `--timeout 5s`"],
        ),
        (&["-U"], &["service time", "drop it"]),
        (&["-B"], &["planned time", "drop it"]),
        (&["--batch_latency"], &["drop it"]),
        (&["--burst-delay", "1s"], &["no bursts"]),
        (&["--burst-rate", "10"], &["no bursts"]),
        (
            &["--rand-regex-url"],
            &["template in the URL", "{{uniform 1 10000}}"],
        ),
        (&["--urls-from-file", "urls.txt"], &["--targets FILE"]),
        (&["--debug"], &["--dump"]),
        (&["--fps", "30"], &["no TUI"]),
        // hey's and oha's -d is the body; here it is the duration, as in wrk.
        (
            &["-d", "{\"a\":1}"],
            &["-d is the duration here", "--body '{\"a\":1}'"],
        ),
        // ab's, hey's and oha's -t is a timeout; here it is threads, as in wrk.
        (&["-t", "5s"], &["number of load threads", "--timeout 5s"]),
    ];
    for (flags, needles) in cases {
        let mut args = vec!["load"];
        args.extend_from_slice(flags);
        args.push(URL);
        one_usage_line(&args, needles);
    }
}

#[test]
fn what_is_missing_is_named() {
    one_usage_line(&["load"], &["<URL>", "usage: fairbench load"]);
    one_usage_line(&["compare", "1"], &["<RUN_B>", "usage: fairbench compare"]);
}

#[test]
fn a_url_without_a_scheme_suggests_http() {
    one_usage_line(
        &["load", "localhost:8080"],
        &["has no scheme: use http://localhost:8080/"],
    );
    one_usage_line(
        &["load", "127.0.0.1:8080/hello"],
        &["use http://127.0.0.1:8080/hello"],
    );
}

#[test]
fn habits_that_mean_the_same_work() {
    let srv = Server::plain(HELLO);
    // oha's -j (JSON) and --disable-keepalive.
    let (code, out, err) = run(&[
        "load",
        "-j",
        "-L",
        "--disable-keepalive",
        "-n",
        "20",
        "-c",
        "1",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(j["keepalive"], false, "{out}");
    assert_eq!(j["ledger"]["answered"], 20, "{out}");
    // wrk's -L (--latency): the whole spectrum.
    let (code, out, err) = run(&["load", "-L", "-n", "20", "-c", "1", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    let (_, plain, _) = run(&["load", "-n", "20", "-c", "1", &srv.url()]);
    assert!(
        out.lines().count() > plain.lines().count(),
        "{out}\n{plain}"
    );
}

#[test]
fn a_ca_certificate_served_as_the_servers_own_is_a_sentence() {
    let pki = ca_as_server(&["127.0.0.1"]);
    let srv = Server::tls(HELLO, &pki);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("cert.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let (code, out, err) = run(&[
        "load",
        "--cacert",
        ca.to_str().unwrap(),
        "-d",
        "1s",
        &srv.url(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("the server's certificate is a CA certificate")
            && err.contains("--cacert trusts it")
            && err.contains("--insecure"),
        "{err}"
    );
    assert!(!err.contains("OtherError"), "{err}");
}
