//! Carrying out an approved case's refunds: claim the case, re-check the policy on fresh
//! facts, submit each intent exactly once with its idempotency key, and resolve an answer
//! that was lost (docs/spec/invariants.md #4).

use policy_engine::Decision;
use sqlx::Row;

use super::settle::settle_case;
use super::{
    intents, key_age_ms, load_intent, provider_status, refund_matches_intent, refund_request,
    update_intent, void_unsent, Intent, IntentStatus, Step, KEY_SAFE_AGE_MS,
};
use super::{Executor, Sender};
use crate::cases::{self, Case, CaseStatus};
use crate::error::{DomainError, DomainResult};
use crate::tickets;
use payments_adapter::{ProviderError, ProviderRefund};
use store::Db;

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
pub async fn cases_to_execute(db: &Db, now: i64) -> DomainResult<Vec<String>> {
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
pub async fn execute_case(x: Executor<'_>, case_id: &str) -> DomainResult<()> {
    let owner = x.instance_id;
    let now = x.sender.clock.now_ms();
    let Some((case, lease)) = cases::claim_case(x.sender.db, case_id, owner, now).await? else {
        return Ok(());
    };
    let result = execute_claimed(x, case).await;
    cases::release_case(x.sender.db, &lease).await?;
    result
}

async fn execute_claimed(x: Executor<'_>, case: Case) -> DomainResult<()> {
    let ticket = tickets::load_ticket(x.sender.db, &case.ticket_id)
        .await?
        .ok_or(DomainError::NotFound("ticket"))?;
    let mut case = case;
    if case.status == CaseStatus::Approved {
        // docs/spec/invariants.md #3: re-read the provider and re-run the policy right before the
        // first submission; any change in the fingerprint voids the approval.
        let approval = sqlx::query("SELECT fingerprint FROM approvals WHERE case_id = $1 AND proposal_seq = $2 AND status = 'valid' AND verdict = 'approved'")
            .bind(case.id.as_str())
            .bind(case.proposal_seq)
            .fetch_optional(x.sender.db.pool())
            .await?;
        let proposal: Option<crate::agent::Proposal> = case
            .proposal
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok());
        let (Some(approval), Some(proposal)) = (approval, proposal) else {
            return void_and_reinvestigate(x, &case, "no valid approval for the current proposal")
                .await;
        };
        let approved_fingerprint: String = approval.try_get("fingerprint")?;
        let (facts, decision) =
            crate::workflow::decide_now(x.rules, &ticket, proposal.request, proposal.target())
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
            return void_and_reinvestigate(x, &case, &why).await;
        }
        let mut tx = x.sender.db.begin().await?;
        cases::use_approval(&mut tx, &case).await?;
        case.version = cases::transition(
            &mut tx,
            &case,
            CaseStatus::Executing,
            x.sender.clock.now_ms(),
        )
        .await?;
        case.status = CaseStatus::Executing;
        tx.commit().await?;
    }

    for intent in intents(x.sender.db, &case.id).await? {
        let step = match intent.status {
            IntentStatus::Created | IntentStatus::Submitting => {
                submit(x.sender, &case, &intent).await?
            }
            IntentStatus::Pending | IntentStatus::PendingVerification => {
                reconcile_intent(x.sender, &case, &intent).await?
            }
            _ => Step::Unchanged,
        };
        if step != Step::Unchanged {
            tracing::info!(case_id = %case.id, intent_id = %intent.id, ?step, "refund step");
        }
    }
    settle_case(x.sender.db, x.sender.clock, &case.id).await?;
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

