//! Every setting of the two binaries as a clap flag with an environment fallback
//! (`Settings`), and the `desk::config::Config` they describe. Below both binaries so each
//! parses the same flags, above the workflow so it parses nothing itself.
//!
//! Long because every setting is one field of `Settings` with its parser beside it; one
//! struct is the point, so `--help` and the docs read from one place.

use std::path::{Path, PathBuf};
use std::time::Duration;

use desk::config::{
    default_fixtures_dir, ChannelConfig, Config, LlmConfig, MailConfig, ReplyTargets,
    RetentionWindows, WatchdogPeriods, DEFAULT_PAYMENTS_KEY, DEFAULT_WEBHOOK_SECRET, SECRET_VARS,
};

/// Every setting, as a clap argument with an environment fallback (strict
/// configuration). A flag wins over its variable; an invalid value of either stops
/// start-up with clap's message, which names the variable (each `value_name` is the
/// variable's name), instead of running on a default nobody asked for.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Where the SQLite database, the policy index and the embedded provider's state live.
    #[arg(
        long,
        global = true,
        env = "DATA_DIR",
        value_name = "DATA_DIR",
        default_value = "./data"
    )]
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://user:pass@host/db` [default: sqlite://DATA_DIR/refund-desk.db].
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        value_name = "DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,
    /// Base URL of the payment provider [default: the embedded payments mock].
    #[arg(long, global = true, env = "PAYMENTS_URL", value_name = "PAYMENTS_URL", value_parser = http_url)]
    pub payments_url: Option<String>,
    /// The provider's secret key [default with the embedded mock: sk_test_refund_desk; required with PAYMENTS_URL].
    #[arg(
        long,
        global = true,
        env = "PAYMENTS_API_KEY",
        value_name = "PAYMENTS_API_KEY",
        hide_env_values = true
    )]
    pub payments_api_key: Option<String>,
    /// The metadata key the provider's charges name the shop's order under (Stripe's rules: 1 to 40 characters, no square brackets).
    #[arg(long, global = true, env = "PAYMENTS_ORDER_KEY", value_name = "PAYMENTS_ORDER_KEY",
          default_value = payments_adapter::DEFAULT_ORDER_KEY, value_parser = metadata_key)]
    pub payments_order_key: String,
    /// Verifies `Stripe-Signature` on provider webhooks [default with the embedded mock: whsec_test_refund_desk; required with PAYMENTS_URL].
    #[arg(
        long,
        global = true,
        env = "PAYMENTS_WEBHOOK_SECRET",
        value_name = "PAYMENTS_WEBHOOK_SECRET",
        hide_env_values = true
    )]
    pub payments_webhook_secret: Option<String>,
    /// Policies, billing worlds and history [default: ./fixtures, else the checkout this binary was built from].
    #[arg(long, global = true, env = "FIXTURES_DIR", value_name = "FIXTURES_DIR")]
    pub fixtures_dir: Option<PathBuf>,
    /// An OpenAI-compatible model server [default: the built-in investigator].
    #[arg(long, global = true, env = "LLM_BASE_URL", value_name = "LLM_BASE_URL", value_parser = http_url)]
    pub llm_base_url: Option<String>,
    /// Bearer key of the model server.
    #[arg(
        long,
        global = true,
        env = "LLM_API_KEY",
        value_name = "LLM_API_KEY",
        hide_env_values = true
    )]
    pub llm_api_key: Option<String>,
    /// Model name sent to the model server.
    #[arg(
        long,
        global = true,
        env = "LLM_MODEL",
        value_name = "LLM_MODEL",
        default_value = "default"
    )]
    pub llm_model: String,
    /// The model's context window, in tokens.
    #[arg(long, global = true, env = "LLM_CONTEXT_TOKENS", value_name = "LLM_CONTEXT_TOKENS", default_value_t = 8192,
          value_parser = clap::value_parser!(u32).range(512..))]
    pub llm_context_tokens: u32,
    /// Timeout of one chat-completions call, in seconds.
    #[arg(long, global = true, env = "LLM_TIMEOUT_SECS", value_name = "LLM_TIMEOUT_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub llm_timeout_secs: u64,
    /// The most tokens one model answer may take; a longer answer is cut off and counts
    /// as a model error.
    #[arg(long, global = true, env = "LLM_MAX_TOKENS", value_name = "LLM_MAX_TOKENS",
          default_value_t = desk::agent::llm::DEFAULT_MAX_TOKENS,
          value_parser = clap::value_parser!(u32).range(16..=131_072))]
    pub llm_max_tokens: u32,
    /// Hours a case may await approval before it is re-investigated on fresh facts.
    #[arg(long, global = true, env = "APPROVAL_TTL_HOURS", value_name = "APPROVAL_TTL_HOURS", default_value_t = 72,
          value_parser = clap::value_parser!(u64).range(1..=24 * 365))]
    pub approval_ttl_hours: u64,
    /// Days a customer's message text is kept before the retention job redacts it.
    #[arg(long, global = true, env = "MESSAGE_RETENTION_DAYS", value_name = "MESSAGE_RETENTION_DAYS", default_value_t = 730,
          value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub message_retention_days: u32,
    /// Days an agent run's event payloads (model input, tool results) are kept.
    #[arg(long, global = true, env = "RUN_EVENT_RETENTION_DAYS", value_name = "RUN_EVENT_RETENTION_DAYS", default_value_t = 180,
          value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub run_event_retention_days: u32,
    /// Days the audit log keeps its details (its lines stay).
    #[arg(long, global = true, env = "AUDIT_RETENTION_DAYS", value_name = "AUDIT_RETENTION_DAYS", default_value_t = 3650,
          value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub audit_retention_days: u32,
    /// Where users reach the app; `https://…` makes cookies `Secure` and adds HSTS [default: unset].
    #[arg(long, global = true, env = "PUBLIC_URL", value_name = "PUBLIC_URL", value_parser = http_url)]
    pub public_url: Option<String>,
    /// The language customers who write in one we do not answer in are answered in: en, zh, ja, de, fr, es, it, nl, pt or ko.
    #[arg(long, global = true, env = "DEFAULT_LANGUAGE", value_name = "DEFAULT_LANGUAGE", default_value = "en",
          value_parser = default_language)]
    pub default_language: desk::replies::Language,
    /// How escalations the agents handle are shared out: round_robin (to the present agent with the least waiting on them) or queue (agents take them).
    #[arg(long, global = true, env = "ESCALATION_ROUTING", value_name = "ESCALATION_ROUTING", default_value = "round_robin",
          value_parser = escalation_routing)]
    pub escalation_routing: desk::cases::routing::Routing,
    /// Live shadow mode (on/off): the agent runs beside human decisions and proposes nothing.
    #[arg(long, global = true, env = "SHADOW_MODE", value_name = "SHADOW_MODE", default_value = "off",
          action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub shadow_mode: bool,
    /// Policy publishing needs someone besides a draft's only author (on/off).
    #[arg(long, global = true, env = "POLICY_SECOND_APPROVER", value_name = "POLICY_SECOND_APPROVER", default_value = "off",
          action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub policy_second_approver: bool,
    /// Which identity-provider group gives which role: `support=agent,leads=supervisor` [default: none].
    #[arg(long, global = true, env = "GROUP_ROLES", value_name = "GROUP_ROLES", value_parser = group_roles)]
    pub group_roles: Option<desk::auth::provisioning::GroupRoles>,
    /// The role of a person SCIM creates before a mapped group gives them one [default: agent].
    #[arg(long, global = true, env = "SCIM_DEFAULT_ROLE", value_name = "SCIM_DEFAULT_ROLE", value_parser = staff_role)]
    pub scim_default_role: Option<desk::auth::StaffRole>,
    /// The company's OpenID Connect issuer URL (its discovery document is read) [default: unset].
    #[arg(long, global = true, env = "OIDC_ISSUER", value_name = "OIDC_ISSUER", value_parser = http_url,
          requires = "oidc_client_id")]
    pub oidc_issuer: Option<String>,
    /// The desk's client id at the identity provider.
    #[arg(
        long,
        global = true,
        env = "OIDC_CLIENT_ID",
        value_name = "OIDC_CLIENT_ID"
    )]
    pub oidc_client_id: Option<String>,
    /// The desk's client secret at the identity provider.
    #[arg(
        long,
        global = true,
        env = "OIDC_CLIENT_SECRET",
        value_name = "OIDC_CLIENT_SECRET",
        hide_env_values = true
    )]
    pub oidc_client_secret: Option<String>,
    /// The ID token claim that lists a person's groups [default: groups].
    #[arg(
        long,
        global = true,
        env = "OIDC_GROUPS_CLAIM",
        value_name = "OIDC_GROUPS_CLAIM"
    )]
    pub oidc_groups_claim: Option<String>,
    /// Create staff on first sign-in when their group maps to a role (on/off; off: invited people only).
    #[arg(long, global = true, env = "OIDC_CREATE_STAFF", value_name = "OIDC_CREATE_STAFF", default_value = "off",
          action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub oidc_create_staff: bool,
    /// Staff may sign in with a password (on/off); off leaves the identity provider only.
    #[arg(long, global = true, env = "PASSWORD_SIGN_IN", value_name = "PASSWORD_SIGN_IN", default_value = "on",
          action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub password_sign_in: bool,
    /// Seconds `/metrics` keeps its database gauges before counting again, 0 to 300 [default: 5].
    #[arg(long, global = true, env = "METRICS_CACHE_SECS", value_name = "METRICS_CACHE_SECS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(0..=300))]
    pub metrics_cache_secs: u64,
    /// A bearer token `/metrics` asks for; unset, `/metrics` is open like `/healthz`.
    #[arg(
        long,
        global = true,
        env = "METRICS_TOKEN",
        value_name = "METRICS_TOKEN",
        hide_env_values = true
    )]
    pub metrics_token: Option<String>,
    /// Where mail is sent: `smtp://host:port`, `smtp://host:port?tls=required` (STARTTLS), `smtps://host:port`, with `user:pass@` when the server asks [default: unset, no mail is sent].
    #[arg(long, global = true, env = "SMTP_URL", value_name = "SMTP_URL", hide_env_values = true, value_parser = smtp_url)]
    pub smtp_url: Option<String>,
    /// The support address mail comes from and customers write to, e.g. `support@shop.example` (required with SMTP_URL or IMAP_URL).
    #[arg(long, global = true, env = "MAIL_FROM", value_name = "MAIL_FROM", value_parser = mail_address)]
    pub mail_from: Option<String>,
    /// The support mailbox watched for customer mail: `imap://user:pass@host:port/INBOX` or `imaps://…` (`@` in the user name as `%40`) [default: unset, not watched].
    #[arg(long, global = true, env = "IMAP_URL", value_name = "IMAP_URL", hide_env_values = true, value_parser = imap_url)]
    pub imap_url: Option<String>,
    /// The bearer token of `POST /api/v1/inbound/email` (a mail server or provider forwarding raw mail) [default: unset, the route refuses everyone].
    #[arg(
        long,
        global = true,
        env = "INBOUND_EMAIL_TOKEN",
        value_name = "INBOUND_EMAIL_TOKEN",
        hide_env_values = true
    )]
    pub inbound_email_token: Option<String>,
    /// The authserv-id of the receiving mail server whose `Authentication-Results` (RFC 8601) is believed, e.g. `mx.shop.example`: only its DMARC pass, or its SPF or DKIM pass aligned with the From domain, proves a mail's sender; any other mail opens its ticket unverified, nothing proposed until the customer confirms through a link [default: unset, no mail proves its sender].
    #[arg(
        long,
        global = true,
        env = "MAIL_AUTHSERV_ID",
        value_name = "MAIL_AUTHSERV_ID"
    )]
    pub mail_authserv_id: Option<String>,
    /// Seconds before the first retry of a mail the SMTP server did not take; each later retry waits twice as long, up to an hour.
    #[arg(long, global = true, env = "MAIL_RETRY_SECS", value_name = "MAIL_RETRY_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub mail_retry_secs: u64,
    /// Agent runs one worker advances at once (and approved refunds it executes at once), 1 to 64 [default: 4].
    #[arg(long, global = true, env = "WORKER_CONCURRENCY", value_name = "WORKER_CONCURRENCY",
          value_parser = clap::value_parser!(u8).range(1..=64))]
    pub worker_concurrency: Option<u8>,
    /// Seconds work claimed by an instance stays claimed unrenewed: after a crash, how long until another instance takes it over (use one value for every instance on a database).
    #[arg(long, global = true, env = "WORK_LEASE_SECS", value_name = "WORK_LEASE_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(5..=3600))]
    pub work_lease_secs: u64,
    /// How log lines are written to stderr: `text` for people, `json` (one object a line) for a log collector.
    #[arg(long, global = true, env = "LOG_FORMAT", value_name = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    // The stuck-run watchdog. A healthy run's longest gap between two
    // progress events is a few model calls that time out (2 min each) or the provider's
    // retries (5 × 30 s); 15 minutes is well past both. The hand-off period gives a
    // person time to look at the flag before the case is taken from the agent.
    /// Minutes without progress (new evidence, a proposal, a decision) before a run is flagged as stuck.
    #[arg(long, global = true, env = "WATCHDOG_STUCK_MINUTES", value_name = "WATCHDOG_STUCK_MINUTES", default_value_t = 15,
          value_parser = clap::value_parser!(u64).range(1..=7 * 24 * 60))]
    pub watchdog_stuck_minutes: u64,
    /// Minutes a flagged run may stay stuck before its case is handed to a human.
    #[arg(long, global = true, env = "WATCHDOG_HANDOFF_MINUTES", value_name = "WATCHDOG_HANDOFF_MINUTES", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=7 * 24 * 60))]
    pub watchdog_handoff_minutes: u64,

    /// Hours within which the agents' queue usually answers: the customer's page says so.
    #[arg(long, global = true, env = "REPLY_TARGET_AGENTS_HOURS", value_name = "REPLY_TARGET_AGENTS_HOURS", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=24 * 14))]
    pub reply_target_agents_hours: u32,
    /// Hours within which the supervisors' queue (escalations, larger refunds) usually answers.
    #[arg(long, global = true, env = "REPLY_TARGET_SUPERVISORS_HOURS", value_name = "REPLY_TARGET_SUPERVISORS_HOURS", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(1..=24 * 14))]
    pub reply_target_supervisors_hours: u32,
}

