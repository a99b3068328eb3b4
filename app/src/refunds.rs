//! Refund intents and their execution: the only code that moves money.
//!
//! An intent is created inside the approval's transaction, with an idempotency key
//! derived from the business action (case, charge, refund kind) — stored before any call
//! (SPEC invariant 4). Right before the first submission the facts are re-read from the
//! provider and the policy re-run; a different fingerprint voids the approval (invariants
//! 2 and 3). A lost answer leaves the intent `pending_verification` until reconciliation
//! finds the provider's refund (invariant 5). Cases are claimed with a lease, so two
//! workers never execute one case.

use std::collections::BTreeMap;

use policy_engine::{Currency, Decision, Money};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::cases::{self, Case, CaseStatus};
use crate::error::{AppError, AppResult};
use crate::http::AppState;
use crate::payments::{ProviderError, ProviderRefund, RefundRequest};
use crate::store::{new_id, Db, Tx};
use crate::tickets;

/// The only refund kind so far: refund of a charge the policy allows.
pub const KIND_POLICY_REFUND: &str = "policy_refund";
const LEASE_MS: i64 = 60_000;
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
    })
}

const INTENT_COLUMNS: &str =
    "id, case_id, charge_id, amount_minor, currency, idempotency_key, status, provider_refund_id, attempts, version, created_at";

pub async fn intents(db: &Db, case_id: &str) -> AppResult<Vec<Intent>> {
    let rows = sqlx::query(&format!(
        "SELECT {INTENT_COLUMNS} FROM refund_intents WHERE case_id = $1 ORDER BY charge_id"
    ))
    .bind(case_id)
    .fetch_all(db.pool())
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

/// Claims a case for execution; `None` when someone else holds it or it is not ready.
async fn claim_case(db: &Db, case_id: &str, owner: &str, now: i64) -> AppResult<Option<Case>> {
    let done = sqlx::query(
        "UPDATE cases SET lease_owner = $1, lease_expires_at = $2
         WHERE id = $3 AND status IN ('approved', 'executing', 'refund_pending', 'pending_verification')
           AND (lease_expires_at IS NULL OR lease_expires_at < $4)",
    )
    .bind(owner)
    .bind(now + LEASE_MS)
    .bind(case_id)
    .bind(now)
    .execute(db.pool())
    .await?;
    if done.rows_affected() != 1 {
        return Ok(None);
    }
    cases::load_case(db, case_id).await
}

async fn release_case(db: &Db, case_id: &str, owner: &str) -> AppResult<()> {
    sqlx::query("UPDATE cases SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_owner = $2")
        .bind(case_id)
        .bind(owner)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Cases a worker should execute or reconcile.
pub async fn cases_to_execute(db: &Db, now: i64) -> AppResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT id FROM cases WHERE status IN ('approved', 'executing', 'refund_pending', 'pending_verification')
           AND (lease_expires_at IS NULL OR lease_expires_at < $1) ORDER BY updated_at LIMIT 50",
    )
    .bind(now)
    .fetch_all(db.pool())
    .await?;
    rows.iter().map(|r| Ok(r.try_get("id")?)).collect()
}

/// Executes (or continues, or reconciles) an approved case. Safe to run again at any
/// point: every provider call reuses the intent's stored key.
pub async fn execute_case(state: &AppState, case_id: &str) -> AppResult<()> {
    let owner = state.instance_id.clone();
    let now = state.clock.now_ms();
    let Some(case) = claim_case(&state.db, case_id, &owner, now).await? else {
        return Ok(());
    };
    let result = execute_claimed(state, case).await;
    release_case(&state.db, case_id, &owner).await?;
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
        sqlx::query("UPDATE approvals SET status = 'used' WHERE case_id = $1 AND proposal_seq = $2 AND status = 'valid'")
            .bind(&case.id)
            .bind(case.proposal_seq)
            .execute(&mut *tx)
            .await?;
        case.version =
            cases::transition(&mut tx, &case, CaseStatus::Executing, state.clock.now_ms()).await?;
        case.status = CaseStatus::Executing;
        tx.commit().await?;
    }

    for intent in intents(&state.db, &case.id).await? {
        match intent.status.as_str() {
            "created" | "submitting" => submit(state, &case, &intent).await?,
            "pending" | "pending_verification" => reconcile_intent(state, &case, &intent).await?,
            _ => {}
        }
    }
    settle_case_status(state, &case.id, &ticket).await
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

