//! Data folders whose fairbench died without removing them (SIGKILL, a
//! crash): found by name in the temporary folder, their owner's pid and
//! start time in the name as in a control group's, removed by the next
//! fairbench. A live owner's folder is never touched.

use std::path::Path;

use super::postgres::{release_shared_memory, FOLDER_PREFIX};
use fairbench_sys::containment::name;

/// Removes the data folders of dead owners in the temporary folder;
/// returns (removed, problems).
pub fn clean() -> (Vec<String>, Vec<String>) {
    clean_in(&std::env::temp_dir())
}

pub fn clean_in(dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut removed = Vec::new();
    let mut problems = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (removed, problems);
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = n.strip_prefix(FOLDER_PREFIX) else {
            continue;
        };
        let Some((pid, start)) =
            name::owner(&format!("{}{rest}", fairbench_sys::containment::PREFIX))
        else {
            continue;
        };
        if name::owner_alive(pid, start) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        release_shared_memory(&e.path().join("data"));
        match std::fs::remove_dir_all(e.path()) {
            Ok(()) => removed.push(e.path().display().to_string()),
            Err(x) => problems.push(format!("{}: {x}", e.path().display())),
        }
    }
    (removed, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_owners_folders_go_live_ones_stay() {
        let d = tempfile::tempdir().unwrap();
        let mine = name::fresh();
        let mine = mine
            .strip_prefix(fairbench_sys::containment::PREFIX)
            .unwrap();
        let live = d.path().join(format!("{FOLDER_PREFIX}{mine}"));
        // pid 1 runs, but did not start at tick 1: a dead owner.
        let init = name::start_time(1).unwrap();
        let dead = d.path().join(format!("{FOLDER_PREFIX}1-{}-1", init + 1));
        let other = d.path().join("fairbench-pg-not-ours");
        for p in [&live, &dead, &other] {
            std::fs::create_dir_all(p.join("data")).unwrap();
        }
        let (removed, problems) = clean_in(d.path());
        assert_eq!(removed, vec![dead.display().to_string()]);
        assert!(problems.is_empty());
        assert!(live.exists() && other.exists() && !dead.exists());
    }
}
