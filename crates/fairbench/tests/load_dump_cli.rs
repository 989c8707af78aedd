//! `fairbench load --dump`: one exchange shown as it went, over plain
//! TCP and TLS, interim answers included.

mod support;

use support::load::{closed_port, json, pki, run, write_ca, Server, HELLO, NOT_FOUND};

#[test]
fn dump_prints_one_exchange() {
    let srv = Server::plain(HELLO);
    let (code, out, err) = run(&["load", "--dump", "-H", "X-Test: 1", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    for needle in [
        "=== http://127.0.0.1:",
        "plain)",
        "> GET / HTTP/1.1",
        "> X-Test: 1",
        "< HTTP/1.1 200 OK",
        "< Hello World!\\n",
        "(52 bytes received)",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    assert_eq!(srv.requests.lock().unwrap().len(), 1, "one request only");
    // Over TLS, with what ALPN chose.
    let pki = pki(&["127.0.0.1"], false);
    let tls = Server::tls(HELLO, &pki);
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca(&dir, &pki.ca_pem);
    let (code, out, err) = run(&["load", "--dump", "--cacert", &ca, &tls.url()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("TLS, ALPN http/1.1)") && out.contains("< HTTP/1.1 200 OK"),
        "{out}"
    );
    // An answer with a status not expected, and no server at all: exit 1.
    let nf = Server::plain(NOT_FOUND);
    let (code, out, err) = run(&["load", "--dump", &nf.url()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("< HTTP/1.1 404 Not Found") && err.contains("404"),
        "{err}"
    );
    let (code, _, err) = run(&[
        "load",
        "--dump",
        &format!("http://127.0.0.1:{}/", closed_port()),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot connect"), "{err}");
}

#[test]
fn dump_shows_interim_responses_and_takes_the_final_one() {
    static EARLY_HINTS: &[u8] = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n";
    let srv = Server::plain(EARLY_HINTS);
    let (code, out, err) = run(&["load", "--dump", &srv.url()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("< HTTP/1.1 103 Early Hints") && out.contains("< HTTP/1.1 200 OK"),
        "{out}"
    );
    // The load takes it too.
    let (code, out, err) = run(&["load", "--json", "-d", "300ms", "-c", "1", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["errors"]["parse"], 0, "{j}");
    assert_eq!(j["status_codes"]["200"], j["requests"], "{j}");
}

#[test]
fn a_head_with_many_fields_is_one_rule_for_load_and_dump() {
    static MANY: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let bytes = MANY.get_or_init(|| {
        let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n".to_vec();
        for i in 0..500 {
            r.extend_from_slice(format!("X-{i}: {i}\r\n").as_bytes());
        }
        r.extend_from_slice(b"\r\nok");
        r
    });
    let srv = Server::plain(bytes);
    let (code, out, err) = run(&["load", "--dump", &srv.url()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("< X-499: 499"), "{out}");
    let (code, out, err) = run(&["load", "--json", "-d", "300ms", "-c", "1", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["errors"]["parse"], 0, "{j}");
    assert!(j["requests"].as_u64().unwrap() > 0, "{j}");
}
