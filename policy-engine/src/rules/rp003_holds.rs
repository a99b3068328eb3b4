//! RP-003, authorization holds: a hold is never refunded; the card issuer releases it
//! within the region's period, and a hold still on record after it goes to the payments
//! team.
//!
//! Reached from the remedies (RP-001, RP-002) when the order shows a hold and nothing
//! to refund. It tells when a hold is released; it never releases one.

use time::Duration;

use crate::decision::ReasonCode;
use crate::facts::{ChargeFacts, RequestKind};
use crate::parameters::{clause, HoldRelease, HoldRules};
use crate::selection::{Bound, Stop};
use crate::trace::Elapsed;
use crate::trace::{Trace, Verdict};

/// The document whose rules this file applies.
pub(crate) const POLICY: &str = "RP-003";

/// RP-003 §1 on `holds`: a denial that says when the issuer releases them, or the
/// payments team's escalation when one is overdue. Under RP-001 (`charges_policy`) its
/// §4.2 fires first, unless the customer asked about a hold.
pub(crate) fn decide<'a>(
    trace: &mut Trace<'a>,
    holds: &[&ChargeFacts],
    charges_policy: Option<Bound<'a>>,
) -> Result<Verdict, Stop> {
    let policy = trace.policy(POLICY)?;
    let rules = policy.family(policy.rules.holds.as_ref(), "holds")?;
    let region = trace.facts.customer.region;
    let release = rules.release.get(&region).ok_or_else(|| {
        Stop::Unavailable(format!(
            "{} has no hold release for {region}",
            policy.version()
        ))
    })?;
    if let Some(charges_policy) = charges_policy {
        if trace.facts.request != RequestKind::AuthorizationHold {
            trace.fire(
                charges_policy,
                clause::HOLD,
                "an authorization hold is not a charge: it took no money".into(),
            );
        }
    }
    let ids: Vec<&str> = holds.iter().map(|c| c.id.as_str()).collect();
    let ids = ids.join(", ");
    trace.fire(
        policy,
        clause::HOLD_RELEASE,
        format!(
            "{ids} is an authorization hold: never refunded; the card issuer releases it \
             within {} in {region}",
            release.text
        ),
    );
    Ok(overdue(trace, policy, rules, release, holds))
}

/// The verdict once the release is told: a denial, or the escalation of the holds still
/// on record after the release period.
fn overdue<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    rules: &HoldRules,
    release: &HoldRelease,
    holds: &[&ChargeFacts],
) -> Verdict {
    let reported_at = trace.facts.reported_at;
    let period = Duration::days(i64::from(release.days));
    let overdue: Vec<&&ChargeFacts> = holds
        .iter()
        .filter(|c| reported_at >= c.created_at + period)
        .collect();
    let hold_release = Some(release.text.clone());
    if overdue.is_empty() {
        return Verdict {
            hold_release,
            ..Verdict::deny(ReasonCode::AuthorizationHold)
        };
    }
    let overdue_ids: Vec<&str> = overdue.iter().map(|c| c.id.as_str()).collect();
    let overdue_ids = overdue_ids.join(", ");
    trace.fire(
        policy,
        clause::HOLD_OVERDUE,
        format!(
            "{overdue_ids} is still on record {} after it was placed, beyond {}: escalate \
             to the payments team",
            Elapsed(reported_at - overdue[0].created_at),
            release.text
        ),
    );
    Verdict {
        hold_release,
        ..Verdict::escalate(
            rules.overdue_escalate_to,
            ReasonCode::AuthorizationHold,
            format!("hold {overdue_ids} still visible after {}", release.text),
        )
    }
}