async fn void_and_reinvestigate(x: Executor<'_>, case: &Case, why: &str) -> DomainResult<()> {
    let now = x.sender.clock.now_ms();
    let mut tx = x.sender.db.begin().await?;
    void_unsent(&mut tx, &case.id, now).await?;
    let fresh = cases::load_case_tx(&mut tx, &case.id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    let now = x.sender.clock.now_ms();
    cases::reinvestigate(&mut tx, x.queue.versions, &fresh, why, now).await?;
    tx.commit().await?;
    tracing::warn!(case_id = %case.id, why, "approval voided at the payment boundary");
    x.queue.wake.notify_one();
    Ok(())
}

/// Sends one intent with its stored key. The intent is marked `submitting` (and the
/// attempt counted) before the call, so a crash mid-call is visible afterwards.
///
/// Long on purpose: this is the payment boundary (docs/spec/invariants.md #4), and its steps — key
/// age, `submitting` committed, the call, each kind of answer — read in their one order,
/// top to bottom, where a reviewer checks that nothing is sent twice.
async fn submit(s: Sender<'_>, case: &Case, intent: &Intent) -> DomainResult<Step> {
    if restore_gate_closed(s.db).await? {
        // docs/spec/data.md: after a restore, nothing is sent until every intent the
        // backup had not seen final was looked up at the provider (it may have been
        // sent after the backup, under a key the provider has since forgotten).
        tracing::info!(case_id = %case.id, intent_id = %intent.id, "refund held: restored intents not yet reconciled");
        return Ok(Step::Unchanged);
    }
    let now = s.clock.now_ms();
    if intent.attempts > 0 && key_age_ms(intent, now) >= KEY_SAFE_AGE_MS {
        // The provider may have forgotten the key: a resend could execute twice. Look,
        // never send (payments.md §4.1).
        return resolve_without_sending(s, case, intent).await;
    }
    let marked = sqlx::query(
        "UPDATE refund_intents SET status = 'submitting', attempts = attempts + 1, version = version + 1, updated_at = $1,
             first_submitted_at = COALESCE(first_submitted_at, $1)
         WHERE id = $2 AND version = $3 AND status IN ('created', 'submitting', 'pending_verification')",
    )
    .bind(now)
    .bind(intent.id.as_str())
    .bind(intent.version)
    .execute(s.db.pool())
    .await?;
    if marked.rows_affected() != 1 {
        return Ok(Step::Unchanged);
    }
    crate::metrics::record_refund("submitted");
    let request = refund_request(intent);
    let result = s.payments.create_refund(&request).await;
    let now = s.clock.now_ms();
    match result {
        Ok(refund) => {
            if !refund_matches_intent(&refund, intent) {
                let reason = format!(
                    "provider refund {} is {} {} on {}, not what the intent asked for",
                    refund.id,
                    refund.amount,
                    refund.currency,
                    refund.charge.as_deref().unwrap_or("no charge")
                );
                tracing::error!(case_id = %case.id, intent_id = %intent.id, reason, "BUG: provider answered with another refund");
                return needs_review(s, intent, Some(&refund.id), reason, now).await;
            }
            tracing::info!(case_id = %case.id, refund_id = %refund.id, status = %refund.status(), "provider accepted refund");
            let status = provider_status(&refund);
            update_intent(s.db, intent, status, Some(&refund.id), None, now).await?;
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
            // docs/spec/invariants.md #5: unknown stays unknown until the provider's records say.
            let reason = e.to_string();
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, reason, "refund outcome unknown; pending verification");
            pending_verification(s.db, intent, &reason, now).await?;
            if matches!(e, ProviderError::StoredServerError { .. }) {
                return Ok(Step::NotAtProvider { reason });
            }
            Ok(Step::Unknown { reason })
        }
        Err(ProviderError::Unavailable(reason)) => {
            // Nothing reached the provider: stay `submitting`; the same key goes again.
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, reason, "provider unavailable; will resend the same key");
            with_reason(s.db, intent, IntentStatus::Submitting, &reason, now).await?;
            Ok(Step::NotSent { reason })
        }
        Err(ProviderError::IdempotencyMismatch(why)) => {
            // Our bug (the parameters under this key changed): never a "refund failed".
            tracing::error!(case_id = %case.id, intent_id = %intent.id, key = %intent.idempotency_key, why, "BUG: idempotency key reused with other parameters");
            let reason = format!("bug: idempotency key reused with other parameters: {why}");
            needs_review(s, intent, None, reason, now).await
        }
        Err(e @ (ProviderError::Rejected { .. } | ProviderError::NotFound(_))) => {
            // A business refusal is stored under the key: final for this key. Re-read the
            // charge: `charge_already_refunded` may be our own earlier refund.
            let reason = e.to_string();
            tracing::warn!(case_id = %case.id, intent_id = %intent.id, reason, "provider refused refund; re-reading the charge");
            match find_ours(s, intent).await {
                Ok(Some(found)) => adopt(s, intent, &found, true).await,
                Ok(None) => {
                    with_reason(s.db, intent, IntentStatus::Failed, &reason, now).await?;
                    Ok(Step::Refused { reason })
                }
                Err(read) => {
                    // Refused, but we could not look: unknown until we can.
                    let reason = format!("{reason}; charge not re-read: {read}");
                    pending_verification(s.db, intent, &reason, now).await?;
                    Ok(Step::Unknown { reason })
                }
            }
        }
    }
}

