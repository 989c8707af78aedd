//! Opening a results database only to read it (show, report, compare,
//! runs): SQLITE_OPEN_READ_ONLY, so the file is never migrated, never
//! switched to WAL, never written, and a read-only file or folder (a
//! baseline checked into a repository, a mounted archive) works.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{anyhow, Context};
use rusqlite::{Connection, OpenFlags};

use super::schema;

/// A read-only connection to `path`, at the current schema: an older
/// database is migrated in a private copy, never in place.
pub fn open(path: &Path) -> anyhow::Result<Connection> {
    let conn = connect(path)?;
    let version: i64 = match conn.query_row("PRAGMA user_version", [], |r| r.get(0)) {
        Ok(v) => v,
        // A WAL whose index cannot be read (a writer that failed on a full
        // disk leaves a `-shm` it could not size, which a read-only
        // connection may not repair): read through a private copy of the
        // database and its WAL instead.
        Err(_) if side(path, "-wal").exists() => {
            return migrated_copy(path)
                .with_context(|| format!("cannot read results database {}", path.display()))
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot read results database {}", path.display()))
        }
    };
    if version > schema::VERSION {
        anyhow::bail!(
            "{}: the database has schema version {version}, newer than this fairbench understands ({}); use a newer fairbench",
            path.display(),
            schema::VERSION
        );
    }
    if version == schema::VERSION {
        return Ok(conn);
    }
    drop(conn);
    migrated_copy(path).with_context(|| {
        format!(
            "{} has schema version {version} (this fairbench writes {}) and could not be read through a migrated copy",
            path.display(),
            schema::VERSION
        )
    })
}

/// Read-only. A database no connection has open (no `-journal` and no
/// `-wal` with anything in it beside it) is read as immutable: SQLite then makes no side files, where
/// a plain read-only connection to a WAL-mode file would leave a `-wal`
/// and `-shm` behind (and cannot make them in a read-only folder). One in
/// use is read through its WAL like any reader, so a run in progress is
/// seen as it commits. The window a writer could open during a read is a
/// few milliseconds and its first checkpoint into the main file comes
/// after a thousand pages.
fn connect(path: &Path) -> anyhow::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let ctx = || format!("cannot open results database {}", path.display());
    // An empty WAL holds nothing committed: the main file is the whole
    // database (a writer that failed on a full disk leaves one behind).
    let wal_len = std::fs::metadata(side(path, "-wal")).map_or(0, |m| m.len());
    let in_use = wal_len > 0 || side(path, "-journal").exists();
    let conn = Connection::open_with_flags(uri(path, !in_use), flags).with_context(ctx)?;
    conn.busy_timeout(Duration::from_secs(10))
        .with_context(ctx)?;
    Ok(conn)
}

fn side(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// `file:` URI of a path, with the characters URIs reserve escaped.
fn uri(path: &Path, immutable: bool) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut s = String::from("file:");
    for &b in abs.as_os_str().as_encoded_bytes() {
        if b >= 0x80 || matches!(b, b'%' | b'?' | b'#') {
            s.push_str(&format!("%{b:02X}"));
        } else {
            s.push(b as char);
        }
    }
    if immutable {
        format!("{s}?immutable=1")
    } else {
        s
    }
}

static COPIES: AtomicU64 = AtomicU64::new(0);

/// The database (and its WAL, which holds committed data not yet in the
/// main file) copied to a private file, migrated there, and the file
/// unlinked at once: the connection keeps it until it closes.
fn migrated_copy(path: &Path) -> anyhow::Result<Connection> {
    let n = COPIES.fetch_add(1, Ordering::Relaxed);
    let tmp = std::env::temp_dir().join(format!("fairbench-read-{}-{n}.db", std::process::id()));
    let cleanup = || {
        for f in [
            tmp.clone(),
            side(&tmp, "-wal"),
            side(&tmp, "-shm"),
            side(&tmp, "-journal"),
        ] {
            let _ = std::fs::remove_file(f);
        }
    };
    let result = (|| {
        std::fs::copy(path, &tmp)?;
        let wal = side(path, "-wal");
        if wal.exists() {
            std::fs::copy(&wal, side(&tmp, "-wal"))?;
        }
        let mut conn = Connection::open(&tmp)?;
        // Folds the copied WAL in and keeps side files to one journal.
        conn.pragma_update(None, "journal_mode", "DELETE")?;
        schema::migrate(&mut conn).map_err(|e| anyhow!("{e}"))?;
        anyhow::Ok(conn)
    })();
    cleanup();
    result
}
