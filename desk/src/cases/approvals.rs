//! A case's approvals: one reviewer's verdict per proposal, bound to its fingerprint
//! (docs/spec/invariants.md #2), used once by the executor, void when the proposal changes.

use super::Case;
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::{new_id, Tx};

/// Voids the case's valid approvals: what they approved is no longer what would be
/// sent (a new proposal, a withdrawal). Used approvals stay as the record of a refund.
pub(crate) async fn void_approvals(tx: &mut Tx<'_>, case_id: &str) -> DomainResult<()> {
    sqlx::query("UPDATE approvals SET status = 'void' WHERE case_id = $1 AND status = 'valid'")
        .bind(case_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Records a reviewer's verdict on the case's current proposal, bound to `fingerprint`
/// (docs/spec/invariants.md #2). One verdict per proposal: a second reviewer gets
/// `already_decided` (the unique index decides, not a read before the write).
pub async fn record_approval(
    tx: &mut Tx<'_>,
    case: &Case,
    fingerprint: &str,
    staff_id: &str,
    approved: bool,
    note: Option<&str>,
    now: i64,
) -> DomainResult<String> {
    let approval_id = new_id("apr");
    let inserted = sqlx::query(
        "INSERT INTO approvals (id, case_id, proposal_seq, fingerprint, staff_id, verdict, note, status, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'valid', $8)",
    )
    .bind(&approval_id)
    .bind(case.id.as_str())
    .bind(case.proposal_seq)
    .bind(fingerprint)
    .bind(staff_id)
    .bind(if approved { "approved" } else { "rejected" })
    .bind(note)
    .bind(now)
    .execute(&mut **tx)
    .await;
    if let Err(e) = inserted {
        if let sqlx::Error::Database(db) = &e {
            if db.is_unique_violation() {
                return Err(DomainError::conflict(
                    ErrorCode::AlreadyDecided,
                    "another reviewer already decided this proposal",
                ));
            }
        }
        return Err(e.into());
    }
    Ok(approval_id)
}

/// Marks the approval the executor is about to carry out as used: it cannot be carried
/// out twice, and stays as the record of the refund.
pub async fn use_approval(tx: &mut Tx<'_>, case: &Case) -> DomainResult<()> {
    sqlx::query("UPDATE approvals SET status = 'used' WHERE case_id = $1 AND proposal_seq = $2 AND status = 'valid'")
        .bind(case.id.as_str())
        .bind(case.proposal_seq)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The approval the case's current proposal was approved with, if any (valid or used).
pub async fn approval_carried_out(tx: &mut Tx<'_>, case: &Case) -> DomainResult<Option<String>> {
    let id = sqlx::query_scalar(
        "SELECT id FROM approvals WHERE case_id = $1 AND proposal_seq = $2 AND verdict = 'approved'",
    )
    .bind(case.id.as_str())
    .bind(case.proposal_seq)
    .fetch_optional(&mut **tx)
    .await?;
    if id.is_some() {
        use_approval(tx, case).await?;
    }
    Ok(id)
}

/// Records, for a refund the provider made after a backup (docs/spec/data.md,
/// "Backups"), the approval it was made under — given after the backup and lost with it —
/// kept under `signer`, a used approval whose `note` says so. Under the case's current
/// proposal, or the next free one when that already holds a verdict.
pub async fn record_found_approval(
    tx: &mut Tx<'_>,
    case: &Case,
    signer: &str,
    note: &str,
    now: i64,
) -> DomainResult<String> {
    let approval_id = new_id("apr");
    sqlx::query(
        "INSERT INTO approvals (id, case_id, proposal_seq, fingerprint, staff_id, verdict, note, status, created_at)
         VALUES ($1, $2,
                 CASE WHEN EXISTS (SELECT 1 FROM approvals WHERE case_id = $2 AND proposal_seq = $3)
                      THEN (SELECT MAX(proposal_seq) + 1 FROM approvals WHERE case_id = $2) ELSE $3 END,
                 $4, $5, 'approved', $6, 'used', $7)",
    )
    .bind(&approval_id)
    .bind(case.id.as_str())
    .bind(case.proposal_seq)
    .bind(case.fingerprint.as_deref().unwrap_or(""))
    .bind(signer)
    .bind(note)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(approval_id)
}
