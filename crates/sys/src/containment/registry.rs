//! A list of the live things of a kind this process made and has not yet
//! removed, so that the Ctrl-C handler (another thread, with no destructor
//! to run) reaches them. Knows nothing of what it holds: the groups keep
//! theirs in [`super::group`].

use std::sync::{Arc, Mutex, MutexGuard};

pub(super) struct Registry<T>(Mutex<Vec<Arc<T>>>);

impl<T> Registry<T> {
    pub(super) const fn new() -> Self {
        Registry(Mutex::new(Vec::new()))
    }

    fn live(&self) -> MutexGuard<'_, Vec<Arc<T>>> {
        // A panic elsewhere must not stop us from killing servers.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn add(&self, x: Arc<T>) {
        self.live().push(x);
    }

    pub(super) fn forget(&self, x: &Arc<T>) {
        self.live().retain(|y| !Arc::ptr_eq(y, x));
    }

    /// What is live now; it stays registered.
    pub(super) fn snapshot(&self) -> Vec<Arc<T>> {
        self.live().clone()
    }

    /// What is live now, no longer registered.
    pub(super) fn take(&self) -> Vec<Arc<T>> {
        std::mem::take(&mut *self.live())
    }
}
