//! RP-006, disputes and chargebacks: a disputed charge is never refunded; the ticket goes
//! to the disputes team and the bank's dispute process decides.
//!
//! Checked by the remedies (RP-001, RP-002) on the orders they are about to weigh, before
//! any refund is computed. It reads the `disputed` flag of the facts; it does not ask the
//! provider or guess a dispute's outcome.

use crate::decision::ReasonCode;
use crate::facts::OrderFacts;
use crate::parameters::clause;
use crate::selection::{Bound, Stop};
use crate::trace::{sorted_charges, Trace, Verdict};

/// The document whose rules this file applies.
pub(crate) const POLICY: &str = "RP-006";

/// RP-006 §1: the escalation when a charge of `orders` is disputed, else `None`. Under
/// RP-001 (`charges_policy`) its §4.3 fires first: a disputed charge is not its business.
pub(crate) fn check<'a>(
    trace: &mut Trace<'a>,
    orders: &[&OrderFacts],
    charges_policy: Option<Bound<'a>>,
) -> Result<Option<Verdict>, Stop> {
    // The common case, without sorting anything.
    if !orders.iter().any(|o| o.charges.iter().any(|c| c.disputed)) {
        return Ok(None);
    }
    let disputed: Vec<&str> = orders
        .iter()
        .flat_map(|o| sorted_charges(o))
        .filter(|c| c.disputed)
        .map(|c| c.id.as_str())
        .collect();
    if disputed.is_empty() {
        return Ok(None);
    }
    let ids = disputed.join(", ");
    let policy = trace.policy(POLICY)?;
    let team = policy
        .family(policy.rules.disputes.as_ref(), "disputes")?
        .escalate_to;
    if let Some(charges_policy) = charges_policy {
        trace.fire(
            charges_policy,
            clause::DISPUTE,
            format!(
                "{ids} has an open dispute: handled under the disputes policy, never refunded here"
            ),
        );
    }
    trace.fire(
        policy,
        clause::DISPUTE_ESCALATION,
        format!(
            "{ids} is disputed: a refund could pay the customer twice; escalate to the \
             disputes team and let the bank's dispute process decide"
        ),
    );
    Ok(Some(Verdict::escalate(
        team,
        ReasonCode::DisputeOpen,
        format!("open dispute on {ids}"),
    )))
}
