//! Load through an HTTP proxy (`--proxy`): `http://` targets forwarded in
//! absolute form, `https://` ones (HTTP/1.1 and h2) through a CONNECT
//! tunnel, credentials sent as `Proxy-Authorization`, and a proxy that
//! refuses stopping the run before it starts in one line naming it. The
//! proxy is the test kit's; `.invalid` names, which no resolver knows, are
//! 127.0.0.1 to it, so a run against one shows the name was left to the
//! proxy. Assertions are on properties: every request answered, the
//! ledger balanced, what the proxy saw.

mod support;

use std::time::Duration;

use fairbench_engine::proxy::Proxy;
use fairbench_engine::{LoadConfig, Outcome, Protocol, RunError, Target, TlsOptions};
use fairbench_testkit::canned::{self, HELLO};
use fairbench_testkit::h2::hello::H2c;
use fairbench_testkit::keepalive::Hello;
use fairbench_testkit::pki::pki;
use fairbench_testkit::proxy;
use fairbench_testkit::serial;
use support::{closed_loop, constant_rate, go, refused};

fn config(url: &str, proxy_url: &str) -> LoadConfig {
    let target = Target::parse_proxied(url, Proxy::parse(proxy_url).unwrap()).unwrap();
    let mut c = LoadConfig::new(target);
    c.connections = 4;
    c.threads = 1;
    // A loaded machine can stall the proxy's threads for seconds.
    c.timeout = Duration::from_secs(20);
    c
}

fn trusting(mut c: LoadConfig, ca_pem: &str) -> LoadConfig {
    c.tls = TlsOptions {
        ca_pem: Some(ca_pem.as_bytes().to_vec()),
        ..Default::default()
    };
    c
}

/// Every request planned was answered with a 200, over connections to the
/// proxy.
fn all_answered(o: &Outcome, p: &proxy::Proxy) {
    let l = o.ledger();
    assert!(l.balances(), "ledger does not balance: {l:?}");
    assert!(l.planned > 0, "{l:?}");
    assert_eq!(l.planned, l.answered, "{l:?}");
    assert_eq!(o.status_codes.get(&200).copied(), Some(l.answered));
    assert_eq!(o.address, p.addr.to_string());
}

#[test]
fn http_goes_to_the_proxy_in_absolute_form_with_its_credentials() {
    let _t = serial();
    let srv = Hello::start();
    let p = proxy::Proxy::start();
    let url = format!("http://127.0.0.1:{}/hello?x=1", srv.port);
    let o = go(&closed_loop(config(&url, &p.url(Some("user:pa%20ss"))))).expect("run");
    all_answered(&o, &p);
    assert_eq!(o.ledger().planned, 200);
    // The requests of the run and the check before it.
    assert!(p.absolute() >= 200, "{} absolute-form", p.absolute());
    assert_eq!(p.connects(), 0);
    let host = format!("127.0.0.1:{}", srv.port);
    let seen = &p.seen;
    assert!(seen.hosts.lock().unwrap().iter().all(|h| *h == host));
    let targets = seen.targets.lock().unwrap();
    assert!(
        targets
            .iter()
            .all(|t| *t == format!("http://{host}/hello?x=1")),
        "{targets:?}"
    );
    // base64("user:pa ss")
    assert!(seen
        .auth
        .lock()
        .unwrap()
        .iter()
        .all(|a| a == "Basic dXNlcjpwYSBzcw=="));
    assert_eq!(seen.auth.lock().unwrap().len(), targets.len());
}

#[test]
fn http_at_a_constant_rate_through_the_proxy_keeps_the_ledger() {
    let _t = serial();
    let srv = Hello::start();
    let p = proxy::Proxy::start();
    let url = format!("http://127.0.0.1:{}/", srv.port);
    let o = go(&constant_rate(config(&url, &p.url(None)))).expect("run");
    all_answered(&o, &p);
    assert!(p.seen.auth.lock().unwrap().is_empty());
}

#[test]
fn https_goes_through_a_connect_tunnel_with_the_urls_name() {
    let _t = serial();
    let pki = pki(&["app.invalid"], false);
    let srv = canned::Server::tls(HELLO, &pki);
    let p = proxy::Proxy::start();
    let url = format!("https://app.invalid:{}/", srv.port);
    let cfg = trusting(
        constant_rate(config(&url, &p.url(Some("u:p")))),
        &pki.ca_pem,
    );
    let o = go(&cfg).expect("run");
    all_answered(&o, &p);
    assert_eq!(p.absolute(), 0);
    // One tunnel per connection, and one for the check before the run.
    assert_eq!(p.connects(), o.sockets.opened + 1, "{:?}", o.sockets);
    let authority = format!("app.invalid:{}", srv.port);
    assert!(p
        .seen
        .targets
        .lock()
        .unwrap()
        .iter()
        .all(|t| *t == authority));
    assert!(p
        .seen
        .auth
        .lock()
        .unwrap()
        .iter()
        .all(|a| a == "Basic dTpw"));
    // The tunnel is part of connecting; the handshake is timed apart.
    assert_eq!(o.connect_time.len(), o.sockets.opened);
    assert_eq!(
        o.handshake_time.as_ref().unwrap().len(),
        o.sockets.tls_handshakes
    );
}

