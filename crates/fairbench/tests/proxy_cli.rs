//! `fairbench load --proxy URL` and `--proxy-from-env`: http:// through the
//! proxy in absolute form, https:// through a CONNECT tunnel, in the closed
//! loop and at a constant rate, every request in the ledger; the summary
//! and the JSON document say a proxy was in the path and never show its
//! credentials; a proxy that refuses is one line and exit 1; what cannot
//! combine is a usage error naming the flag. The proxy is the test kit's
//! (it sees `.invalid` names as 127.0.0.1, so the name was left to it).

mod support;

use fairbench_testkit::canned::{self, HELLO};
use fairbench_testkit::h2::hello::H2c;
use fairbench_testkit::keepalive::Hello;
use fairbench_testkit::pki::{pki, write_ca};
use fairbench_testkit::proxy::Proxy;
use fairbench_testkit::serial;
use serde_json::Value;
use support::load::{json, run};

/// `load --json` with `args`; the document, checked against its schema,
/// with every request answered through `proxy`.
fn load_json(proxy: &Proxy, args: &[&str]) -> Value {
    let mut all = vec!["load", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("secret"), "credentials shown: {out}");
    let v = json(&out);
    support::assert_schema("load", &v);
    let l = &v["ledger"];
    assert!(l["planned"].as_u64().unwrap() > 0, "{l}");
    assert_eq!(l["planned"], l["answered"], "{l}");
    assert_eq!(v["proxy"], format!("http://{}", proxy.addr));
    assert_eq!(v["address"], proxy.addr.to_string());
    v
}

#[test]
fn http_through_the_proxy_in_both_models_with_credentials() {
    let _t = serial();
    let srv = Hello::start();
    let p = Proxy::start();
    let (url, via) = (
        format!("http://127.0.0.1:{}/", srv.port),
        p.url(Some("u:secret")),
    );
    let v = load_json(
        &p,
        &["--proxy", &via, &url, "-n", "200", "-c", "4", "-t", "1"],
    );
    assert_eq!(v["mode"], "closed");
    assert!(
        p.absolute() > 200,
        "{} absolute-form requests",
        p.absolute()
    );
    let v = load_json(
        &p,
        &["--proxy", &via, &url, "-R", "200", "-d", "2s", "-c", "4"],
    );
    assert_eq!(v["mode"], "rate");
    // base64("u:secret")
    assert!(p
        .seen
        .auth
        .lock()
        .unwrap()
        .iter()
        .all(|a| a == "Basic dTpzZWNyZXQ="));
    assert_eq!(p.connects(), 0);
}

#[test]
fn https_through_a_connect_tunnel_in_both_models() {
    let _t = serial();
    let pki = pki(&["app.invalid"], false);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca(&dir, &pki.ca_pem);
    let srv = canned::Server::tls(HELLO, &pki);
    let p = Proxy::start();
    let (url, via) = (format!("https://app.invalid:{}/", srv.port), p.url(None));
    let base = ["--proxy", &via, "--cacert", &ca, &url];
    let v = load_json(
        &p,
        &[&base[..], &["-n", "200", "-c", "4", "-t", "1"]].concat(),
    );
    let opened = v["connections_stats"]["opened"].as_u64().unwrap();
    assert_eq!(
        p.connects(),
        opened + 1,
        "a tunnel per connection and the check's"
    );
    let v = load_json(
        &p,
        &[&base[..], &["-R", "200", "-d", "2s", "-c", "4"]].concat(),
    );
    assert!(
        v["tls_handshake_us"].is_object(),
        "{}",
        v["tls_handshake_us"]
    );
    assert_eq!(p.absolute(), 0);
    let h2 = H2c::tls(100, &pki);
    let url = format!("https://app.invalid:{}/", h2.port);
    let args = [
        "--proxy", &via, "--cacert", &ca, &url, "--http2", "-n", "100", "-c", "2",
    ];
    let v = load_json(&p, &args);
    assert_eq!(v["protocol"], "h2");
}

#[test]
fn the_summary_says_a_proxy_was_in_the_path() {
    let _t = serial();
    let srv = Hello::start();
    let p = Proxy::start();
    let url = format!("http://127.0.0.1:{}/", srv.port);
    let via = p.url(Some("u:secret"));
    let (code, out, err) = run(&["load", "--proxy", &via, &url, "-n", "50", "-c", "2"]);
    assert_eq!(code, 0, "{err}");
    let line = format!(
        "via proxy http://{}: its own time is in every latency",
        p.addr
    );
    assert!(out.contains(&line), "{out}");
    assert!(
        !out.contains("secret") && !err.contains("secret"),
        "{out}{err}"
    );
}

