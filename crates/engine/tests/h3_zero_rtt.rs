//! HTTP/3 with 0-RTT asked for (`zero_rtt`), against quic-go's http3 (the
//! test kit's `h3`): tickets fetched before the run, every connection
//! resuming with early data, 0-RTT counted apart, and the ledger balanced
//! whether the server accepts the early data, refuses it (the requests go
//! again, each still one request), or issues tickets without it. Bounds
//! are generous: the machine is small and shared; the properties are not.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{run, LoadConfig, LoadModel, Outcome, Protocol, Quiet, Target, ZeroRtt};
use fairbench_testkit::h3::{start, H3Options, H3Server};
use fairbench_testkit::serial;

const CONNECTIONS: usize = 3;

fn config(srv: &H3Server) -> LoadConfig {
    let url = format!("https://127.0.0.1:{}/", srv.addr.port());
    let mut c = LoadConfig::new(Target::parse(&url).unwrap());
    c.protocol = Protocol::H3;
    c.tls.ca_pem = Some(srv.ca_pem.clone().into_bytes());
    c.streams = 4;
    c.connections = CONNECTIONS;
    c.threads = 1;
    c.duration = Duration::from_secs(1);
    c.timeout = Duration::from_secs(10);
    c.zero_rtt = true;
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

/// Every planned request has one outcome, all answered.
fn all_answered(o: &Outcome) {
    let l = o.ledger();
    assert!(l.balances(), "ledger does not balance: {l:?}");
    assert_eq!(o.errors.total(), 0, "{l:?} {:?}", o.h3);
    assert_eq!(o.requests, o.planned);
    assert_eq!(o.status_codes.get(&200).copied(), Some(o.requests));
    assert!(o.requests > 0);
}

fn zero(o: &Outcome) -> &ZeroRtt {
    o.h3.as_ref()
        .and_then(|h| h.zero_rtt.as_ref())
        .expect("0-RTT counted when asked")
}

fn allowing() -> H3Options {
    H3Options {
        allow_0rtt: true,
        ..Default::default()
    }
}

/// The priming got one ticket per connection, each allowing early data.
fn primed(z: &ZeroRtt) {
    assert_eq!(z.primed, CONNECTIONS as u64, "{z:?}");
    assert!(z.tickets >= CONNECTIONS as u64, "{z:?}");
    assert_eq!(z.early_tickets, z.tickets, "{z:?}");
}

#[test]
fn closed_loop_resumes_every_connection_with_early_requests() {
    let _t = serial();
    let srv = start(&allowing());
    let o = go(&config(&srv));
    all_answered(&o);
    let z = zero(&o);
    primed(z);
    assert_eq!(z.tried, CONNECTIONS as u64, "{z:?}");
    assert_eq!(z.accepted, z.tried, "{z:?}");
    assert_eq!(z.rejected, 0, "{z:?}");
    assert_eq!(z.resent, 0, "{z:?}");
    // Each connection filled its streams before its handshake ended.
    assert!(z.early_requests >= CONNECTIONS as u64, "{z:?}");
    assert!(z.early_requests <= (CONNECTIONS * 4) as u64, "{z:?}");
    assert_eq!(z.handshake.count, z.tried, "{z:?}");
    assert_eq!(o.sockets.tls_resumed, z.accepted);
    // 0-RTT handshakes are timed apart from full ones: none here.
    let full = o.handshake_time.as_ref().expect("handshakes timed");
    assert_eq!(full.len(), 0);
    assert!(z.warning().is_none(), "{:?}", z.warning());
    assert!(o.warnings().iter().all(|w| !w.contains("0-RTT")));
}

#[test]
fn constant_rate_resumes_and_keeps_its_ledger() {
    let _t = serial();
    let srv = start(&allowing());
    let mut cfg = config(&srv);
    cfg.model = LoadModel::ConstantRate { rps: 300.0 };
    cfg.duration = Duration::from_secs(2);
    let o = go(&cfg);
    all_answered(&o);
    assert!((590..=610).contains(&o.planned), "{} planned", o.planned);
    let z = zero(&o);
    primed(z);
    assert_eq!(z.tried, CONNECTIONS as u64, "{z:?}");
    assert_eq!(z.accepted, z.tried, "{z:?}");
}

#[test]
fn refused_early_data_is_sent_again_and_counted() {
    let _t = serial();
    let srv = start(&H3Options {
        allow_0rtt: true,
        reject_0rtt: true,
        ..Default::default()
    });
    for rate in [None, Some(300.0)] {
        let mut cfg = config(&srv);
        if let Some(rps) = rate {
            cfg.model = LoadModel::ConstantRate { rps };
        }
        let o = go(&cfg);
        all_answered(&o);
        let z = zero(&o);
        assert_eq!(z.tried, CONNECTIONS as u64, "{rate:?} {z:?}");
        assert_eq!(z.rejected, z.tried, "{rate:?} {z:?}");
        assert_eq!(z.accepted, 0, "{rate:?} {z:?}");
        assert_eq!(z.resent, z.early_requests, "{rate:?} {z:?}");
        let w = o.warnings().join("\n");
        assert!(
            w.contains("0-RTT was asked (--zero-rtt) but refused"),
            "{w}"
        );
    }
}

#[test]
fn tickets_without_early_data_leave_full_handshakes() {
    let _t = serial();
    let srv = start(&H3Options::default());
    let o = go(&config(&srv));
    all_answered(&o);
    let z = zero(&o);
    assert_eq!(z.primed, CONNECTIONS as u64, "{z:?}");
    assert_eq!(z.early_tickets, 0, "{z:?}");
    assert_eq!((z.tried, z.early_requests), (0, 0), "{z:?}");
    let full = o.handshake_time.as_ref().expect("handshakes timed");
    assert_eq!(full.len(), CONNECTIONS as u64);
    let w = o.warnings().join("\n");
    assert!(
        w.contains("0-RTT was asked (--zero-rtt) but not used: the server's session tickets allow no early data"),
        "{w}"
    );
}

#[test]
fn without_the_flag_nothing_is_counted() {
    let _t = serial();
    let srv = start(&allowing());
    let mut cfg = config(&srv);
    cfg.zero_rtt = false;
    let o = go(&cfg);
    all_answered(&o);
    assert!(o.h3.as_ref().unwrap().zero_rtt.is_none());
    assert_eq!(o.handshake_time.as_ref().unwrap().len(), CONNECTIONS as u64);
}

#[test]
fn zero_rtt_is_for_http3_only() {
    let mut cfg = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
    cfg.zero_rtt = true;
    let e = cfg.validate().unwrap_err();
    assert_eq!(e.field, "zero-rtt");
    assert!(e.message.contains("--http3"), "{e}");
}
