//! Refund intents and their execution: the only code that moves money.
//!
//! An intent is created inside the approval's transaction, with an idempotency key
//! derived from the business action (case, charge, refund kind) — stored before any call
//! (docs/spec/invariants.md #4). Right before the first submission the facts are re-read from the
//! provider and the policy re-run; a different fingerprint voids the approval (invariants
//! 2 and 3). A lost answer leaves the intent `pending_verification` until reconciliation
//! finds the provider's refund (invariant 5). Cases are claimed with a lease, so two
//! workers never execute one case.
//!
//! Intent states only move forward (`advance_intent`): `created → submitting →
//! pending | pending_verification → succeeded | failed | canceled`, with `needs_review`
//! for what a human must decide (a key past its ~23 h safe age that the provider never
//! answered for, an idempotency-parameter bug, a mismatching amount). A business
//! refusal re-reads the charge first: `charge_already_refunded` by our own refund
//! adopts it. Worker, webhooks and reconciliation may learn things in any order; the
//! monotonic update makes the order irrelevant, and the case status is always derived
//! from the intents (`settle_case_status_tx`), with the customer's reply in the same
//! transaction.

mod execute;
pub use execute::{
    cases_to_execute, check_restored, execute_case, reconcile_intent, restore_gate_closed,
    RestoredIntent, PENDING_RECHECK_MAX_MS, PENDING_RECHECK_MIN_MS,
};
mod found;
pub use found::{adopt_found_refund, Found, FOUND_AFTER_RESTORE};
mod settle;
pub use settle::{settle_case, settle_case_status_tx};
mod views;
pub use views::{
    customer_refund, customer_refunds, past_refunds, refund_views, PastRefund, PastRefunds,
    RefundView,
};

use crate::columns::stored_id;
use domain::ids::{CaseId, ChargeId, RefundId};
use std::collections::BTreeMap;

use policy_engine::{Currency, Decision, Money};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::cases::Case;
use crate::clock::Clock;
use crate::error::DomainResult;
use crate::runs::Queue;
use crate::workflow::Rules;
use payments_adapter::{PaymentsClient, ProviderRefund, RefundRequest};
use store::{new_id, Db, Tx};

pub use crate::states::IntentStatus;

/// What sends refunds and reads them back: the store the intents live in, the time, and
/// the provider (over HTTP, docs/spec/invariants.md #4 and 5).
#[derive(Clone, Copy)]
pub struct Sender<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub payments: &'a PaymentsClient,
}

/// What executes an approved case: the sender; the rules, re-run at the payment boundary
/// (invariant 3); the run queue, for the re-investigation of an approval the fresh facts
/// void; the name this process leases cases under.
#[derive(Clone, Copy)]
pub struct Executor<'a> {
    pub sender: Sender<'a>,
    pub rules: Rules<'a>,
    pub queue: Queue<'a>,
    pub instance_id: &'a str,
}

/// The only refund kind so far: refund of a charge the policy allows.
pub const KIND_POLICY_REFUND: &str = "policy_refund";
/// Past this age a key may have expired at the provider (Stripe keeps keys ≥ 24 h): an
/// unresolved intent then needs a human, never a resend.
const KEY_SAFE_AGE_MS: i64 = 23 * 3600 * 1000;

#[derive(Debug, Clone)]
pub struct Intent {
    pub id: RefundId,
    pub case_id: CaseId,
    pub charge_id: ChargeId,
    pub amount: Money,
    pub idempotency_key: String,
    pub status: IntentStatus,
    pub provider_refund_id: Option<String>,
    pub attempts: i64,
    pub version: i64,
    pub created_at: i64,
    /// When the key was first sent (its age at the provider counts from here).
    pub first_submitted_at: Option<i64>,
    pub last_error: Option<String>,
}

/// `rd_` + SHA-256 of the business action: the same logical refund always gets the same
/// key, across retries, restarts and workers.
pub fn idempotency_key(case_id: &str, charge_id: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("refund|{case_id}|{charge_id}|{kind}").as_bytes());
    format!("rd_{}", &hex::encode(digest)[..48])
}

fn intent_from_row(r: &sqlx::any::AnyRow) -> DomainResult<Intent> {
    let currency: Currency = r
        .try_get::<String, _>("currency")?
        .parse()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Intent {
        id: stored_id(r, "id", RefundId::parse)?,
        case_id: stored_id(r, "case_id", CaseId::parse)?,
        charge_id: stored_id(r, "charge_id", ChargeId::parse)?,
        amount: Money::from_minor(r.try_get("amount_minor")?, currency)
            .map_err(|e| anyhow::anyhow!("{e}"))?,
        idempotency_key: r.try_get("idempotency_key")?,
        status: IntentStatus::from_stored(&r.try_get::<String, _>("status")?)?,
        provider_refund_id: r.try_get("provider_refund_id")?,
        attempts: r.try_get("attempts")?,
        version: r.try_get("version")?,
        created_at: r.try_get("created_at")?,
        first_submitted_at: r.try_get("first_submitted_at")?,
        last_error: r.try_get("last_error")?,
    })
}

