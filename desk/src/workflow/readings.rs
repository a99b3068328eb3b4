//! Never more than the text supports (docs/spec/domain.md): when a customer's words read
//! two ways that disagree on money — "annulez le second débit" as a withdrawal refunds
//! the plan, as a duplicate only the second charge — each reading is decided by the
//! engine on the same facts and the smallest refund any of them allows stands. Pure.

use policy_engine::{Decision, Facts, Outcome, RequestKind};
use rust_decimal::Decimal;

/// The facts and decision that stand: the proposal's reading, unless another reading of
/// the words allows a smaller refund (ties keep the proposal's). A reading the policy
/// answers with nothing — a denial, a question — narrows nothing: the customer asked for
/// money, and what one reading's policy refuses is not what the text supports.
pub fn smallest_reading<E>(
    facts: Facts,
    others: &[RequestKind],
    decide: impl Fn(&Facts) -> Result<Decision, E>,
) -> Result<(Facts, Decision), E> {
    let decision = decide(&facts)?;
    let primary = facts.request;
    let mut best = (facts, decision);
    if best.1.outcome != Outcome::Allow {
        return Ok(best);
    }
    for kind in others.iter().filter(|k| **k != primary) {
        let facts = Facts {
            request: *kind,
            ..best.0.clone()
        };
        let decision = decide(&facts)?;
        if decision.outcome == Outcome::Allow && total(&decision) < total(&best.1) {
            best = (facts, decision);
        }
    }
    Ok(best)
}

/// What a decision refunds in all, as a number (one case's refunds share a currency).
fn total(decision: &Decision) -> Decimal {
    decision.refunds.iter().map(|r| r.amount.amount()).sum()
}
