//! A case's status from its intents' once the provider answered, and the reply that says so.

use sqlx::Row;

use super::views::customer_refunds_tx;
use crate::cases::{self, CaseStatus};
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult};
use crate::states::IntentStatus;
use crate::tickets;
use store::{Db, Tx};

/// The case status its intents imply (`None`: no live intent).
fn status_for(intent_statuses: &[IntentStatus]) -> Option<CaseStatus> {
    use IntentStatus::*;
    let live: Vec<IntentStatus> = intent_statuses
        .iter()
        .copied()
        .filter(|s| *s != Void)
        .collect();
    let any = |s: IntentStatus| live.contains(&s);
    Some(if live.is_empty() {
        return None;
    } else if live.iter().all(|s| *s == Succeeded) {
        CaseStatus::RefundSucceeded
    } else if any(Created) || any(Submitting) {
        CaseStatus::Executing
    } else if any(PendingVerification) || any(NeedsReview) {
        // Needs review means "a human must look; money may have moved": the customer is
        // told it is being verified, never that it failed (RP-005).
        CaseStatus::PendingVerification
    } else if any(Pending) {
        CaseStatus::RefundPending
    } else {
        CaseStatus::RefundFailed
    })
}

/// Whether a case in `status` is in the refund part of its life, where its status
/// follows its intents.
pub(super) fn follows_intents(status: CaseStatus) -> bool {
    matches!(
        status,
        CaseStatus::Approved
            | CaseStatus::Executing
            | CaseStatus::PendingVerification
            | CaseStatus::RefundPending
            | CaseStatus::RefundSucceeded
            | CaseStatus::RefundFailed
    )
}

/// Derives the case status from its intents inside `tx`, and tells the customer when it
/// changed (the reply is written in the same transaction). Returns the new status.
pub async fn settle_case_status_tx(
    tx: &mut Tx<'_>,
    clock: &dyn Clock,
    case_id: &str,
) -> DomainResult<Option<CaseStatus>> {
    let rows = sqlx::query("SELECT status FROM refund_intents WHERE case_id = $1")
        .bind(case_id)
        .fetch_all(&mut **tx)
        .await?;
    let statuses = rows
        .iter()
        .map(|r| {
            Ok(IntentStatus::from_stored(
                &r.try_get::<String, _>("status")?,
            )?)
        })
        .collect::<DomainResult<Vec<_>>>()?;
    let Some(target) = status_for(&statuses) else {
        return Ok(None);
    };
    let case = cases::load_case_tx(tx, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if case.status == target || !follows_intents(case.status) {
        return Ok(None);
    }
    if case.status == CaseStatus::Approved && target == CaseStatus::Executing {
        // The boundary re-check moves approved cases; nothing to say yet.
        return Ok(None);
    }
    let now = clock.now_ms();
    cases::transition(tx, &case, target, now).await?;
    if target != CaseStatus::Executing {
        let language: String = sqlx::query("SELECT language FROM tickets WHERE id = $1")
            .bind(case.ticket_id.as_str())
            .fetch_one(&mut **tx)
            .await?
            .try_get("language")?;
        let views = customer_refunds_tx(tx, case_id).await?;
        let language = crate::replies::Language::from_stored(&language);
        let reply = crate::replies::refund_reply(language, &views);
        tickets::append_message(tx, &case.ticket_id, "agent", &reply, now).await?;
        // The customer is told of each refund status, with the change (docs/spec/email.md).
        let kind = crate::channels::of_settled(target);
        crate::channels::tell_customer(tx, kind, &case.ticket_id, &reply, now).await?;
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
pub async fn settle_case(
    db: &Db,
    clock: &dyn Clock,
    case_id: &str,
) -> DomainResult<Option<CaseStatus>> {
    let mut tries = 0;
    loop {
        let mut tx = db.begin().await?;
        match settle_case_status_tx(&mut tx, clock, case_id).await {
            Ok(status) => {
                tx.commit().await?;
                return Ok(status);
            }
            Err(DomainError::Conflict { .. }) if tries < 3 => {
                tries += 1;
                drop(tx);
            }
            Err(e) => return Err(e),
        }
    }
}