/// The intent set aside for a person (`needs_review`), with the provider's refund when
/// there is one, and why.
async fn needs_review(
    s: Sender<'_>,
    intent: &Intent,
    refund_id: Option<&str>,
    reason: String,
    now: i64,
) -> DomainResult<Step> {
    update_intent(
        s.db,
        intent,
        IntentStatus::NeedsReview,
        refund_id,
        Some(&reason),
        now,
    )
    .await?;
    Ok(Step::NeedsReview { reason })
}

/// The intent's outcome unknown (`pending_verification`) until the provider's records
/// say, and why (docs/spec/invariants.md #5).
async fn pending_verification(
    db: &Db,
    intent: &Intent,
    reason: &str,
    now: i64,
) -> DomainResult<bool> {
    with_reason(db, intent, IntentStatus::PendingVerification, reason, now).await
}

/// The intent moved to `status` because of `reason` (no provider refund id to record).
async fn with_reason(
    db: &Db,
    intent: &Intent,
    status: IntentStatus,
    reason: &str,
    now: i64,
) -> DomainResult<bool> {
    update_intent(db, intent, status, None, Some(reason), now).await
}

/// Our refund among the charge's refunds, found by `metadata.refund_intent_id`.
async fn find_ours(
    s: Sender<'_>,
    intent: &Intent,
) -> Result<Option<ProviderRefund>, ProviderError> {
    let refunds = s.payments.list_refunds(&intent.charge_id).await?;
    Ok(refunds
        .into_iter()
        .find(|r| r.intent_id() == Some(intent.id.as_str())))
}

/// Records a provider refund found for an intent (checking it is the one we asked for).
async fn adopt(
    s: Sender<'_>,
    intent: &Intent,
    found: &ProviderRefund,
    by_metadata: bool,
) -> DomainResult<Step> {
    let now = s.clock.now_ms();
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
        return needs_review(s, intent, Some(&found.id), reason, now).await;
    }
    let status = provider_status(found);
    tracing::info!(intent_id = %intent.id, refund_id = %found.id, %status, "adopted the provider's refund");
    update_intent(s.db, intent, status, Some(&found.id), None, now).await?;
    let (refund_id, status) = (found.id.clone(), status.to_string());
    Ok(if by_metadata {
        Step::AdoptedByMetadata { refund_id, status }
    } else {
        Step::Polled { refund_id, status }
    })
}