/// `LOG_FORMAT`: the shape of the log lines (`RUST_LOG` still chooses which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// An `http://` or `https://` URL (or empty, which means unset).
/// The identity provider's settings, when `OIDC_ISSUER` is set (clap requires the client
/// id with it).
fn oidc_settings(settings: &Settings) -> Option<desk::auth::oidc::OidcSettings> {
    let issuer = settings
        .oidc_issuer
        .clone()
        .filter(|i| !i.trim().is_empty())?;
    Some(desk::auth::oidc::OidcSettings {
        issuer,
        client_id: settings.oidc_client_id.clone().unwrap_or_default(),
        client_secret: settings
            .oidc_client_secret
            .clone()
            .filter(|s| !s.is_empty()),
        groups_claim: settings
            .oidc_groups_claim
            .clone()
            .filter(|c| !c.trim().is_empty())
            .unwrap_or_else(|| "groups".into()),
        create_staff: settings.oidc_create_staff,
    })
}

fn group_roles(value: &str) -> Result<desk::auth::provisioning::GroupRoles, String> {
    desk::auth::provisioning::GroupRoles::parse(value)
}

fn staff_role(value: &str) -> Result<desk::auth::StaffRole, String> {
    desk::auth::StaffRole::parse(value).map_err(|e| e.to_string())
}

