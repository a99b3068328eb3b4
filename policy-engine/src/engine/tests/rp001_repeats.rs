//! RP-001's cases of one thing bought twice: an accidental repeat purchase (v2 §1) and
//! a repeat that is none, weighed as the later order's cancellation (§4.1).

use super::*;

#[test]
fn a_repeat_purchase_is_less_than_ten_minutes_apart_under_version_2_only() {
    let v2 = "2026-11-29T10:00:00Z";
    let nine_59 = Duration::minutes(10) - Duration::seconds(1);
    // (gap, product of the second order, reported, outcome, reason, cites)
    let cases = [
        (
            nine_59,
            AnnualPlan,
            v2,
            Outcome::Allow,
            ReasonCode::RepeatPurchase,
            "RP-001@2#1",
        ),
        (
            Duration::ZERO,
            AnnualPlan,
            v2,
            Outcome::Allow,
            ReasonCode::RepeatPurchase,
            "RP-001@2#2.1",
        ),
        (
            Duration::minutes(10),
            AnnualPlan,
            v2,
            Outcome::Deny,
            ReasonCode::NotDuplicate,
            "RP-001@2#4.1",
        ),
        (
            Duration::minutes(5),
            Addon,
            v2,
            Outcome::Deny,
            ReasonCode::NotDuplicate,
            "RP-001@2#4.1",
        ),
    ];
    for (gap, product, reported, outcome, reason, cite) in cases {
        let d = live(&two_orders(gap, product, reported));
        assert_eq!(
            (d.outcome, d.reason_code),
            (outcome, reason),
            "{gap} {product}"
        );
        assert!(citations(&d).contains(&cite), "{gap}: {:?}", citations(&d));
        if outcome == Outcome::Allow {
            assert_eq!(
                refunds(&d),
                [("ch_2".to_string(), "198.00 CNY".to_string())]
            );
            assert_eq!(d.refunds[0].order_id, "O-2");
        }
    }
    // Version 1 has no repeat-purchase rule (§4.1): two orders are two purchases.
    let mut v1 = two_orders(Duration::minutes(5), AnnualPlan, "2026-06-01T00:00:00Z");
    for o in &mut v1.orders {
        o.created_at -= Duration::days(180);
        for c in &mut o.charges {
            c.created_at -= Duration::days(180);
        }
    }
    let d = live(&v1);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Deny, ReasonCode::NotDuplicate)
    );
    assert!(citations(&d).contains(&"RP-001@1#4.1"));
}

#[test]
fn a_repeat_purchase_is_found_from_either_order() {
    let mut f = two_orders(Duration::minutes(3), AnnualPlan, "2026-11-29T10:00:00Z");
    let from_later = live(&f);
    f.order_id = Some("O-1".into());
    let from_earlier = live(&f);
    assert_eq!(from_later.refunds, from_earlier.refunds);
    assert_eq!(from_earlier.reason_code, ReasonCode::RepeatPurchase);
}

#[test]
fn a_repeat_purchase_needs_both_orders_paid() {
    let mut f = two_orders(Duration::minutes(3), AnnualPlan, "2026-11-29T10:00:00Z");
    f.orders[0].charges[0].status = ChargeStatus::Failed;
    f.orders[0].charges[0].captured = false;
    let d = live(&f);
    assert_eq!(d.reason_code, ReasonCode::NotDuplicate);
}

#[test]
fn one_thing_bought_twice_and_no_accidental_repeat_is_weighed_as_the_later_orders_cancellation() {
    // RP-001 §4.1: "the customer may still qualify under RP-002". Orders on 2026-11-20 in
    // CN (seven days of cooling-off): reported on the 24th is inside, on the 29th not.
    let (inside, outside) = ("2026-11-24T10:00:00Z", "2026-11-29T10:00:00Z");
    // (gap, second product, request, reported, repeat claimed, outcome, reason)
    let cases = [
        (
            40,
            AnnualPlan,
            DuplicateCharge,
            inside,
            true,
            Outcome::Allow,
            ReasonCode::CoolingOff,
        ),
        (
            40,
            AnnualPlan,
            Cancellation,
            inside,
            true,
            Outcome::Allow,
            ReasonCode::CoolingOff,
        ),
        (
            40,
            AnnualPlan,
            Unclear,
            inside,
            true,
            Outcome::Allow,
            ReasonCode::CoolingOff,
        ),
        (
            40,
            AnnualPlan,
            DuplicateCharge,
            outside,
            true,
            Outcome::Deny,
            ReasonCode::NotDuplicate,
        ),
        (
            5,
            AnnualPlan,
            DuplicateCharge,
            inside,
            true,
            Outcome::Allow,
            ReasonCode::RepeatPurchase,
        ),
        (
            5,
            Addon,
            DuplicateCharge,
            inside,
            true,
            Outcome::Deny,
            ReasonCode::NotDuplicate,
        ),
        // Without the claim, two orders 40 minutes apart are two purchases, as before.
        (
            40,
            AnnualPlan,
            DuplicateCharge,
            inside,
            false,
            Outcome::Deny,
            ReasonCode::NotDuplicate,
        ),
    ];
    for (minutes, product, request, reported, claimed, outcome, reason) in cases {
        let mut f = two_orders(Duration::minutes(minutes), product, reported);
        f.request = request;
        f.repeat_of = claimed.then(|| "O-1".to_string());
        let d = live(&f);
        let case = format!("{minutes} min {product} {request:?} {reported} {claimed}");
        assert_eq!((d.outcome, d.reason_code), (outcome, reason), "{case}");
        if reason == ReasonCode::CoolingOff {
            assert_eq!(
                refunds(&d),
                [("ch_2".to_string(), "198.00 CNY".to_string())],
                "{case}"
            );
            assert!(
                citations(&d).contains(&"RP-001@2#4.1"),
                "{case}: {:?}",
                citations(&d)
            );
        }
    }
    // Version 1 has no repeat-purchase rule: five minutes apart is §4.1, then RP-002.
    let mut v1 = two_orders(Duration::minutes(5), AnnualPlan, "2026-06-05T00:00:00Z");
    for o in &mut v1.orders {
        o.created_at -= Duration::days(170);
        for c in &mut o.charges {
            c.created_at -= Duration::days(170);
        }
    }
    v1.repeat_of = Some("O-1".into());
    let d = live(&v1);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Allow, ReasonCode::CoolingOff)
    );
    assert!(
        citations(&d).contains(&"RP-001@1#4.1"),
        "{:?}",
        citations(&d)
    );
}
