//! The output of a decision: outcome, refunds, approver, the rules that fired, the policy
//! versions used and a hash that binds them (docs/spec/invariants.md #9).
//!
//! A `Decision` is a value the caller stores and replays; it never performs anything.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::money::Money;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Allow,
    Deny,
    RequestInfo,
    Escalate,
}

impl Outcome {
    /// The snake-case name used in JSON (`request_info`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allow => "allow",
            Outcome::Deny => "deny",
            Outcome::RequestInfo => "request_info",
            Outcome::Escalate => "escalate",
        }
    }
}

/// docs/spec/domain.md reason codes.
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

impl ReasonCode {
    /// Every reason code, in docs/spec/domain.md order.
    pub const ALL: [ReasonCode; 13] = [
        ReasonCode::DuplicateCharge,
        ReasonCode::Overcharge,
        ReasonCode::RepeatPurchase,
        ReasonCode::CoolingOff,
        ReasonCode::AuthorizationHold,
        ReasonCode::AlreadyRefunded,
        ReasonCode::NotDuplicate,
        ReasonCode::OutsideWindow,
        ReasonCode::OwnershipMismatch,
        ReasonCode::DisputeOpen,
        ReasonCode::InsufficientInfo,
        ReasonCode::NotEligible,
        ReasonCode::Other,
    ];

    /// The snake-case name used in JSON (`duplicate_charge`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::DuplicateCharge => "duplicate_charge",
            ReasonCode::Overcharge => "overcharge",
            ReasonCode::RepeatPurchase => "repeat_purchase",
            ReasonCode::CoolingOff => "cooling_off",
            ReasonCode::AuthorizationHold => "authorization_hold",
            ReasonCode::AlreadyRefunded => "already_refunded",
            ReasonCode::NotDuplicate => "not_duplicate",
            ReasonCode::OutsideWindow => "outside_window",
            ReasonCode::OwnershipMismatch => "ownership_mismatch",
            ReasonCode::DisputeOpen => "dispute_open",
            ReasonCode::InsufficientInfo => "insufficient_info",
            ReasonCode::NotEligible => "not_eligible",
            ReasonCode::Other => "other",
        }
    }
}

impl std::str::FromStr for ReasonCode {
    type Err = crate::error::PolicyError;

    /// The snake-case name (`duplicate_charge`), as `as_str` writes it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ReasonCode::ALL
            .into_iter()
            .find(|code| code.as_str() == s)
            .ok_or_else(|| crate::error::PolicyError::UnknownName("reason code", s.to_string()))
    }
}

/// Staff roles, ordered by authority: `Agent < Supervisor < Admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Agent,
    Supervisor,
    Admin,
}

impl Role {
    /// The snake-case name used in JSON (`supervisor`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Supervisor => "supervisor",
            Role::Admin => "admin",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = crate::error::PolicyError;

    /// The snake-case name (`supervisor`), as `as_str` writes it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Role::Agent, Role::Supervisor, Role::Admin]
            .into_iter()
            .find(|role| role.as_str() == s)
            .ok_or_else(|| crate::error::PolicyError::UnknownName("role", s.to_string()))
    }
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

impl Team {
    /// The snake-case name used in JSON (`disputes`).
    pub fn as_str(self) -> &'static str {
        match self {
            Team::Supervisor => "supervisor",
            Team::Payments => "payments",
            Team::Disputes => "disputes",
            Team::Security => "security",
        }
    }
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

