//! RP-002's cases: which order a request is about (§4), and cooling-off refunds of annual
//! plans, none for monthly plans and add-ons (§1–3).

use super::*;

#[test]
fn without_an_order_id_several_matching_orders_ask_for_the_order() {
    let cny = |s| money(s, CNY);
    let addon = order(
        "O-5001",
        Addon,
        cny("30.00"),
        "2026-10-02T11:00:00Z",
        vec![charge("ch_5001a", cny("30.00"), "2026-10-02T11:00:03Z")],
    );
    let monthly = order(
        "O-5002",
        MonthlyPlan,
        cny("25.00"),
        "2026-11-02T11:00:00Z",
        vec![charge("ch_5002a", cny("25.00"), "2026-11-02T11:00:02Z")],
    );
    let duplicated = duplicate_order("O-5003", cny("40.00"), "2026-11-20T11:00:00Z");
    let reported = "2026-11-29T10:00:00Z";
    // (request, orders, outcome, reason)
    let cases = [
        (
            DuplicateCharge,
            vec![addon.clone(), monthly.clone()],
            Outcome::RequestInfo,
            ReasonCode::InsufficientInfo,
        ),
        (
            Cancellation,
            vec![addon.clone(), monthly.clone()],
            Outcome::RequestInfo,
            ReasonCode::InsufficientInfo,
        ),
        (
            Unclear,
            vec![addon.clone(), duplicated.clone()],
            Outcome::RequestInfo,
            ReasonCode::InsufficientInfo,
        ),
        (
            DuplicateCharge,
            vec![],
            Outcome::RequestInfo,
            ReasonCode::InsufficientInfo,
        ),
        // One order only: use it.
        (
            DuplicateCharge,
            vec![monthly.clone()],
            Outcome::Deny,
            ReasonCode::NotDuplicate,
        ),
        (
            Cancellation,
            vec![addon.clone()],
            Outcome::Deny,
            ReasonCode::NotEligible,
        ),
        // Several orders, but only one whose records show a duplicate: it is the one.
        (
            DuplicateCharge,
            vec![addon.clone(), monthly.clone(), duplicated.clone()],
            Outcome::Allow,
            ReasonCode::DuplicateCharge,
        ),
        // Two orders that both show a duplicate: ask.
        (
            DuplicateCharge,
            vec![
                duplicated.clone(),
                duplicate_order("O-5004", cny("41.00"), "2026-11-21T11:00:00Z"),
            ],
            Outcome::RequestInfo,
            ReasonCode::InsufficientInfo,
        ),
    ];
    for (request, orders, outcome, reason) in cases {
        let ids: Vec<String> = orders.iter().map(|o| o.id.clone()).collect();
        let d = live(&facts(Region::CN, request, None, reported, orders));
        assert_eq!(
            (d.outcome, d.reason_code),
            (outcome, reason),
            "{request:?} {ids:?}"
        );
        if outcome == Outcome::RequestInfo {
            assert_eq!(d.missing.as_deref(), Some("order_id"));
            assert_eq!(citations(&d), ["RP-002@1#4"]);
        }
    }
}

#[test]
fn an_order_id_the_customer_does_not_have_asks_for_the_order() {
    let mut f = demo_facts();
    f.order_id = Some("O-404".into());
    let d = live(&f);
    assert_eq!(d.outcome, Outcome::RequestInfo);
    assert_eq!(d.missing.as_deref(), Some("order_id"));
}

#[test]
fn cooling_off_refunds_annual_plans_less_than_n_times_24_hours_after_the_order() {
    for (region, days) in [
        (Region::EU, 14),
        (Region::CN, 7),
        (Region::US, 30),
        (Region::JP, 8),
    ] {
        for (after, allowed) in [
            (Duration::days(days) - Duration::seconds(1), true),
            (Duration::days(days), false),
            (Duration::days(days) + Duration::seconds(1), false),
        ] {
            let mut f = demo_facts();
            f.customer.region = region;
            f.request = Cancellation;
            f.orders[0].charges.truncate(1);
            f.reported_at = f.orders[0].created_at + after;
            let d = live(&f);
            assert!(citations(&d).contains(&"RP-002@1#1"), "{region}");
            if allowed {
                assert_eq!(
                    (d.outcome, d.reason_code),
                    (Outcome::Allow, ReasonCode::CoolingOff),
                    "{region} {after}"
                );
                assert_eq!(
                    refunds(&d),
                    [("ch_1001a".to_string(), "198.00 CNY".to_string())]
                );
                assert!(d.approver_role.is_some());
            } else {
                assert_eq!(
                    (d.outcome, d.reason_code),
                    (Outcome::Deny, ReasonCode::NotEligible),
                    "{region} {after}"
                );
            }
        }
    }
}

#[test]
fn cooling_off_refunds_less_anything_already_refunded() {
    let mut f = demo_facts();
    f.request = Cancellation;
    f.orders[0].charges.truncate(1);
    f.reported_at = f.orders[0].created_at + Duration::days(1);
    f.orders[0].charges[0].amount_refunded = money("98.00", CNY);
    let d = live(&f);
    assert_eq!(
        refunds(&d),
        [("ch_1001a".to_string(), "100.00 CNY".to_string())]
    );
    f.orders[0].charges[0].amount_refunded = money("198.00", CNY);
    assert_eq!(live(&f).reason_code, ReasonCode::AlreadyRefunded);
}

#[test]
fn monthly_plans_and_add_ons_are_never_refunded_on_cancellation() {
    for (product, cite) in [(MonthlyPlan, "RP-002@1#2"), (Addon, "RP-002@1#3")] {
        let mut f = demo_facts();
        f.request = Cancellation;
        f.orders[0].product = product;
        f.reported_at = f.orders[0].created_at + Duration::hours(1);
        let d = live(&f);
        assert_eq!(
            (d.outcome, d.reason_code),
            (Outcome::Deny, ReasonCode::NotEligible)
        );
        assert_eq!(citations(&d), [cite]);
    }
}
