//! RP-001, duplicate and erroneous charges: duplicate charges, overcharges and accidental
//! repeat purchases are refunded (§2), capped by what is left on each charge (§2.4), in
//! the charge's currency (§2.3), and reported in time or escalated (§3); what is not a
//! duplicate is answered as such (§4).
//!
//! Its definitions (§1) are `rp001_definitions`. A disputed charge is RP-006's, a hold
//! RP-003's, the approver RP-004's, and one thing bought twice but no accidental repeat
//! is weighed as a cancellation under RP-002 (§4.1); this file hands those over.

use rust_decimal::Decimal;

use crate::decision::{Outcome, ReasonCode, RefundLine, Team};
use crate::facts::{ChargeFacts, ChargeStatus, OrderFacts, RequestKind};
use crate::money::Money;
use crate::parameters::{clause, ChargeRules};
use crate::selection::{Bound, Stop};
use crate::trace::{sorted_charges, Trace, Verdict};
use crate::trace::{Elapsed, Timestamp};

use super::rp001_definitions::{self as definitions, same_purchase, Involved};
use super::rp004_approval::{self as approval, RemedyKind};
use super::{rp002_cancellation, rp003_holds, rp006_disputes};

/// A charge some rule says to refund, before refunds already made are subtracted.
struct Finding<'a> {
    order: &'a OrderFacts,
    charge: &'a ChargeFacts,
    kind: RemedyKind,
    /// What the rule refunds before subtracting what was already refunded.
    gross: Money,
}

/// What the orders of a decision show: refundable charges, and the orders with more
/// captured than their amount that no rule explains.
struct Found<'a> {
    findings: Vec<Finding<'a>>,
    unexplained: Vec<&'a str>,
}

/// Duplicate charges, overcharges, repeat purchases and holds (RP-001, RP-003).
pub(crate) fn decide<'a>(trace: &mut Trace<'a>, target: &'a OrderFacts) -> Result<Verdict, Stop> {
    if let Some(verdict) = definitions::missing_records(trace, target)? {
        return Ok(verdict);
    }
    let (policy, rules) = definitions::rules(trace)?;
    let involved = definitions::involved_orders(trace.facts, target, rules);
    for item in &involved {
        trace.note_order(item.order);
    }
    let orders: Vec<&OrderFacts> = involved.iter().map(|i| i.order).collect();
    if let Some(verdict) = rp006_disputes::check(trace, &orders, Some(policy))? {
        return Ok(verdict);
    }
    let found = findings(trace, policy, rules, &involved)?;
    if found.findings.is_empty() {
        return nothing_found(trace, policy, rules, target, &found.unexplained);
    }
    let lines = refund_lines(trace, policy, &found.findings)?;
    if lines.is_empty() {
        return Ok(Verdict::deny(ReasonCode::AlreadyRefunded));
    }
    trace.fire(
        policy,
        clause::CURRENCY,
        "each refund goes in the charge's currency to its original payment method".into(),
    );
    approve(trace, policy, rules, &found.findings, lines)
}

/// RP-001 §1 and §2 on each involved order: the later orders of a repeat purchase, the
/// later of identical charges, a single charge above the order amount.
fn findings<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    rules: &ChargeRules,
    involved: &[Involved<'a>],
) -> Result<Found<'a>, Stop> {
    let mut found = Found {
        findings: Vec::new(),
        unexplained: Vec::new(),
    };
    for item in involved {
        let order = item.order;
        let mut paid: Vec<&'a ChargeFacts> = sorted_charges(order);
        paid.retain(|c| c.took_money());
        if let Some(c) = paid
            .iter()
            .find(|c| c.amount.currency() != order.amount.currency())
        {
            return Err(Stop::Inconsistent(format!(
                "charge {} is in {} but order {} is in {}",
                c.id,
                c.amount.currency(),
                order.id,
                order.amount.currency()
            )));
        }
        if let Some(first) = item.repeat_of {
            let minutes = rules.repeat_purchase_window_minutes.unwrap_or_default();
            trace.fire(
                policy,
                clause::REPEAT_PURCHASE,
                format!(
                    "order {} repeats order {} (same product, amount and currency, created \
                     less than {minutes} minutes later, both paid): an accidental repeat \
                     purchase",
                    order.id, first.id
                ),
            );
            found.findings.extend(paid.iter().map(|charge| Finding {
                order,
                charge,
                kind: RemedyKind::RepeatPurchase,
                gross: charge.amount,
            }));
            continue;
        }
        order_findings(order, &paid, &mut found)?;
    }
    Ok(found)
}

