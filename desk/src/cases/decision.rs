//! Recording a decision on a case — the agent's, a supervisor's takeover, a shadow
//! reviewer's — in one versioned update.

use super::fingerprint::decision_fingerprint;
use super::{expect_versioned, Case};
use crate::agent::Proposal;
use crate::error::DomainResult;
use crate::states::CaseStatus;
use crate::world::serde_plain;
use store::Tx;

/// How a decision treats the case's proposal, and so `proposal_seq`, which the
/// fingerprint binds (docs/spec/invariants.md #2).
#[derive(Debug, Clone, Copy)]
pub enum ProposalChange<'a> {
    /// The decision on the agent's current proposal, which is stored with it;
    /// `proposal_seq` stays.
    Decides(&'a Proposal),
    /// A person's own proposal, stored in place of the agent's; `proposal_seq` moves on.
    Replaces(&'a Proposal),
    /// A new decision on the stored proposal's inputs (a takeover): `proposal_seq` moves
    /// on and the stored proposal is kept.
    Renews,
}

/// What a decision does to the case's `void_reason` (why an earlier proposal was void,
/// or why the case waits for a person).
#[derive(Debug, Clone, Copy)]
pub enum VoidReason<'a> {
    /// Keep the recorded reason (a re-decision after a void still says why).
    Keep,
    Set(&'a str),
    Clear,
}

/// A decision about a case, as [`record_decision`] writes it.
pub struct DecisionRecord<'a> {
    pub status: CaseStatus,
    pub proposal: ProposalChange<'a>,
    pub facts: &'a policy_engine::Facts,
    pub decision: &'a policy_engine::Decision,
    pub evidence_hash: &'a str,
    pub required_role: Option<policy_engine::Role>,
    pub reason_code: policy_engine::ReasonCode,
    pub void_reason: VoidReason<'a>,
    /// The policy index the decision was made with; `None` keeps the recorded one.
    pub policy_index: Option<&'a str>,
    pub now: i64,
}

/// What [`record_decision`] wrote.
#[derive(Debug, Clone)]
pub struct RecordedDecision {
    /// The case's version after the update.
    pub version: i64,
    pub proposal_seq: i64,
    /// Set exactly when the case now awaits approval.
    pub fingerprint: Option<String>,
}

/// Records a decision on `case` — status, facts, decision, evidence hash, fingerprint,
/// required role, reason, refund total — if nobody changed the case since `case` was
/// read (a versioned update; else [`case_changed`], and the caller's transaction must
/// roll back). The fingerprint is computed here, from the `proposal_seq` this update
/// stores, so an approval can only ever bind the parameters recorded (docs/spec/invariants.md #2).
///
/// Callers make this their transaction's first write that another writer of the case
/// could collide with: a lost race then surfaces as the case conflict it is, not as a
/// clash on whatever row the transaction happened to write first.
pub async fn record_decision(
    tx: &mut Tx<'_>,
    case: &Case,
    record: &DecisionRecord<'_>,
) -> DomainResult<RecordedDecision> {
    let (proposal_seq, proposal) = match record.proposal {
        ProposalChange::Decides(p) => (case.proposal_seq, Some(p)),
        ProposalChange::Replaces(p) => (case.proposal_seq + 1, Some(p)),
        ProposalChange::Renews => (case.proposal_seq + 1, None),
    };
    let fingerprint = (record.status == CaseStatus::AwaitingApproval).then(|| {
        decision_fingerprint(
            &case.id,
            proposal_seq,
            &case.customer_id,
            record.facts.order_id.as_deref(),
            record.decision,
            record.evidence_hash,
        )
    });
    let (keep_void_reason, void_reason) = match record.void_reason {
        VoidReason::Keep => (1_i64, None),
        VoidReason::Set(why) => (0, Some(why)),
        VoidReason::Clear => (0, None),
    };
    let total = record.decision.refund_total();
    // `proposal` and `policy_index` bound as NULL keep what is recorded.
    let done = sqlx::query(
        "UPDATE cases SET status = $1, version = version + 1, proposal_seq = $2, proposal = COALESCE($3, proposal),
             facts = $4, decision = $5, evidence_hash = $6, fingerprint = $7, required_role = $8, reason_code = $9,
             refund_total_minor = $10, currency = $11,
             void_reason = CASE WHEN $12 = 1 THEN void_reason ELSE $13 END,
             policy_index = COALESCE($14, policy_index), updated_at = $15
         WHERE id = $16 AND version = $17",
    )
    .bind(record.status.as_str())
    .bind(proposal_seq)
    .bind(proposal.map(|p| serde_json::to_string(p).unwrap_or_default()))
    .bind(serde_json::to_string(record.facts).unwrap_or_default())
    .bind(serde_json::to_string(record.decision).unwrap_or_default())
    .bind(record.evidence_hash)
    .bind(&fingerprint)
    .bind(record.required_role.map(|r| serde_plain(&r)))
    .bind(serde_plain(&record.reason_code))
    .bind(total.map(|m| m.minor_units()))
    .bind(total.map(|m| m.currency().code().to_string()))
    .bind(keep_void_reason)
    .bind(void_reason)
    .bind(record.policy_index)
    .bind(record.now)
    .bind(case.id.as_str())
    .bind(case.version)
    .execute(&mut **tx)
    .await?;
    expect_versioned(&done)?;
    Ok(RecordedDecision {
        version: case.version + 1,
        proposal_seq,
        fingerprint,
    })
}
