//! The mock's configuration and start-up errors, and the webhook retry policy it
//! carries: plain data at the bottom of the crate, read by `state` and the webhook
//! sender alike.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Configuration of one mock instance.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Directory holding `payments.db` (created if missing).
    pub data_dir: PathBuf,
    /// Where signed webhook events are POSTed; `None` disables delivery.
    pub webhook_url: Option<String>,
    /// Secret for `Stripe-Signature` (HMAC-SHA256).
    pub webhook_secret: String,
    /// How long a stored idempotency key replays (on the mock's clock).
    pub idempotency_ttl: Duration,
    /// Retries of failed webhook deliveries (real time, compressed).
    pub webhook_retry: RetryPolicy,
    /// How long one delivery may take before it counts as failed.
    pub webhook_timeout: Duration,
}

impl MockConfig {
    pub const DEFAULT_WEBHOOK_SECRET: &'static str = "whsec_test_refund_desk";

    /// Defaults: no webhook URL, secret `whsec_test_refund_desk`, 24 h key TTL,
    /// webhook retries per [`RetryPolicy::default`], 5 s delivery timeout.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            webhook_url: None,
            webhook_secret: Self::DEFAULT_WEBHOOK_SECRET.to_owned(),
            idempotency_ttl: Duration::from_secs(24 * 60 * 60),
            webhook_retry: RetryPolicy::default(),
            webhook_timeout: Duration::from_secs(5),
        }
    }
}

/// Errors starting the mock. Request-time errors never surface here: they become
/// Stripe error responses.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot bind {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// How failed deliveries are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (the first included).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubled each time, capped at `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    pub(crate) fn backoff(&self, attempts_made: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempts_made.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}