#[test]
fn dump_shows_one_exchange_through_the_proxy() {
    let _t = serial();
    let srv = Hello::start();
    let p = Proxy::start();
    let url = format!("http://127.0.0.1:{}/d", srv.port);
    let (code, out, err) = run(&["load", "--proxy", &p.url(None), "--dump", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Hello World!"), "{out}");
    assert_eq!(p.absolute(), 1);
    let pki = pki(&["app.invalid"], false);
    let tls = canned::Server::tls(HELLO, &pki);
    let url = format!("https://app.invalid:{}/", tls.port);
    let (code, out, err) = run(&[
        "load",
        "--proxy",
        &p.url(None),
        "--insecure",
        "--dump",
        &url,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Hello World!"), "{out}");
    assert_eq!(p.connects(), 1);
}

#[test]
fn the_environment_is_read_only_with_proxy_from_env() {
    let _t = serial();
    let srv = Hello::start();
    let p = Proxy::start();
    let url = format!("http://127.0.0.1:{}/", srv.port);
    let go = |flag: Option<&str>, no_proxy: &str| {
        let mut c = support::command();
        c.env("http_proxy", p.url(None)).env("NO_PROXY", no_proxy);
        c.args(["load", &url, "-n", "20", "-c", "1"]).args(flag);
        let out = c.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = go(None, "");
    assert!(!out.contains("via proxy"), "{out}");
    assert_eq!(p.absolute(), 0, "the environment was read without the flag");
    let out = go(Some("--proxy-from-env"), "");
    assert!(out.contains("via proxy"), "{out}");
    assert!(p.absolute() >= 20);
    let before = p.absolute();
    let out = go(Some("--proxy-from-env"), "example.com, 127.0.0.1");
    assert!(!out.contains("via proxy"), "{out}");
    assert_eq!(p.absolute(), before, "NO_PROXY exempts the host");
}

#[test]
fn a_refusing_proxy_is_one_line_and_exit_1() {
    let _t = serial();
    let srv = Hello::start();
    let pki = pki(&["app.invalid"], false);
    let tls = canned::Server::tls(HELLO, &pki);
    let http = format!("http://127.0.0.1:{}/", srv.port);
    let https = format!("https://app.invalid:{}/", tls.port);
    for (status, url) in [(407, &http), (403, &https), (502, &https)] {
        let p = Proxy::refusing(status);
        let via = p.url(Some("u:secret"));
        let mut args = vec!["load", "--proxy", &via, url, "-d", "1s"];
        if url.starts_with("https") {
            args.push("--insecure");
        }
        let (code, _, err) = run(&args);
        assert_eq!(code, 1, "{status}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("proxy http://{} refused", p.addr)),
            "{err}"
        );
        assert!(
            err.contains(&status.to_string()) && !err.contains("secret"),
            "{err}"
        );
    }
}

#[test]
fn what_cannot_combine_is_a_usage_error_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let sock = sock.to_str().unwrap();
    let p = "http://127.0.0.1:1";
    let cases: &[(&[&str], &str)] = &[
        (
            &["--proxy", "https://127.0.0.1:1"],
            "--proxy: https:// proxies are not supported",
        ),
        (
            &["--proxy", "socks5://u:secret@h:1"],
            "--proxy: socks5:// proxies",
        ),
        (&["--proxy", "http://u:secret@h:1/x"], "--proxy: "),
        (
            &["--proxy", p, "--unix-socket", sock],
            "cannot be used with",
        ),
        (
            &["--proxy-from-env", "--unix-socket", sock],
            "cannot be used with",
        ),
        (
            &["--proxy", p, "--vs", "http://127.0.0.1:2/"],
            "cannot be used with",
        ),
        (
            &["--proxy", p, "--connect-to", "127.0.0.1:9:127.0.0.1:2"],
            "--proxy: not with --connect-to",
        ),
        (&["--proxy", p, "--http2"], "--proxy: h2c"),
        (
            &["--proxy", p, "--clients", "2"],
            "--proxy: http://127.0.0.1:1 serves one load generator",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["load", "http://127.0.0.1:9/"];
        all.extend_from_slice(args);
        let (code, _, err) = run(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("secret"), "{args:?}: {err}");
    }
}