async fn void_and_reinvestigate(state: &AppState, case: &Case, why: &str) -> AppResult<()> {
    let now = state.clock.now_ms();
    let mut tx = state.db.begin().await?;
    sqlx::query("UPDATE refund_intents SET status = 'void', version = version + 1, updated_at = $1 WHERE case_id = $2 AND status = 'created' AND attempts = 0")
        .bind(now)
        .bind(&case.id)
        .execute(&mut *tx)
        .await?;
    let fresh = cases::load_case_tx(&mut tx, &case.id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    cases::reinvestigate(&mut tx, state, &fresh, why).await?;
    tx.commit().await?;
    tracing::warn!(case_id = %case.id, why, "approval voided at the payment boundary");
    state.wake.notify_one();
    Ok(())
}

async fn update_intent(
    db: &Db,
    intent: &Intent,
    status: &str,
    provider_refund_id: Option<&str>,
    error: Option<&str>,
    now: i64,
) -> AppResult<()> {
    sqlx::query(
        "UPDATE refund_intents SET status = $1, provider_refund_id = COALESCE($2, provider_refund_id), last_error = $3,
             version = version + 1, updated_at = $4 WHERE id = $5",
    )
    .bind(status)
    .bind(provider_refund_id)
    .bind(error)
    .bind(now)
    .bind(&intent.id)
    .execute(db.pool())
    .await?;
    Ok(())
}

fn provider_status(refund: &ProviderRefund) -> &'static str {
    match refund.status.as_str() {
        "succeeded" => "succeeded",
        "pending" | "requires_action" => "pending",
        "canceled" => "canceled",
        _ => "failed",
    }
}

/// Sends one intent with its stored key. The intent is marked `submitting` (and the
/// attempt counted) before the call, so a crash mid-call is visible afterwards.
async fn submit(state: &AppState, case: &Case, intent: &Intent) -> AppResult<()> {
    let now = state.clock.now_ms();
    let marked = sqlx::query(
        "UPDATE refund_intents SET status = 'submitting', attempts = attempts + 1, version = version + 1, updated_at = $1
         WHERE id = $2 AND version = $3",
    )
    .bind(now)
    .bind(&intent.id)
    .bind(intent.version)
    .execute(state.db.pool())
    .await?;
    if marked.rows_affected() != 1 {
        return Ok(());
    }
    let mut metadata = BTreeMap::new();
    metadata.insert("refund_intent_id".to_string(), intent.id.clone());
    metadata.insert("case_id".to_string(), case.id.clone());
    let request = RefundRequest {
        charge_id: intent.charge_id.clone(),
        amount: intent.amount,
        idempotency_key: intent.idempotency_key.clone(),
        metadata,
    };
    let result = state.payments.create_refund(&request).await;
    let now = state.clock.now_ms();
    match result {
        Ok(refund) => {
            tracing::info!(case_id = %case.id, refund_id = %refund.id, status = %refund.status, "provider accepted refund");
            update_intent(
                &state.db,
                intent,
                provider_status(&refund),
                Some(&refund.id),
                None,
                now,
            )
            .await
        }
        Err(ProviderError::Unknown(why)) => {
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, why, "refund outcome unknown; reconciling");
            update_intent(
                &state.db,
                intent,
                "pending_verification",
                None,
                Some(&why),
                now,
            )
            .await
        }
        Err(ProviderError::Unavailable(why)) => {
            // Nothing reached the provider: stay `submitting` and retry with the same key.
            update_intent(&state.db, intent, "submitting", None, Some(&why), now).await
        }
        Err(ProviderError::IdempotencyMismatch(why)) => {
            tracing::error!(case_id = %case.id, intent_id = %intent.id, why, "BUG: idempotency key reused with other parameters");
            update_intent(
                &state.db,
                intent,
                "needs_review",
                None,
                Some(&format!("bug: {why}")),
                now,
            )
            .await
        }
        Err(e) => {
            // A business refusal is stored under the key: final for this key.
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, error = %e, "provider refused refund");
            update_intent(&state.db, intent, "failed", None, Some(&e.to_string()), now).await
        }
    }
}