/// One order's duplicate charges or overcharge, when more was captured than its amount.
fn order_findings<'a>(
    order: &'a OrderFacts,
    paid: &[&'a ChargeFacts],
    found: &mut Found<'a>,
) -> Result<(), Stop> {
    let total: Decimal = paid.iter().map(|c| c.amount.amount()).sum();
    if total <= order.amount.amount() {
        return Ok(());
    }
    // RP-001 §1: the earliest of identical charges is the payment, every later
    // one a duplicate.
    let duplicates: Vec<&'a ChargeFacts> = paid
        .iter()
        .enumerate()
        .filter(|(i, c)| paid[..*i].iter().any(|e| e.amount == c.amount))
        .map(|(_, c)| *c)
        .collect();
    if !duplicates.is_empty() {
        found
            .findings
            .extend(duplicates.into_iter().map(|charge| Finding {
                order,
                charge,
                kind: RemedyKind::Duplicate,
                gross: charge.amount,
            }));
    } else if let [only] = paid {
        found.findings.push(Finding {
            order,
            charge: only,
            kind: RemedyKind::Overcharge,
            gross: only.amount.saturating_sub(&order.amount)?,
        });
    } else {
        found.unexplained.push(&order.id);
    }
    Ok(())
}

/// No charge to refund: more captured than no rule explains goes to a supervisor, a
/// hold is RP-003's, anything else is answered under §4 ([`no_finding`]).
fn nothing_found<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    rules: &ChargeRules,
    target: &'a OrderFacts,
    unexplained: &[&str],
) -> Result<Verdict, Stop> {
    if !unexplained.is_empty() {
        let ids = unexplained.join(", ");
        trace.fire(
            policy,
            clause::DEFINITIONS,
            format!(
                "more was captured on {ids} than the order amount, but the charges are \
                 neither identical duplicates nor a single overcharge"
            ),
        );
        return Ok(Verdict::escalate(
            Team::Supervisor,
            ReasonCode::Other,
            format!("captured total on {ids} exceeds the order amount; no rule covers it"),
        ));
    }
    let holds: Vec<&ChargeFacts> = sorted_charges(target)
        .into_iter()
        .filter(|c| c.is_hold())
        .collect();
    if !holds.is_empty() {
        return rp003_holds::decide(trace, &holds, Some(policy));
    }
    no_finding(trace, policy, rules, target)
}

/// RP-001 §2.1, §2.2 and §2.4: what each finding refunds, less what is already refunded
/// or pending on its charge, and never more than is left on it.
fn refund_lines<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    findings: &[Finding<'a>],
) -> Result<Vec<(RefundLine, RemedyKind)>, Stop> {
    let mut lines: Vec<(RefundLine, RemedyKind)> = Vec::with_capacity(findings.len());
    for finding in findings {
        let charge = finding.charge;
        let already = charge.already_refunded()?;
        let refundable = charge.refundable()?;
        let wanted = match finding.kind {
            RemedyKind::Overcharge => finding.gross.saturating_sub(&already)?,
            RemedyKind::Duplicate | RemedyKind::RepeatPurchase | RemedyKind::CoolingOff => {
                refundable
            }
        };
        // RP-001 §2.4: never more than is left on the charge.
        let amount = if wanted.amount() > refundable.amount() {
            refundable
        } else {
            wanted
        };
        fire_remedy(trace, policy, finding);
        if !already.is_zero() {
            trace.fire(
                policy,
                clause::CAP,
                format!(
                    "{already} is already refunded or pending on {}: {amount} is left to refund",
                    charge.id
                ),
            );
        }
        if !amount.is_zero() {
            lines.push((
                RefundLine {
                    order_id: finding.order.id.clone(),
                    charge_id: charge.id.clone(),
                    amount,
                    payment_method: charge.payment_method.clone(),
                },
                finding.kind,
            ));
        }
    }
    Ok(lines)
}

