//! A request to stop, shared by the worker's loops and the channels' watchers: what
//! they hold is finished, then they return.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Asks the worker to stop claiming work (a graceful stop). What it holds is
/// finished, not abandoned: the step in flight commits and its lease is released, so
/// another instance (or this one restarted) resumes at once instead of waiting for the
/// lease to expire.
#[derive(Clone, Default)]
pub struct StopSignal {
    inner: Arc<StopInner>,
}

#[derive(Default)]
struct StopInner {
    requested: AtomicBool,
    notify: Notify,
}

impl StopSignal {
    pub fn request(&self) {
        self.inner.requested.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    pub fn is_requested(&self) -> bool {
        self.inner.requested.load(Ordering::SeqCst)
    }

    /// Resolves once a stop is requested (at once if it already was).
    pub async fn requested(&self) {
        loop {
            // Registered before the check, so a `request` in between still wakes us.
            let notified = self.inner.notify.notified();
            if self.is_requested() {
                return;
            }
            notified.await;
        }
    }
}