const INTENT_COLUMNS: &str =
    "id, case_id, charge_id, amount_minor, currency, idempotency_key, status, provider_refund_id, attempts, version, created_at, first_submitted_at, last_error";

pub async fn intents(db: &Db, case_id: &str) -> DomainResult<Vec<Intent>> {
    intents_from(db.pool(), case_id).await
}

async fn intents_from(
    pool: impl sqlx::Executor<'_, Database = sqlx::Any>,
    case_id: &str,
) -> DomainResult<Vec<Intent>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {INTENT_COLUMNS} FROM refund_intents WHERE case_id = $1 ORDER BY charge_id"
    )))
    .bind(case_id)
    .fetch_all(pool)
    .await?;
    rows.iter().map(intent_from_row).collect()
}

/// Creates the intents of an approved decision (inside the approval's transaction). A
/// voided intent that never reached the provider is reused; one that did is left alone.
pub async fn create_intents(
    tx: &mut Tx<'_>,
    case: &Case,
    approval_id: &str,
    decision: &Decision,
    now: i64,
) -> DomainResult<()> {
    for line in &decision.refunds {
        let key = idempotency_key(&case.id, &line.charge_id, KIND_POLICY_REFUND);
        let existing =
            sqlx::query("SELECT status, attempts FROM refund_intents WHERE idempotency_key = $1")
                .bind(&key)
                .fetch_optional(&mut **tx)
                .await?;
        match existing {
            None => {
                sqlx::query(
                    "INSERT INTO refund_intents (id, case_id, approval_id, charge_id, kind, amount_minor, currency, idempotency_key,
                         status, attempts, version, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'created', 0, 1, $9, $9)",
                )
                .bind(new_id("ri"))
                .bind(case.id.as_str())
                .bind(approval_id)
                .bind(&line.charge_id)
                .bind(KIND_POLICY_REFUND)
                .bind(line.amount.minor_units())
                .bind(line.amount.currency().code())
                .bind(&key)
                .bind(now)
                .execute(&mut **tx)
                .await?;
            }
            Some(row)
                if row.try_get::<String, _>("status")? == "void"
                    && row.try_get::<i64, _>("attempts")? == 0 =>
            {
                sqlx::query(
                    "UPDATE refund_intents SET status = 'created', approval_id = $1, amount_minor = $2, currency = $3,
                         version = version + 1, created_at = $4, updated_at = $4 WHERE idempotency_key = $5",
                )
                .bind(approval_id)
                .bind(line.amount.minor_units())
                .bind(line.amount.currency().code())
                .bind(now)
                .bind(&key)
                .execute(&mut **tx)
                .await?;
            }
            Some(_) => {
                tracing::warn!(case_id = %case.id, charge_id = %line.charge_id, "refund intent already submitted; not creating another");
            }
        }
    }
    Ok(())
}

/// Voids the case's refund intents that were never sent (no attempt made): the case
/// will not send them. An intent with an attempt stays, for verification — it may have
/// reached the provider (docs/spec/invariants.md #4).
pub(crate) async fn void_unsent(tx: &mut Tx<'_>, case_id: &str, now: i64) -> DomainResult<()> {
    sqlx::query("UPDATE refund_intents SET status = 'void', version = version + 1, updated_at = $1 WHERE case_id = $2 AND status = 'created' AND attempts = 0")
        .bind(now)
        .bind(case_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Intent statuses a refund can still leave: the provider's answer is not final yet.
pub const OPEN_STATUSES: [IntentStatus; 5] = [
    IntentStatus::Created,
    IntentStatus::Submitting,
    IntentStatus::Pending,
    IntentStatus::PendingVerification,
    IntentStatus::NeedsReview,
];

/// From which statuses an intent may move to `to`. An intent never moves backwards: a
/// provider outcome (`pending`, then `succeeded` / `failed` / `canceled`) is only ever
/// replaced by a later one, and "unknown" never overwrites a known outcome — whatever
/// order the worker, the reconciler and the webhooks learn things in.
fn allowed_from(to: IntentStatus) -> &'static [IntentStatus] {
    use crate::states::IntentStatus::*;
    match to {
        Succeeded | Failed | Canceled | Pending => &OPEN_STATUSES,
        NeedsReview => &[Created, Submitting, PendingVerification, NeedsReview],
        PendingVerification | Submitting => &[Created, Submitting, PendingVerification],
        // An intent is created by `create_intents` and voided by `void_unsent`, never
        // moved there.
        Created | Void => &[],
    }
}

/// Moves an intent to `to` if that is a step forward (see [`allowed_from`]); returns
/// whether it moved. Works inside a caller's transaction or on a pooled connection.
pub async fn advance_intent(
    conn: &mut sqlx::AnyConnection,
    intent_id: &str,
    to: IntentStatus,
    provider_refund_id: Option<&str>,
    error: Option<&str>,
    now: i64,
) -> DomainResult<bool> {
    let from = allowed_from(to);
    if from.is_empty() {
        return Err(anyhow::anyhow!("an intent is never moved to '{to}'").into());
    }
    // The list is made of constants above, never of input.
    let from_sql = from
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE refund_intents SET status = $1, provider_refund_id = COALESCE($2, provider_refund_id), last_error = $3,
             version = version + 1, updated_at = $4 WHERE id = $5 AND status IN ({from_sql})"
    )))
    .bind(to.as_str())
    .bind(provider_refund_id)
    .bind(error)
    .bind(now)
    .bind(intent_id)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 1 {
        crate::metrics::record_refund(to.as_str());
    }
    Ok(done.rows_affected() == 1)
}

