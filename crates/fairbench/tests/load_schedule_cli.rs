//! How `fairbench load` schedules: the send-ahead window, the timeout and
//! the warm-up, the CPUs the load threads are pinned to.

mod support;

use support::load::{json, run, Server, HELLO};
use support::net::{Hello, Silent};
use support::serial;

#[test]
fn send_ahead_bounds_how_early_a_request_may_go_out() {
    let _serial = serial();
    // A server that keeps up with this rate on a loaded 2-core machine: one
    // request per ms over 8 connections.
    let srv = Server::plain(HELLO);
    let load = |window: &str| {
        let (code, out, err) = run(&[
            "load",
            "--json",
            "-R",
            "1000",
            "-c",
            "8",
            "-t",
            "1",
            "-d",
            "1s",
            "--send-ahead",
            window,
            &srv.url(),
        ]);
        assert_eq!(code, 0, "{err}");
        json(&out)["schedule"].clone()
    };
    // None ahead of time: every request waits for its planned instant.
    let strict = load("0");
    assert_eq!(strict["send_ahead_us"], 0.0, "{strict}");
    assert_eq!(strict["sent_early"], 0, "{strict}");
    assert_eq!(strict["early_max_us"], 0.0, "{strict}");
    // A 1 ms window: the loop wakes a quarter of it early and sends what is
    // due within it, so some go early (all of them on a quiet machine, fewer
    // when wake-ups are late), and none more than the window ahead.
    let wide = load("1ms");
    assert_eq!(wide["send_ahead_us"], 1000.0, "{wide}");
    let (early, sent) = (
        wide["sent_early"].as_u64().unwrap(),
        wide["sent"].as_u64().unwrap(),
    );
    assert!(early > 0 && early <= sent, "{wide}");
    let most = wide["early_max_us"].as_f64().unwrap();
    assert!(most > 0.0 && most <= 1000.0, "{wide}");
    // The summary says it too.
    let (code, out, err) = run(&[
        "load",
        "-R",
        "1000",
        "-c",
        "4",
        "-d",
        "1s",
        "--send-ahead",
        "250us",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("up to 250 µs early"), "{out}");
    // And what the window costs the server, with the way out.
    assert!(
        out.contains("among them is in its latency (--send-ahead 0 sends each at its time)"),
        "{out}"
    );
}

#[test]
fn timeout_and_warmup_shape_the_run() {
    let _serial = serial();
    let srv = Silent::start();
    let (code, out, err) = run(&[
        "load",
        "--json",
        "--timeout",
        "200ms",
        "--warmup",
        "0.5",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1s",
        &srv.url(),
    ]);
    // Nothing answered: a failed run, its figures still printed.
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no request was answered"), "{err}");
    let j = json(&out);
    assert_eq!(j["warmup_s"], 0.5);
    assert_eq!(j["timeout_s"], 0.2);
    // One connection, 200 ms each: about five timeouts in a 1 s window
    // (fewer on a stalled machine, never more than the window allows).
    let t = j["errors"]["timeout"].as_u64().unwrap();
    assert!((1..=10).contains(&t), "{t} timeouts");
    assert_eq!(j["requests"], 0);
    let phases: Vec<&str> = j["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases.first(), Some(&"warmup"), "{phases:?}");
    assert!(phases.contains(&"measure"), "{phases:?}");
}

#[test]
fn cpus_pin_and_size_the_load() {
    let _serial = serial();
    let srv = Hello::start();
    // One CPU given: one load thread, not one per CPU of the machine.
    let (code, out, err) = run(&[
        "load",
        "--json",
        "--cpus",
        "0",
        "-c",
        "4",
        "-d",
        "0.5s",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["threads"], 1);
    assert!(j["requests"].as_u64().unwrap() > 0);
    let (code, _, err) = run(&["load", "--cpus", "3-1", &srv.url()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--cpus") && err.contains("not a CPU list"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