/// The rule a finding refunds under: §2.1 for duplicates and repeat purchases, §2.2 for
/// an overcharge.
fn fire_remedy<'a>(trace: &mut Trace<'a>, policy: Bound<'a>, finding: &Finding<'a>) {
    let (charge, order) = (&finding.charge.id, &finding.order.id);
    let summary = match finding.kind {
        RemedyKind::Duplicate => format!(
            "{charge} on order {order} repeats an earlier identical charge: refund it in full, \
             less anything already refunded or pending"
        ),
        RemedyKind::RepeatPurchase => format!(
            "{charge} paid the repeated order {order}: refund it in full as a duplicate charge, \
             less anything already refunded or pending"
        ),
        RemedyKind::Overcharge | RemedyKind::CoolingOff => format!(
            "{charge} is {} above the amount of order {order}: refund the difference, less \
             anything already refunded or pending",
            finding.gross
        ),
    };
    let key = match finding.kind {
        RemedyKind::Overcharge => clause::OVERCHARGE,
        RemedyKind::Duplicate | RemedyKind::RepeatPurchase | RemedyKind::CoolingOff => {
            clause::DUPLICATE
        }
    };
    trace.fire(policy, key, summary);
}

/// RP-001 §3 and RP-004: refunds of charges reported too late are escalated for a
/// supervisor; the rest wait for the role their amounts need.
fn approve<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    rules: &ChargeRules,
    findings: &[Finding<'a>],
    lines: Vec<(RefundLine, RemedyKind)>,
) -> Result<Verdict, Stop> {
    // RP-001 §3: reported less than N × 24h after the charge to refund was created.
    let reported_at = trace.facts.reported_at;
    let late: Vec<&ChargeFacts> = findings
        .iter()
        .filter(|f| lines.iter().any(|(l, _)| l.charge_id == f.charge.id))
        .map(|f| f.charge)
        .filter(|c| reported_at >= c.created_at + rules.reporting_window())
        .collect();
    let (approval_policy, approval_rules) = approval::rules(trace)?;
    if !late.is_empty() {
        fire_late(trace, policy, rules, &late);
        let approver = approval::outside_window(trace, approval_policy, approval_rules);
        let days = rules.reporting_window_days;
        let ids: Vec<&str> = late.iter().map(|c| c.id.as_str()).collect();
        return Ok(Verdict {
            refunds: lines.into_iter().map(|(l, _)| l).collect(),
            approver_role: Some(approver),
            ..Verdict::escalate(
                rules.outside_window_escalate_to,
                ReasonCode::OutsideWindow,
                format!("{} reported outside the {days}-day window", ids.join(", ")),
            )
        });
    }
    let approver = approval::approver(
        trace,
        approval_policy,
        approval_rules,
        Some((policy, rules)),
        &lines,
    );
    let any = |kind: RemedyKind| lines.iter().any(|(_, k)| *k == kind);
    let reason_code = if any(RemedyKind::Duplicate) {
        ReasonCode::DuplicateCharge
    } else if any(RemedyKind::RepeatPurchase) {
        ReasonCode::RepeatPurchase
    } else {
        ReasonCode::Overcharge
    };
    let refunds = lines.into_iter().map(|(l, _)| l).collect();
    Ok(Verdict::allow(reason_code, refunds, approver))
}

/// RP-001 §3: each charge reported too late, with when it was created and how much
/// later it was reported.
fn fire_late<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    rules: &ChargeRules,
    late: &[&ChargeFacts],
) {
    let reported_at = trace.facts.reported_at;
    let days = rules.reporting_window_days;
    for charge in late {
        trace.fire(
            policy,
            clause::WINDOW,
            format!(
                "{} was created {} and reported {} later, not within {days} days: \
                 escalate for supervisor review",
                charge.id,
                Timestamp(charge.created_at),
                Elapsed(reported_at - charge.created_at)
            ),
        );
    }
}

