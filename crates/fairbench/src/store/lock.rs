//! One writer per results database: a second `fairbench run` on the same file
//! is refused with a clear message instead of interleaving its cases.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Takes the lock beside `db` (`<db>.lock`), held until dropped. The
    /// kernel releases a flock when its holder dies, so a crashed run never
    /// leaves the database locked.
    pub fn acquire(db: &Path) -> anyhow::Result<RunLock> {
        // The lock comes before the database, so it makes the folder both go in.
        if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create directory {}: {e}", dir.display()))?;
        }
        let mut name = db.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot create lock file {}: {e}", path.display()))?;
        if !fairbench_sys::flock::try_lock(&file).unwrap_or(false) {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            anyhow::bail!(
                "{} is in use by another fairbench run{}; wait for it to finish or use --db with another file",
                db.display(),
                if holder.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {holder})")
                }
            );
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        Ok(RunLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_until_the_first_drops() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("results.db");
        let a = RunLock::acquire(&db).unwrap();
        let e = RunLock::acquire(&db).err().unwrap().to_string();
        assert!(e.contains("in use by another fairbench run"), "{e}");
        assert!(e.contains(&std::process::id().to_string()), "{e}");
        drop(a);
        RunLock::acquire(&db).unwrap();
    }
}
