//! Provider webhooks: `POST /api/v1/webhooks/payments`.
//!
//! The raw body is checked against `Stripe-Signature` (HMAC-SHA256, any `v1` may match,
//! constant-time, 300 s tolerance against the app's `Clock`) by the payments adapter's
//! own `payments_adapter::signature::verify`, before anything is parsed
//! (docs/spec/invariants.md #12). A
//! refund event then moves its intent forward only: each event id is recorded in
//! `webhook_events` in the same transaction as the change it causes, so a duplicate
//! delivery changes nothing, and a late or out-of-order event can never move an intent
//! backwards (`refunds::advance_intent`). The provider's current record
//! (`GET /v1/refunds/{id}`) is what is applied, never the event's copy, so the order of
//! deliveries does not matter; when the provider cannot be read the event is answered
//! 502 and not recorded, so the provider delivers it again (a signed event
//! never decides an outcome by its own word). The case status and the customer's reply
//! follow in the same transaction.
//!
//! Charge and dispute events, and refunds made elsewhere, keep what staff are shown
//! current: `charges` reads the charge back and voids the proposals that
//! rested on it.
//!
//! What it deliberately does not do: trust an unsigned or stale body, create intents
//! (a refund made elsewhere is left to reconciliation, which reports it), or act on
//! event types it does not know (they are acknowledged and ignored).

pub mod charges;

use serde::{Deserialize, Serialize};
use sqlx::Row;
use tokio::sync::Notify;

use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::refunds::{self, Sender};
use payments_adapter::ProviderRefund;
use store::Db;

/// The environment variable holding the webhook signing secret (`Config::webhook_secret`
/// reads it; `Config::check` refuses its public default with a real provider).
pub const WEBHOOK_SECRET_ENV: &str = "PAYMENTS_WEBHOOK_SECRET";

/// Stripe's default tolerance for the signed timestamp.
pub const TOLERANCE_SECS: i64 = payments_adapter::signature::DEFAULT_TOLERANCE_SECS;

/// Points the provider's webhook deliveries (the payments mock's `POST /__mock/webhooks`)
/// at this app's receiver, `{app_url}/api/v1/webhooks/payments`. Only the mock has this
/// admin endpoint; a real provider is configured in its dashboard.
pub async fn point_provider_webhooks(base_url: &str, app_url: &str) -> anyhow::Result<()> {
    let url = format!("{}/api/v1/webhooks/payments", app_url.trim_end_matches('/'));
    let resp = reqwest::Client::new()
        .post(format!(
            "{}/__mock/webhooks",
            base_url.trim_end_matches('/')
        ))
        .json(&serde_json::json!({ "url": url }))
        .send()
        .await?;
    if !resp.status().is_success() {
        anyhow::bail!(
            "the payment provider refused the webhook endpoint: {} {}",
            resp.status(),
            resp.text().await.unwrap_or_default()
        );
    }
    Ok(())
}

/// A provider event, as much of it as the app reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: EventData,
    #[serde(default)]
    pub request: Option<EventRequest>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventData {
    pub object: serde_json::Value,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventRequest {
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// What the receiver did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The intent moved forward.
    Applied,
    /// A known refund, but nothing new (already there, or a late older event).
    Unchanged,
    /// This event id was processed before.
    Duplicate,
    /// A refund that no intent of ours asked for (made elsewhere): left to reconcile.
    Unmatched,
    /// The provider's refund differs from the intent (amount, currency): logged, not
    /// applied; reconciliation reports it.
    Mismatch,
    /// An event type the app does not act on.
    Ignored,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Unchanged => "unchanged",
            Outcome::Duplicate => "duplicate",
            Outcome::Unmatched => "unmatched",
            Outcome::Mismatch => "mismatch",
            Outcome::Ignored => "ignored",
        }
    }
}

const REFUND_EVENTS: [&str; 4] = [
    "refund.created",
    "refund.updated",
    "refund.failed",
    "charge.refund.updated",
];

