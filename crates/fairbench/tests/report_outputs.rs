//! `report -o PATH` never replaces what PATH is (issue 27): a symlink is
//! written through, a FIFO and a device node are written into and survive
//! as what they were, and a failed write leaves neither a temporary file nor
//! a changed target.

mod support;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use support::{command, is_root, require, temporaries, text};

fn db(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("r.db");
    fairbench::report::fixture::standard_db(&p);
    p
}

fn report(db: &Path, out: &Path, format: &str) -> std::process::Output {
    command()
        .args(["report", "latest", "--format", format, "--db"])
        .arg(db)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn a_symlink_is_written_through_and_a_fifo_into() {
    let d = tempfile::tempdir().unwrap();
    let db = db(d.path());
    let real = d.path().join("real.md");
    std::fs::write(&real, "old").unwrap();
    let link = d.path().join("link.md");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = report(&db, &link, "md");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real).unwrap().contains("| "));

    let fifo = d.path().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = report(&db, &fifo, "csv");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(reader.join().unwrap().contains("server"));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(temporaries(d.path()).is_empty());
}

#[test]
fn a_device_node_survives_as_a_device() {
    if !require(is_root(), "making a device node needs root") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let db = db(d.path());
    // A node like /dev/null (char 1,3), made here so that nothing shared
    // is at stake.
    let null = d.path().join("null");
    let c = std::ffi::CString::new(null.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod with a valid C string.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    let o = report(&db, &null, "html");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(t.is_char_device(), "{t:?}");
    assert!(temporaries(d.path()).is_empty());
    // /dev/null itself, through `run --report`'s writer as well.
    let o = report(&db, Path::new("/dev/null"), "json");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn a_failed_write_leaves_nothing_and_names_the_target() {
    let d = tempfile::tempdir().unwrap();
    let db = db(d.path());
    // A directory is refused, and no temporary file is left in it or beside it.
    let o = report(&db, d.path(), "md");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "cannot write {}: is a directory",
            d.path().display()
        )),
        "{err}"
    );
    assert!(temporaries(d.path()).is_empty());
    // Nor beside it (where one named after the directory once was left).
    let name = d.path().file_name().unwrap().to_string_lossy().into_owned();
    let beside: Vec<String> = temporaries(d.path().parent().unwrap())
        .into_iter()
        .filter(|t| t.contains(&name) || t.starts_with(".fairbench-"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");

    // A full filesystem: the old report stays whole, nothing else is left.
    if !require(is_root(), "mounting a small tmpfs needs root") {
        return;
    }
    let mnt = d.path().join("full");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k", "tmpfs"])
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
    let target = mnt.join("report.html");
    std::fs::write(&target, "the old report").unwrap();
    let o = report(&db, &target, "html");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("cannot write {}", target.display()))
            && err.contains("No space left on device")
            && !err.contains(".fairbench-"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "the old report");
    assert!(temporaries(&mnt).is_empty(), "{:?}", temporaries(&mnt));
}
