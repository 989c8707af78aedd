//! Load over a unix domain socket (`--unix-socket`): HTTP/1.1 and h2c, in
//! the closed loop and at a constant rate, with every request in the
//! ledger. The servers are the test kit's TCP ones behind a socket that
//! relays each connection to them; the URL names only the Host header and
//! the path. Assertions are on properties: every request answered, the
//! ledger balanced, the address and the clock the answers were timed by.

mod support;

use std::time::Duration;

use fairbench_engine::{AnswerClock, LoadConfig, Outcome, Protocol, Target};
use fairbench_testkit::h2::hello::H2c;
use fairbench_testkit::keepalive::Hello;
use fairbench_testkit::serial;
use fairbench_testkit::unix_relay::UnixRelay;
use support::{closed_loop, constant_rate};

fn config(relay: &UnixRelay) -> LoadConfig {
    // A name no resolver knows: over a unix socket it is not looked up.
    let target = Target::parse_unix("http://app.invalid/hello", relay.path()).unwrap();
    let mut c = LoadConfig::new(target);
    c.connections = 4;
    c.threads = 1;
    // A loaded machine can stall the relay's threads for seconds.
    c.timeout = Duration::from_secs(20);
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    support::go(cfg).expect("run")
}

/// Every request planned was answered with a 200, and the ledger says so.
fn all_answered(o: &Outcome, relay: &UnixRelay) {
    let l = o.ledger();
    assert!(l.balances(), "ledger does not balance: {l:?}");
    assert!(l.planned > 0, "{l:?}");
    assert_eq!(l.planned, l.answered, "{l:?}");
    assert_eq!(o.status_codes.get(&200).copied(), Some(l.answered));
    assert_eq!(o.address, format!("unix:{}", relay.path().display()));
    // The kernel does not stamp AF_UNIX arrivals: read time, whatever the model.
    assert_eq!(o.answer_clock, AnswerClock::Read);
}

#[test]
fn http1_closed_loop_answers_every_request() {
    let _t = serial();
    let srv = Hello::start();
    let relay = UnixRelay::to_port(srv.port);
    let o = go(&closed_loop(config(&relay)));
    all_answered(&o, &relay);
    assert_eq!(o.ledger().planned, 200);
    assert_eq!(o.sockets.opened, 4, "{:?}", o.sockets);
}

#[test]
fn http1_constant_rate_answers_every_request() {
    let _t = serial();
    let srv = Hello::start();
    let relay = UnixRelay::to_port(srv.port);
    let o = go(&constant_rate(config(&relay)));
    all_answered(&o, &relay);
    // 200/s for 2 s: about 400 due; the schedule, not the server, decides.
    let planned = o.ledger().planned;
    assert!((300..=500).contains(&planned), "{planned} planned");
}

#[test]
fn h2c_in_both_models_answers_every_request() {
    let _t = serial();
    let srv = H2c::start(100);
    let relay = UnixRelay::to_port(srv.port);
    for cfg in [closed_loop(config(&relay)), constant_rate(config(&relay))] {
        let mut cfg = cfg;
        cfg.protocol = Protocol::H2c;
        cfg.streams = 4;
        let o = go(&cfg);
        all_answered(&o, &relay);
        assert_eq!(o.protocol, Protocol::H2c);
    }
}

#[test]
fn a_tcp_load_at_constant_rate_is_timed_by_kernel_stamps() {
    let _t = serial();
    let srv = Hello::start();
    let mut cfg = constant_rate(LoadConfig::new(
        Target::parse(&format!("http://127.0.0.1:{}/", srv.port)).unwrap(),
    ));
    cfg.duration = Duration::from_millis(500);
    let o = go(&cfg);
    assert_eq!(o.answer_clock, AnswerClock::KernelStamp);
    assert_eq!(o.address, format!("127.0.0.1:{}", srv.port));
}

#[test]
fn a_socket_nobody_listens_on_fails_before_the_run() {
    let gone = std::env::temp_dir().join(format!("fairbench-{}-gone.sock", std::process::id()));
    let cfg = LoadConfig::new(Target::parse_unix("http://localhost/", &gone).unwrap());
    let m = support::refused(&cfg);
    assert!(m.contains("unix socket") && m.contains("gone.sock"), "{m}");
}

#[test]
fn https_over_a_unix_socket_is_refused_and_the_target_travels_with_its_path() {
    let e = Target::parse_unix("https://localhost/", "/tmp/x.sock".as_ref()).unwrap_err();
    assert_eq!(e.field, "unix-socket");
    assert!(e.to_string().contains("http:// only"), "{e}");
    let t = Target::parse_unix("http://app.invalid:8080/a?b=1", "/tmp/x.sock".as_ref()).unwrap();
    assert!(t.addrs.is_empty());
    assert_eq!(
        (t.host_header.as_str(), t.path.as_str()),
        ("app.invalid:8080", "/a?b=1")
    );
    let back: Target = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
    assert_eq!(back.unix_socket.as_deref(), Some("/tmp/x.sock".as_ref()));
}
