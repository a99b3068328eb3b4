//! The fingerprint an approval is bound to: a hash over the exact refund parameters
//! (case, proposal version, charges, amounts, currency, reason, evidence) (docs/spec/invariants.md #2).

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::world::serde_plain;

/// What the fingerprint covers (docs/spec/invariants.md #2), in a fixed field order.
#[derive(Serialize)]
pub struct FingerprintInput<'a> {
    pub case_id: &'a str,
    pub case_version: i64,
    pub customer_id: &'a str,
    pub order_id: Option<&'a str>,
    pub refunds: Vec<FingerprintRefund>,
    pub reason_code: &'a str,
    pub policy_versions: &'a [String],
    pub evidence_hash: &'a str,
}

#[derive(Serialize)]
pub struct FingerprintRefund {
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
}

/// SHA-256 over the canonical JSON of the approval-relevant parameters.
pub fn fingerprint(input: &FingerprintInput<'_>) -> String {
    let canonical =
        serde_json::to_vec(input).expect("fingerprint input is plain data and always serialises");
    hex::encode(Sha256::digest(&canonical))
}

/// The fingerprint of a decision about a case at a given proposal version.
pub fn decision_fingerprint(
    case_id: &str,
    proposal_seq: i64,
    customer_id: &str,
    order_id: Option<&str>,
    decision: &policy_engine::Decision,
    evidence_hash: &str,
) -> String {
    let reason = serde_plain(&decision.reason_code);
    fingerprint(&FingerprintInput {
        case_id,
        case_version: proposal_seq,
        customer_id,
        order_id,
        refunds: decision
            .refunds
            .iter()
            .map(|r| FingerprintRefund {
                charge_id: r.charge_id.clone(),
                amount: r.amount.amount_string(),
                currency: r.amount.currency().code().to_string(),
            })
            .collect(),
        reason_code: &reason,
        policy_versions: &decision.policy_versions,
        evidence_hash,
    })
}
