//! Shared server state: the database pool, configuration, the fake clock, and the
//! in-memory registry of idempotency keys whose request is executing right now.
//!
//! "In flight" is deliberately not persisted: a crash ends every in-flight request,
//! and since a key's row and its side effects commit in one transaction, a restarted
//! mock sees either the finished request or nothing (and the retry executes afresh).

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use crate::config::{MockConfig, MockError, RetryPolicy};
use crate::faults::Registry;

/// Everything a handler needs. Cheap to clone.
#[derive(Clone)]
pub struct MockState {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub pool: SqlitePool,
    pub config: MockConfig,
    pub clock: Clock,
    pub in_flight: Mutex<HashSet<(String, String)>>,
    /// Replays served since this process started (ledger counter).
    pub replays: AtomicU64,
    /// Installed fault rules (in memory only).
    pub faults: Registry,
    /// Where events are delivered; starts as `config.webhook_url`.
    pub webhook_url: RwLock<Option<String>>,
    pub webhook_wakeup: tokio::sync::Notify,
    /// Serialises delivery passes (the worker and explicit drains).
    pub webhook_pass: tokio::sync::Mutex<()>,
    pub webhook_client: reqwest::Client,
}

impl MockState {
    /// Opens (creating if needed) `data_dir/payments.db`, runs the migrations and
    /// restores the fake clock.
    pub async fn open(config: MockConfig) -> Result<Self, MockError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|source| MockError::DataDir {
            path: config.data_dir.clone(),
            source,
        })?;
        let pool = open_pool(&config.data_dir.join("payments.db")).await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        let offset: i64 = sqlx::query_scalar("SELECT offset_seconds FROM clock WHERE id = 1")
            .fetch_one(&pool)
            .await?;
        let webhook_client = reqwest::Client::builder()
            .timeout(config.webhook_timeout)
            .build()
            .map_err(std::io::Error::other)?;
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                clock: Clock::new(offset),
                in_flight: Mutex::new(HashSet::new()),
                replays: AtomicU64::new(0),
                faults: Registry::default(),
                webhook_url: RwLock::new(config.webhook_url.clone()),
                webhook_wakeup: tokio::sync::Notify::new(),
                webhook_pass: tokio::sync::Mutex::new(()),
                webhook_client,
                config,
            }),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.inner.pool
    }

    pub fn config(&self) -> &MockConfig {
        &self.inner.config
    }

    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The current webhook endpoint (`None`: events are recorded, not sent).
    pub fn webhook_url(&self) -> Option<String> {
        self.inner
            .webhook_url
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Points webhook delivery elsewhere (e.g. at an app that bound after the mock).
    /// Only events recorded from now on are affected.
    pub fn set_webhook_url(&self, url: Option<String>) {
        *self
            .inner
            .webhook_url
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = url;
        self.wake_webhooks();
    }

    /// Closes the database pool (checkpointing the WAL).
    pub async fn close(&self) {
        self.inner.pool.close().await;
    }
}

async fn open_pool(path: &Path) -> Result<SqlitePool, MockError> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // FULL: a refund acknowledged to a client must survive a power cut as well.
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true);
    Ok(SqlitePoolOptions::new()
        .max_connections(8)
        // No ping before each acquire: a file in this process cannot have gone away, and
        // the ping is a round trip to the connection's thread per request.
        .test_before_acquire(false)
        .connect_with(options)
        .await?)
}

/// The mock's clock: system time plus an offset that `POST /__mock/clock` advances
/// (persisted, so a restart keeps the fake time). Drives key expiry and timestamps.
pub struct Clock {
    offset_seconds: AtomicI64,
}

impl Clock {
    fn new(offset_seconds: i64) -> Self {
        Self {
            offset_seconds: AtomicI64::new(offset_seconds),
        }
    }

    /// Unix seconds on the mock's clock.
    pub fn now(&self) -> i64 {
        let system = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or_default();
        system + self.offset_seconds.load(Ordering::SeqCst)
    }

    pub fn offset_seconds(&self) -> i64 {
        self.offset_seconds.load(Ordering::SeqCst)
    }

    pub(crate) fn set_offset(&self, offset_seconds: i64) {
        self.offset_seconds.store(offset_seconds, Ordering::SeqCst);
    }
}

/// Holds an idempotency key "in flight" until dropped, even if the handler future is
/// cancelled (client gone) or fails.
pub(crate) struct InFlightGuard {
    state: MockState,
    entry: (String, String),
}

impl InFlightGuard {
    /// Claims `(api_key, key)`; `None` when another request holds it.
    pub fn claim(state: &MockState, api_key: &str, key: &str) -> Option<Self> {
        let entry = (api_key.to_owned(), key.to_owned());
        let mut set = state
            .inner
            .in_flight
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !set.insert(entry.clone()) {
            return None;
        }
        Some(Self {
            state: state.clone(),
            entry,
        })
    }

    pub fn api_key(&self) -> &str {
        &self.entry.0
    }

    pub fn key(&self) -> &str {
        &self.entry.1
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.state
            .inner
            .in_flight
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&self.entry);
    }
}

impl MockState {
    pub(crate) fn count_replay(&self) {
        self.inner.replays.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn replays(&self) -> u64 {
        self.inner.replays.load(Ordering::Relaxed)
    }
}

impl MockState {
    pub(crate) fn faults(&self) -> &Registry {
        &self.inner.faults
    }

    pub(crate) fn wake_webhooks(&self) {
        self.inner.webhook_wakeup.notify_one();
    }

    pub(crate) fn webhook_wakeup(&self) -> &tokio::sync::Notify {
        &self.inner.webhook_wakeup
    }

    pub(crate) fn webhook_pass(&self) -> &tokio::sync::Mutex<()> {
        &self.inner.webhook_pass
    }

    pub(crate) fn webhook_client(&self) -> &reqwest::Client {
        &self.inner.webhook_client
    }

    /// The configured policy, unless a `webhook_retry_policy` rule overrides it.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        let configured = self.inner.config.webhook_retry;
        match self.inner.faults.retry_policy() {
            Some((max_attempts, initial_backoff)) => RetryPolicy {
                max_attempts,
                initial_backoff,
                ..configured
            },
            None => configured,
        }
    }
}
