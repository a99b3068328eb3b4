//! The length of a work lease in this process: how long a run or a case claimed by an
//! instance stays claimed without being renewed, so that work held by an instance that
//! died is taken over by another only after it (docs/spec/invariants.md #4 leans on it: the
//! new holder resumes from stored intents, never beside a live holder).
//!
//! One value for the process, set once at start-up from `WORK_LEASE_SECS`
//! (`lib::build_state`); every instance sharing a database should use the same value.
//! It is a process setting rather than a field of the state because the claim and
//! renew queries deep in `runs` and `cases` are given a `&Db`, not the state. It holds
//! no policy: it reads no clock and decides nothing but a duration.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The default: a model call that times out (60 s) renews the lease meanwhile (the
/// keep-alive below), so only a worker that stopped making progress loses it.
pub const DEFAULT: Duration = Duration::from_secs(60);

static LEASE_MS: AtomicI64 = AtomicI64::new(DEFAULT.as_millis() as i64);

/// The lease in milliseconds of app clock.
pub fn ms() -> i64 {
    LEASE_MS.load(Ordering::Relaxed)
}

/// How often a holder renews its lease while a slow step is in flight: three renewals
/// fit in one lease, so one late renewal never loses it.
pub fn keep_alive_every() -> Duration {
    Duration::from_millis((ms() / 3).max(1) as u64)
}

/// Sets the process's lease (start-up only; `WORK_LEASE_SECS`).
pub fn set(lease: Duration) {
    LEASE_MS.store(lease.as_millis() as i64, Ordering::Relaxed);
}
