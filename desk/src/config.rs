//! Configuration as one struct, `Config`, made once by the binaries from their flags and
//! environment variables (the `settings` crate parses them; this crate parses nothing).
//!
//! With no configuration at all the product runs on SQLite under `./data`, with the
//! embedded payments mock and the built-in investigator.

pub use crate::cases::ReplyTargets;
pub use crate::channels::mail::MailConfig;
pub use crate::channels::ChannelConfig;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The key the embedded mock accepts (any `sk_test_…` works there).
pub const DEFAULT_PAYMENTS_KEY: &str = "sk_test_refund_desk";
/// What the embedded mock signs webhooks with. Public (it is in this file), so only
/// ever used with the embedded mock: `Config::check`.
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
    /// A channel's setting that another of its settings needs (each channel checks its
    /// own).
    #[error(transparent)]
    Channel(#[from] crate::channels::MissingSetting),
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
    /// `PAYMENTS_ORDER_KEY` (default `order_id`): the charge metadata key naming the order.
    pub payments_order_key: String,
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
    /// `MESSAGE_RETENTION_DAYS`, `RUN_EVENT_RETENTION_DAYS`, `AUDIT_RETENTION_DAYS`.
    pub retention: RetentionWindows,
    /// `PUBLIC_URL`: where users reach the app; `https://…` makes cookies `Secure`.
    pub public_url: Option<String>,
    /// `DEFAULT_LANGUAGE` (default en): what a customer writing in a language we do not
    /// answer in is answered in (docs/spec/domain.md, "Languages").
    pub default_language: crate::replies::Language,
    /// `ESCALATION_ROUTING` (default round_robin): how the agents' escalations are shared
    /// out (docs/spec/roles.md, "Where an escalation goes").
    pub escalation_routing: crate::cases::routing::Routing,
    /// `SHADOW_MODE=on`: the agent runs beside human decisions and never proposes to the
    /// approval queue.
    pub shadow_mode: bool,
    /// `POLICY_SECOND_APPROVER=on`: a policy draft's only author may not publish it.
    pub policy_second_approver: bool,
    /// `METRICS_TOKEN`: the bearer token `/metrics` asks for, when set.
    pub metrics_token: Option<String>,
    /// `METRICS_CACHE_SECS` (default 5): how long `/metrics` keeps its database gauges.
    pub metrics_cache: Duration,
    /// Each channel's settings (mail: `SMTP_URL`, `MAIL_FROM`, `IMAP_URL`,
    /// `INBOUND_EMAIL_TOKEN`, `MAIL_RETRY_SECS`). Each unset leaves its part off: the
    /// product runs without that channel.
    pub channels: ChannelConfig,
    /// `GROUP_ROLES`: which identity-provider group gives which role.
    pub group_roles: crate::auth::provisioning::GroupRoles,
    /// `SCIM_DEFAULT_ROLE` (default agent): a provisioned person's role in no mapped group.
    pub scim_default_role: crate::auth::StaffRole,
    /// `PASSWORD_SIGN_IN=off`: staff sign in only through the identity provider.
    pub password_sign_in: bool,
    /// The company's OpenID Connect provider, when `OIDC_ISSUER` is set.
    pub oidc: Option<crate::auth::oidc::OidcSettings>,
    /// `WORKER_CONCURRENCY`: agent runs one worker advances at the same time (default
    /// `DEFAULT_WORKER_CONCURRENCY`: their steps share transactions through the group
    /// writer, on either backend).
    pub worker_concurrency: Option<usize>,
    /// `WORK_LEASE_SECS` (default 60): the work lease (`crate::lease`).
    pub work_lease: Duration,
    /// Which of `SECRET_VARS` were not set, so their public defaults are in use.
    pub defaulted_secrets: Vec<&'static str>,
    /// `WATCHDOG_STUCK_MINUTES` (default 15) and `WATCHDOG_HANDOFF_MINUTES` (default 30).
    pub watchdog: WatchdogPeriods,
    /// `REPLY_TARGET_AGENTS_HOURS` (default 4) and `REPLY_TARGET_SUPERVISORS_HOURS` (default 8).
    pub reply_targets: ReplyTargets,
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
    /// `LLM_MAX_TOKENS`: one answer (default 1024).
    pub max_tokens: u32,
}

impl Config {
    /// What `serve` refuses to run with. With a real provider (`PAYMENTS_URL` set) the
    /// public default secrets are refused, naming each variable to set (with the embedded
    /// mock they stay, and `serve` says so in its start-up log); then each channel checks
    /// its own settings.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.payments_url.is_some() && !self.defaulted_secrets.is_empty() {
            return Err(ConfigError::PublicDefaultSecret(
                self.defaulted_secrets.clone(),
            ));
        }
        Ok(self.channels.check()?)
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

/// The stuck-run watchdog's two periods (`watchdog`), from `WATCHDOG_STUCK_MINUTES` and `WATCHDOG_HANDOFF_MINUTES`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchdogPeriods {
    /// No progress for this long flags the run.
    pub stuck_ms: i64,
    /// A flagged run still without progress this long after its flag goes to a human.
    pub handoff_ms: i64,
}

impl WatchdogPeriods {
    pub fn from_minutes(stuck: u64, handoff: u64) -> WatchdogPeriods {
        let ms = |minutes: u64| i64::try_from(minutes.saturating_mul(60_000)).unwrap_or(i64::MAX);
        WatchdogPeriods {
            stuck_ms: ms(stuck),
            handoff_ms: ms(handoff),
        }
    }
}

/// The windows in force, in days (`MESSAGE_RETENTION_DAYS`, `RUN_EVENT_RETENTION_DAYS`,
/// `AUDIT_RETENTION_DAYS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RetentionWindows {
    pub message_days: u32,
    pub run_event_days: u32,
    pub audit_days: u32,
}

impl Default for RetentionWindows {
    fn default() -> Self {
        RetentionWindows {
            message_days: 730,
            run_event_days: 180,
            audit_days: 3650,
        }
    }
}
