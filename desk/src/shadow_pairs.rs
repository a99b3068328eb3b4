//! The `shadow_pairs` table, its one writer: in live shadow mode each case gets a pair —
//! the agent's verdict, recorded privately when the agent decides (`workflow`), and the
//! reviewer's, recorded when they decide by hand (`shadow::live`, in the crate above the
//! desk). Until the reviewer has decided, the agent's side is hidden from them.

use policy_engine::Decision;
use sqlx::Row;

use crate::agent::Proposal;
use crate::error::DomainResult;
use crate::world::serde_plain;
use domain::verdict::CaseVerdict;
use store::{Db, Tx};

/// Records the agent's side of a case's pair (again, after a re-investigation before the
/// reviewer decided). A pair a reviewer already decided by hand is kept as it is: a later
/// customer message never erases the hand decision (the case then goes on as an
/// ordinary escalation).
pub async fn record_agent_side(
    tx: &mut Tx<'_>,
    case_id: &str,
    decision: &Decision,
    proposal: &Proposal,
    now: i64,
) -> DomainResult<()> {
    let agent = CaseVerdict::from_decision(decision);
    sqlx::query(
        "INSERT INTO shadow_pairs (case_id, agent_outcome, agent_reason, agent_refunds, agent_decision, agent_proposal, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (case_id) DO UPDATE SET agent_outcome = excluded.agent_outcome, agent_reason = excluded.agent_reason,
             agent_refunds = excluded.agent_refunds, agent_decision = excluded.agent_decision,
             agent_proposal = excluded.agent_proposal, created_at = excluded.created_at,
             human_outcome = NULL, human_reason = NULL, human_refunds = NULL, decided_by = NULL, decided_at = NULL
         WHERE shadow_pairs.decided_at IS NULL",
    )
    .bind(case_id)
    .bind(agent.outcome.as_str())
    .bind(serde_plain(&agent.reason))
    .bind(serde_json::to_string(&agent.refunds).unwrap_or_default())
    .bind(serde_json::to_string(decision).unwrap_or_default())
    .bind(serde_json::to_string(proposal).unwrap_or_default())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Whether a case waits for a reviewer's hand decision (its agent side is hidden).
pub async fn pending(db: &store::Db, case_id: &str) -> DomainResult<bool> {
    let row = sqlx::query("SELECT decided_at FROM shadow_pairs WHERE case_id = $1")
        .bind(case_id)
        .fetch_optional(db.pool())
        .await?;
    Ok(match row {
        Some(r) => r.try_get::<Option<i64>, _>("decided_at")?.is_none(),
        None => false,
    })
}

/// The agent's proposal a pending pair holds (the reviewer's policy check starts from
/// its request and order).
pub async fn agent_proposal(db: &Db, case_id: &str) -> DomainResult<Proposal> {
    let row = sqlx::query("SELECT agent_proposal FROM shadow_pairs WHERE case_id = $1")
        .bind(case_id)
        .fetch_one(db.pool())
        .await?;
    Ok(
        serde_json::from_str(&row.try_get::<String, _>("agent_proposal")?)
            .map_err(|e| anyhow::anyhow!("stored shadow proposal: {e}"))?,
    )
}

/// The outcome of the agent's side of a pair: the policy engine's decision on the
/// case's facts when the agent decided (`qa` checks a hand decision against it).
pub async fn agent_outcome(db: &Db, case_id: &str) -> DomainResult<Option<String>> {
    let row = sqlx::query("SELECT agent_outcome FROM shadow_pairs WHERE case_id = $1")
        .bind(case_id)
        .fetch_optional(db.pool())
        .await?;
    Ok(match row {
        Some(r) => Some(r.try_get::<String, _>("agent_outcome")?),
        None => None,
    })
}

/// Records the reviewer's side; `false` when another reviewer already decided.
pub async fn record_human_side(
    tx: &mut Tx<'_>,
    case_id: &str,
    human: &CaseVerdict,
    staff_id: &str,
    now: i64,
) -> DomainResult<bool> {
    let recorded = sqlx::query(
        "UPDATE shadow_pairs SET human_outcome = $1, human_reason = $2, human_refunds = $3, decided_by = $4, decided_at = $5
         WHERE case_id = $6 AND decided_at IS NULL",
    )
    .bind(human.outcome.as_str())
    .bind(serde_plain(&human.reason))
    .bind(serde_json::to_string(&human.refunds).unwrap_or_default())
    .bind(staff_id)
    .bind(now)
    .bind(case_id)
    .execute(&mut **tx)
    .await?;
    Ok(recorded.rows_affected() == 1)
}
