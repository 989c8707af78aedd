//! Writing a report file (the HTML report `fairbench run --report` asks
//! for, and any report text). Whatever the path is, nothing but
//! a report is ever replaced: a regular file (or a new one) is written
//! atomically, through a temporary file beside it that every failure
//! removes; a symlink is followed to its target, written the same way; a
//! device or FIFO is written into, as `>` in a shell would; anything else
//! (a directory, a socket) is refused. Errors name the path given.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Writes `bytes` to `path` as the module says; a reader of a regular file
/// never sees half a report.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_to(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Whether a report can go to `path` at all (it is not a directory, not a
/// socket, and its folder exists): `run --report` asks before a run of
/// hours, rather than failing at its end.
pub fn check_target(path: &Path) -> anyhow::Result<()> {
    let why = || format!("cannot write {}", path.display());
    let target = follow(path).with_context(why)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_file() || is_stream(m.file_type()) => Ok(()),
        Ok(m) if m.is_dir() => Err(anyhow::anyhow!("is a directory (give a file name)")),
        Ok(_) => Err(anyhow::anyhow!(
            "is neither a file, a device nor a FIFO; not replaced"
        )),
        Err(_) => {
            let dir = target
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => Ok(()),
                _ => Err(anyhow::anyhow!("no folder {}", dir.display())),
            }
        }
    }
    .with_context(why)
}

fn write_to(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let target = follow(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_file() => replace(&target, bytes, Some(m.permissions().mode())),
        Ok(m) if is_stream(m.file_type()) => {
            let mut f = std::fs::OpenOptions::new().write(true).open(&target)?;
            f.write_all(bytes)?;
            f.flush()?;
            Ok(())
        }
        Ok(m) if m.is_dir() => anyhow::bail!("is a directory (give a file name)"),
        Ok(_) => anyhow::bail!("is neither a file, a device nor a FIFO; not replaced"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => replace(&target, bytes, None),
        Err(e) => Err(e.into()),
    }
}

/// What is written into rather than replaced.
fn is_stream(t: std::fs::FileType) -> bool {
    t.is_fifo() || t.is_char_device() || t.is_block_device()
}

/// `path` with every symlink followed, though the last target need not
/// exist yet (a dangling link is written through, as a shell would).
fn follow(path: &Path) -> anyhow::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // As the kernel's own limit on links followed (ELOOP).
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    anyhow::bail!("too many levels of symbolic links")
}

/// A new file renamed over `target`; the temporary file is removed when
/// anything fails (it is deleted on drop until persisted). The new file
/// keeps the replaced file's permissions, else the umask's.
fn replace(target: &Path, bytes: &[u8], mode: Option<u32>) -> anyhow::Result<()> {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".fairbench-")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(mode.unwrap_or(0o666)))
        .tempfile_in(dir)
        .map_err(bare)?;
    tmp.as_file_mut().write_all(bytes).map_err(bare)?;
    tmp.as_file().sync_all().map_err(bare)?;
    tmp.persist(target).map_err(|e| bare(e.error))?;
    Ok(())
}

/// The error without the temporary file's name, which tempfile adds to
/// some and which is gone by the time anyone reads the message.
fn bare(e: std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(n) => std::io::Error::from_raw_os_error(n),
        None => {
            let text = e.to_string();
            let reason = text.split(" at path ").next().unwrap_or(&text);
            std::io::Error::new(e.kind(), reason.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn a_regular_file_is_replaced_keeping_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.html");
        write_atomic(&p, b"one").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn a_symlink_is_followed_and_survives() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.html");
        std::fs::write(&real, "old").unwrap();
        let link = d.path().join("link.html");
        std::os::unix::fs::symlink("real.html", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        // A dangling link makes its target.
        let dangling = d.path().join("dangling.html");
        std::os::unix::fs::symlink("made.html", &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert!(std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(d.path().join("made.html")).unwrap(), b"made");
        // A loop is an error naming the path given.
        let a = d.path().join("a");
        std::os::unix::fs::symlink("a", &a).unwrap();
        let e = format!("{:#}", write_atomic(&a, b"x").unwrap_err());
        assert!(
            e.starts_with(&format!("cannot write {}", a.display())),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_is_written_into() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    #[test]
    fn a_directory_is_refused_and_a_failed_write_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let e = format!("{:#}", write_atomic(d.path(), b"x").unwrap_err());
        assert!(e.contains("is a directory"), "{e}");
        assert!(leftovers(d.path()).is_empty());
        // Renaming over a non-empty directory fails after the temporary
        // file was written: it is removed, and the error names the target.
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("x"), "x").unwrap();
        let e = format!("{:#}", replace(&sub, b"x", None).unwrap_err());
        assert!(!e.is_empty());
        assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
    }
}
