//! Configuration as one struct, read once from flags and environment variables.
//!
//! With no configuration at all the product runs on SQLite under `./data`, with the
//! embedded payments mock and the built-in investigator.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The key the embedded mock accepts (any `sk_test_…` works there).
pub const DEFAULT_PAYMENTS_KEY: &str = "sk_test_refund_desk";
/// What the embedded mock signs webhooks with. Public (it is in this file), so only
/// ever used with the embedded mock: `Config::check_secrets`.
pub const DEFAULT_WEBHOOK_SECRET: &str = "whsec_test_refund_desk";

/// The secrets that must come from the environment when `PAYMENTS_URL` names a provider.
pub const SECRET_VARS: [&str; 2] = ["PAYMENTS_WEBHOOK_SECRET", "PAYMENTS_API_KEY"];

/// A configuration `serve` refuses to run with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "{} must be set when PAYMENTS_URL names a payment provider: the built-in defaults are public, and anyone holding the webhook secret can forge provider events",
        .0.join(" and ")
    )]
    PublicDefaultSecret(Vec<&'static str>),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    /// `DATABASE_URL`; default `sqlite://DATA_DIR/refund-desk.db`.
    pub database_url: String,
    /// `PAYMENTS_URL`; when absent `serve` starts the embedded payments mock.
    pub payments_url: Option<String>,
    /// `PAYMENTS_API_KEY`.
    pub payments_api_key: String,
    /// `PAYMENTS_WEBHOOK_SECRET`: verifies `Stripe-Signature` on provider webhooks.
    pub webhook_secret: String,
    /// `FIXTURES_DIR`: policies, billing worlds and history (default `./fixtures`).
    pub fixtures_dir: PathBuf,
    /// `LLM_BASE_URL`, `LLM_API_KEY`, `LLM_MODEL`: an OpenAI-compatible server; the
    /// built-in investigator runs when no base URL is set.
    pub llm: Option<LlmConfig>,
    /// Timeout of one provider HTTP call.
    pub provider_timeout: Duration,
    /// Base delay of the provider retry backoff.
    pub provider_backoff: Duration,
    /// `APPROVAL_TTL_HOURS` (default 72): a case left awaiting approval longer than this
    /// is re-investigated, so nobody approves a refund decided on stale facts.
    pub approval_ttl: Duration,
    /// `PUBLIC_URL`: where users reach the app; `https://…` makes cookies `Secure`.
    pub public_url: Option<String>,
    /// `SHADOW_MODE=on`: the agent runs beside human decisions and never proposes to the
    /// approval queue.
    pub shadow_mode: bool,
    /// `WORKER_CONCURRENCY`: agent runs one worker advances at the same time (default 4
    /// on PostgreSQL, where concurrent commits share a WAL flush; 1 on SQLite, whose
    /// one pooled connection serialises them anyway).
    pub worker_concurrency: Option<usize>,
    /// Which of `SECRET_VARS` were not set, so their public defaults are in use.
    pub defaulted_secrets: Vec<&'static str>,
}

#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// `LLM_CONTEXT_TOKENS`: the model's context window (default 8192).
    pub context_tokens: usize,
    /// `LLM_TIMEOUT_SECS`: one chat-completions call (default 60).
    pub timeout: Duration,
}

impl Config {
    /// Reads the environment; `data_dir` comes from `--data-dir`.
    pub fn from_env(data_dir: &Path) -> Config {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Config {
            data_dir: data_dir.to_path_buf(),
            database_url: var("DATABASE_URL")
                .unwrap_or_else(|| crate::store::Db::sqlite_url(data_dir)),
            payments_url: var("PAYMENTS_URL"),
            payments_api_key: var("PAYMENTS_API_KEY")
                .unwrap_or_else(|| DEFAULT_PAYMENTS_KEY.to_string()),
            webhook_secret: var("PAYMENTS_WEBHOOK_SECRET")
                .unwrap_or_else(|| DEFAULT_WEBHOOK_SECRET.to_string()),
            fixtures_dir: var("FIXTURES_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(default_fixtures_dir),
            llm: var("LLM_BASE_URL").map(|base_url| LlmConfig {
                base_url,
                api_key: var("LLM_API_KEY"),
                model: var("LLM_MODEL").unwrap_or_else(|| "default".to_string()),
                context_tokens: var("LLM_CONTEXT_TOKENS")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(8192),
                timeout: Duration::from_secs(
                    var("LLM_TIMEOUT_SECS")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(60),
                ),
            }),
            provider_timeout: Duration::from_secs(10),
            provider_backoff: Duration::from_millis(500),
            approval_ttl: Duration::from_secs(
                3600 * var("APPROVAL_TTL_HOURS")
                    .and_then(|h| h.parse::<u64>().ok())
                    .unwrap_or(72),
            ),
            public_url: var("PUBLIC_URL"),
            shadow_mode: var("SHADOW_MODE").is_some_and(|v| {
                matches!(v.to_ascii_lowercase().as_str(), "1" | "on" | "true" | "yes")
            }),
            worker_concurrency: var("WORKER_CONCURRENCY")
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|n| (1..=64).contains(n)),
            defaulted_secrets: SECRET_VARS
                .into_iter()
                .filter(|name| var(name).is_none())
                .collect(),
        }
    }

    /// Issue 16: with a real provider (`PAYMENTS_URL` set) the public default secrets
    /// are refused, naming each variable to set. With the embedded mock they stay, and
    /// `serve` says so in its start-up log.
    pub fn check_secrets(&self) -> Result<(), ConfigError> {
        if self.payments_url.is_some() && !self.defaulted_secrets.is_empty() {
            return Err(ConfigError::PublicDefaultSecret(
                self.defaulted_secrets.clone(),
            ));
        }
        Ok(())
    }

    pub fn policies_dir(&self) -> PathBuf {
        self.fixtures_dir.join("policies")
    }

    pub fn index_dir(&self) -> PathBuf {
        self.data_dir.join("policy-index")
    }

    pub fn payments_data_dir(&self) -> PathBuf {
        self.data_dir.join("payments")
    }
}

/// `./fixtures` when run from the repository root, else the checkout this binary was
/// built from (so `cargo run` and the tests work from any directory).
pub fn default_fixtures_dir() -> PathBuf {
    let local = PathBuf::from("fixtures");
    if local.join("policies").is_dir() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fixtures")
}