/// A rule that fired, citing `doc@version#section` (docs/spec/invariants.md #8).
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
        let mut hasher = Sha256::new();
        self.write_canonical(&mut hasher);
        let mut hex = [0u8; 64];
        hex::encode_to_slice(hasher.finalize(), &mut hex).expect("32 bytes are 64 hex digits");
        String::from_utf8(hex.to_vec()).expect("hex digits are ASCII")
    }

    /// Writes the bytes the hash covers: the compact JSON of
    /// `{domain, facts_used, policy_versions, outcome, reason_code, refunds, approver_role,
    /// escalation, missing, rules, hold_release}`, fields in that order, sequences in
    /// decision order, amounts as decimal strings. The domain tag keeps the hash from
    /// colliding with other hashes of JSON in the product.
    ///
    /// Stored hashes pin these bytes: they must stay exactly what `serde_json::to_vec`
    /// gives for that struct (`tests::Canonical` keeps its definition, and a property
    /// test compares the two). Written here rather than by serde_json because encoding
    /// was most of the cost of a decision: serde_json checks every byte of every string
    /// one at a time, while almost no string here needs escaping (see [`json_string`]).
    /// Streamed into the hasher, without a buffer.
    fn write_canonical(&self, out: &mut impl Sink) {
        out.put(br#"{"domain":"refund-desk/policy-decision/v1","facts_used":"#);
        json_strings(out, &self.facts_used);
        out.put(br#","policy_versions":"#);
        json_strings(out, &self.policy_versions);
        out.put(br#","outcome":"#);
        json_string(out, self.outcome.as_str());
        out.put(br#","reason_code":"#);
        json_string(out, self.reason_code.as_str());
        out.put(br#","refunds":["#);
        for (i, refund) in self.refunds.iter().enumerate() {
            if i > 0 {
                out.put(b",");
            }
            out.put(br#"{"order_id":"#);
            json_string(out, &refund.order_id);
            out.put(br#","charge_id":"#);
            json_string(out, &refund.charge_id);
            out.put(br#","amount":{"amount":"#);
            json_string(out, &refund.amount.amount_string());
            out.put(br#","currency":"#);
            json_string(out, refund.amount.currency().code());
            out.put(br#"},"payment_method":"#);
            json_string(out, &refund.payment_method);
            out.put(b"}");
        }
        out.put(br#"],"approver_role":"#);
        json_option(out, self.approver_role.map(Role::as_str));
        out.put(br#","escalation":"#);
        match &self.escalation {
            None => out.put(b"null"),
            Some(escalation) => {
                out.put(br#"{"team":"#);
                json_string(out, escalation.team.as_str());
                out.put(br#","reason":"#);
                json_string(out, &escalation.reason);
                out.put(b"}");
            }
        }
        out.put(br#","missing":"#);
        json_option(out, self.missing.as_deref());
        out.put(br#","rules":["#);
        for (i, rule) in self.rules.iter().enumerate() {
            if i > 0 {
                out.put(b",");
            }
            out.put(br#"{"citation":"#);
            json_string(out, &rule.citation);
            out.put(br#","summary":"#);
            json_string(out, &rule.summary);
            out.put(b"}");
        }
        out.put(br#"],"hold_release":"#);
        json_option(out, self.hold_release.as_deref());
        out.put(b"}");
    }
}

/// Writes a string or `null`, as serde_json encodes an `Option` of a string.
fn json_option(out: &mut impl Sink, s: Option<&str>) {
    match s {
        Some(s) => json_string(out, s),
        None => out.put(b"null"),
    }
}

/// Writes `["…","…"]` as serde_json encodes a slice of strings.
fn json_strings(out: &mut impl Sink, strings: &[String]) {
    out.put(b"[");
    for (i, s) in strings.iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        json_string(out, s);
    }
    out.put(b"]");
}

/// Writes `s` as a JSON string, as serde_json encodes it. serde_json escapes only
/// quotes, backslashes and control characters (below U+0020); a string without them
/// is copied between quotes, and one with them is left to serde_json itself.
fn json_string(out: &mut impl Sink, s: &str) {
    // A fold rather than `any`: no early exit, so the compiler checks many bytes at once.
    let needs_escaping = s.bytes().fold(false, |found, b| {
        found | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if needs_escaping {
        let escaped = serde_json::to_vec(s).expect("a string always serializes");
        out.put(&escaped);
        return;
    }
    out.put(b"\"");
    out.put(s.as_bytes());
    out.put(b"\"");
}

/// Where the canonical encoding goes: the hasher, or a buffer in tests.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod name_tests {
    use super::{ReasonCode, Role};

    #[test]
    fn reason_codes_and_roles_read_back_what_they_write_and_refuse_other_names() {
        for code in ReasonCode::ALL {
            assert_eq!(code.as_str().parse::<ReasonCode>().ok(), Some(code));
        }
        for role in [Role::Agent, Role::Supervisor, Role::Admin] {
            assert_eq!(role.as_str().parse::<Role>().ok(), Some(role));
        }
        assert!("Duplicate_Charge".parse::<ReasonCode>().is_err());
        assert!("owner".parse::<Role>().is_err());
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::money::Currency;

    /// The definition of the canonical encoding: `serde_json::to_vec` of this struct is
    /// what every stored hash covers. `Decision::write_canonical` must give the same
    /// bytes.
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

    fn serde_canonical(d: &Decision) -> Vec<u8> {
        serde_json::to_vec(&Canonical {
            domain: "refund-desk/policy-decision/v1",
            facts_used: &d.facts_used,
            policy_versions: &d.policy_versions,
            outcome: d.outcome,
            reason_code: d.reason_code,
            refunds: &d.refunds,
            approver_role: d.approver_role,
            escalation: &d.escalation,
            missing: &d.missing,
            rules: &d.rules,
            hold_release: &d.hold_release,
        })
        .unwrap()
    }

    fn canonical(d: &Decision) -> Vec<u8> {
        let mut bytes = Vec::new();
        d.write_canonical(&mut bytes);
        bytes
    }

    /// Any string, weighted towards the characters JSON escapes.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[a-z \"\\\\/\u{0}-\u{1f}\u{7f}é中😀]{0,40}",
            "[ -~]{0,80}",
        ]
    }

    fn decision_strategy() -> impl Strategy<Value = Decision> {
        let outcome = prop_oneof![
            Just(Outcome::Allow),
            Just(Outcome::Deny),
            Just(Outcome::RequestInfo),
            Just(Outcome::Escalate)
        ];
        let reason_code = prop_oneof![
            Just(ReasonCode::DuplicateCharge),
            Just(ReasonCode::Overcharge),
            Just(ReasonCode::RepeatPurchase),
            Just(ReasonCode::CoolingOff),
            Just(ReasonCode::AuthorizationHold),
            Just(ReasonCode::AlreadyRefunded),
            Just(ReasonCode::NotDuplicate),
            Just(ReasonCode::OutsideWindow),
            Just(ReasonCode::OwnershipMismatch),
            Just(ReasonCode::DisputeOpen),
            Just(ReasonCode::InsufficientInfo),
            Just(ReasonCode::NotEligible),
            Just(ReasonCode::Other),
        ];
        let role = prop::option::of(prop_oneof![
            Just(Role::Agent),
            Just(Role::Supervisor),
            Just(Role::Admin)
        ]);
        let team = prop_oneof![
            Just(Team::Supervisor),
            Just(Team::Payments),
            Just(Team::Disputes),
            Just(Team::Security)
        ];
        let currency = prop_oneof![
            Just(Currency::CNY),
            Just(Currency::USD),
            Just(Currency::EUR),
            Just(Currency::JPY)
        ];
        let refund = (text(), text(), 0i64..10_000_000, currency, text()).prop_map(
            |(order_id, charge_id, minor, currency, payment_method)| RefundLine {
                order_id,
                charge_id,
                amount: Money::from_minor(minor, currency).unwrap(),
                payment_method,
            },
        );
        let rule = (text(), text()).prop_map(|(citation, summary)| FiredRule { citation, summary });
        (
            (
                outcome,
                reason_code,
                prop::collection::vec(refund, 0..3),
                role,
            ),
            (
                prop::option::of(
                    (team, text()).prop_map(|(team, reason)| Escalation { team, reason }),
                ),
                prop::option::of(text()),
                prop::collection::vec(rule, 0..4),
            ),
            (
                prop::collection::vec(text(), 0..3),
                prop::collection::vec(text(), 0..5),
                prop::option::of(text()),
            ),
        )
            .prop_map(
                |(
                    (outcome, reason_code, refunds, approver_role),
                    (escalation, missing, rules),
                    (policy_versions, facts_used, hold_release),
                )| Decision {
                    outcome,
                    reason_code,
                    refunds,
                    approver_role,
                    escalation,
                    missing,
                    rules,
                    policy_versions,
                    facts_used,
                    hold_release,
                    hash: String::new(),
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn the_canonical_encoding_is_byte_for_byte_serde_jsons(d in decision_strategy()) {
            let expected = serde_canonical(&d);
            prop_assert_eq!(
                String::from_utf8(canonical(&d)).unwrap(),
                String::from_utf8(expected.clone()).unwrap()
            );
            prop_assert_eq!(d.compute_hash(), hex::encode(Sha256::digest(&expected)));
        }
    }

    #[test]
    fn every_escaped_character_is_encoded_as_serde_json_does() {
        let every_ascii: String = (0u8..=0x7f).map(char::from).collect();
        let mut d = decision(vec![line("1.50", Currency::USD)]);
        d.facts_used = vec![every_ascii.clone(), "plain".into(), String::new()];
        d.rules = vec![FiredRule {
            citation: "RP-001@2#2.1".into(),
            summary: format!("{every_ascii}é中😀"),
        }];
        assert_eq!(canonical(&d), serde_canonical(&d));
    }

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
