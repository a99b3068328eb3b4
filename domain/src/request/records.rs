//! The billing records as evidence of what happened to the customer's money
//! ("then the billing records, the one order whose charges show the problem
//! described"), for when the customer's words leave the request kind unclear or name a
//! kind the order's charges contradict.
//!
//! What each record pattern means (per order):
//! - two or more captured charges: a duplicate charge;
//! - an uncaptured, not failed charge: an authorization hold;
//! - one captured charge above the order's price: an overcharge;
//! - the later of two identical paid orders: a repeat purchase (read as
//!   [`RequestKind::DuplicateCharge`]; RP-001 v1/v2 decide what that is worth).
//!
//! A reading is used only when exactly one (kind, order) fits. What it deliberately does
//! not do: infer a cancellation (a wish to withdraw is never in the records, so a
//! customer who did not ask to cancel is never refunded as one, RP-003), or override a
//! kind the records do not contradict — "charged twice" on an order with one charge
//! stays a duplicate claim, so the engine still answers `not_duplicate` (RP-001 §2),
//! and a duplicate already refunded still reads as a duplicate (`already_refunded`).
//! The policy engine decides from the facts either way; this only says what they are
//! about. Pure: no I/O.

use policy_engine::RequestKind;
use rust_decimal::Decimal;

use crate::resolve::{self, OrderCandidate};

/// Beyond this many orders the records are not scanned for a kind (bounded reads):
/// with that many, one anomaly is no longer evidence of what this ticket is about.
pub const MAX_ORDERS_SCANNED: usize = 8;

/// The kinds an order's charges show, in the order of the module comment.
pub fn kinds_shown(order: &OrderCandidate, all: &[OrderCandidate]) -> Vec<RequestKind> {
    let charges = order.charges.as_deref().unwrap_or_default();
    let taken: Vec<Decimal> = charges
        .iter()
        .filter(|c| c.took_money)
        .map(|c| c.amount)
        .collect();
    let mut kinds = Vec::new();
    let repeat = {
        let refs: Vec<&OrderCandidate> = all.iter().collect();
        resolve::repeat_purchase(&refs).is_some_and(|(later, _)| later.id == order.id)
    };
    if taken.len() >= 2 || repeat {
        kinds.push(RequestKind::DuplicateCharge);
    }
    if charges.iter().any(|c| c.hold) {
        kinds.push(RequestKind::AuthorizationHold);
    }
    if let [only] = taken.as_slice() {
        if *only > order.amount {
            kinds.push(RequestKind::Overcharge);
        }
    }
    kinds
}

/// Whether the records support the kind the text names (its evidence, broadly): a
/// duplicate claim by two captured charges or a repeat purchase, an overcharge claim by
/// more taken than the price (one charge or several), a hold claim by a hold.
fn supports(kind: RequestKind, order: &OrderCandidate, all: &[OrderCandidate]) -> bool {
    match kind {
        RequestKind::Overcharge | RequestKind::DuplicateCharge
            if resolve::shows_problem(kind, order) =>
        {
            true
        }
        _ => kinds_shown(order, all).contains(&kind),
    }
}

