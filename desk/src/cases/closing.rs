//! Bringing a case to an end by hand (`close`) and who works on it (`assign`): the
//! `cases` columns behind closing and assigning a case, written only here.

use super::{update_case, void_approvals, Case};
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::Tx;

/// Closes a case: a versioned update to `closed` that also clears the fingerprint and
/// voids every valid approval, so a closed case can never be approved afterwards, and
/// the executor never claims a `closed` case (docs/spec/invariants.md #1 and 2). The active run,
/// if any, is cancelled. Refuses a case already at rest and one with a refund in flight.
/// The caller voids the case's unsent intents in the same transaction (`refunds` is a
/// floor above this module).
pub async fn close(tx: &mut Tx<'_>, case: &Case, reason: &str, now: i64) -> DomainResult<()> {
    if case.status.is_at_rest() {
        return Err(DomainError::conflict(
            ErrorCode::AlreadyClosed,
            format!("the case is already {}", case.status.as_str()),
        ));
    }
    if case.status.has_refund_in_flight() {
        return Err(DomainError::conflict(
            ErrorCode::RefundInFlight,
            format!(
                "the case is {}: a refund is on its way to the provider; close it once the provider has answered",
                case.status.as_str()
            ),
        ));
    }
    let sets = "status = 'closed', fingerprint = NULL, close_reason = $1";
    update_case(tx, case, sets, &[reason], now).await?;
    void_approvals(tx, &case.id).await?;
    if let Some(run_id) = &case.run_id {
        crate::runs::finish_run(tx, run_id, crate::runs::RunStatus::Cancelled, now).await?;
    }
    tracing::info!(case_id = %case.id, from = case.status.as_str(), "case closed by hand");
    Ok(())
}

/// Sets who works on a case. Deliberately not a versioned update: assignment is no
/// step of the lifecycle and no part of the fingerprint, and bumping the version would
/// make an executor holding the case's lease fail its next write for nothing.
pub async fn assign(tx: &mut Tx<'_>, case_id: &str, staff_id: Option<&str>) -> DomainResult<()> {
    let done = sqlx::query("UPDATE cases SET assignee_id = $1 WHERE id = $2")
        .bind(staff_id)
        .bind(case_id)
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(DomainError::NotFound("case"))
    }
}
