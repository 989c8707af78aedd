//! `fairbench load --io`: plain HTTP/1.1 with its system calls batched
//! through io_uring (auto, where the kernel allows it) or made one by one
//! (epoll) answers the same budget the same way; a mode it does not know
//! is a usage error naming the flag.

mod support;

use support::load::{json, run, Server, HELLO};
use support::serial;

#[test]
fn either_io_mode_answers_the_whole_budget() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    for mode in ["auto", "epoll"] {
        let (code, out, err) = run(&[
            "load",
            "--json",
            "--io",
            mode,
            "-n",
            "2000",
            "-c",
            "8",
            "-t",
            "1",
            &srv.url(),
        ]);
        assert_eq!(code, 0, "--io {mode}: {err}");
        let v = json(&out);
        assert_eq!(v["requests"], 2000, "--io {mode}: {v}");
        assert_eq!(v["errors"]["read"], 0, "--io {mode}: {v}");
        assert_eq!(v["errors"]["write"], 0, "--io {mode}: {v}");
        // Which loop ran is kept with the run: the ring with auto where
        // this machine lets a process set one up, never with epoll.
        let ring = v["connections_stats"]["io_uring_threads"].as_u64().unwrap();
        let expected = u64::from(mode == "auto" && fairbench_engine::io_uring_available());
        assert_eq!(ring, expected, "--io {mode}: {v}");
    }
    // At a constant rate too.
    let (code, out, err) = run(&[
        "load",
        "--json",
        "--io",
        "auto",
        "-R",
        "1000",
        "-n",
        "500",
        "-c",
        "8",
        "-t",
        "1",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["requests"], 500, "{out}");
}

#[test]
fn an_unknown_io_mode_is_a_usage_error() {
    let (code, _, err) = run(&["load", "--io", "kqueue", "http://127.0.0.1:1/"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--io"), "{err}");
}
