//! The desk: the order of things — open a ticket, investigate, decide, approve, execute,
//! settle, reconcile — and the adapters for what lies outside (the model, mail, the
//! identity provider; the payment provider's is the `payments-adapter` crate below it).
//!
//! The model investigates through read-only tools (`agent`), the policy engine decides
//! (`workflow`), a human approves a fingerprinted refund (`approvals`), only `refunds`
//! moves money (through `payments_adapter`), and people are told through `channels`.
//! Pure rules live below it in `domain` and `policy-engine`, the pool and migrations in
//! `store`, HTTP in `web` (ARCHITECTURE.md, "Code map"). What only builds on the workflow
//! stands in crates above it, which it never calls: shadow mode (`shadow`: replay, the
//! blind hand decision), the shop importer (`shop-import`), backtesting, policy authoring
//! and the customer's data (whose worker chores it runs through `chores`).

pub mod agent;
pub mod approvals;
pub mod audit;
pub mod auth;
pub mod billing;
pub mod cases;
pub mod channels;
pub mod chores;
pub mod clock;
pub mod columns;
pub mod config;
pub mod conversation;
pub mod csat;
pub mod customer;
pub mod customer_files;
pub mod error;
pub mod gauges;
pub mod investigation;
pub mod lease;
pub mod mail;
pub mod metrics;
pub mod onboarding;
pub mod policies;
pub mod presence;
pub mod qa;
pub mod reach;
pub mod reconcile;
pub mod refunds;
pub use domain::replies;
pub mod rollout;
pub mod runs;
pub mod saved_replies;
pub mod schema;
pub mod shadow_pairs;
pub mod state;
pub mod stop;
pub use domain::states;
pub mod tickets;
pub mod translations;
pub mod views;
pub mod watchdog;
pub mod webhooks;
pub mod worker;
pub mod workflow;
pub mod world;

use std::sync::Arc;

use crate::agent::Model;
use crate::clock::Clock;
use crate::config::Config;
use crate::state::Services;
use payments_adapter::PaymentsClient;
use store::Db;

/// Claim loops per worker when `WORKER_CONCURRENCY` is not set.
pub const DEFAULT_WORKER_CONCURRENCY: usize = 4;

/// Opens the store, loads the policies and the index, and wires the state.
pub async fn build_state(
    config: &Config,
    payments_url: &str,
    clock: Arc<dyn Clock>,
    model: Arc<dyn Model>,
) -> anyhow::Result<Services> {
    std::fs::create_dir_all(&config.data_dir)?;
    let db = Db::connect(&config.database_url).await?;
    // The database is the source of truth; the files seed an empty one.
    let policies = policies::load(&db, &config.policies_dir()).await?;
    let index_dir = config.index_dir();
    let policies_for_index = policies.set();
    let index =
        tokio::task::spawn_blocking(move || policies::open_index(&index_dir, &policies_for_index))
            .await??;
    let payments = PaymentsClient::new(
        payments_url,
        &config.payments_api_key,
        config.provider_timeout,
        config.provider_backoff,
    )?
    .with_order_key(&config.payments_order_key);
    let billing = Arc::new(billing::LiveBilling {
        db: db.clone(),
        payments: payments.clone(),
    });
    lease::set(config.work_lease);
    Ok(Services {
        steps: runs::StepWriter::start(db.clone()),
        clock,
        payments,
        policies,
        index: Arc::new(index),
        versions: Arc::new(agent::versions(model.as_ref())),
        model,
        billing,
        wake: Arc::new(tokio::sync::Notify::new()),
        instance_id: store::new_id("inst"),
        secure_cookies: config
            .public_url
            .as_deref()
            .is_some_and(|u| u.starts_with("https://")),
        approval_ttl_ms: config.approval_ttl.as_millis() as i64,
        retention: config.retention,
        chores: Default::default(),
        webhook_secret: config.webhook_secret.clone(),
        shadow_mode: config.shadow_mode,
        default_language: config.default_language,
        escalation_routing: config.escalation_routing,
        // Four claim loops on either backend: their steps share transactions through the
        // group writer (`runs::StepWriter`), and one loop's provider and tool calls overlap
        // another's writes (on SQLite 117 → 138 tickets/s, BENCHMARKS.md).
        worker_concurrency: config
            .worker_concurrency
            .unwrap_or(DEFAULT_WORKER_CONCURRENCY),
        watchdog: config.watchdog,
        reply_targets: config.reply_targets,
        history_dir: config.fixtures_dir.join("history"),
        policy_second_approver: config.policy_second_approver,
        metrics_token: config.metrics_token.clone(),
        metrics_cache: Arc::new(gauges::GaugeCache::new(config.metrics_cache)),
        public_url: config.public_url.clone(),
        oidc: match config.oidc.clone() {
            Some(settings) => Some(Arc::new(auth::oidc::Oidc::new(settings)?)),
            None => None,
        },
        group_roles: Arc::new(config.group_roles.clone()),
        scim_default_role: config.scim_default_role,
        password_sign_in: config.password_sign_in,
        rollout_guards: Default::default(),
        channels: Arc::new(channels::Channels::from_config(
            &config.channels,
            config.public_url.as_deref(),
        )?),
        db,
    })
}