fn default_language(value: &str) -> Result<desk::replies::Language, String> {
    value
        .trim()
        .to_ascii_lowercase()
        .parse()
        .map_err(|e: desk::replies::UnknownLanguage| e.to_string())
}

fn escalation_routing(value: &str) -> Result<desk::cases::routing::Routing, String> {
    desk::cases::routing::Routing::parse(value)
        .ok_or_else(|| format!("'{value}' is no routing: round_robin or queue"))
}

fn http_url(value: &str) -> Result<String, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() || trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        Ok(trimmed.to_string())
    } else {
        Err(format!(
            "expected an http:// or https:// URL, got '{trimmed}'"
        ))
    }
}

/// `SMTP_URL` (docs/spec/email.md): `smtp://` or `smtps://`, a host, and only the
/// `tls=required` option (or empty, which means unset).
fn smtp_url(value: &str) -> Result<String, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let url = reqwest::Url::parse(trimmed).map_err(|e| format!("not a URL ({e})"))?;
    if !matches!(url.scheme(), "smtp" | "smtps") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "expected smtp://host:port, smtp://host:port?tls=required or smtps://host:port, got '{trimmed}'"
        ));
    }
    match url.query() {
        None | Some("tls=required") | Some("tls=opportunistic") => Ok(trimmed.to_string()),
        Some(other) => Err(format!("unknown SMTP_URL option '{other}' (tls=required)")),
    }
}

