//! Leftovers: groups whose owner died without removing them (SIGKILL, a
//! crash, a power cut of the process), found by name in fairbench's own
//! group of each hierarchy, their processes killed and the groups removed,
//! as the next fairbench starts. Groups of a live owner are never touched.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::group;
use super::mounts::Hierarchies;
use super::name;

/// Names of the groups in `h` whose owner is gone.
pub fn leftovers(h: &Hierarchies) -> Vec<String> {
    let mut names: Vec<String> = found(h).into_keys().collect();
    names.retain(|n| name::owner(n).is_some_and(|(pid, start)| !name::owner_alive(pid, start)));
    names
}

/// fairbench group names in `h`, with the hierarchies holding each.
fn found(h: &Hierarchies) -> BTreeMap<String, Vec<(PathBuf, Vec<String>)>> {
    let mut out: BTreeMap<String, Vec<(PathBuf, Vec<String>)>> = BTreeMap::new();
    for hier in &h.list {
        let Ok(rd) = std::fs::read_dir(&hier.parent) else {
            continue;
        };
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if name::owner(&n).is_some() && e.file_type().is_ok_and(|t| t.is_dir()) {
                out.entry(n)
                    .or_default()
                    .push((hier.parent.clone(), hier.controllers.clone()));
            }
        }
    }
    out
}

/// Kills what runs in the groups of dead owners and removes them; returns
/// the names removed, and for those that would not go, why.
pub fn clean(h: &Hierarchies) -> (Vec<String>, Vec<String>) {
    let all = found(h);
    let mut removed = Vec::new();
    let mut failed = Vec::new();
    for n in leftovers(h) {
        let Some(dirs) = all.get(&n) else { continue };
        let g = group::adopt(&n, h.version, dirs.clone());
        match group::remove(&g) {
            Ok(()) => removed.push(n),
            Err(e) => failed.push(e),
        }
    }
    (removed, failed)
}
