//! Property tests of the invariants every decision keeps, over generated billing facts:
//! never refund more than is refundable (docs/spec/invariants.md #6), same facts → same decision
//! and hash (invariant 9), refunds in the charge's currency, and independence from
//! orders the request is not about.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rust_decimal::Decimal;
use time::Duration;

use crate::catalog::{Product, Region};
use crate::engine::tests::check;
use crate::engine::{decide, decide_with};
use crate::facts::{
    ChargeFacts, ChargeStatus, CustomerFacts, Facts, OrderFacts, Ownership, RefundFacts,
    RefundStatus, RequestKind,
};
use crate::money::{Currency, Money};
use crate::testkit::{at, fixture_set};

const EPOCH: &str = "2026-02-01T00:00:00Z";

fn currency() -> impl Strategy<Value = Currency> {
    prop_oneof![
        Just(Currency::CNY),
        Just(Currency::USD),
        Just(Currency::EUR),
        Just(Currency::JPY)
    ]
}

fn product() -> impl Strategy<Value = Product> {
    prop_oneof![
        Just(Product::AnnualPlan),
        Just(Product::MonthlyPlan),
        Just(Product::Addon)
    ]
}

fn region() -> impl Strategy<Value = Region> {
    prop_oneof![
        Just(Region::CN),
        Just(Region::US),
        Just(Region::EU),
        Just(Region::JP)
    ]
}

fn request() -> impl Strategy<Value = RequestKind> {
    prop_oneof![
        Just(RequestKind::DuplicateCharge),
        Just(RequestKind::Overcharge),
        Just(RequestKind::Cancellation),
        Just(RequestKind::AuthorizationHold),
        Just(RequestKind::Unclear),
    ]
}

fn status() -> impl Strategy<Value = ChargeStatus> {
    prop_oneof![
        8 => Just(ChargeStatus::Succeeded),
        1 => Just(ChargeStatus::Pending),
        1 => Just(ChargeStatus::Failed),
    ]
}

fn refund_status() -> impl Strategy<Value = RefundStatus> {
    prop_oneof![
        Just(RefundStatus::Pending),
        Just(RefundStatus::Succeeded),
        Just(RefundStatus::Failed),
        Just(RefundStatus::Canceled),
    ]
}

/// A charge of a few likely amounts (so duplicates and overcharges are common).
fn charge(currency: Currency, order_minor: i64) -> impl Strategy<Value = ChargeFacts> {
    (
        prop_oneof![3 => Just(order_minor), 1 => 1i64..60_000],
        any::<bool>().prop_map(|b| b), // captured
        status(),
        prop::bool::weighted(0.1),
        0i64..600,    // seconds after the order
        0i64..80_000, // amount_refunded, minor
        prop::collection::vec((0i64..40_000, refund_status()), 0..3),
    )
        .prop_map(
            move |(minor, captured, status, disputed, after, refunded, refunds)| {
                let money = |m: i64| Money::from_minor(m, currency).unwrap();
                ChargeFacts {
                    id: String::new(), // named by the order
                    amount: money(minor),
                    captured: captured || status == ChargeStatus::Succeeded && minor % 5 != 0,
                    status,
                    disputed,
                    created_at: at(EPOCH) + Duration::seconds(after),
                    payment_method: "pm_card".into(),
                    // Mostly nothing refunded, sometimes part or more than the amount.
                    amount_refunded: money(if refunded % 3 == 0 {
                        refunded % (minor + 2)
                    } else {
                        0
                    }),
                    refunds: refunds
                        .into_iter()
                        .enumerate()
                        .map(|(i, (m, status))| RefundFacts {
                            id: format!("re_{i}"),
                            amount: money(m % (minor + 1)),
                            status,
                        })
                        .collect(),
                }
            },
        )
}

fn order(index: usize) -> impl Strategy<Value = OrderFacts> {
    (
        currency(),
        product(),
        prop_oneof![Just(19_800i64), 1i64..60_000],
        0i64..(400 * 1440),
    )
        .prop_flat_map(move |(currency, product, minor, minutes)| {
            prop::collection::vec(charge(currency, minor), 0..4).prop_map(move |charges| {
                let created_at = at(EPOCH) + Duration::minutes(minutes);
                OrderFacts {
                    id: format!("O-{index}"),
                    product,
                    amount: Money::from_minor(minor, currency).unwrap(),
                    created_at,
                    charges: charges
                        .into_iter()
                        .enumerate()
                        .map(|(i, mut c)| {
                            c.id = format!("ch_{index}_{i}");
                            c.created_at = created_at + (c.created_at - at(EPOCH));
                            c
                        })
                        .collect(),
                }
            })
        })
}

