//! RP-002, cooling-off and cancellation refunds: which order a request is about (§4),
//! and the cooling-off refund of an annual plan (§1); monthly plans (§2) and add-ons (§3)
//! are not refunded on cancellation.
//!
//! A disputed charge is RP-006's, a hold RP-003's, missing payment records and the
//! charge problems that single out an order are RP-001's (§1), the approver RP-004's.
//! Duplicate and erroneous charges, add-ons included, are never decided here.

use time::Duration;

use crate::decision::{ReasonCode, RefundLine};
use crate::facts::{ChargeFacts, OrderFacts, RequestKind};
use crate::parameters::clause;
use crate::selection::{Bound, Stop};
use crate::trace::Elapsed;
use crate::trace::{sorted_charges, Trace, Verdict};

use super::rp001_definitions as charge_definitions;
use super::rp004_approval::{self as approval, RemedyKind};
use super::{rp003_holds, rp006_disputes};

/// The document whose rules this file applies.
pub(crate) const POLICY: &str = "RP-002";

/// RP-002 §4: the request must name or clearly point at one order. `Err` holds the
/// question to ask when it does not.
pub(crate) fn which_order<'a>(
    trace: &mut Trace<'a>,
) -> Result<Result<&'a OrderFacts, Verdict>, Stop> {
    let facts = trace.facts;
    if let Some(id) = &facts.order_id {
        if let Some(order) = facts.orders.iter().find(|o| &o.id == id) {
            return Ok(Ok(order));
        }
        let policy = trace.policy(POLICY)?;
        trace.note(format!("order {id} is not among the customer's orders"));
        trace.fire(
            policy,
            clause::AMBIGUOUS_ORDER,
            format!("order {id} is not one of the customer's orders: ask which order it is"),
        );
        return Ok(Err(Verdict::request_info("order_id")));
    }
    let candidates = candidates(trace)?;
    if let [only] = candidates.as_slice() {
        trace.note(format!(
            "order_id not given; the one order that could match is {}",
            only.id
        ));
        return Ok(Ok(only));
    }
    let policy = trace.policy(POLICY)?;
    if candidates.is_empty() {
        trace.note("order_id not given; the customer has no orders".into());
        trace.fire(
            policy,
            clause::AMBIGUOUS_ORDER,
            "the request points at no order: ask for the order".into(),
        );
    } else {
        let ids: Vec<&str> = candidates.iter().map(|o| o.id.as_str()).collect();
        trace.note(format!(
            "order_id not given; {} orders could match: {}",
            ids.len(),
            ids.join(", ")
        ));
        trace.fire(
            policy,
            clause::AMBIGUOUS_ORDER,
            "several orders could match and the customer did not say which: ask for the \
             order before anything else"
                .into(),
        );
    }
    Ok(Err(Verdict::request_info("order_id")))
}

/// The orders a request without an order id could be about. For charge complaints
/// these are the orders whose records show such a problem, for holds the orders with
/// a hold; when none does, every order could be meant.
fn candidates<'a>(trace: &Trace<'a>) -> Result<Vec<&'a OrderFacts>, Stop> {
    let facts = trace.facts;
    let mut orders: Vec<&'a OrderFacts> = facts.orders.iter().collect();
    orders.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    if orders.len() <= 1 {
        return Ok(orders);
    }
    let matching: Vec<&'a OrderFacts> = match facts.request {
        RequestKind::AuthorizationHold => orders
            .iter()
            .copied()
            .filter(|o| o.charges.iter().any(ChargeFacts::is_hold))
            .collect(),
        RequestKind::DuplicateCharge | RequestKind::Overcharge => {
            let (_, rules) = charge_definitions::rules(trace)?;
            orders
                .iter()
                .copied()
                .filter(|o| charge_definitions::shows_charge_problem(facts, o, rules))
                .collect()
        }
        RequestKind::Cancellation | RequestKind::Unclear => Vec::new(),
    };
    Ok(if matching.is_empty() {
        orders
    } else {
        matching
    })
}

