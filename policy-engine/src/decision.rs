//! The output of a decision: outcome, refunds, approver, the rules that fired, the policy
//! versions used and a hash that binds them (SPEC invariant 9).
//!
//! A `Decision` is a value the caller stores and replays; it never performs anything.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Money;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Allow,
    Deny,
    RequestInfo,
    Escalate,
}

/// SPEC §3 reason codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    DuplicateCharge,
    Overcharge,
    RepeatPurchase,
    CoolingOff,
    AuthorizationHold,
    AlreadyRefunded,
    NotDuplicate,
    OutsideWindow,
    OwnershipMismatch,
    DisputeOpen,
    InsufficientInfo,
    NotEligible,
    Other,
}

/// Staff roles, ordered by authority: `Agent < Supervisor < Admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Agent,
    Supervisor,
    Admin,
}

/// Who an escalated ticket goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Team {
    Supervisor,
    Payments,
    Disputes,
    Security,
}

/// One refund the decision allows: always in the charge's currency, to the charge's
/// original payment method (RP-001 §2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundLine {
    pub order_id: String,
    pub charge_id: String,
    pub amount: Money,
    pub payment_method: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    pub team: Team,
    pub reason: String,
}

/// A rule that fired, citing `doc@version#section` (SPEC invariant 8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FiredRule {
    pub citation: String,
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub outcome: Outcome,
    pub reason_code: ReasonCode,
    pub refunds: Vec<RefundLine>,
    /// The lowest role that may approve the whole decision; `None` when nobody needs to
    /// (deny, request_info, most escalations, or a what-if draft's automatic approval).
    pub approver_role: Option<Role>,
    pub escalation: Option<Escalation>,
    /// For `request_info`: what we need from the customer (`"order_id"`).
    pub missing: Option<String>,
    /// In firing order.
    pub rules: Vec<FiredRule>,
    /// `["RP-001@2", "RP-004@2"]`, sorted.
    pub policy_versions: Vec<String>,
    /// The facts the decision relied on, one short line each, in the order used.
    pub facts_used: Vec<String>,
    /// For authorization holds: when the issuer releases it (`"7 days"`).
    pub hold_release: Option<String>,
    /// Hex SHA-256 over the canonical encoding of everything above.
    pub hash: String,
}

impl Decision {
    /// The sum of the refunds, or `None` when there are none or they mix currencies.
    pub fn refund_total(&self) -> Option<Money> {
        let (first, rest) = self.refunds.split_first()?;
        rest.iter().try_fold(first.amount, |total, line| {
            total.checked_add(&line.amount).ok()
        })
    }

    /// Recomputes the hash from the other fields; equal to `hash` for an untouched
    /// decision. Replays and tamper checks use it.
    pub fn compute_hash(&self) -> String {
        // The canonical encoding is the JSON of this struct: fields in declaration order,
        // sequences in decision order, amounts as decimal strings. A domain tag keeps
        // the hash from colliding with other hashes of JSON in the product.
        #[derive(Serialize)]
        struct Canonical<'a> {
            domain: &'static str,
            facts_used: &'a [String],
            policy_versions: &'a [String],
            outcome: Outcome,
            reason_code: ReasonCode,
            refunds: &'a [RefundLine],
            approver_role: Option<Role>,
            escalation: &'a Option<Escalation>,
            missing: &'a Option<String>,
            rules: &'a [FiredRule],
            hold_release: &'a Option<String>,
        }
        let canonical = Canonical {
            domain: "refund-desk/policy-decision/v1",
            facts_used: &self.facts_used,
            policy_versions: &self.policy_versions,
            outcome: self.outcome,
            reason_code: self.reason_code,
            refunds: &self.refunds,
            approver_role: self.approver_role,
            escalation: &self.escalation,
            missing: &self.missing,
            rules: &self.rules,
            hold_release: &self.hold_release,
        };
        let bytes = serde_json::to_vec(&canonical)
            .expect("a struct of strings, enums and money always serializes");
        hex::encode(Sha256::digest(&bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Currency;

    fn line(amount: &str, currency: Currency) -> RefundLine {
        RefundLine {
            order_id: "O-1".into(),
            charge_id: "ch_1".into(),
            amount: Money::parse(amount, currency).unwrap(),
            payment_method: "pm".into(),
        }
    }

    fn decision(refunds: Vec<RefundLine>) -> Decision {
        let mut d = Decision {
            outcome: Outcome::Allow,
            reason_code: ReasonCode::DuplicateCharge,
            refunds,
            approver_role: Some(Role::Agent),
            escalation: None,
            missing: None,
            rules: vec![],
            policy_versions: vec!["RP-001@2".into()],
            facts_used: vec!["x".into()],
            hold_release: None,
            hash: String::new(),
        };
        d.hash = d.compute_hash();
        d
    }

    #[test]
    fn refund_total_sums_one_currency_and_refuses_mixed_ones() {
        let d = decision(vec![line("1.50", Currency::USD), line("2", Currency::USD)]);
        assert_eq!(d.refund_total().unwrap().amount_string(), "3.50");
        assert_eq!(decision(vec![]).refund_total(), None);
        let mixed = decision(vec![line("1", Currency::USD), line("1", Currency::EUR)]);
        assert_eq!(mixed.refund_total(), None);
    }

    #[test]
    fn the_hash_changes_when_any_outcome_field_changes() {
        let d = decision(vec![line("1.50", Currency::USD)]);
        assert_eq!(d.hash.len(), 64);
        let mut other = d.clone();
        other.approver_role = Some(Role::Supervisor);
        assert_ne!(other.compute_hash(), d.hash);
        let mut other = d.clone();
        other.refunds[0].amount = Money::parse("1.51", Currency::USD).unwrap();
        assert_ne!(other.compute_hash(), d.hash);
        let mut other = d.clone();
        other.policy_versions = vec!["RP-001@1".into()];
        assert_ne!(other.compute_hash(), d.hash);
    }

    #[test]
    fn decisions_serialize_in_snake_case() {
        let d = decision(vec![line("1.50", Currency::USD)]);
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["outcome"], "allow");
        assert_eq!(json["reason_code"], "duplicate_charge");
        assert_eq!(json["approver_role"], "agent");
        assert_eq!(json["refunds"][0]["amount"]["amount"], "1.50");
        let back: Decision = serde_json::from_value(json).unwrap();
        assert_eq!(back, d);
    }
}