/// Applies one (verified) event, once.
///
/// Long because the event id is recorded in the same transaction as the change it
/// causes (each event processed once; a duplicate delivery changes nothing,
/// docs/spec/invariants.md #4): the checks and the write stay together.
pub async fn process_event(
    s: Sender<'_>,
    wake: &Notify,
    versions: &harness::Versions,
    event: &Event,
) -> DomainResult<Outcome> {
    if event.id.is_empty() || event.id.len() > 255 {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidEvent,
            "an event needs an id of at most 255 characters",
        ));
    }
    if already_processed(s.db, &event.id).await? {
        return Ok(Outcome::Duplicate);
    }
    if charges::is_charge_event(&event.kind) {
        return charges::process_charge_event(s, versions, event).await;
    }
    if !REFUND_EVENTS.contains(&event.kind.as_str()) {
        return record_only(s, event, None, None, Outcome::Ignored).await;
    }
    let refund: ProviderRefund =
        serde_json::from_value(event.data.object.clone()).map_err(|e| {
            DomainError::bad_request(ErrorCode::InvalidEvent, format!("not a refund: {e}"))
        })?;
    let key = event
        .request
        .as_ref()
        .and_then(|r| r.idempotency_key.as_deref());
    let Some(intent_id) = find_intent(s.db, &refund, key).await? else {
        let charge = refund.charge.as_deref();
        return charges::refund_made_elsewhere(s, versions, event, &refund.id, charge).await;
    };
    // The provider's record now is the truth; the event may be old or out of order.
    let current = match s.payments.get_refund(&refund.id).await {
        Ok(current) => current,
        Err(payments_adapter::ProviderError::NotFound(_)) => {
            // The provider has no such refund: a signed event about nothing changes
            // nothing.
            tracing::warn!(refund_id = %refund.id, "webhook names a refund the provider does not have");
            return record_only(s, event, Some(&refund.id), None, Outcome::Unmatched).await;
        }
        Err(e) => {
            // Docs/spec/invariants.md #5 in spirit: the event's own copy never decides an
            // outcome (whoever holds the secret could mark an unsent refund succeeded).
            // Nothing is recorded, so the provider's retry is processed afresh; until then
            // the worker's polling and reconciliation read the provider themselves.
            tracing::warn!(refund_id = %refund.id, error = %e, "could not re-read the refund; event refused for a retry");
            return Err(DomainError::Provider(format!(
                "refund {} could not be read back from the provider; retry the event later",
                refund.id
            )));
        }
    };
    for _ in 0..3 {
        let Some(intent) = refunds::load_intent(s.db, &intent_id).await? else {
            return record_only(s, event, Some(&current.id), None, Outcome::Unmatched).await;
        };
        if !refunds::refund_matches_intent(&current, &intent) {
            tracing::error!(intent_id = %intent.id, refund_id = %current.id, "webhook refund differs from its intent; not applied");
            return record_only(
                s,
                event,
                Some(&current.id),
                Some(&intent.id),
                Outcome::Mismatch,
            )
            .await;
        }
        let now = s.clock.now_ms();
        let mut tx = s.db.begin().await?;
        if !insert_event(
            &mut tx,
            event,
            Some(&current.id),
            Some(&intent.id),
            "applied",
            now,
        )
        .await?
        {
            return Ok(Outcome::Duplicate);
        }
        let moved = refunds::advance_intent(
            &mut tx,
            &intent.id,
            refunds::provider_status(&current),
            Some(&current.id),
            None,
            now,
        )
        .await?;
        if !moved {
            sqlx::query("UPDATE webhook_events SET outcome = 'unchanged' WHERE event_id = $1")
                .bind(&event.id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            return Ok(Outcome::Unchanged);
        }
        match refunds::settle_case_status_tx(&mut tx, s.clock, &intent.case_id).await {
            Ok(_) => {
                tx.commit().await?;
                wake.notify_one();
                return Ok(Outcome::Applied);
            }
            // The worker or another delivery moved the case meanwhile: start again.
            Err(DomainError::Conflict { .. }) => drop(tx),
            Err(e) => return Err(e),
        }
    }
    Err(anyhow::anyhow!("case kept changing while applying event {}", event.id).into())
}

async fn already_processed(db: &Db, event_id: &str) -> DomainResult<bool> {
    let row = sqlx::query("SELECT 1 AS seen FROM webhook_events WHERE event_id = $1")
        .bind(event_id)
        .fetch_optional(db.pool())
        .await?;
    Ok(row.is_some())
}

/// Inserts the event id unless present; `false` when it was (a duplicate delivery).
async fn insert_event(
    tx: &mut store::Tx<'_>,
    event: &Event,
    refund_id: Option<&str>,
    intent_id: Option<&str>,
    outcome: &str,
    now: i64,
) -> DomainResult<bool> {
    let done = sqlx::query(
        "INSERT INTO webhook_events (event_id, event_type, refund_id, intent_id, outcome, received_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (event_id) DO NOTHING",
    )
    .bind(&event.id)
    .bind(&event.kind)
    .bind(refund_id)
    .bind(intent_id)
    .bind(outcome)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

async fn record_only(
    s: Sender<'_>,
    event: &Event,
    refund_id: Option<&str>,
    intent_id: Option<&str>,
    outcome: Outcome,
) -> DomainResult<Outcome> {
    let mut tx = s.db.begin().await?;
    let inserted = insert_event(
        &mut tx,
        event,
        refund_id,
        intent_id,
        outcome.as_str(),
        s.clock.now_ms(),
    )
    .await?;
    tx.commit().await?;
    Ok(if inserted {
        outcome
    } else {
        Outcome::Duplicate
    })
}

/// The intent a provider refund belongs to: by its refund id, else by our
/// `metadata.refund_intent_id` (on the same charge), else by the idempotency key of the
/// request that created it (payments.md §4.2, matching keys in priority order).
async fn find_intent(
    db: &Db,
    refund: &ProviderRefund,
    idempotency_key: Option<&str>,
) -> DomainResult<Option<String>> {
    let pool = db.pool();
    if let Some(row) = sqlx::query("SELECT id FROM refund_intents WHERE provider_refund_id = $1")
        .bind(&refund.id)
        .fetch_optional(pool)
        .await?
    {
        return Ok(Some(row.try_get("id")?));
    }
    if let Some(intent_id) = refund.intent_id() {
        if let Some(row) =
            sqlx::query("SELECT id FROM refund_intents WHERE id = $1 AND charge_id = $2")
                .bind(intent_id)
                .bind(&refund.charge)
                .fetch_optional(pool)
                .await?
        {
            return Ok(Some(row.try_get("id")?));
        }
    }
    if let Some(key) = idempotency_key {
        if let Some(row) = sqlx::query(
            "SELECT id FROM refund_intents WHERE idempotency_key = $1 AND charge_id = $2",
        )
        .bind(key)
        .bind(&refund.charge)
        .fetch_optional(pool)
        .await?
        {
            return Ok(Some(row.try_get("id")?));
        }
    }
    Ok(None)
}
