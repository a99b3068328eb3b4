//! What a case came to, in the terms shadow mode compares: the outcome, the reason and
//! the refunds (charge, amount, currency). Replays, live shadow mode and the reports
//! build and compare these; nothing here reads or writes a record.

use std::collections::{BTreeMap, BTreeSet};

use policy_engine::{Currency, Decision, Money, Outcome, PolicyError, ReasonCode};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Outcomes as docs/spec/interfaces.md names them (history): a decision's `allow` is `refund`, `deny` is `no_refund`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseOutcome {
    Refund,
    NoRefund,
    RequestInfo,
    Escalate,
}

impl CaseOutcome {
    pub const ALL: [CaseOutcome; 4] = [
        CaseOutcome::Refund,
        CaseOutcome::NoRefund,
        CaseOutcome::RequestInfo,
        CaseOutcome::Escalate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CaseOutcome::Refund => "refund",
            CaseOutcome::NoRefund => "no_refund",
            CaseOutcome::RequestInfo => "request_info",
            CaseOutcome::Escalate => "escalate",
        }
    }
}

impl From<Outcome> for CaseOutcome {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Allow => CaseOutcome::Refund,
            Outcome::Deny => CaseOutcome::NoRefund,
            Outcome::RequestInfo => CaseOutcome::RequestInfo,
            Outcome::Escalate => CaseOutcome::Escalate,
        }
    }
}

/// One refund as the history file and the reports write it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundRecord {
    pub charge_id: String,
    /// Decimal string in the currency's scale (`"198.00"`, `"1980"`).
    pub amount: String,
    pub currency: Currency,
}

impl RefundRecord {
    pub fn money(&self) -> Result<Money, PolicyError> {
        Money::parse(&self.amount, self.currency)
    }
}

/// An outcome, its reason code and the money it sends: what shadow mode compares.
/// `refunds` lists money actually decided to go out, so it is empty for everything but
/// `refund` (an escalation's candidate refunds wait for a supervisor; see
/// `ReplayResult::decision` for them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseVerdict {
    pub outcome: CaseOutcome,
    pub reason: ReasonCode,
    pub refunds: Vec<RefundRecord>,
}

impl CaseVerdict {
    /// The verdict a decision amounts to.
    pub fn from_decision(decision: &Decision) -> Self {
        let outcome = CaseOutcome::from(decision.outcome);
        let refunds = if outcome == CaseOutcome::Refund {
            decision
                .refunds
                .iter()
                .map(|r| RefundRecord {
                    charge_id: r.charge_id.clone(),
                    amount: r.amount.amount_string(),
                    currency: r.amount.currency(),
                })
                .collect()
        } else {
            Vec::new()
        };
        CaseVerdict {
            outcome,
            reason: decision.reason_code,
            refunds,
        }
    }

    /// The agent handed the case to a person before any decision.
    pub fn escalated() -> Self {
        CaseVerdict {
            outcome: CaseOutcome::Escalate,
            reason: ReasonCode::Other,
            refunds: Vec::new(),
        }
    }

    /// Same refunds: the same charges and amounts, in any order, amounts compared as
    /// money (`"198"` equals `"198.00"`).
    pub fn same_refunds(&self, other: &[RefundRecord]) -> bool {
        refund_set(&self.refunds) == refund_set(other)
    }

    /// Outcome, charges and amounts all equal (docs/spec/interfaces.md "exact agreement").
    pub fn agrees_exactly(&self, other: &CaseVerdict) -> bool {
        self.outcome == other.outcome && self.same_refunds(&other.refunds)
    }

    /// The money this verdict sends, per currency.
    pub fn totals(&self) -> BTreeMap<Currency, Decimal> {
        let mut totals = BTreeMap::new();
        for r in &self.refunds {
            if let Ok(m) = r.money() {
                *totals.entry(m.currency()).or_insert(Decimal::ZERO) += m.amount();
            }
        }
        totals
    }
}

/// A refund as compared: its charge and its amount in its currency (or why it has none).
type RefundKey = (String, Result<(Decimal, Currency), String>);

fn refund_set(refunds: &[RefundRecord]) -> BTreeSet<RefundKey> {
    refunds
        .iter()
        .map(|r| {
            let money = r
                .money()
                .map(|m| (m.amount(), m.currency()))
                .map_err(|_| r.amount.clone());
            (r.charge_id.clone(), money)
        })
        .collect()
}
