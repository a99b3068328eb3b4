//! RP-007, account verification: an order of another customer is escalated to the
//! security team, and nothing about it is confirmed or denied.
//!
//! It runs before any order is looked at (`engine.rs`), so no fact of another customer's
//! order reaches the decision. Who the customer is comes from the facts; this module
//! never weighs what a message claims.

use crate::decision::ReasonCode;
use crate::facts::Ownership;
use crate::parameters::clause;
use crate::selection::Stop;
use crate::trace::{Trace, Verdict};

/// The document whose rules this file applies.
pub(crate) const POLICY: &str = "RP-007";

/// RP-007 §1: the escalation when the named order belongs to another customer, else
/// `None`.
pub(crate) fn check(trace: &mut Trace<'_>) -> Result<Option<Verdict>, Stop> {
    if trace.facts.order_ownership != Ownership::OtherCustomer {
        return Ok(None);
    }
    let policy = trace.policy(POLICY)?;
    let team = policy
        .family(policy.rules.ownership.as_ref(), "ownership")?
        .escalate_to;
    trace.note("the order named in the request belongs to another customer".into());
    trace.fire(
        policy,
        clause::OTHER_CUSTOMER,
        "the order belongs to a different customer: confirm or deny nothing about it \
         and escalate to the security team"
            .into(),
    );
    Ok(Some(Verdict::escalate(
        team,
        ReasonCode::OwnershipMismatch,
        "the order named in the request belongs to another customer".into(),
    )))
}
