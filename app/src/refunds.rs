//! Refund intents and their execution: the only code that moves money.
//!
//! An intent is created inside the approval's transaction, with an idempotency key
//! derived from the business action (case, charge, refund kind) — stored before any call
//! (SPEC invariant 4). Right before the first submission the facts are re-read from the
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

use std::collections::BTreeMap;

use policy_engine::{Currency, Decision, Money};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::cases::{self, Case, CaseStatus};
use crate::error::{AppError, AppResult};
use crate::payments::{ProviderError, ProviderRefund, RefundRequest};
use crate::replies::CustomerRefundView;
use crate::state::AppState;
use crate::store::{new_id, Db, Tx};
use crate::tickets;

/// The only refund kind so far: refund of a charge the policy allows.
pub const KIND_POLICY_REFUND: &str = "policy_refund";
/// Past this age a key may have expired at the provider (Stripe keeps keys ≥ 24 h): an
/// unresolved intent then needs a human, never a resend.
const KEY_SAFE_AGE_MS: i64 = 23 * 3600 * 1000;

#[derive(Debug, Clone)]
pub struct Intent {
    pub id: String,
    pub case_id: String,
    pub charge_id: String,
    pub amount: Money,
    pub idempotency_key: String,
    pub status: String,
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

fn intent_from_row(r: &sqlx::any::AnyRow) -> AppResult<Intent> {
    let currency: Currency = r
        .try_get::<String, _>("currency")?
        .parse()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Intent {
        id: r.try_get("id")?,
        case_id: r.try_get("case_id")?,
        charge_id: r.try_get("charge_id")?,
        amount: Money::from_minor(r.try_get("amount_minor")?, currency)
            .map_err(|e| anyhow::anyhow!("{e}"))?,
        idempotency_key: r.try_get("idempotency_key")?,
        status: r.try_get("status")?,
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

pub async fn intents(db: &Db, case_id: &str) -> AppResult<Vec<Intent>> {
    intents_from(db.pool(), case_id).await
}

async fn intents_from(pool: &sqlx::AnyPool, case_id: &str) -> AppResult<Vec<Intent>> {
    let rows = sqlx::query(&format!(
        "SELECT {INTENT_COLUMNS} FROM refund_intents WHERE case_id = $1 ORDER BY charge_id"
    ))
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
) -> AppResult<()> {
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
                .bind(&case.id)
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

/// The shortest and longest wait before a worker asks the provider again about a
/// refund it accepted as `pending` (bank refunds can take days; webhooks usually say
/// first). In between, the wait is a quarter of the time since the refund was first
/// submitted, so the provider sees a geometric number of reads per refund, not one
/// per worker tick.
pub const PENDING_RECHECK_MIN_MS: i64 = 5_000;
pub const PENDING_RECHECK_MAX_MS: i64 = 600_000;

/// Cases a worker should execute or reconcile. A case whose intents all wait for a
/// human (`needs_review`) or are final is left out, so it cannot crowd out others; the
/// periodic reconciliation still looks at it. A `pending` intent is due again only
/// after its recheck wait (see [`PENDING_RECHECK_MIN_MS`]); every read of it moves its
/// `updated_at`.
pub async fn cases_to_execute(db: &Db, now: i64) -> AppResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT id FROM cases c WHERE c.status IN ('approved', 'executing', 'refund_pending', 'pending_verification')
           AND (c.lease_expires_at IS NULL OR c.lease_expires_at < $1)
           AND (c.status IN ('approved', 'executing') OR EXISTS (SELECT 1 FROM refund_intents ri WHERE ri.case_id = c.id
                AND (ri.status IN ('created', 'submitting', 'pending_verification')
                     OR (ri.status = 'pending' AND ri.updated_at <= $1 - CASE
                         WHEN ($1 - COALESCE(ri.first_submitted_at, ri.created_at)) / 4 < $2 THEN $2
                         WHEN ($1 - COALESCE(ri.first_submitted_at, ri.created_at)) / 4 > $3 THEN $3
                         ELSE ($1 - COALESCE(ri.first_submitted_at, ri.created_at)) / 4 END))))
         ORDER BY c.updated_at LIMIT 50",
    )
    .bind(now)
    .bind(PENDING_RECHECK_MIN_MS)
    .bind(PENDING_RECHECK_MAX_MS)
    .fetch_all(db.pool())
    .await?;
    rows.iter().map(|r| Ok(r.try_get("id")?)).collect()
}

/// Executes (or continues, or reconciles) an approved case. Safe to run again at any
/// point: every provider call reuses the intent's stored key.
pub async fn execute_case(state: &AppState, case_id: &str) -> AppResult<()> {
    let owner = state.instance_id.clone();
    let now = state.clock.now_ms();
    let Some((case, lease)) = cases::claim_case(&state.db, case_id, &owner, now).await? else {
        return Ok(());
    };
    let result = execute_claimed(state, case).await;
    cases::release_case(&state.db, &lease).await?;
    result
}

async fn execute_claimed(state: &AppState, case: Case) -> AppResult<()> {
    let ticket = tickets::load_ticket(&state.db, &case.ticket_id)
        .await?
        .ok_or(AppError::NotFound("ticket"))?;
    let mut case = case;
    if case.status == CaseStatus::Approved {
        // SPEC invariant 3: re-read the provider and re-run the policy right before the
        // first submission; any change in the fingerprint voids the approval.
        let approval = sqlx::query("SELECT fingerprint FROM approvals WHERE case_id = $1 AND proposal_seq = $2 AND status = 'valid' AND verdict = 'approved'")
            .bind(&case.id)
            .bind(case.proposal_seq)
            .fetch_optional(state.db.pool())
            .await?;
        let proposal: Option<crate::agent::Proposal> = case
            .proposal
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok());
        let (Some(approval), Some(proposal)) = (approval, proposal) else {
            return void_and_reinvestigate(
                state,
                &case,
                "no valid approval for the current proposal",
            )
            .await;
        };
        let approved_fingerprint: String = approval.try_get("fingerprint")?;
        let (facts, decision) = crate::workflow::decide_now(
            state,
            &ticket,
            proposal.request,
            proposal.order_id.as_deref(),
        )
        .await?;
        let fresh = cases::decision_fingerprint(
            &case.id,
            case.proposal_seq,
            &case.customer_id,
            facts.order_id.as_deref(),
            &decision,
            &crate::workflow::evidence_hash(&facts),
        );
        if !crate::auth::constant_time_eq(&fresh, &approved_fingerprint) {
            let why = change_description(case.decision().as_ref(), &decision);
            return void_and_reinvestigate(state, &case, &why).await;
        }
        let mut tx = state.db.begin().await?;
        cases::use_approval(&mut tx, &case).await?;
        case.version =
            cases::transition(&mut tx, &case, CaseStatus::Executing, state.clock.now_ms()).await?;
        case.status = CaseStatus::Executing;
        tx.commit().await?;
    }

    for intent in intents(&state.db, &case.id).await? {
        let step = match intent.status.as_str() {
            "created" | "submitting" => submit(state, &case, &intent).await?,
            "pending" | "pending_verification" => reconcile_intent(state, &case, &intent).await?,
            _ => Step::Unchanged,
        };
        if step != Step::Unchanged {
            tracing::info!(case_id = %case.id, intent_id = %intent.id, ?step, "refund step");
        }
    }
    settle_case(state, &case.id).await?;
    Ok(())
}

/// What changed between the approved decision and the fresh one, for the reviewer.
fn change_description(approved: Option<&Decision>, fresh: &Decision) -> String {
    let Some(approved) = approved else {
        return "facts changed since approval".into();
    };
    let mut changes = Vec::new();
    if approved.policy_versions != fresh.policy_versions {
        changes.push(format!(
            "policy versions {:?} → {:?}",
            approved.policy_versions, fresh.policy_versions
        ));
    }
    if approved.outcome != fresh.outcome || approved.reason_code != fresh.reason_code {
        changes.push(format!(
            "decision {:?}/{:?} → {:?}/{:?}",
            approved.outcome, approved.reason_code, fresh.outcome, fresh.reason_code
        ));
    }
    let lines = |d: &Decision| {
        d.refunds
            .iter()
            .map(|r| format!("{} {}", r.charge_id, r.amount))
            .collect::<Vec<_>>()
    };
    if lines(approved) != lines(fresh) {
        changes.push(format!(
            "refunds {:?} → {:?}",
            lines(approved),
            lines(fresh)
        ));
    }
    if changes.is_empty() {
        changes.push("provider records changed since approval".into());
    }
    format!("approval void: {}", changes.join("; "))
}

/// Voids the case's refund intents that were never sent (no attempt made): the case
/// will not send them. An intent with an attempt stays, for verification — it may have
/// reached the provider (SPEC invariant 4).
pub(crate) async fn void_unsent(tx: &mut Tx<'_>, case_id: &str, now: i64) -> AppResult<()> {
    sqlx::query("UPDATE refund_intents SET status = 'void', version = version + 1, updated_at = $1 WHERE case_id = $2 AND status = 'created' AND attempts = 0")
        .bind(now)
        .bind(case_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

async fn void_and_reinvestigate(state: &AppState, case: &Case, why: &str) -> AppResult<()> {
    let now = state.clock.now_ms();
    let mut tx = state.db.begin().await?;
    void_unsent(&mut tx, &case.id, now).await?;
    let fresh = cases::load_case_tx(&mut tx, &case.id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    cases::reinvestigate(&mut tx, state, &fresh, why).await?;
    tx.commit().await?;
    tracing::warn!(case_id = %case.id, why, "approval voided at the payment boundary");
    state.wake.notify_one();
    Ok(())
}

/// Intent statuses a refund can still leave: the provider's answer is not final yet.
pub const OPEN_STATUSES: [&str; 5] = [
    "created",
    "submitting",
    "pending",
    "pending_verification",
    "needs_review",
];

/// From which statuses an intent may move to `to`. An intent never moves backwards: a
/// provider outcome (`pending`, then `succeeded` / `failed` / `canceled`) is only ever
/// replaced by a later one, and "unknown" never overwrites a known outcome — whatever
/// order the worker, the reconciler and the webhooks learn things in.
fn allowed_from(to: &str) -> &'static [&'static str] {
    match to {
        "succeeded" | "failed" | "canceled" | "pending" => &OPEN_STATUSES,
        "needs_review" => &[
            "created",
            "submitting",
            "pending_verification",
            "needs_review",
        ],
        "pending_verification" | "submitting" => &["created", "submitting", "pending_verification"],
        _ => &[],
    }
}

/// Moves an intent to `to` if that is a step forward (see [`allowed_from`]); returns
/// whether it moved. Works inside a caller's transaction or on a pooled connection.
pub async fn advance_intent(
    conn: &mut sqlx::AnyConnection,
    intent_id: &str,
    to: &str,
    provider_refund_id: Option<&str>,
    error: Option<&str>,
    now: i64,
) -> AppResult<bool> {
    let from = allowed_from(to);
    if from.is_empty() {
        return Err(anyhow::anyhow!("unknown intent status '{to}'").into());
    }
    // The list is made of constants above, never of input.
    let from_sql = from
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let done = sqlx::query(&format!(
        "UPDATE refund_intents SET status = $1, provider_refund_id = COALESCE($2, provider_refund_id), last_error = $3,
             version = version + 1, updated_at = $4 WHERE id = $5 AND status IN ({from_sql})"
    ))
    .bind(to)
    .bind(provider_refund_id)
    .bind(error)
    .bind(now)
    .bind(intent_id)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 1 {
        crate::metrics::record_refund(to);
    }
    Ok(done.rows_affected() == 1)
}

async fn update_intent(
    db: &Db,
    intent: &Intent,
    status: &str,
    provider_refund_id: Option<&str>,
    error: Option<&str>,
    now: i64,
) -> AppResult<bool> {
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
        tracing::info!(intent_id = %intent.id, to = status, "intent already past this state; left as it is");
    }
    Ok(moved)
}

/// Our intent status for a provider refund status.
pub fn provider_status(refund: &ProviderRefund) -> &'static str {
    match refund.status.as_str() {
        "succeeded" => "succeeded",
        "pending" | "requires_action" => "pending",
        "canceled" => "canceled",
        _ => "failed",
    }
}

/// Whether a provider refund is the one this intent asked for (charge, amount, currency).
pub fn refund_matches_intent(refund: &ProviderRefund, intent: &Intent) -> bool {
    refund.charge == intent.charge_id
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
/// parameters, so the provider replays rather than repeats (SPEC invariant 4).
pub fn refund_request(intent: &Intent) -> RefundRequest {
    let mut metadata = BTreeMap::new();
    metadata.insert("refund_intent_id".to_string(), intent.id.clone());
    metadata.insert("case_id".to_string(), intent.case_id.clone());
    RefundRequest {
        charge_id: intent.charge_id.clone(),
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

/// Sends one intent with its stored key. The intent is marked `submitting` (and the
/// attempt counted) before the call, so a crash mid-call is visible afterwards.
async fn submit(state: &AppState, case: &Case, intent: &Intent) -> AppResult<Step> {
    let now = state.clock.now_ms();
    if intent.attempts > 0 && key_age_ms(intent, now) >= KEY_SAFE_AGE_MS {
        // The provider may have forgotten the key: a resend could execute twice. Look,
        // never send (payments.md §4.1).
        return resolve_without_sending(state, case, intent).await;
    }
    let marked = sqlx::query(
        "UPDATE refund_intents SET status = 'submitting', attempts = attempts + 1, version = version + 1, updated_at = $1,
             first_submitted_at = COALESCE(first_submitted_at, $1)
         WHERE id = $2 AND version = $3 AND status IN ('created', 'submitting', 'pending_verification')",
    )
    .bind(now)
    .bind(&intent.id)
    .bind(intent.version)
    .execute(state.db.pool())
    .await?;
    if marked.rows_affected() != 1 {
        return Ok(Step::Unchanged);
    }
    crate::metrics::record_refund("submitted");
    let request = refund_request(intent);
    let result = state.payments.create_refund(&request).await;
    let now = state.clock.now_ms();
    match result {
        Ok(refund) => {
            if !refund_matches_intent(&refund, intent) {
                let reason = format!(
                    "provider refund {} is {} {} on {}, not what the intent asked for",
                    refund.id, refund.amount, refund.currency, refund.charge
                );
                tracing::error!(case_id = %case.id, intent_id = %intent.id, reason, "BUG: provider answered with another refund");
                update_intent(
                    &state.db,
                    intent,
                    "needs_review",
                    Some(&refund.id),
                    Some(&reason),
                    now,
                )
                .await?;
                return Ok(Step::NeedsReview { reason });
            }
            tracing::info!(case_id = %case.id, refund_id = %refund.id, status = %refund.status, "provider accepted refund");
            let status = provider_status(&refund);
            update_intent(&state.db, intent, status, Some(&refund.id), None, now).await?;
            Ok(Step::Accepted {
                refund_id: refund.id,
                status: status.to_string(),
            })
        }
        Err(
            e @ (ProviderError::Unknown(_)
            | ProviderError::StoredServerError { .. }
            | ProviderError::Malformed(_)),
        ) => {
            // SPEC invariant 5: unknown stays unknown until the provider's records say.
            let reason = e.to_string();
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, reason, "refund outcome unknown; pending verification");
            update_intent(
                &state.db,
                intent,
                "pending_verification",
                None,
                Some(&reason),
                now,
            )
            .await?;
            if matches!(e, ProviderError::StoredServerError { .. }) {
                return Ok(Step::NotAtProvider { reason });
            }
            Ok(Step::Unknown { reason })
        }
        Err(ProviderError::Unavailable(reason)) => {
            // Nothing reached the provider: stay `submitting`; the same key goes again.
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, reason, "provider unavailable; will resend the same key");
            update_intent(&state.db, intent, "submitting", None, Some(&reason), now).await?;
            Ok(Step::NotSent { reason })
        }
        Err(ProviderError::IdempotencyMismatch(why)) => {
            // Our bug (the parameters under this key changed): never a "refund failed".
            tracing::error!(case_id = %case.id, intent_id = %intent.id, key = %intent.idempotency_key, why, "BUG: idempotency key reused with other parameters");
            let reason = format!("bug: idempotency key reused with other parameters: {why}");
            update_intent(&state.db, intent, "needs_review", None, Some(&reason), now).await?;
            Ok(Step::NeedsReview { reason })
        }
        Err(e @ (ProviderError::Rejected { .. } | ProviderError::NotFound(_))) => {
            // A business refusal is stored under the key: final for this key. Re-read the
            // charge: `charge_already_refunded` may be our own earlier refund.
            let reason = e.to_string();
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, reason, "provider refused refund; re-reading the charge");
            match find_ours(state, intent).await {
                Ok(Some(found)) => adopt(state, intent, &found, true).await,
                Ok(None) => {
                    update_intent(&state.db, intent, "failed", None, Some(&reason), now).await?;
                    Ok(Step::Refused { reason })
                }
                Err(read) => {
                    // Refused, but we could not look: unknown until we can.
                    let reason = format!("{reason}; charge not re-read: {read}");
                    update_intent(
                        &state.db,
                        intent,
                        "pending_verification",
                        None,
                        Some(&reason),
                        now,
                    )
                    .await?;
                    Ok(Step::Unknown { reason })
                }
            }
        }
    }
}

/// Our refund among the charge's refunds, found by `metadata.refund_intent_id`.
async fn find_ours(
    state: &AppState,
    intent: &Intent,
) -> Result<Option<ProviderRefund>, ProviderError> {
    let refunds = state.payments.list_refunds(&intent.charge_id).await?;
    Ok(refunds
        .into_iter()
        .find(|r| r.intent_id() == Some(intent.id.as_str())))
}

/// Records a provider refund found for an intent (checking it is the one we asked for).
async fn adopt(
    state: &AppState,
    intent: &Intent,
    found: &ProviderRefund,
    by_metadata: bool,
) -> AppResult<Step> {
    let now = state.clock.now_ms();
    if !refund_matches_intent(found, intent) {
        let reason = format!(
            "provider refund {} carries this intent's id but is {} {}, not {} {}",
            found.id,
            found.amount,
            found.currency,
            intent.amount.minor_units(),
            intent.amount.currency().code()
        );
        tracing::error!(intent_id = %intent.id, reason, "amount mismatch at the provider");
        update_intent(
            &state.db,
            intent,
            "needs_review",
            Some(&found.id),
            Some(&reason),
            now,
        )
        .await?;
        return Ok(Step::NeedsReview { reason });
    }
    let status = provider_status(found);
    tracing::info!(intent_id = %intent.id, refund_id = %found.id, status, "adopted the provider's refund");
    update_intent(&state.db, intent, status, Some(&found.id), None, now).await?;
    let (refund_id, status) = (found.id.clone(), status.to_string());
    Ok(if by_metadata {
        Step::AdoptedByMetadata { refund_id, status }
    } else {
        Step::Polled { refund_id, status }
    })
}

/// Past the key's safe age: adopt what the provider holds, or hand it to a human.
async fn resolve_without_sending(
    state: &AppState,
    _case: &Case,
    intent: &Intent,
) -> AppResult<Step> {
    match find_ours(state, intent).await {
        Ok(Some(found)) => adopt(state, intent, &found, true).await,
        Ok(None) => {
            let reason =
                "not found at the provider after the key's safe window (~23 h); never resent"
                    .to_string();
            tracing::error!(intent_id = %intent.id, reason, "refund intent needs review");
            update_intent(
                &state.db,
                intent,
                "needs_review",
                None,
                Some(&reason),
                state.clock.now_ms(),
            )
            .await?;
            Ok(Step::NeedsReview { reason })
        }
        Err(e) => Ok(Step::Unknown {
            reason: format!("could not list refunds: {e}"),
        }),
    }
}

/// Resolves a pending or unknown intent against the provider's records: poll a known
/// refund; else adopt ours from the charge's refunds; else, while the key is young,
/// resend the same key (it replays or executes once); else a human decides.
pub async fn reconcile_intent(state: &AppState, case: &Case, intent: &Intent) -> AppResult<Step> {
    if let Some(refund_id) = &intent.provider_refund_id {
        return match state.payments.get_refund(refund_id).await {
            Ok(refund) => adopt(state, intent, &refund, false).await,
            Err(e) => {
                tracing::warn!(intent_id = %intent.id, error = %e, "could not read refund; will retry");
                Ok(Step::Unknown {
                    reason: format!("could not read refund: {e}"),
                })
            }
        };
    }
    match find_ours(state, intent).await {
        Ok(Some(found)) => return adopt(state, intent, &found, true).await,
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(intent_id = %intent.id, error = %e, "could not list refunds; will retry");
            return Ok(Step::Unknown {
                reason: format!("could not list refunds: {e}"),
            });
        }
    }
    if key_age_ms(intent, state.clock.now_ms()) >= KEY_SAFE_AGE_MS {
        return resolve_without_sending(state, case, intent).await;
    }
    // Not there, and the key is within the provider's retention: resending it either
    // replays the stored answer or executes once.
    let Some(fresh) = load_intent(&state.db, &intent.id).await? else {
        return Ok(Step::Unchanged);
    };
    let step = submit(state, case, &fresh).await?;
    if let Step::NotAtProvider { reason } = &step {
        // The key replays a stored 5xx and the charge holds no refund of ours (looked
        // before the resend; look once more after it): nothing happened and nothing
        // will under this key. Final: no money moved.
        if let Ok(None) = find_ours(state, intent).await {
            let reason = format!("provider holds no refund for this intent; its key replays a stored error ({reason})");
            update_intent(
                &state.db,
                &fresh,
                "failed",
                None,
                Some(&reason),
                state.clock.now_ms(),
            )
            .await?;
            tracing::warn!(intent_id = %intent.id, reason, "reconciled: no refund at the provider");
            return Ok(Step::NotAtProvider { reason });
        }
        return Ok(Step::Unknown {
            reason: reason.clone(),
        });
    }
    Ok(step)
}

