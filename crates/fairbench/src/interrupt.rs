//! Ctrl-C and SIGTERM: one flag every long-running command polls, plus cleanup
//! hooks so that no started process, control group or network namespace
//! outlives fairbench.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::sync::{Arc, Mutex, MutexGuard};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The shared "stop now" flag, set by Ctrl-C or SIGTERM.
pub fn flag() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone()
}

pub fn interrupted() -> bool {
    flag().load(Ordering::Relaxed)
}

pub fn install() {
    let f = flag();
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            // Second Ctrl-C: the user means it. Still reap what we started
            // and remove what we created, since no destructor will run.
            fairbench_sys::process::terminate_all();
            fairbench_sys::containment::remove_all();
            run_cleanups();
            std::process::exit(130);
        }
        // Servers (every process of their control groups) are killed at
        // once, so a command blocked on one returns promptly; measurements
        // already taken are still printed by the command. Registered
        // cleanups and the groups' removal run later, from their owners'
        // destructors.
        fairbench_sys::process::terminate_all();
    });
}

type Cleanup = Box<dyn Fn() + Send + Sync>;

/// Cleanups to run when fairbench is made to exit without unwinding (a
/// second Ctrl-C); each is also run by its owner's destructor otherwise.
static CLEANUPS: Mutex<Vec<(u64, Arc<Cleanup>)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

fn cleanups() -> MutexGuard<'static, Vec<(u64, Arc<Cleanup>)>> {
    CLEANUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps a cleanup registered; dropping it unregisters without running it.
#[derive(Debug)]
pub struct CleanupGuard(u64);

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        cleanups().retain(|(id, _)| *id != self.0);
    }
}

/// Registers `f` to run if fairbench exits on a second Ctrl-C. `f` must be
/// idempotent: its owner usually runs it too.
pub fn on_exit(f: impl Fn() + Send + Sync + 'static) -> CleanupGuard {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    cleanups().push((id, Arc::new(Box::new(f))));
    CleanupGuard(id)
}

/// Runs every registered cleanup, newest first.
pub fn run_cleanups() {
    let list: Vec<Arc<Cleanup>> = cleanups().iter().rev().map(|(_, f)| f.clone()).collect();
    for f in list {
        f();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleanups_run_until_their_guard_is_dropped() {
        let hits = Arc::new(AtomicU64::new(0));
        let h = hits.clone();
        let guard = on_exit(move || {
            h.fetch_add(1, Ordering::SeqCst);
        });
        run_cleanups();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        drop(guard);
        run_cleanups();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }
}