/// Past the key's safe age: adopt what the provider holds, or hand it to a human.
async fn resolve_without_sending(
    s: Sender<'_>,
    _case: &Case,
    intent: &Intent,
) -> DomainResult<Step> {
    match find_ours(s, intent).await {
        Ok(Some(found)) => adopt(s, intent, &found, true).await,
        Ok(None) => {
            let reason =
                "not found at the provider after the key's safe window (~23 h); never resent"
                    .to_string();
            tracing::error!(intent_id = %intent.id, reason, "refund intent needs review");
            update_intent(
                s.db,
                intent,
                IntentStatus::NeedsReview,
                None,
                Some(&reason),
                s.clock.now_ms(),
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
pub async fn reconcile_intent(s: Sender<'_>, case: &Case, intent: &Intent) -> DomainResult<Step> {
    if let Some(refund_id) = &intent.provider_refund_id {
        return match s.payments.get_refund(refund_id).await {
            Ok(refund) => adopt(s, intent, &refund, false).await,
            Err(e) => {
                tracing::warn!(intent_id = %intent.id, error = %e, "could not read refund; will retry");
                Ok(Step::Unknown {
                    reason: format!("could not read refund: {e}"),
                })
            }
        };
    }
    match find_ours(s, intent).await {
        Ok(Some(found)) => return adopt(s, intent, &found, true).await,
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(intent_id = %intent.id, error = %e, "could not list refunds; will retry");
            return Ok(Step::Unknown {
                reason: format!("could not list refunds: {e}"),
            });
        }
    }
    if key_age_ms(intent, s.clock.now_ms()) >= KEY_SAFE_AGE_MS {
        return resolve_without_sending(s, case, intent).await;
    }
    // Not there, and the key is within the provider's retention: resending it either
    // replays the stored answer or executes once.
    let Some(fresh) = load_intent(s.db, &intent.id).await? else {
        return Ok(Step::Unchanged);
    };
    let step = submit(s, case, &fresh).await?;
    if let Step::NotAtProvider { reason } = &step {
        // The key replays a stored 5xx and the charge holds no refund of ours (looked
        // before the resend; look once more after it): nothing happened and nothing
        // will under this key. Final: no money moved.
        if let Ok(None) = find_ours(s, intent).await {
            let reason = format!("provider holds no refund for this intent; its key replays a stored error ({reason})");
            update_intent(
                s.db,
                &fresh,
                IntentStatus::Failed,
                None,
                Some(&reason),
                s.clock.now_ms(),
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

/// Whether a restore still waits for its adoption, or left intents not yet looked up at
/// the provider (the tables are written by `customer_data`; read here, at the payment
/// boundary).
pub async fn restore_gate_closed(db: &Db) -> DomainResult<bool> {
    let open = sqlx::query(
        "SELECT intent_id FROM restore_checks WHERE checked_at IS NULL
         UNION ALL SELECT id FROM restores WHERE adopted_at IS NULL LIMIT 1",
    )
    .fetch_optional(db.pool())
    .await?;
    Ok(open.is_some())
}

/// What the provider holds for an intent a restored backup had not seen final; never
/// sends. `Ok(None)`: the provider could not be read (ask again later).
pub async fn check_restored(
    s: Sender<'_>,
    intent_id: &str,
) -> DomainResult<Option<RestoredIntent>> {
    let Some(intent) = load_intent(s.db, intent_id).await? else {
        return Ok(Some(RestoredIntent::Final));
    };
    if !matches!(
        intent.status,
        IntentStatus::Created
            | IntentStatus::Submitting
            | IntentStatus::Pending
            | IntentStatus::PendingVerification
    ) {
        return Ok(Some(RestoredIntent::Final));
    }
    let found = match &intent.provider_refund_id {
        Some(refund_id) => s.payments.get_refund(refund_id).await.map(Some),
        None => find_ours(s, &intent).await,
    };
    match found {
        Ok(Some(refund)) => {
            adopt(s, &intent, &refund, intent.provider_refund_id.is_none()).await?;
            settle_adopted(s, &intent.case_id, &refund).await?;
            Ok(Some(RestoredIntent::Adopted))
        }
        Ok(None) => Ok(Some(RestoredIntent::Absent)),
        Err(e) => {
            tracing::warn!(intent_id = %intent.id, error = %e, "restored intent not checked; will ask again");
            Ok(None)
        }
    }
}

/// What [`check_restored`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoredIntent {
    /// The intent is final (or gone) here already: nothing to look up.
    Final,
    /// The provider made it (after the backup): taken as ours, never sent again.
    Adopted,
    /// The provider holds no refund for it: it was never sent, sending is safe.
    Absent,
}

impl RestoredIntent {
    pub fn as_str(self) -> &'static str {
        match self {
            RestoredIntent::Final => "final",
            RestoredIntent::Adopted => "adopted",
            RestoredIntent::Absent => "absent",
        }
    }
}

/// A case whose refunds the provider made after the backup: its approval is used (the
/// money moved under it), its status follows its intents, as after a submission, and
/// the adoption is audited (docs/spec/data.md, "Backups").
async fn settle_adopted(s: Sender<'_>, case_id: &str, refund: &ProviderRefund) -> DomainResult<()> {
    let mut tx = s.db.begin().await?;
    if let Some(case) = cases::load_case_tx(&mut tx, case_id).await? {
        if case.status == CaseStatus::Approved {
            cases::use_approval(&mut tx, &case).await?;
        }
    }
    super::settle_case_status_tx(&mut tx, s.clock, case_id).await?;
    let detail = format!(
        "refund {} ({}) {}",
        refund.id,
        refund.status(),
        super::FOUND_AFTER_RESTORE
    );
    let now = s.clock.now_ms();
    crate::audit::record(&mut tx, "system", "refund_adopted", case_id, &detail, now).await?;
    tx.commit().await?;
    Ok(())
}
