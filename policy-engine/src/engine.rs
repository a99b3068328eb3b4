//! The decision: which policy versions apply and the order in which the policies are
//! weighed.
//!
//! [`decide`] is the live decision: the published versions in force on the ticket's
//! (UTC) creation date. [`decide_with`] is a what-if run with some versions pinned (a
//! draft included). Both are pure: same facts and versions, same `Decision`, same hash
//! (docs/spec/invariants.md #9). Every number comes from the rules files; every rule that
//! fires cites `doc@version#section`.
//!
//! This file holds the order of the checks, nothing of what any one policy says: that is
//! in `rules/`, one file per policy. The machinery they share — recording fired rules
//! and facts, building the decision — is `trace`; which version applies, `selection`.

use std::collections::BTreeMap;

use time::{Date, OffsetDateTime, UtcOffset};

use crate::decision::{Decision, ReasonCode, Team};
use crate::error::PolicyError;
use crate::facts::{Facts, RequestKind};
use crate::policy_set::PolicySet;
use crate::rules::{rp001_charges, rp002_cancellation, rp007_ownership};
use crate::selection::{Selection, Stop};
use crate::trace::{Trace, Verdict};

/// The live decision: published versions in force on `facts.reported_at` (UTC date).
/// A draft is never used here (docs/spec/policies.md).
pub fn decide(facts: &Facts, policies: &PolicySet) -> Decision {
    let selection = Selection::new(policies, utc_date(facts.reported_at), BTreeMap::new());
    run(facts, selection)
}

/// A what-if decision: each `"RP-001@3"` in `pinned` replaces the version in force for
/// that document (drafts allowed). An unknown or malformed reference, or two different
/// pins for one document, is an error.
pub fn decide_with(
    facts: &Facts,
    policies: &PolicySet,
    pinned: &[String],
) -> Result<Decision, PolicyError> {
    let mut pins = BTreeMap::new();
    for version_ref in pinned {
        let document = policies.resolve_ref(version_ref)?;
        let index = policies
            .index(&document.meta.id, document.meta.version)
            .ok_or_else(|| PolicyError::UnknownVersion(version_ref.clone()))?;
        if let Some(previous) = pins.insert(document.meta.id.clone(), index) {
            if previous != index {
                return Err(PolicyError::PolicySet(format!(
                    "{} is pinned to two versions",
                    document.meta.id
                )));
            }
        }
    }
    let selection = Selection::new(policies, utc_date(facts.reported_at), pins);
    Ok(run(facts, selection))
}

fn utc_date(at: OffsetDateTime) -> Date {
    at.to_offset(UtcOffset::UTC).date()
}

fn run(facts: &Facts, selection: Selection<'_>) -> Decision {
    let mut trace = Trace::new(facts, selection);
    let verdict = match evaluate(&mut trace) {
        Ok(verdict) => verdict,
        // Facts or policies we cannot apply go to a person, with the reason.
        Err(Stop::Unavailable(why)) => Verdict::escalate(
            Team::Supervisor,
            ReasonCode::Other,
            format!("policy unavailable: {why}"),
        ),
        Err(Stop::Inconsistent(why)) => Verdict::escalate(
            Team::Supervisor,
            ReasonCode::Other,
            format!("inconsistent billing facts: {why}"),
        ),
    };
    trace.finish(verdict)
}

/// The order of the checks. Ownership (RP-007) comes before anything that could reveal
/// an order, then which order (RP-002 §4), then the remedy: RP-002 for a cancellation,
/// RP-001 for charges. Each remedy checks disputes (RP-006) before anything else, hands
/// holds to RP-003 and its refunds to RP-004 for the approver.
fn evaluate<'a>(trace: &mut Trace<'a>) -> Result<Verdict, Stop> {
    trace.note_request();
    // RP-007: nothing about another customer's order may reach the decision, so this
    // check comes before any order is looked at.
    if let Some(verdict) = rp007_ownership::check(trace)? {
        return Ok(verdict);
    }
    let target = match rp002_cancellation::which_order(trace)? {
        Ok(order) => order,
        Err(ask) => return Ok(ask),
    };
    match trace.facts.request {
        // One thing bought twice is weighed as RP-001 says first, whatever the words
        // called it ("cancel the second one"): §1, then §4.1.
        RequestKind::Cancellation if trace.facts.repeat_of.is_none() => {
            rp002_cancellation::decide(trace, target)
        }
        _ => rp001_charges::decide(trace, target),
    }
}

#[cfg(test)]
pub(crate) mod tests;