pub async fn load_intent(db: &Db, intent_id: &str) -> AppResult<Option<Intent>> {
    let row = sqlx::query(&format!(
        "SELECT {INTENT_COLUMNS} FROM refund_intents WHERE id = $1"
    ))
    .bind(intent_id)
    .fetch_optional(db.pool())
    .await?;
    row.as_ref().map(intent_from_row).transpose()
}

/// The case status its intents imply (`None`: no live intent).
fn status_for(intent_statuses: &[String]) -> Option<CaseStatus> {
    let live: Vec<&str> = intent_statuses
        .iter()
        .map(String::as_str)
        .filter(|s| *s != "void")
        .collect();
    let any = |s: &str| live.contains(&s);
    Some(if live.is_empty() {
        return None;
    } else if live.iter().all(|s| *s == "succeeded") {
        CaseStatus::RefundSucceeded
    } else if any("created") || any("submitting") {
        CaseStatus::Executing
    } else if any("pending_verification") || any("needs_review") {
        // Needs review means "a human must look; money may have moved": the customer is
        // told it is being verified, never that it failed (RP-005).
        CaseStatus::PendingVerification
    } else if any("pending") {
        CaseStatus::RefundPending
    } else {
        CaseStatus::RefundFailed
    })
}

/// Derives the case status from its intents inside `tx`, and tells the customer when it
/// changed (the reply is written in the same transaction). Returns the new status.
pub async fn settle_case_status_tx(
    tx: &mut Tx<'_>,
    state: &AppState,
    case_id: &str,
) -> AppResult<Option<CaseStatus>> {
    let rows = sqlx::query("SELECT status FROM refund_intents WHERE case_id = $1")
        .bind(case_id)
        .fetch_all(&mut **tx)
        .await?;
    let statuses = rows
        .iter()
        .map(|r| r.try_get::<String, _>("status"))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(target) = status_for(&statuses) else {
        return Ok(None);
    };
    let case = cases::load_case_tx(tx, case_id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    // Only a case in the refund part of its life follows its intents.
    let settled_states = [
        CaseStatus::Approved,
        CaseStatus::Executing,
        CaseStatus::PendingVerification,
        CaseStatus::RefundPending,
        CaseStatus::RefundSucceeded,
        CaseStatus::RefundFailed,
    ];
    if case.status == target || !settled_states.contains(&case.status) {
        return Ok(None);
    }
    if case.status == CaseStatus::Approved && target == CaseStatus::Executing {
        // The boundary re-check moves approved cases; nothing to say yet.
        return Ok(None);
    }
    let now = state.clock.now_ms();
    cases::transition(tx, &case, target, now).await?;
    if target != CaseStatus::Executing {
        let language: String = sqlx::query("SELECT language FROM tickets WHERE id = $1")
            .bind(&case.ticket_id)
            .fetch_one(&mut **tx)
            .await?
            .try_get("language")?;
        let views = customer_refunds_tx(tx, case_id).await?;
        let language = crate::replies::Language::from_stored(&language);
        let reply = crate::replies::refund_reply(language, &views);
        tickets::append_message(tx, &case.ticket_id, "agent", &reply, now).await?;
    }
    if let Some(run_id) = &case.run_id {
        if matches!(
            target,
            CaseStatus::RefundSucceeded | CaseStatus::RefundFailed
        ) {
            crate::runs::finish_run(tx, run_id, crate::runs::RunStatus::Completed, now).await?;
        }
    }
    crate::audit::record(tx, "system", "refund_status", case_id, target.as_str(), now).await?;
    Ok(Some(target))
}

/// [`settle_case_status_tx`] in its own transaction, retried when a concurrent settle
/// (worker, webhook, reconciler) moved the case first.
pub async fn settle_case(state: &AppState, case_id: &str) -> AppResult<Option<CaseStatus>> {
    let mut tries = 0;
    loop {
        let mut tx = state.db.begin().await?;
        match settle_case_status_tx(&mut tx, state, case_id).await {
            Ok(status) => {
                tx.commit().await?;
                return Ok(status);
            }
            Err(AppError::Conflict { .. }) if tries < 3 => {
                tries += 1;
                drop(tx);
            }
            Err(e) => return Err(e),
        }
    }
}

/// A provider refund made for a case, as staff see it (`GET /cases/{id}` → `refunds`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RefundView {
    pub id: Option<String>,
    pub intent_id: String,
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
    pub status: String,
    pub idempotency_key: String,
    pub attempts: i64,
    /// Why the intent is where it is (unknown outcome, refusal, needs review), for staff.
    pub last_error: Option<String>,
}