/// The kind the records settle, with the order that shows it, or `None` (keep the
/// text's reading). `scope` is the order in question when one is known, else all of
/// the customer's orders; every order in it must have its charges read.
pub fn read_kind<'a>(
    text_kind: RequestKind,
    scope: &[&'a OrderCandidate],
    all: &[OrderCandidate],
) -> Option<(RequestKind, &'a OrderCandidate)> {
    // A cancellation is a wish, not an event in the records: never overridden.
    if text_kind == RequestKind::Cancellation || scope.len() > MAX_ORDERS_SCANNED {
        return None;
    }
    if scope.iter().any(|o| o.charges.is_none()) {
        return None;
    }
    if text_kind != RequestKind::Unclear && scope.iter().any(|o| supports(text_kind, o, all)) {
        return None;
    }
    let readings: Vec<(RequestKind, &OrderCandidate)> = scope
        .iter()
        .flat_map(|o| kinds_shown(o, all).into_iter().map(move |k| (k, *o)))
        .filter(|(k, _)| *k != text_kind)
        .collect();
    match readings.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::ChargeSummary;

    fn charge(amount: &str, took_money: bool, hold: bool) -> ChargeSummary {
        ChargeSummary {
            amount: amount.parse().expect("test amount"),
            took_money,
            hold,
        }
    }

    fn order(id: &str, product: &str, price: &str, charges: Vec<ChargeSummary>) -> OrderCandidate {
        OrderCandidate {
            id: id.into(),
            product: product.into(),
            amount: price.parse().expect("test price"),
            currency: "USD".into(),
            placed_at: time::macros::datetime!(2026-01-01 12:00 UTC),
            charges: Some(charges),
        }
    }

    fn paid(price: &str) -> Vec<ChargeSummary> {
        vec![charge(price, true, false)]
    }

    fn read(text: RequestKind, orders: &[OrderCandidate]) -> Option<(RequestKind, String)> {
        let scope: Vec<&OrderCandidate> = orders.iter().collect();
        read_kind(text, &scope, orders).map(|(k, o)| (k, o.id.clone()))
    }

    #[test]
    fn two_captured_charges_on_one_order_read_as_a_duplicate_charge() {
        let orders = [
            order("A", "annual_plan", "99", vec![charge("99", true, false); 2]),
            order("B", "addon", "5", paid("5")),
        ];
        assert_eq!(
            read(RequestKind::Unclear, &orders),
            Some((RequestKind::DuplicateCharge, "A".into()))
        );
    }

    #[test]
    fn an_uncaptured_charge_reads_as_an_authorization_hold() {
        let orders = [order(
            "A",
            "monthly_plan",
            "10",
            vec![charge("10", true, false), charge("10", false, true)],
        )];
        assert_eq!(
            read(RequestKind::Unclear, &orders),
            Some((RequestKind::AuthorizationHold, "A".into()))
        );
    }

    #[test]
    fn one_captured_charge_above_the_price_reads_as_an_overcharge() {
        let orders = [order("A", "annual_plan", "99", paid("120"))];
        assert_eq!(
            read(RequestKind::Unclear, &orders),
            Some((RequestKind::Overcharge, "A".into()))
        );
    }

    #[test]
    fn the_later_of_two_identical_paid_orders_reads_as_a_repeat_purchase() {
        let orders = [
            order("A", "annual_plan", "99", paid("99")),
            order("B", "annual_plan", "99", paid("99")),
        ];
        assert_eq!(
            read(RequestKind::Unclear, &orders),
            Some((RequestKind::DuplicateCharge, "B".into()))
        );
    }

    #[test]
    fn records_that_fit_two_readings_settle_nothing() {
        let orders = [
            order("A", "annual_plan", "99", vec![charge("99", true, false); 2]),
            order(
                "B",
                "addon",
                "5",
                vec![charge("5", true, false), charge("5", false, true)],
            ),
        ];
        assert_eq!(read(RequestKind::Unclear, &orders), None);
    }

    #[test]
    fn plain_records_settle_nothing_and_never_read_as_a_cancellation() {
        let orders = [order("A", "annual_plan", "99", paid("99"))];
        assert_eq!(read(RequestKind::Unclear, &orders), None);
        // A cancellation is never overridden either, whatever the charges show.
        let doubled = [order(
            "A",
            "annual_plan",
            "99",
            vec![charge("99", true, false); 2],
        )];
        assert_eq!(read(RequestKind::Cancellation, &doubled), None);
    }

    #[test]
    fn a_duplicate_claim_on_one_charge_stays_a_duplicate_claim_not_duplicate() {
        // RP-001 §2: the engine answers `not_duplicate`; the records must not turn it
        // into something refundable.
        let orders = [order("A", "annual_plan", "99", paid("99"))];
        assert_eq!(read(RequestKind::DuplicateCharge, &orders), None);
    }

    #[test]
    fn a_duplicate_already_refunded_stays_a_duplicate() {
        // The second capture was refunded: still two captured charges, the text is
        // supported, and the engine answers `already_refunded`.
        let orders = [order(
            "A",
            "annual_plan",
            "99",
            vec![charge("99", true, false); 2],
        )];
        assert_eq!(read(RequestKind::DuplicateCharge, &orders), None);
    }

    #[test]
    fn a_double_charge_that_is_a_hold_reads_as_the_hold_the_records_show() {
        let orders = [order(
            "A",
            "annual_plan",
            "99",
            vec![charge("99", true, false), charge("99", false, true)],
        )];
        assert_eq!(
            read(RequestKind::DuplicateCharge, &orders),
            Some((RequestKind::AuthorizationHold, "A".into()))
        );
    }

    #[test]
    fn an_overcharge_claim_on_two_charges_is_supported_and_kept() {
        // "After paying, another amount was taken": more taken than the price.
        let orders = [order(
            "A",
            "annual_plan",
            "99",
            vec![charge("99", true, false), charge("33", true, false)],
        )];
        assert_eq!(read(RequestKind::Overcharge, &orders), None);
    }

    #[test]
    fn unread_charges_or_too_many_orders_settle_nothing() {
        let mut unread = order("A", "annual_plan", "99", vec![]);
        unread.charges = None;
        assert_eq!(read(RequestKind::Unclear, &[unread]), None);
        let many: Vec<OrderCandidate> = (0..=MAX_ORDERS_SCANNED)
            .map(|i| {
                order(
                    &format!("A{i}"),
                    "addon",
                    "5",
                    paid(if i == 0 { "9" } else { "5" }),
                )
            })
            .collect();
        assert_eq!(read(RequestKind::Unclear, &many), None);
    }
}