/// RP-002 §1–3: cooling-off refunds of annual plans; other products are not refunded.
pub(crate) fn decide<'a>(trace: &mut Trace<'a>, target: &'a OrderFacts) -> Result<Verdict, Stop> {
    let policy = trace.policy(POLICY)?;
    let rules = policy.family(policy.rules.cancellation.as_ref(), "cancellation")?;
    trace.note_order(target);
    if let Some(verdict) = rp006_disputes::check(trace, &[target], None)? {
        return Ok(verdict);
    }
    let product = target.product;
    if !rules.cooling_off_products.contains(&product) {
        trace.fire(
            policy,
            product.as_str(),
            format!(
                "{} of order {} has no cooling-off refund: a cancellation refunds nothing",
                product, target.id
            ),
        );
        return Ok(Verdict::deny(ReasonCode::NotEligible));
    }
    let region = trace.facts.customer.region;
    let days = *rules.cooling_off_days.get(&region).ok_or_else(|| {
        Stop::Unavailable(format!(
            "{} has no cooling-off period for {region}",
            policy.version()
        ))
    })?;
    let reported_at = trace.facts.reported_at;
    let since_order = reported_at - target.created_at;
    if reported_at >= target.created_at + Duration::days(i64::from(days)) {
        trace.fire(
            policy,
            clause::COOLING_OFF,
            format!(
                "asked {} after order {} was created, not within the {days}-day cooling-off \
                 period in {region}: no refund, the plan stays active until the end of its \
                 term",
                Elapsed(since_order),
                target.id
            ),
        );
        return Ok(Verdict::deny(ReasonCode::NotEligible));
    }
    trace.fire(
        policy,
        clause::COOLING_OFF,
        format!(
            "asked {} after order {} was created, within the {days}-day cooling-off period \
             in {region}: full refund of the plan's captured charges, less anything already \
             refunded or pending",
            Elapsed(since_order),
            target.id
        ),
    );
    if let Some(verdict) = charge_definitions::missing_records(trace, target)? {
        return Ok(verdict);
    }
    refund_plan(trace, policy, target)
}

/// RP-002 §1 within the cooling-off period: the plan's captured charges, less anything
/// already refunded or pending; a hold is RP-003's, nothing captured refunds nothing.
fn refund_plan<'a>(
    trace: &mut Trace<'a>,
    policy: Bound<'a>,
    target: &'a OrderFacts,
) -> Result<Verdict, Stop> {
    let charges = sorted_charges(target);
    let paid: Vec<&ChargeFacts> = charges.iter().copied().filter(|c| c.took_money()).collect();
    if paid.is_empty() {
        let holds: Vec<&ChargeFacts> = charges.iter().copied().filter(|c| c.is_hold()).collect();
        if !holds.is_empty() {
            return rp003_holds::decide(trace, &holds, None);
        }
        trace.fire(
            policy,
            clause::COOLING_OFF,
            format!(
                "nothing was captured on order {}: nothing to refund",
                target.id
            ),
        );
        return Ok(Verdict::deny(ReasonCode::NotEligible));
    }
    let mut lines = Vec::new();
    for charge in paid {
        let already = charge.already_refunded()?;
        let amount = charge.refundable()?;
        if !already.is_zero() {
            trace.fire(
                policy,
                clause::COOLING_OFF,
                format!(
                    "{already} is already refunded or pending on {}: {amount} is left to refund",
                    charge.id
                ),
            );
        }
        if !amount.is_zero() {
            lines.push((
                RefundLine {
                    order_id: target.id.clone(),
                    charge_id: charge.id.clone(),
                    amount,
                    payment_method: charge.payment_method.clone(),
                },
                RemedyKind::CoolingOff,
            ));
        }
    }
    if lines.is_empty() {
        return Ok(Verdict::deny(ReasonCode::AlreadyRefunded));
    }
    let (approval_policy, approval_rules) = approval::rules(trace)?;
    let approver = approval::approver(trace, approval_policy, approval_rules, None, &lines);
    let refunds = lines.into_iter().map(|(l, _)| l).collect();
    Ok(Verdict::allow(ReasonCode::CoolingOff, refunds, approver))
}
