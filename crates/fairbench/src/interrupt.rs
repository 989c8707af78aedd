//! Ctrl-C and SIGTERM: one flag every long-running command polls, plus cleanup
//! hooks so that no started process outlives fairbench.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;

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
            // Second Ctrl-C: the user means it. Still reap what we started.
            fairbench_zoo::process::terminate_all();
            std::process::exit(130);
        }
        // Servers are killed at once, so a command blocked on one returns
        // promptly; measurements already taken are still printed by the command.
        fairbench_zoo::process::terminate_all();
    });
}