async fn update_intent(
    db: &Db,
    intent: &Intent,
    status: IntentStatus,
    provider_refund_id: Option<&str>,
    error: Option<&str>,
    now: i64,
) -> DomainResult<bool> {
    let mut conn = db.pool().acquire().await?;
    let moved = advance_intent(
        &mut conn,
        &intent.id,
        status,
        provider_refund_id,
        error,
        now,
    )
    .await?;
    if !moved {
        tracing::info!(intent_id = %intent.id, to = %status, "intent already past this state; left as it is");
    }
    Ok(moved)
}

/// Our intent status for a provider refund status.
pub fn provider_status(refund: &ProviderRefund) -> IntentStatus {
    match refund.status() {
        "succeeded" => IntentStatus::Succeeded,
        "pending" | "requires_action" => IntentStatus::Pending,
        "canceled" => IntentStatus::Canceled,
        _ => IntentStatus::Failed,
    }
}

/// Whether a provider refund is the one this intent asked for (charge, amount, currency).
pub fn refund_matches_intent(refund: &ProviderRefund, intent: &Intent) -> bool {
    refund.is_on(&intent.charge_id)
        && refund.amount == intent.amount.minor_units()
        && refund
            .currency
            .eq_ignore_ascii_case(intent.amount.currency().code())
}

/// How long ago the intent's key was first used at the provider (or created, before).
pub fn key_age_ms(intent: &Intent, now: i64) -> i64 {
    now - intent.first_submitted_at.unwrap_or(intent.created_at)
}

/// The exact request an intent sends, on every attempt: the same key and the same
/// parameters, so the provider replays rather than repeats (docs/spec/invariants.md #4).
pub fn refund_request(intent: &Intent) -> RefundRequest {
    let mut metadata = BTreeMap::new();
    metadata.insert("refund_intent_id".to_string(), intent.id.to_string());
    metadata.insert("case_id".to_string(), intent.case_id.to_string());
    RefundRequest {
        charge_id: intent.charge_id.to_string(),
        amount: intent.amount,
        idempotency_key: intent.idempotency_key.clone(),
        metadata,
    }
}

/// What one step of execution or reconciliation did to an intent (for logs, tests and
/// the reconciliation report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Step {
    /// The provider answered the create (first answer or a replay): its refund adopted.
    Accepted { refund_id: String, status: String },
    /// Found among the charge's refunds by `metadata.refund_intent_id`, and adopted.
    AdoptedByMetadata { refund_id: String, status: String },
    /// The known provider refund was read again (`GET /v1/refunds/{id}`).
    Polled { refund_id: String, status: String },
    /// The outcome could not be known: the intent is `pending_verification`.
    Unknown { reason: String },
    /// Nothing reached the provider (e.g. plain rate limiting): tried again later.
    NotSent { reason: String },
    /// The provider refused for a business reason and holds no refund of ours: final.
    Refused { reason: String },
    /// The provider keeps a stored error for our key and holds no refund of ours.
    NotAtProvider { reason: String },
    /// A human must decide (key too old to resend, our bug, mismatching amounts).
    NeedsReview { reason: String },
    /// Nothing to do, or someone else moved the intent first.
    Unchanged,
}

pub async fn load_intent(db: &Db, intent_id: &str) -> DomainResult<Option<Intent>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {INTENT_COLUMNS} FROM refund_intents WHERE id = $1"
    )))
    .bind(intent_id)
    .fetch_optional(db.pool())
    .await?;
    row.as_ref().map(intent_from_row).transpose()
}
