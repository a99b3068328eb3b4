//! Time is injected: workers and handlers ask the `Clock` in state, so tests can set it.

use std::sync::Mutex;

use time::OffsetDateTime;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> OffsetDateTime;

    /// Unix milliseconds, the storage format for every timestamp.
    fn now_ms(&self) -> i64 {
        to_ms(self.now())
    }
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock that only moves when told to.
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    pub fn new(at: OffsetDateTime) -> Self {
        ManualClock(Mutex::new(at))
    }

    pub fn set(&self, at: OffsetDateTime) {
        *self
            .0
            .lock()
            .expect("clock mutex is never poisoned: no code panics while holding it") = at;
    }

    pub fn advance(&self, by: time::Duration) {
        let mut now = self
            .0
            .lock()
            .expect("clock mutex is never poisoned: no code panics while holding it");
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self
            .0
            .lock()
            .expect("clock mutex is never poisoned: no code panics while holding it")
    }
}

// The storage format's conversions are pure and live in `domain`, where the mail tables
// below the desk use them too; the desk's callers keep naming them here, beside the
// clock whose readings they convert.
pub use domain::millis::{from_ms, rfc3339, to_ms};

/// A [`Clock`] as the harness takes one (milliseconds only).
pub struct HarnessClock<'a>(pub &'a dyn Clock);

impl harness::Clock for HarnessClock<'_> {
    fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }
}
