//! Files fairbench writes besides reports (`load --hdr-log`, `report
//! --hdr`) are written as a report is (src/report/write.rs): through a
//! symlink to its target, atomically, and a path that can never be
//! written is refused before a run starts, not after it.

mod support;

use fairbench::report::fixture;
use support::load::{run, Server, HELLO};
use support::*;

#[test]
fn hdr_log_writes_through_a_symlink_and_refuses_a_folder_before_the_run() {
    let srv = Server::plain(HELLO);
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.hlog");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.hlog");
    std::os::unix::fs::symlink("real.hlog", &link).unwrap();
    let load = |path: &std::path::Path| {
        run(&[
            "load",
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "300",
            "--hdr-log",
            path.to_str().unwrap(),
            &srv.url(),
        ])
    };
    // A load that fails leaves the file as it was: nothing is truncated
    // before there is a log to write.
    let refused = format!("http://127.0.0.1:{}/", support::load::closed_port());
    let (code, _, _) = run(&[
        "load",
        "-c",
        "1",
        "-n",
        "10",
        "--hdr-log",
        link.to_str().unwrap(),
        &refused,
    ]);
    assert_eq!(code, 1);
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "old");
    let (code, _, err) = load(&link);
    assert_eq!(code, 0, "{err}");
    let kind = std::fs::symlink_metadata(&link).unwrap().file_type();
    assert!(kind.is_symlink(), "the link was replaced by a file");
    let log = std::fs::read_to_string(&real).unwrap();
    assert!(
        log.starts_with("#fairbench load") && log.contains("#[StartTime"),
        "{log}"
    );
    assert!(temporaries(dir.path()).is_empty());

    // A folder: one line naming the flag, and no request sent.
    let before = srv.accepted.load(std::sync::atomic::Ordering::SeqCst);
    let (code, out, err) = load(dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("--hdr-log") && err.contains("is a directory"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let after = srv.accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(before, after, "the load ran before the path was refused");
}

#[test]
fn report_hdr_writes_each_log_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    let hdr = |d: &std::path::Path| {
        ok(
            d,
            &[
                "report",
                "1",
                "--db",
                "results.db",
                "-o",
                "/dev/null",
                "--hdr",
                "logs",
            ],
        )
    };
    hdr(dir.path());
    let logs = dir.path().join("logs");
    let first = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "hlog"))
        .expect("a log written");
    let expected = std::fs::read_to_string(&first).unwrap();
    // The log made a link to a file elsewhere: written there, link kept.
    let elsewhere = dir.path().join("kept.hlog");
    std::fs::write(&elsewhere, "old").unwrap();
    std::fs::remove_file(&first).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &first).unwrap();
    hdr(dir.path());
    assert!(std::fs::symlink_metadata(&first)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), expected);
    assert!(temporaries(&logs).is_empty());
}
