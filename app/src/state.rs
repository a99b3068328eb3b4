//! What every part of the app works with: the store, the clock, the provider, the
//! policies and their index, the model, and the settings read once at start. Built by
//! [`crate::build_state`]; the web layer holds it as axum state, the worker and the CLI
//! pass it down. It sits on a low floor and knows nothing of HTTP.

use std::sync::Arc;

use policy_engine::PolicySet;
use rag_index::PolicyIndex;
use tokio::sync::Notify;

use crate::agent::Model;
use crate::billing::BillingSource;
use crate::clock::Clock;
use crate::payments::PaymentsClient;
use crate::store::Db;

#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub payments: PaymentsClient,
    pub policies: Arc<PolicySet>,
    pub index: Arc<PolicyIndex>,
    pub model: Arc<dyn Model>,
    /// What runs are made with (model, prompt and tool schema versions), recorded on each.
    pub versions: Arc<harness::Versions>,
    /// Where tools and the workflow read billing records (live: store + provider).
    pub billing: Arc<dyn BillingSource>,
    /// Wakes the background worker when new work is queued.
    pub wake: Arc<Notify>,
    /// Names this process in leases.
    pub instance_id: String,
    /// Whether cookies get `Secure` (served over TLS).
    pub secure_cookies: bool,
    /// Age after which an unanswered approval request expires.
    pub approval_ttl_ms: i64,
    /// Verifies `Stripe-Signature` on provider webhooks.
    pub webhook_secret: String,
    /// Live shadow mode: the agent's decisions are recorded, humans decide by hand.
    pub shadow_mode: bool,
    /// Agent runs one worker pass advances at the same time.
    pub worker_concurrency: usize,
    /// When the stuck-run watchdog flags a run, and when it hands the case over.
    pub watchdog: crate::config::WatchdogPeriods,
}
