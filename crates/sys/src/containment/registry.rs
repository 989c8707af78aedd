//! The groups this process has made and not yet removed, so that the
//! Ctrl-C handler (another thread, no destructor to run) reaches them.

use std::sync::{Arc, Mutex, MutexGuard};

use super::group::{self, Inner, Purpose};

static LIVE: Mutex<Vec<Arc<Inner>>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<Arc<Inner>>> {
    // A panic elsewhere must not stop us from killing servers.
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn add(g: Arc<Inner>) {
    live().push(g);
}

pub(super) fn forget(g: &Arc<Inner>) {
    live().retain(|x| !Arc::ptr_eq(x, g));
}

/// Kills every process in every server group this process made; the
/// groups stay for their owners to remove. For the first Ctrl-C.
pub fn kill_servers() {
    let list: Vec<Arc<Inner>> = live().clone();
    for g in list.iter().filter(|g| g.purpose == Purpose::Server) {
        group::kill_all(g);
    }
}

/// Ends and removes every group this process made. For an exit that runs
/// no destructor (a second Ctrl-C).
pub fn remove_all() {
    let list: Vec<Arc<Inner>> = std::mem::take(&mut *live());
    for g in list {
        let _ = group::remove(&g);
    }
}