/// Resolves a pending or unknown intent against the provider's records.
pub async fn reconcile_intent(state: &AppState, case: &Case, intent: &Intent) -> AppResult<()> {
    let now = state.clock.now_ms();
    if let Some(refund_id) = &intent.provider_refund_id {
        return match state.payments.get_refund(refund_id).await {
            Ok(refund) => {
                update_intent(&state.db, intent, provider_status(&refund), None, None, now).await
            }
            Err(e) => {
                tracing::warn!(intent_id = %intent.id, error = %e, "could not read refund; will retry");
                Ok(())
            }
        };
    }
    let refunds = match state.payments.list_refunds(&intent.charge_id).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(intent_id = %intent.id, error = %e, "could not list refunds; will retry");
            return Ok(());
        }
    };
    if let Some(found) = refunds
        .iter()
        .find(|r| r.metadata.get("refund_intent_id") == Some(&intent.id))
    {
        tracing::info!(case_id = %case.id, refund_id = %found.id, "reconciled unknown refund");
        return update_intent(
            &state.db,
            intent,
            provider_status(found),
            Some(&found.id),
            None,
            now,
        )
        .await;
    }
    if now - intent.created_at < KEY_SAFE_AGE_MS {
        // Not there, and the key is still within the provider's retention: resending
        // with the same key either replays or executes once.
        let fresh = intents(&state.db, &case.id)
            .await?
            .into_iter()
            .find(|i| i.id == intent.id);
        if let Some(fresh) = fresh {
            return submit(state, case, &fresh).await;
        }
        return Ok(());
    }
    update_intent(
        &state.db,
        intent,
        "needs_review",
        None,
        Some("not found at the provider after the key's safe window"),
        now,
    )
    .await
}

/// Derives the case status from its intents and tells the customer when it changed.
async fn settle_case_status(
    state: &AppState,
    case_id: &str,
    ticket: &tickets::Ticket,
) -> AppResult<()> {
    let all = intents(&state.db, case_id).await?;
    let live: Vec<&Intent> = all.iter().filter(|i| i.status != "void").collect();
    let any = |s: &str| live.iter().any(|i| i.status == s);
    let target = if live.is_empty() {
        return Ok(());
    } else if live.iter().all(|i| i.status == "succeeded") {
        CaseStatus::RefundSucceeded
    } else if any("created") || any("submitting") {
        CaseStatus::Executing
    } else if any("pending_verification") {
        CaseStatus::PendingVerification
    } else if any("pending") {
        CaseStatus::RefundPending
    } else {
        CaseStatus::RefundFailed
    };
    let mut tx = state.db.begin().await?;
    let case = cases::load_case_tx(&mut tx, case_id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    if case.status == target {
        return Ok(());
    }
    let now = state.clock.now_ms();
    cases::transition(&mut tx, &case, target, now).await?;
    if target != CaseStatus::Executing {
        let views = customer_refunds_tx(&mut tx, case_id).await?;
        let reply = crate::replies::refund_reply(&ticket.language, &views);
        tickets::append_message(&mut tx, &ticket.id, "agent", &reply, now).await?;
    }
    if let Some(run_id) = &case.run_id {
        if matches!(
            target,
            CaseStatus::RefundSucceeded | CaseStatus::RefundFailed
        ) {
            crate::runs::finish_run(&mut tx, run_id, "completed", now).await?;
        }
    }
    crate::audit::record(
        &mut tx,
        "system",
        "refund_status",
        case_id,
        target.as_str(),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A provider refund made for a case, as staff see it (`GET /cases/{id}` → `refunds`).
#[derive(Debug, Clone, Serialize)]
pub struct RefundView {
    pub id: Option<String>,
    pub intent_id: String,
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
    pub status: String,
    pub idempotency_key: String,
    pub attempts: i64,
}

pub async fn refund_views(db: &Db, case_id: &str) -> AppResult<Vec<RefundView>> {
    Ok(intents(db, case_id)
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
        })
        .collect())
}

/// A refund as the customer may see it, in RP-005's words.
#[derive(Debug, Clone, Serialize)]
pub struct CustomerRefundView {
    pub amount: String,
    pub currency: String,
    /// `in_review`, `submitted`, `completed`, `being_verified`, `not_completed`.
    pub status: String,
}

fn customer_status(intent_status: &str) -> &'static str {
    match intent_status {
        "created" => "in_review",
        "submitting" | "pending" => "submitted",
        "succeeded" => "completed",
        "pending_verification" => "being_verified",
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
        .fetch_all(db.pool())
        .await?;
    rows.iter().map(customer_view_from_row).collect()
}