#[test]
fn the_tunnel_is_part_of_connecting_never_of_a_requests_latency() {
    let _t = serial();
    let pki = pki(&["app.invalid"], false);
    let srv = canned::Server::tls(HELLO, &pki);
    // Every CONNECT is answered 300 ms late; answers are immediate.
    let p = proxy::Proxy::slow_tunnels(Duration::from_millis(300));
    let url = format!("https://app.invalid:{}/", srv.port);
    let mut cfg = trusting(closed_loop(config(&url, &p.url(None))), &pki.ca_pem);
    cfg.connections = 2;
    let o = go(&cfg).expect("run");
    all_answered(&o, &p);
    let connect = o.connect_time.min();
    assert!(connect >= 280_000, "connect {connect} µs holds no tunnel");
    let l = o.latency_summary();
    assert!(l.max < 250_000, "request latency {l:?} holds a tunnel");
}

#[test]
fn https_in_a_closed_loop_without_keepalive_opens_a_tunnel_per_request() {
    let _t = serial();
    let pki = pki(&["app.invalid"], false);
    let srv = canned::Server::tls(HELLO, &pki);
    let p = proxy::Proxy::start();
    let url = format!("https://app.invalid:{}/", srv.port);
    let mut cfg = trusting(closed_loop(config(&url, &p.url(None))), &pki.ca_pem);
    cfg.requests = Some(40);
    cfg.keepalive = false;
    let o = go(&cfg).expect("run");
    all_answered(&o, &p);
    assert_eq!(p.connects(), o.sockets.opened + 1, "{:?}", o.sockets);
}

#[test]
fn h2_goes_through_the_tunnel_by_alpn() {
    let _t = serial();
    let pki = pki(&["app.invalid"], false);
    let srv = H2c::tls(100, &pki);
    let p = proxy::Proxy::start();
    let url = format!("https://app.invalid:{}/", srv.port);
    let mut cfg = trusting(closed_loop(config(&url, &p.url(None))), &pki.ca_pem);
    cfg.protocol = Protocol::H2;
    let o = go(&cfg).expect("run");
    all_answered(&o, &p);
    assert!(p.connects() > o.sockets.opened, "{:?}", o.sockets);
}

#[test]
fn a_refusing_proxy_stops_the_run_in_one_line_naming_it() {
    let _t = serial();
    let pki = pki(&["app.invalid"], false);
    let srv = canned::Server::tls(HELLO, &pki);
    let p = proxy::Proxy::refusing(403);
    let url = format!("https://app.invalid:{}/", srv.port);
    let cfg = trusting(
        closed_loop(config(&url, &p.url(Some("u:secret")))),
        &pki.ca_pem,
    );
    let m = refused(&cfg);
    assert_eq!(
        m,
        format!(
            "proxy http://{} refused the tunnel to app.invalid:{}: 403 Refused By Test Proxy",
            p.addr, srv.port
        )
    );
    // Credentials are never shown.
    let hello = Hello::start();
    let asks = proxy::Proxy::requiring("Basic dTpw");
    let url = format!("http://127.0.0.1:{}/", hello.port);
    let m = refused(&closed_loop(config(&url, &asks.url(Some("u:wrong")))));
    assert!(
        m.starts_with(&format!("proxy http://{} refused", asks.addr)),
        "{m}"
    );
    assert!(m.contains("407"), "{m}");
    assert!(!m.contains("wrong") && !m.contains('\n'), "{m}");
}

#[test]
fn a_proxy_that_is_not_there_is_named() {
    let port = fairbench_testkit::accept::closed_port();
    let m = refused(&closed_loop(config(
        "http://127.0.0.1:1/",
        &format!("http://127.0.0.1:{port}"),
    )));
    assert!(
        m.starts_with(&format!("proxy http://127.0.0.1:{port}: cannot connect")),
        "{m}"
    );
}

#[test]
fn h2c_is_refused_with_a_proxy() {
    let p = proxy::Proxy::start();
    let mut cfg = closed_loop(config("http://127.0.0.1:1/", &p.url(None)));
    cfg.protocol = Protocol::H2c;
    match go(&cfg) {
        Err(RunError::Config(e)) => assert_eq!(e.field, "proxy", "{e}"),
        other => panic!("expected the proxy refused for h2c, got {:?}", other.err()),
    }
}
