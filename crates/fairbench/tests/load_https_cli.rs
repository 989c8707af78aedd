//! `fairbench load https://…`: the CA it trusts, the handshakes timed
//! apart, and certificates it refuses in one line.

mod support;

use support::load::{json, pki, run, write_ca, Server, HELLO};

#[test]
fn https_with_cacert_times_handshakes_apart() {
    let pki = pki(&["127.0.0.1"], false);
    let srv = Server::tls(HELLO, &pki);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca(&dir, &pki.ca_pem);
    let (code, out, err) = run(&[
        "load",
        "--json",
        "--cacert",
        &ca,
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["ledger"]["planned"], 200);
    assert_eq!(j["ledger"]["answered"], 200);
    assert_eq!(j["ledger"]["tls"], 0);
    assert_eq!(j["status_codes"]["200"], 200);
    assert_eq!(j["connections_stats"]["tls_handshakes"], 2);
    assert!(j["tls_handshake_us"]["p50"].as_u64().unwrap() > 0);
    assert!(j["connect_time_us"]["max"].as_u64().unwrap() > 0);
    assert_eq!(j["keepalive"], true);
    // And as text.
    let (code, out, err) = run(&["load", "--cacert", &ca, "-n", "50", "-c", "1", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    for needle in [
        "TLS handshake",
        "1 handshakes (0 resumed a session), 0 failed",
        "Connect",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
}

#[test]
fn untrusted_certificates_exit_1_with_one_line_and_insecure_goes_ahead() {
    let dir = tempfile::tempdir().unwrap();
    for (names, expired, needle) in [
        (&["127.0.0.1"][..], true, "expired"),
        (&["example.test"][..], false, "not valid for name"),
    ] {
        let pki = pki(names, expired);
        let srv = Server::tls(HELLO, &pki);
        let ca = write_ca(&dir, &pki.ca_pem);
        let (code, out, err) = run(&["load", "--cacert", &ca, "-d", "1s", &srv.url()]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(err.contains(needle) && err.contains("--insecure"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        let (code, out, err) = run(&["load", "--insecure", "-n", "20", "-c", "1", &srv.url()]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("20 planned = 20 answered"), "{out}");
    }
    // Not signed by anything this machine trusts.
    let pki = pki(&["127.0.0.1"], false);
    let srv = Server::tls(HELLO, &pki);
    let (code, _, err) = run(&["load", "-d", "1s", &srv.url()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("UnknownIssuer"), "{err}");
}

#[test]
fn a_cacert_file_without_certificates_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca(&dir, "hello\n");
    let (code, _, err) = run(&["load", "--cacert", &ca, "https://127.0.0.1:1/"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cacert: holds no PEM certificate"), "{err}");
    let (code, _, err) = run(&[
        "load",
        "--cacert",
        &ca,
        "--insecure",
        "https://127.0.0.1:1/",
    ]);
    assert_eq!(code, 2, "{err}");
}