fn facts() -> impl Strategy<Value = Facts> {
    (
        prop::collection::vec(any::<u8>(), 1..4),
        region(),
        request(),
        prop::option::weighted(0.8, 0usize..4),
        0i64..(520 * 24),
    )
        .prop_flat_map(|(orders, region, request, named, hours)| {
            let strategies: Vec<_> = (0..orders.len()).map(order).collect();
            (strategies, Just((region, request, named, hours)))
        })
        .prop_map(|(mut orders, (region, request, named, hours))| {
            // Repeat purchases are rare by chance: make the second order repeat the first
            // a few minutes later when the generated hours say so.
            if orders.len() > 1 && hours % 4 == 0 {
                let (first, rest) = orders.split_at_mut(1);
                rest[0].product = first[0].product;
                rest[0].amount = first[0].amount;
                let shift =
                    first[0].created_at + Duration::minutes(hours % 11) - rest[0].created_at;
                rest[0].created_at += shift;
                for c in &mut rest[0].charges {
                    c.created_at += shift;
                }
            }
            let order_id = named.map(|i| format!("O-{}", i.min(orders.len() - 1)));
            Facts {
                reported_at: at(EPOCH) + Duration::hours(hours),
                customer: CustomerFacts {
                    id: "C-1".into(),
                    region,
                },
                request,
                order_id,
                order_ownership: Ownership::Owned,
                repeat_of: None,
                orders,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn refunds_never_exceed_what_is_refundable_and_stay_in_the_charge_currency(f in facts()) {
        let set = fixture_set();
        for pins in [vec![], vec!["RP-001@3".to_string()]] {
            let d = decide_with(&f, &set, &pins).unwrap();
            // Citations resolve, lines ≤ refundable, currency and payment method match.
            check(&f, &set, &d);
            let mut per_charge: BTreeMap<&str, Decimal> = BTreeMap::new();
            for line in &d.refunds {
                *per_charge.entry(&line.charge_id).or_default() += line.amount.amount();
            }
            for (charge_id, total) in per_charge {
                let charge = f.orders.iter().flat_map(|o| &o.charges).find(|c| c.id == charge_id).unwrap();
                prop_assert!(charge.took_money(), "{charge_id} took no money");
                let left = charge.amount.amount() - charge.already_refunded().unwrap().amount();
                prop_assert!(total <= left, "{charge_id}: {total} > {left}");
                prop_assert!(total <= charge.amount.amount());
            }
        }
    }

    #[test]
    fn same_facts_give_the_same_decision_and_hash(f in facts()) {
        let set = fixture_set();
        let first = decide(&f, &set);
        let again = decide(&f.clone(), &fixture_set());
        prop_assert_eq!(&first.hash, &again.hash);
        prop_assert_eq!(&first, &again);
        // And through JSON, as a replay from a stored FACTS.json would.
        let replayed: Facts = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
        prop_assert_eq!(decide(&replayed, &set), first);
    }

    #[test]
    fn an_unrelated_order_changes_nothing_when_the_order_is_named(
        f in facts(),
        unrelated in order(9),
    ) {
        prop_assume!(f.order_id.is_some());
        let set = fixture_set();
        let before = decide(&f, &set);
        // A different, unambiguous order: an amount no generated order or charge has, so
        // it can be neither a repeat purchase of the named order nor look like one.
        let currency = unrelated.amount.currency();
        let odd = Money::from_minor(999_999, currency).unwrap();
        let mut unrelated = unrelated;
        unrelated.id = "O-unrelated".into();
        unrelated.amount = odd;
        for c in &mut unrelated.charges {
            c.amount = odd;
        }
        let mut with_unrelated = f.clone();
        with_unrelated.orders.push(unrelated);
        let after = decide(&with_unrelated, &set);
        prop_assert_eq!(&after.hash, &before.hash);
        prop_assert_eq!(after, before);
    }
}
