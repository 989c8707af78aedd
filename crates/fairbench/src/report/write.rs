//! Writing a report file: the HTML report of a stored run (for `fairbench
//! run --report`), and any report text, through a temporary file so that a
//! reader never sees half of it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::args::{resolve_run, RunSel};
use crate::report::{html, model};
use crate::store::Store;

/// Writes the HTML report of run `run` in the database `db` to `path` (for
/// `fairbench run --report`).
pub fn write_html(db: &Path, run: i64, path: &Path) -> anyhow::Result<()> {
    let store = Store::open_read_only(db)?;
    let row = resolve_run(&store, RunSel::Id(run))?;
    let report = model::build(&store, &row)?;
    write_atomic(path, html::render(&report).as_bytes())
}

/// Writes through a temporary file in the same directory, so a reader never
/// sees half a report.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile_in(dir, path)?;
    tmp.1
        .write_all(bytes)
        .with_context(|| format!("cannot write {}", tmp.0.display()))?;
    drop(tmp.1);
    std::fs::rename(&tmp.0, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn tempfile_in(dir: &Path, target: &Path) -> anyhow::Result<(PathBuf, std::fs::File)> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let f = std::fs::File::create(&tmp)
        .with_context(|| format!("cannot write {}", target.display()))?;
    Ok((tmp, f))
}
