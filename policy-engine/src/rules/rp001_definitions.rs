//! RP-001 §1, definitions: what the records show — a charge the provider recorded (or
//! the records missing), an order whose charges exceed it, an accidental repeat purchase.
//!
//! The remedies build on these: `rp001_charges` (what is refunded) and, for which order
//! a request is about and whether a cancellation's payment records exist, RP-002. This
//! module refunds nothing itself.

use rust_decimal::Decimal;

use crate::decision::{ReasonCode, Team};
use crate::facts::{ChargeFacts, Facts, OrderFacts};
use crate::parameters::{clause, ChargeRules};
use crate::selection::{Bound, Stop};
use crate::trace::{Trace, Verdict};

/// The document whose rules RP-001's files apply.
pub(crate) const POLICY: &str = "RP-001";

/// The version of RP-001 in force and its `[charges]` rules.
pub(crate) fn rules<'a>(trace: &Trace<'a>) -> Result<(Bound<'a>, &'a ChargeRules), Stop> {
    let policy = trace.policy(POLICY)?;
    let rules = policy.family(policy.rules.charges.as_ref(), "charges")?;
    Ok((policy, rules))
}

/// An order the decision looks at, with the earlier order it repeats (RP-001 v2 §1).
pub(crate) struct Involved<'a> {
    pub(crate) order: &'a OrderFacts,
    pub(crate) repeat_of: Option<&'a OrderFacts>,
}

/// Same product, amount and currency (RP-001 v2 §1).
pub(crate) fn same_purchase(a: &OrderFacts, b: &OrderFacts) -> bool {
    a.product == b.product && a.amount == b.amount
}

/// True when an order's records show what RP-001 refunds: more captured than the
/// order amount, or being the later order of an accidental repeat purchase.
pub(crate) fn shows_charge_problem(facts: &Facts, order: &OrderFacts, rules: &ChargeRules) -> bool {
    let paid: Vec<&ChargeFacts> = order.charges.iter().filter(|c| c.took_money()).collect();
    if paid
        .iter()
        .any(|c| c.amount.currency() != order.amount.currency())
    {
        return true; // inconsistent records: let a person see them
    }
    let total: Decimal = paid.iter().map(|c| c.amount.amount()).sum();
    if total > order.amount.amount() {
        return true;
    }
    match rules.repeat_purchase_window() {
        Some(window) if order.is_paid() => facts.orders.iter().any(|earlier| {
            earlier.id != order.id
                && same_purchase(earlier, order)
                && earlier.is_paid()
                && (earlier.created_at, &earlier.id) < (order.created_at, &order.id)
                && order.created_at - earlier.created_at < window
        }),
        _ => false,
    }
}

/// The target plus, under a version with the repeat-purchase rule, every paid order
/// for the same product and amount created less than the window apart from it.
pub(crate) fn involved_orders<'a>(
    facts: &'a Facts,
    target: &'a OrderFacts,
    rules: &ChargeRules,
) -> Vec<Involved<'a>> {
    let alone = || {
        vec![Involved {
            order: target,
            repeat_of: None,
        }]
    };
    let Some(window) = rules.repeat_purchase_window() else {
        return alone();
    };
    if !target.is_paid() {
        return alone();
    }
    let mut group: Vec<&'a OrderFacts> = vec![target];
    group.extend(facts.orders.iter().filter(|o| {
        o.id != target.id
            && same_purchase(o, target)
            && o.is_paid()
            && (o.created_at - target.created_at).abs() < window
    }));
    group.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    (0..group.len())
        .map(|i| Involved {
            order: group[i],
            // The nearest earlier order less than the window before it.
            repeat_of: group[..i]
                .iter()
                .rev()
                .find(|e| group[i].created_at - e.created_at < window)
                .copied(),
        })
        .collect()
}

/// A paid order for which the provider shows no charge at all — not a failed one,
/// not a hold — has no payment records to decide on: the charge of RP-001 §1 ("a
/// payment attempt recorded by the payment provider") is missing, not absent. Most
/// often the records are not linked (a charge naming its order under another key, a
/// customer not linked to the provider), and a denial ("two purchases", "nothing is
/// duplicated", "nothing was captured") would rest on that gap, so the request goes
/// to the payments team with the reason, never to an automatic denial. A free order
/// (amount zero) expects no charge and is decided on its records.
pub(crate) fn missing_records(
    trace: &mut Trace<'_>,
    target: &OrderFacts,
) -> Result<Option<Verdict>, Stop> {
    if !target.charges.is_empty() || target.amount.is_zero() {
        return Ok(None);
    }
    let policy = trace.policy(POLICY)?;
    trace.note_order(target);
    trace.note(format!(
        "the payment provider shows no charge for order {}",
        target.id
    ));
    trace.fire(
        policy,
        clause::DEFINITIONS,
        format!(
            "order {} ({}) has no charge recorded by the payment provider: its payment \
             records are missing, so nothing can be decided on them; a person checks them",
            target.id, target.amount
        ),
    );
    Ok(Some(Verdict::escalate(
        Team::Payments,
        ReasonCode::Other,
        format!(
            "payment records missing: the payment provider shows no charge for order {}",
            target.id
        ),
    )))
}