/// The refunds of a case as staff see them (a read of committed state).
pub async fn refund_views(db: &Db, case_id: &str) -> AppResult<Vec<RefundView>> {
    Ok(intents_from(db.reader(), case_id)
        .await?
        .into_iter()
        .map(|i| RefundView {
            id: i.provider_refund_id,
            intent_id: i.id,
            charge_id: i.charge_id,
            amount: i.amount.amount_string(),
            currency: i.amount.currency().code().to_string(),
            status: i.status,
            idempotency_key: i.idempotency_key,
            attempts: i.attempts,
            last_error: i.last_error,
        })
        .collect())
}

fn customer_status(intent_status: &str) -> &'static str {
    match intent_status {
        "created" => "in_review",
        "submitting" | "pending" => "submitted",
        "succeeded" => "completed",
        "pending_verification" | "needs_review" => "being_verified",
        _ => "not_completed",
    }
}

async fn customer_refunds_tx(tx: &mut Tx<'_>, case_id: &str) -> AppResult<Vec<CustomerRefundView>> {
    let rows = sqlx::query("SELECT amount_minor, currency, status FROM refund_intents WHERE case_id = $1 AND status <> 'void' ORDER BY charge_id")
        .bind(case_id)
        .fetch_all(&mut **tx)
        .await?;
    rows.iter().map(customer_view_from_row).collect()
}

fn customer_view_from_row(r: &sqlx::any::AnyRow) -> AppResult<CustomerRefundView> {
    let currency: Currency = r
        .try_get::<String, _>("currency")?
        .parse()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let amount = Money::from_minor(r.try_get("amount_minor")?, currency)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(CustomerRefundView {
        amount: amount.amount_string(),
        currency: currency.code().to_string(),
        status: customer_status(&r.try_get::<String, _>("status")?).to_string(),
    })
}

pub async fn customer_refunds(db: &Db, case_id: &str) -> AppResult<Vec<CustomerRefundView>> {
    let rows = sqlx::query("SELECT amount_minor, currency, status FROM refund_intents WHERE case_id = $1 AND status <> 'void' ORDER BY charge_id")
        .bind(case_id)
        .fetch_all(db.reader())
        .await?;
    rows.iter().map(customer_view_from_row).collect()
}
