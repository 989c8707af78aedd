//! Damaged or full storage (issue 27): database errors name the file; what
//! a write that failed on a full disk leaves beside the database does not
//! block reading it; a run that cannot go on is marked failed, never left
//! `running`.

mod support;

use std::path::{Path, PathBuf};

use support::net::Hello;
use support::root::Root;
use support::{command, is_root, require, text};

fn fixture(dir: &Path) -> PathBuf {
    let p = dir.join("r.db");
    fairbench::report::fixture::standard_db(&p);
    p
}

fn side(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Every reading command works on `db`.
fn readable(db: &Path) {
    let d = db.to_str().unwrap();
    for args in [
        &["runs", "--db", d][..],
        &["show", "latest", "--db", d][..],
        &["report", "latest", "--db", d, "--format", "csv", "-o", "-"][..],
    ] {
        let o = command().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    }
}

#[test]
fn empty_or_unreadable_wal_leftovers_do_not_block_reading() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    // What a writer that failed on a full disk leaves: an empty WAL and an
    // empty index.
    std::fs::write(side(&db, "-wal"), "").unwrap();
    std::fs::write(side(&db, "-shm"), "").unwrap();
    readable(&db);

    // A WAL with committed data but an index cut to nothing: read through a
    // private copy, the WAL's rows included.
    let live = dir.path().join("live.db");
    std::fs::copy(&db, &live).unwrap();
    let conn = rusqlite::Connection::open(&live).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    conn.execute("UPDATE runs SET suite = 'from-the-wal' WHERE id = 2", [])
        .unwrap();
    let copy = dir.path().join("copy.db");
    for s in ["", "-wal"] {
        std::fs::copy(side(&live, s), side(&copy, s)).unwrap();
    }
    std::fs::write(side(&copy, "-shm"), "").unwrap();
    drop(conn);
    readable(&copy);
    let o = command()
        .args(["runs", "--db", copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("from-the-wal"),
        "{}",
        text(&o)
    );
}

#[test]
fn database_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // Not a database at all.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    // A database without fairbench's tables, at fairbench's schema version.
    let bare = dir.path().join("bare.db");
    let conn = rusqlite::Connection::open(&bare).unwrap();
    conn.pragma_update(None, "user_version", fairbench::store::schema::VERSION)
        .unwrap();
    drop(conn);
    for db in [&junk, &bare] {
        let d = db.to_str().unwrap();
        for args in [
            &["runs", "--db", d][..],
            &["show", "--db", d][..],
            &["report", "--db", d, "--format", "csv", "-o", "-"][..],
            &["compare", "1", "2", "--db", d][..],
        ] {
            let o = command().args(args).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
            assert!(err.contains(d), "{args:?}: the message names {d}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        }
    }
}

#[test]
fn a_run_that_cannot_store_its_cases_is_marked_failed() {
    let root = Root::new(&[("fast-a", &[])]);
    root.one_case_suite("one", 2, "1s");
    // A database whose cases table refuses every row, as a damaged one does.
    let o = root.run(&["runs"]);
    assert_eq!(o.status.code(), Some(1), "no database yet: {}", text(&o));
    drop(fairbench::store::Store::open(&root.db()).unwrap());
    let conn = rusqlite::Connection::open(root.db()).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER damaged BEFORE INSERT ON cases BEGIN SELECT RAISE(FAIL, 'database disk image is malformed'); END;",
    )
    .unwrap();
    drop(conn);
    let o = root.run(&["run", "--suite", "one", "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("malformed") && err.contains("results.db"),
        "{err}"
    );
    let state: String = root.sql("SELECT state FROM runs");
    assert_eq!(state, "failed");
    root.assert_no_servers_left();

    // And one whose case rows cannot be finished, mid-run.
    let conn = rusqlite::Connection::open(root.db()).unwrap();
    conn.execute_batch(
        "DROP TRIGGER damaged;
         CREATE TRIGGER damaged BEFORE UPDATE OF state ON cases WHEN NEW.state IN ('done', 'failed')
         BEGIN SELECT RAISE(FAIL, 'database disk image is malformed'); END;",
    )
    .unwrap();
    drop(conn);
    let o = root.run(&["run", "--suite", "one", "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let states = root.strings("SELECT state FROM runs ORDER BY id");
    assert_eq!(states, ["failed", "failed"]);
    root.assert_no_servers_left();
}

#[test]
fn a_full_disk_fails_the_save_and_leaves_the_database_readable() {
    if !require(is_root(), "mounting a small tmpfs needs root") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("full");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=32m", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount tmpfs");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&mnt);
    let db = fixture(&mnt);
    // Fill what is left.
    let filler = mnt.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    let srv = Hello::start();
    let o = command()
        .args(["load", "-n", "200", "-c", "1", "--save", "--db"])
        .arg(&db)
        .arg(srv.url())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(db.to_str().unwrap()), "{err}");
    // Still full: reading works all the same.
    readable(&db);
    let o = command()
        .args(["runs", "--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        3,
        "the two fixture runs, nothing half-saved: {}",
        text(&o)
    );
}
