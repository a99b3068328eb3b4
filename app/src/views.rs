//! What staff are shown of a case: the case row with its refunds, read across the
//! tables that own them (`cases`, `refunds`). Writes nothing.

use serde::Serialize;

use crate::cases::{self, Case};
use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult};
use crate::refunds;
use crate::store::Db;

/// The staff view of a case (`GET /api/v1/cases/{id}`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CaseView {
    pub id: String,
    pub ticket_id: String,
    pub customer_id: String,
    pub status: String,
    pub version: i64,
    pub proposal_version: i64,
    pub run_id: Option<String>,
    pub proposal: Option<serde_json::Value>,
    pub decision: Option<serde_json::Value>,
    pub evidence: Option<serde_json::Value>,
    pub evidence_hash: Option<String>,
    pub fingerprint: Option<String>,
    pub required_role: Option<String>,
    pub reason_code: Option<String>,
    pub refund_total: Option<String>,
    pub currency: Option<String>,
    pub void_reason: Option<String>,
    /// The policy index (`schema_version:policy_hash`) the decision was made with.
    pub policy_index: Option<String>,
    pub refunds: Vec<refunds::RefundView>,
    pub created_at: String,
    pub updated_at: String,
}

pub async fn case_view(db: &Db, case: &Case) -> DomainResult<CaseView> {
    let parse = |s: &Option<String>| s.as_deref().and_then(|s| serde_json::from_str(s).ok());
    let refund_total = match (case.refund_total_minor, case.currency.as_deref()) {
        (Some(minor), Some(cur)) => cur
            .parse::<policy_engine::Currency>()
            .ok()
            .and_then(|c| policy_engine::Money::from_minor(minor, c).ok())
            .map(|m| m.amount_string()),
        _ => None,
    };
    Ok(CaseView {
        id: case.id.clone(),
        ticket_id: case.ticket_id.clone(),
        customer_id: case.customer_id.clone(),
        status: case.status.as_str().to_string(),
        version: case.version,
        proposal_version: case.proposal_seq,
        run_id: case.run_id.clone(),
        proposal: parse(&case.proposal),
        decision: parse(&case.decision),
        evidence: parse(&case.facts),
        evidence_hash: case.evidence_hash.clone(),
        fingerprint: case.fingerprint.clone(),
        required_role: case.required_role.clone(),
        reason_code: case.reason_code.clone(),
        refund_total,
        currency: case.currency.clone(),
        void_reason: case.void_reason.clone(),
        policy_index: case.policy_index.clone(),
        refunds: refunds::refund_views(db, &case.id).await?,
        created_at: rfc3339(case.created_at),
        updated_at: rfc3339(case.updated_at),
    })
}

/// The staff view of a case as it stands now (after an action changed it).
pub async fn current_view(db: &Db, case_id: &str) -> DomainResult<CaseView> {
    let case = cases::load_case_to_show(db, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    case_view(db, &case).await
}
