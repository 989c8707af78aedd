//! The one-shot HTTP/3 fetch of `check` (`h3::fetch`) against the quic-go
//! test server: the answer decoded with its frames' sizes, a reset stream,
//! a closed connection, an untrusted certificate and a port without QUIC
//! each one clear failure, every one within its timeout.

use std::time::{Duration, Instant};

use fairbench_engine::h3::fetch::{fetch, handshake, FailureKind, FetchOptions, FetchRequest};
use fairbench_engine::TlsOptions;
use fairbench_testkit::h3::{closed_udp_port, start, H3Options, H3Server};
use fairbench_testkit::serial;

fn opts(srv: &H3Server, timeout: Duration) -> FetchOptions {
    FetchOptions {
        tls: TlsOptions {
            ca_pem: Some(srv.ca_pem.clone().into_bytes()),
            ..Default::default()
        },
        timeout,
        max_response: 1 << 20,
    }
}

fn url(port: u16) -> String {
    format!("https://127.0.0.1:{port}/hello")
}

fn get(u: &str) -> FetchRequest<'_> {
    FetchRequest {
        url: u,
        method: "GET",
        headers: &[],
        body: &[],
    }
}

#[test]
fn an_answer_comes_decoded_with_its_frames_sizes() {
    let _t = serial();
    let srv = start(&H3Options {
        body_size: 70_000,
        ..Default::default()
    });
    let u = url(srv.addr.port());
    let a = fetch(&get(&u), &opts(&srv, Duration::from_secs(20))).expect("fetch");
    assert_eq!(a.status, 200);
    assert_eq!(a.body.len(), 70_000);
    assert!(a.body.iter().all(|&b| b == b'x'));
    let len = a.headers.iter().find(|(k, _)| k == "content-length");
    assert_eq!(len.map(|(_, v)| v.as_slice()), Some(&b"70000"[..]));
    assert!(a.headers.iter().all(|(k, _)| !k.starts_with(':')));
    assert_eq!(a.data_frames.iter().sum::<usize>(), 70_000);
    assert!(a.header_block > 0 && a.head_end > a.header_block);
    // The stream as received: the HEADERS frame, then the DATA frames
    // with their own types and lengths.
    assert!(a.stream.len() > a.head_end + 70_000, "{}", a.stream.len());
    assert!(a.request_block > 0);
    assert_eq!(a.alpn, "h3");
    assert!(a.handshake <= a.elapsed);
    // Readiness: a handshake only.
    let took = handshake(
        &u,
        &opts(&srv, Duration::from_secs(10)).tls,
        Duration::from_secs(10),
    );
    assert!(took.is_ok(), "{took:?}");
}

#[test]
fn a_reset_stream_and_a_closed_connection_are_named() {
    let _t = serial();
    let srv = start(&H3Options {
        reset_every: 1,
        reset_code: 0x10c,
        ..Default::default()
    });
    let u = url(srv.addr.port());
    let e = fetch(&get(&u), &opts(&srv, Duration::from_secs(10))).unwrap_err();
    assert_eq!(e.kind, FailureKind::Protocol, "{e}");
    assert!(
        e.message
            .contains("reset the request stream (H3_REQUEST_CANCELLED)"),
        "{e}"
    );
    drop(srv);
    let srv = start(&H3Options {
        close_after: 1,
        close_code: 0x101,
        ..Default::default()
    });
    let u = url(srv.addr.port());
    let e = fetch(&get(&u), &opts(&srv, Duration::from_secs(10))).unwrap_err();
    assert_eq!(e.kind, FailureKind::Protocol, "{e}");
    assert!(e.message.contains("H3_GENERAL_PROTOCOL_ERROR"), "{e}");
}

#[test]
fn no_quic_an_untrusted_certificate_and_a_slow_answer_fail_in_time() {
    let _t = serial();
    let closed = closed_udp_port();
    let o = FetchOptions {
        tls: TlsOptions::default(),
        timeout: Duration::from_secs(3),
        max_response: 1024,
    };
    let t = Instant::now();
    let u = url(closed.port());
    let e = fetch(&get(&u), &o).unwrap_err();
    assert_eq!(e.kind, FailureKind::Unreachable, "{e}");
    assert!(e.message.contains("does the server speak HTTP/3"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10));

    let srv = start(&H3Options {
        delay: Duration::from_secs(30),
        ..Default::default()
    });
    let u = url(srv.addr.port());
    // The system's roots do not hold the test CA.
    let e = handshake(&u, &TlsOptions::default(), Duration::from_secs(5)).unwrap_err();
    assert_eq!(e.kind, FailureKind::Handshake, "{e}");
    assert!(e.message.contains("handshake"), "{e}");
    let t = Instant::now();
    let e = fetch(&get(&u), &opts(&srv, Duration::from_millis(800))).unwrap_err();
    assert_eq!(e.kind, FailureKind::Timeout, "{e}");
    assert!(e.message.contains("no complete answer"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10));
}