/// `MAIL_FROM`: one plain address, `local@domain` (or empty, which means unset).
fn mail_address(value: &str) -> Result<String, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    match trimmed.split_once('@') {
        Some((local, domain))
            if !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !trimmed.contains(|c: char| c.is_whitespace() || "<>,;\"".contains(c)) =>
        {
            Ok(trimmed.to_ascii_lowercase())
        }
        _ => Err(format!(
            "expected one address like support@shop.example, got '{trimmed}'"
        )),
    }
}

/// `IMAP_URL`: `imap://` or `imaps://` with a user, a password and a host (or empty).
fn imap_url(value: &str) -> Result<String, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    desk::channels::mail::ImapTarget::parse(trimmed).map(|_| trimmed.to_string())
}

/// A provider metadata key: 1 to 40 characters, no `[` or `]` (Stripe's limits).
fn metadata_key(value: &str) -> Result<String, String> {
    let key = value.trim();
    if key.is_empty() || key.chars().count() > 40 || key.contains(['[', ']']) {
        return Err(format!(
            "expected a metadata key of 1 to 40 characters without square brackets, got '{key}'"
        ));
    }
    Ok(key.to_string())
}

/// The configuration the settings describe: defaults filled in, empty strings unset.
pub fn config_of(settings: &Settings) -> Config {
    let set = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
    let data_dir = settings.data_dir.clone();
    Config {
        database_url: set(&settings.database_url)
            .unwrap_or_else(|| store::Db::sqlite_url(&data_dir)),
        payments_url: set(&settings.payments_url),
        payments_api_key: set(&settings.payments_api_key)
            .unwrap_or_else(|| DEFAULT_PAYMENTS_KEY.to_string()),
        payments_order_key: settings.payments_order_key.clone(),
        webhook_secret: set(&settings.payments_webhook_secret)
            .unwrap_or_else(|| DEFAULT_WEBHOOK_SECRET.to_string()),
        fixtures_dir: settings
            .fixtures_dir
            .clone()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or_else(default_fixtures_dir),
        llm: set(&settings.llm_base_url).map(|base_url| LlmConfig {
            base_url,
            api_key: set(&settings.llm_api_key),
            model: settings.llm_model.clone(),
            context_tokens: settings.llm_context_tokens as usize,
            timeout: Duration::from_secs(settings.llm_timeout_secs),
            max_tokens: settings.llm_max_tokens,
        }),
        provider_timeout: Duration::from_secs(10),
        provider_backoff: Duration::from_millis(500),
        approval_ttl: Duration::from_secs(3600 * settings.approval_ttl_hours),
        retention: RetentionWindows {
            message_days: settings.message_retention_days,
            run_event_days: settings.run_event_retention_days,
            audit_days: settings.audit_retention_days,
        },
        public_url: set(&settings.public_url),
        default_language: settings.default_language,
        escalation_routing: settings.escalation_routing,
        shadow_mode: settings.shadow_mode,
        policy_second_approver: settings.policy_second_approver,
        metrics_token: set(&settings.metrics_token),
        metrics_cache: Duration::from_secs(settings.metrics_cache_secs),
        channels: ChannelConfig {
            mail: MailConfig {
                smtp_url: set(&settings.smtp_url),
                from: set(&settings.mail_from),
                imap_url: set(&settings.imap_url),
                inbound_token: set(&settings.inbound_email_token),
                authserv_id: set(&settings.mail_authserv_id),
                retry: Duration::from_secs(settings.mail_retry_secs),
            },
        },
        group_roles: settings.group_roles.clone().unwrap_or_default(),
        scim_default_role: settings
            .scim_default_role
            .unwrap_or(desk::auth::StaffRole::Agent),
        password_sign_in: settings.password_sign_in,
        oidc: oidc_settings(settings),
        worker_concurrency: settings.worker_concurrency.map(usize::from),
        work_lease: Duration::from_secs(settings.work_lease_secs),
        defaulted_secrets: SECRET_VARS
            .into_iter()
            .zip([
                &settings.payments_webhook_secret,
                &settings.payments_api_key,
            ])
            .filter(|(_, value)| set(value).is_none())
            .map(|(name, _)| name)
            .collect(),
        watchdog: WatchdogPeriods::from_minutes(
            settings.watchdog_stuck_minutes,
            settings.watchdog_handoff_minutes,
        ),
        reply_targets: ReplyTargets {
            agents_hours: settings.reply_target_agents_hours,
            supervisors_hours: settings.reply_target_supervisors_hours,
        },
        data_dir,
    }
}

/// Reads the environment alone (tests, benches, the eval harness); `data_dir` as if
/// given by `--data-dir`. The CLI parses its flags instead (`cli::main`), where an
/// invalid variable is reported and stops start-up; here it is a broken test setup.
pub fn config_from_env(data_dir: &Path) -> Config {
    #[derive(clap::Parser)]
    struct EnvOnly {
        #[command(flatten)]
        settings: Settings,
    }
    let parsed = <EnvOnly as clap::Parser>::try_parse_from([
        std::ffi::OsStr::new("refund-agent"),
        "--data-dir".as_ref(),
        data_dir.as_os_str(),
    ]);
    match parsed {
        Ok(only) => config_of(&only.settings),
        Err(e) => panic!("invalid configuration in the environment: {e}"),
    }
}