/// RP-001 §4.1 for a later order the customer says repeats an earlier one of theirs
/// (`Facts::repeat_of`) and that is no accidental repeat purchase under the version in
/// force (none defined, or placed too long after): the same purchase bought twice "may
/// still qualify under RP-002", so the later order is weighed as a cancellation; two
/// different purchases get nothing here. `None` when the request names no repeat.
fn repeat_claim<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    target: &'a OrderFacts,
) -> Result<Option<Verdict>, Stop> {
    let facts = trace.facts;
    let Some(earlier) = facts.repeat_of.as_ref().and_then(|id| {
        facts
            .orders
            .iter()
            .find(|o| &o.id == id && o.id != target.id)
    }) else {
        return Ok(None);
    };
    trace.note_order(earlier);
    let repeat = same_purchase(earlier, target)
        && earlier.is_paid()
        && (earlier.created_at, &earlier.id) < (target.created_at, &target.id);
    if !repeat {
        trace.fire(
            policy,
            clause::DIFFERENT_ORDERS,
            format!(
                "orders {} and {} are two different purchases, not one bought twice: no \
                 refund under RP-001",
                earlier.id, target.id
            ),
        );
        return Ok(Some(Verdict::deny(ReasonCode::NotDuplicate)));
    }
    trace.fire(
        policy,
        clause::DIFFERENT_ORDERS,
        format!(
            "order {} repeats order {} but is not an accidental repeat purchase: the later \
             order may still be cancelled under RP-002",
            target.id, earlier.id
        ),
    );
    // What was asked is a duplicate refund: where RP-002 refunds nothing either, the
    // answer stays that the later order is no duplicate (both rules are in the trace).
    let verdict = rp002_cancellation::decide(trace, target)?;
    let refunds_nothing =
        verdict.outcome == Outcome::Deny && verdict.reason_code == ReasonCode::NotEligible;
    Ok(Some(if refunds_nothing {
        Verdict::deny(ReasonCode::NotDuplicate)
    } else {
        verdict
    }))
}

/// Nothing on the order is refundable under RP-001 and there is no hold: §4.1 when the
/// customer names an earlier order, else §1 says why nothing is a duplicate.
fn no_finding<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    rules: &ChargeRules,
    target: &'a OrderFacts,
) -> Result<Verdict, Stop> {
    for failed in sorted_charges(target)
        .into_iter()
        .filter(|c| c.status == ChargeStatus::Failed)
    {
        trace.fire(
            policy,
            clause::DEFINITIONS,
            format!("{} failed and took no money", failed.id),
        );
    }
    if let Some(verdict) = repeat_claim(trace, policy, target)? {
        return Ok(verdict);
    }
    match trace.facts.request {
        RequestKind::DuplicateCharge => Ok(not_duplicated(trace, policy, rules, target)),
        RequestKind::Unclear => {
            trace.fire(
                policy,
                clause::DEFINITIONS,
                format!(
                    "order {} shows no duplicate charge, overcharge or repeat purchase: ask \
                     what the customer is asking about",
                    target.id
                ),
            );
            Ok(Verdict::request_info("request"))
        }
        RequestKind::Overcharge | RequestKind::AuthorizationHold | RequestKind::Cancellation => {
            trace.fire(
                policy,
                clause::DEFINITIONS,
                format!(
                    "order {} shows no hold and no charge above the order amount: nothing to \
                     refund",
                    target.id
                ),
            );
            Ok(Verdict::deny(ReasonCode::NotEligible))
        }
    }
}

/// A duplicate charge was asked about and none is on the order: another order's charge
/// of the same amount is a second purchase (§4.1), else nothing is duplicated (§1).
fn not_duplicated<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    rules: &ChargeRules,
    target: &'a OrderFacts,
) -> Verdict {
    let amounts: Vec<Money> = target
        .charges
        .iter()
        .filter(|c| c.took_money())
        .map(|c| c.amount)
        .collect();
    let mut others: Vec<&'a OrderFacts> = trace
        .facts
        .orders
        .iter()
        .filter(|o| {
            o.id != target.id
                && o.charges
                    .iter()
                    .any(|c| c.took_money() && amounts.contains(&c.amount))
        })
        .collect();
    others.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    if let Some(other) = others.first() {
        trace.note_order(other);
        let repeat = if rules.repeat_purchase_window_minutes.is_some() {
            " and not an accidental repeat purchase"
        } else {
            ""
        };
        trace.fire(
            policy,
            clause::DIFFERENT_ORDERS,
            format!(
                "the charges on orders {} and {} are two purchases{repeat}: no \
                 duplicate-charge refund",
                target.id, other.id
            ),
        );
    } else {
        trace.fire(
            policy,
            clause::DEFINITIONS,
            format!(
                "order {} has no second captured charge of the same amount: nothing \
                 is duplicated",
                target.id
            ),
        );
    }
    Verdict::deny(ReasonCode::NotDuplicate)
}
