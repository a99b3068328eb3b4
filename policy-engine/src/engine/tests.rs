//! Table-driven tests of every clause and boundary, against the real fixture policies.

use super::*;
use crate::testkit::*;
use crate::{ChargeStatus, Currency, PolicySource, Product, RefundFacts, RefundStatus, Region};

use Currency::{CNY, EUR, JPY, USD};
use Product::{Addon, AnnualPlan, MonthlyPlan};
use RequestKind::{AuthorizationHold, Cancellation, DuplicateCharge, Overcharge, Unclear};

/// Decides live and checks what every decision must satisfy: each citation resolves
/// via `PolicyDocument::section`, the versions are sorted and cover the citations, the
/// hash matches, and no refund exceeds what is refundable on its charge.
fn live(facts: &Facts) -> Decision {
    let set = fixture_set();
    let decision = decide(facts, &set);
    check(facts, &set, &decision);
    decision
}

fn pinned(facts: &Facts, pins: &[&str]) -> Decision {
    let set = fixture_set();
    let pins: Vec<String> = pins.iter().map(|s| s.to_string()).collect();
    let decision = decide_with(facts, &set, &pins).unwrap();
    check(facts, &set, &decision);
    decision
}

pub(crate) fn check(facts: &Facts, set: &PolicySet, d: &Decision) {
    for rule in &d.rules {
        let (version, anchor) = rule.citation.split_once('#').expect("doc@version#section");
        let document = set.resolve_ref(version).unwrap();
        assert!(
            document.section(anchor).is_some(),
            "{} does not resolve",
            rule.citation
        );
        assert!(d.policy_versions.contains(&version.to_string()));
    }
    let mut sorted = d.policy_versions.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, d.policy_versions);
    assert_eq!(d.hash, d.compute_hash());
    for line in &d.refunds {
        let charge = facts
            .orders
            .iter()
            .flat_map(|o| &o.charges)
            .find(|c| c.id == line.charge_id)
            .expect("refunds name a charge of the facts");
        assert_eq!(line.amount.currency(), charge.amount.currency());
        assert_eq!(line.payment_method, charge.payment_method);
        assert!(line.amount.amount() <= charge.refundable().unwrap().amount());
        assert!(!line.amount.is_zero());
    }
    match d.outcome {
        Outcome::Allow => assert!(!d.refunds.is_empty()),
        Outcome::RequestInfo => assert!(d.missing.is_some()),
        Outcome::Escalate => assert!(d.escalation.is_some()),
        Outcome::Deny => assert!(d.refunds.is_empty() && d.approver_role.is_none()),
    }
}

fn citations(d: &Decision) -> Vec<&str> {
    d.rules.iter().map(|r| r.citation.as_str()).collect()
}

fn refunds(d: &Decision) -> Vec<(String, String)> {
    d.refunds
        .iter()
        .map(|l| (l.charge_id.clone(), l.amount.to_string()))
        .collect()
}

/// One order of `amount` with two identical charges a minute apart.
fn duplicate_order(id: &str, amount: Money, created_at: &str) -> OrderFacts {
    let t = at(created_at);
    let fmt = |d: OffsetDateTime| timestamp(d);
    order(
        id,
        AnnualPlan,
        amount,
        created_at,
        vec![
            charge(&format!("{id}-a"), amount, &fmt(t + Duration::seconds(5))),
            charge(&format!("{id}-b"), amount, &fmt(t + Duration::seconds(65))),
        ],
    )
}

fn plus(base: &str, d: Duration) -> String {
    timestamp(at(base) + d)
}

#[test]
fn demo_scenario_refunds_the_later_duplicate_with_agent_approval() {
    let d = live(&demo_facts());
    assert_eq!(d.outcome, Outcome::Allow);
    assert_eq!(d.reason_code, ReasonCode::DuplicateCharge);
    assert_eq!(
        refunds(&d),
        [("ch_1001b".to_string(), "198.00 CNY".to_string())]
    );
    assert_eq!(d.refunds[0].order_id, "O-1001");
    assert_eq!(d.refunds[0].payment_method, "pm_card_unionpay_6212");
    assert_eq!(d.approver_role, Some(Role::Agent));
    assert!(d.policy_versions.contains(&"RP-001@2".to_string()));
    assert!(d.policy_versions.contains(&"RP-004@2".to_string()));
    assert!(citations(&d).contains(&"RP-001@2#2.1"));
    assert!(citations(&d).contains(&"RP-004@2#1"));
    assert_eq!(d.refund_total().unwrap().to_string(), "198.00 CNY");
    assert!(d.facts_used.iter().any(|l| l.contains("ch_1001b")));
}

#[test]
fn several_duplicates_on_one_order_are_each_refunded() {
    let usd = |s| money(s, USD);
    let f = facts(
        Region::US,
        DuplicateCharge,
        Some("O-1"),
        "2026-11-29T10:00:00Z",
        vec![order(
            "O-1",
            AnnualPlan,
            usd("40.00"),
            "2026-11-20T09:00:00Z",
            vec![
                charge("ch_c", usd("40.00"), "2026-11-20T09:02:00Z"),
                charge("ch_a", usd("40.00"), "2026-11-20T09:00:00Z"),
                charge("ch_b", usd("40.00"), "2026-11-20T09:01:00Z"),
            ],
        )],
    );
    let d = live(&f);
    assert_eq!(d.outcome, Outcome::Allow);
    let got = refunds(&d);
    assert_eq!(
        got,
        [
            ("ch_b".to_string(), "40.00 USD".to_string()),
            ("ch_c".to_string(), "40.00 USD".to_string())
        ]
    );
    assert_eq!(d.refund_total().unwrap().to_string(), "80.00 USD");
}

/// Issue 36: a paid order the provider shows no charge for (records missing or not
/// linked) goes to the payments team for every request kind that would decide on its
/// charges — never a denial — while a failed charge on record is still a record.
#[test]
fn a_paid_order_with_no_charge_at_all_escalates_as_missing_payment_records() {
    let usd = |s| money(s, USD);
    let unpaid = |charges| {
        vec![
            order(
                "O-1",
                AnnualPlan,
                usd("99.00"),
                "2026-11-20T09:00:00Z",
                charges,
            ),
            order(
                "O-2",
                AnnualPlan,
                usd("99.00"),
                "2026-11-20T09:30:00Z",
                vec![charge("ch_2", usd("99.00"), "2026-11-20T09:30:05Z")],
            ),
        ]
    };
    for request in [
        DuplicateCharge,
        Overcharge,
        AuthorizationHold,
        Unclear,
        Cancellation,
    ] {
        let d = live(&facts(
            Region::US,
            request,
            Some("O-1"),
            "2026-11-22T10:00:00Z",
            unpaid(vec![]),
        ));
        assert_eq!(
            (d.outcome, d.reason_code),
            (Outcome::Escalate, ReasonCode::Other),
            "{request:?}: {d:?}"
        );
        let escalation = d.escalation.as_ref().expect("an escalation");
        assert_eq!(escalation.team, Team::Payments, "{request:?}");
        assert!(
            escalation.reason.contains("payment records missing")
                && escalation.reason.contains("O-1"),
            "{}",
            escalation.reason
        );
        assert!(citations(&d).contains(&"RP-001@2#1"), "{:?}", citations(&d));
    }
    // A failed charge is a record: "nothing is duplicated" stands.
    let mut failed = charge("ch_1", usd("99.00"), "2026-11-20T09:00:05Z");
    failed.status = ChargeStatus::Failed;
    failed.captured = false;
    let d = live(&facts(
        Region::US,
        DuplicateCharge,
        Some("O-1"),
        "2026-11-22T10:00:00Z",
        unpaid(vec![failed]),
    ));
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Deny, ReasonCode::NotDuplicate)
    );
    // A free order expects no charge.
    let d = live(&facts(
        Region::US,
        DuplicateCharge,
        Some("O-0"),
        "2026-11-22T10:00:00Z",
        vec![order(
            "O-0",
            Addon,
            usd("0.00"),
            "2026-11-20T09:00:00Z",
            vec![],
        )],
    ));
    assert_eq!(d.outcome, Outcome::Deny);
}

#[test]
fn identical_charges_that_do_not_exceed_the_order_amount_are_not_duplicates() {
    // Two instalments of 99.00 on a 198.00 order: total captured equals the order.
    let cny = |s| money(s, CNY);
    let f = facts(
        Region::CN,
        DuplicateCharge,
        Some("O-1"),
        "2026-11-29T10:00:00Z",
        vec![order(
            "O-1",
            AnnualPlan,
            cny("198.00"),
            "2026-11-20T09:00:00Z",
            vec![
                charge("ch_a", cny("99.00"), "2026-11-20T09:00:00Z"),
                charge("ch_b", cny("99.00"), "2026-11-20T09:01:00Z"),
            ],
        )],
    );
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Deny, ReasonCode::NotDuplicate)
    );
}

#[test]
fn refunds_already_made_or_pending_reduce_what_is_refunded() {
    let cny = |s| money(s, CNY);
    let refund = |id: &str, amount, status| RefundFacts {
        id: id.into(),
        amount: cny(amount),
        status,
    };
    // (amount_refunded, refunds on the duplicate, expected outcome, expected refund)
    type Case<'a> = (
        &'a str,
        Vec<RefundFacts>,
        Outcome,
        ReasonCode,
        Option<&'a str>,
    );
    let cases: Vec<Case> = vec![
        (
            "0.00",
            vec![],
            Outcome::Allow,
            ReasonCode::DuplicateCharge,
            Some("198.00"),
        ),
        (
            "0.00",
            vec![refund("re_1", "50.00", RefundStatus::Pending)],
            Outcome::Allow,
            ReasonCode::DuplicateCharge,
            Some("148.00"),
        ),
        (
            "30.00",
            vec![
                refund("re_1", "30.00", RefundStatus::Succeeded),
                refund("re_2", "20.00", RefundStatus::Pending),
                refund("re_3", "100.00", RefundStatus::Failed),
                refund("re_4", "100.00", RefundStatus::Canceled),
            ],
            Outcome::Allow,
            ReasonCode::DuplicateCharge,
            Some("148.00"),
        ),
        // amount_refunded larger than the refunds we were shown: it wins.
        (
            "120.00",
            vec![],
            Outcome::Allow,
            ReasonCode::DuplicateCharge,
            Some("78.00"),
        ),
        (
            "198.00",
            vec![refund("re_1", "198.00", RefundStatus::Pending)],
            Outcome::Deny,
            ReasonCode::AlreadyRefunded,
            None,
        ),
        (
            "0.00",
            vec![refund("re_1", "198.00", RefundStatus::Pending)],
            Outcome::Deny,
            ReasonCode::AlreadyRefunded,
            None,
        ),
    ];
    for (amount_refunded, refunds_made, outcome, reason, expected) in cases {
        let mut f = demo_facts();
        let duplicate = &mut f.orders[0].charges[1];
        duplicate.amount_refunded = cny(amount_refunded);
        duplicate.refunds = refunds_made;
        let d = live(&f);
        assert_eq!(
            (d.outcome, d.reason_code),
            (outcome, reason),
            "{amount_refunded}"
        );
        assert_eq!(
            d.refunds.first().map(|l| l.amount.amount_string()),
            expected.map(str::to_string)
        );
        if amount_refunded != "0.00" || expected != Some("198.00") {
            assert!(citations(&d).contains(&"RP-001@2#2.4"), "{amount_refunded}");
        }
    }
}

#[test]
fn an_overcharge_is_refunded_by_the_difference() {
    let eur = |s| money(s, EUR);
    for (already, expected) in [
        ("0.00", Some("10.00")),
        ("4.00", Some("6.00")),
        ("10.00", None),
    ] {
        let mut c = charge("ch_8001a", eur("19.99"), "2026-11-15T10:00:02Z");
        c.amount_refunded = eur(already);
        let f = facts(
            Region::EU,
            Overcharge,
            Some("O-8001"),
            "2026-11-29T10:00:00Z",
            vec![order(
                "O-8001",
                Addon,
                eur("9.99"),
                "2026-11-15T10:00:00Z",
                vec![c],
            )],
        );
        let d = live(&f);
        match expected {
            Some(amount) => {
                assert_eq!(
                    (d.outcome, d.reason_code),
                    (Outcome::Allow, ReasonCode::Overcharge)
                );
                assert_eq!(d.refunds[0].amount.amount_string(), amount);
                assert!(citations(&d).contains(&"RP-001@2#2.2"));
            }
            None => assert_eq!(d.reason_code, ReasonCode::AlreadyRefunded),
        }
    }
}

#[test]
fn reporting_window_is_strictly_less_than_n_times_24_hours() {
    // (charge created, window days, version) — v1 windows end before the switch date.
    let cases = [
        ("2026-01-01T00:00:00Z", 180, "RP-001@1"),
        ("2026-08-01T00:00:00Z", 120, "RP-001@2"),
    ];
    for (created, days, version) in cases {
        let window = Duration::days(days);
        for (offset, in_time) in [
            (window - Duration::seconds(1), true),
            (window, false),
            (window + Duration::seconds(1), false),
        ] {
            let mut f = demo_facts();
            f.orders = vec![duplicate_order("O-1", money("198.00", CNY), created)];
            f.order_id = Some("O-1".into());
            // The duplicate is created 65 s after the order.
            f.reported_at = at(&plus(created, Duration::seconds(65) + offset));
            let d = live(&f);
            assert!(
                d.policy_versions.contains(&version.to_string()),
                "{version}"
            );
            assert_eq!(refunds(&d).len(), 1, "refunds are computed either way");
            if in_time {
                assert_eq!(d.outcome, Outcome::Allow, "{version} {offset}");
                assert_eq!(d.approver_role, Some(Role::Agent));
            } else {
                assert_eq!(d.outcome, Outcome::Escalate, "{version} {offset}");
                assert_eq!(d.reason_code, ReasonCode::OutsideWindow);
                assert_eq!(d.approver_role, Some(Role::Supervisor));
                assert_eq!(d.escalation.as_ref().unwrap().team, Team::Supervisor);
                assert!(citations(&d).contains(&format!("{version}#3").as_str()));
            }
        }
    }
}

#[test]
fn versions_switch_between_june_30_and_july_1_2026_by_utc_date() {
    // 120.00 USD: within the v1 threshold (150.00), above the v2 one (100.00).
    let cases = [
        ("2026-06-30T23:59:59Z", "RP-001@1", "RP-004@1", Role::Agent),
        (
            "2026-07-01T01:00:00+02:00",
            "RP-001@1",
            "RP-004@1",
            Role::Agent,
        ),
        (
            "2026-07-01T00:00:00Z",
            "RP-001@2",
            "RP-004@2",
            Role::Supervisor,
        ),
        (
            "2026-06-30T20:00:00-05:00",
            "RP-001@2",
            "RP-004@2",
            Role::Supervisor,
        ),
    ];
    for (reported, charges_version, approval_version, role) in cases {
        let f = facts(
            Region::US,
            DuplicateCharge,
            Some("O-1"),
            reported,
            vec![duplicate_order(
                "O-1",
                money("120.00", USD),
                "2026-06-20T09:00:00Z",
            )],
        );
        let d = live(&f);
        assert_eq!(
            d.policy_versions,
            [charges_version.to_string(), approval_version.to_string()],
            "{reported}"
        );
        assert_eq!(d.approver_role, Some(role), "{reported}");
    }
}

#[test]
fn approval_thresholds_are_inclusive_per_currency_and_version() {
    // (reported_at, amount, approver)
    let v1 = "2026-03-02T00:00:00Z";
    let v2 = "2026-11-29T00:00:00Z";
    let cases = [
        (v1, money("1000.00", CNY), Role::Agent),
        (v1, money("1000.01", CNY), Role::Supervisor),
        (v1, money("150.00", USD), Role::Agent),
        (v1, money("150.01", USD), Role::Supervisor),
        (v1, money("150.00", EUR), Role::Agent),
        (v1, money("150.01", EUR), Role::Supervisor),
        (v1, money("20000", JPY), Role::Agent),
        (v1, money("20001", JPY), Role::Supervisor),
        (v2, money("500.00", CNY), Role::Agent),
        (v2, money("500.01", CNY), Role::Supervisor),
        (v2, money("100.00", USD), Role::Agent),
        (v2, money("100.01", USD), Role::Supervisor),
        (v2, money("100.00", EUR), Role::Agent),
        (v2, money("100.01", EUR), Role::Supervisor),
        (v2, money("15000", JPY), Role::Agent),
        (v2, money("15001", JPY), Role::Supervisor),
    ];
    for (reported, amount, role) in cases {
        let created = timestamp(at(reported) - Duration::days(3));
        let f = facts(
            Region::JP,
            DuplicateCharge,
            Some("O-1"),
            reported,
            vec![duplicate_order("O-1", amount, &created)],
        );
        let d = live(&f);
        assert_eq!(d.outcome, Outcome::Allow, "{amount}");
        assert_eq!(d.refunds[0].amount, amount);
        assert_eq!(d.approver_role, Some(role), "{amount} on {reported}");
    }
}

#[test]
fn the_decision_needs_the_highest_role_any_refund_needs() {
    // Two duplicates on two repeat orders: 80.00 and 80.00 → agent; add a 120.00 → supervisor.
    let usd = |s| money(s, USD);
    let f = facts(
        Region::US,
        DuplicateCharge,
        Some("O-1"),
        "2026-11-29T10:00:00Z",
        vec![order(
            "O-1",
            AnnualPlan,
            usd("80.00"),
            "2026-11-20T09:00:00Z",
            vec![
                charge("ch_a", usd("80.00"), "2026-11-20T09:00:00Z"),
                charge("ch_b", usd("80.00"), "2026-11-20T09:01:00Z"),
                charge("ch_c", usd("120.00"), "2026-11-20T09:02:00Z"),
                charge("ch_d", usd("120.00"), "2026-11-20T09:03:00Z"),
            ],
        )],
    );
    let d = live(&f);
    assert_eq!(refunds(&d).len(), 2);
    assert_eq!(d.approver_role, Some(Role::Supervisor));
}

#[test]
fn jpy_amounts_have_no_decimals() {
    let jpy = |s| money(s, JPY);
    let f = facts(
        Region::JP,
        DuplicateCharge,
        Some("O-4001"),
        "2026-11-29T10:00:00Z",
        vec![order(
            "O-4001",
            AnnualPlan,
            jpy("19800"),
            "2026-11-25T03:00:00Z",
            vec![
                charge("ch_4001a", jpy("19800"), "2026-11-25T03:00:02Z"),
                charge("ch_4001b", jpy("19800"), "2026-11-25T03:02:30Z"),
            ],
        )],
    );
    let d = live(&f);
    assert_eq!(
        refunds(&d),
        [("ch_4001b".to_string(), "19800 JPY".to_string())]
    );
    assert_eq!(d.approver_role, Some(Role::Supervisor)); // above 15,000
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["refunds"][0]["amount"]["amount"], "19800");
}

/// Two paid orders for the same product and amount, `gap` apart.
fn two_orders(gap: Duration, second_product: Product, reported: &str) -> Facts {
    let cny = |s| money(s, CNY);
    let first = "2026-11-20T09:00:00Z";
    let second = plus(first, gap);
    facts(
        Region::CN,
        DuplicateCharge,
        Some("O-2"),
        reported,
        vec![
            order(
                "O-1",
                AnnualPlan,
                cny("198.00"),
                first,
                vec![charge(
                    "ch_1",
                    cny("198.00"),
                    &plus(first, Duration::seconds(3)),
                )],
            ),
            order(
                "O-2",
                second_product,
                cny("198.00"),
                &second,
                vec![charge(
                    "ch_2",
                    cny("198.00"),
                    &plus(&second, Duration::seconds(3)),
                )],
            ),
        ],
    )
}

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

#[test]
fn a_disputed_charge_is_escalated_to_the_disputes_team_and_never_refunded() {
    for disputed in [0, 1] {
        let mut f = demo_facts();
        f.orders[0].charges[disputed].disputed = true;
        for request in [DuplicateCharge, Cancellation, Unclear] {
            f.request = request;
            let d = live(&f);
            assert_eq!(
                (d.outcome, d.reason_code),
                (Outcome::Escalate, ReasonCode::DisputeOpen)
            );
            assert_eq!(d.escalation.as_ref().unwrap().team, Team::Disputes);
            assert!(d.refunds.is_empty());
            assert!(citations(&d).contains(&"RP-006@1#1"));
            if request != Cancellation {
                assert!(citations(&d).contains(&"RP-001@2#4.3"));
            }
        }
    }
}

#[test]
fn another_customers_order_is_escalated_to_security_without_its_facts() {
    let mut f = demo_facts();
    f.order_ownership = Ownership::OtherCustomer;
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Escalate, ReasonCode::OwnershipMismatch)
    );
    assert_eq!(d.escalation.as_ref().unwrap().team, Team::Security);
    assert_eq!(d.policy_versions, ["RP-007@1"]);
    assert!(d.refunds.is_empty() && d.approver_role.is_none());
    let text = serde_json::to_string(&d).unwrap();
    for secret in ["O-1001", "ch_1001", "198", "pm_card", "annual_plan"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    // Nothing about the order reaches the hash either.
    let mut changed = f.clone();
    changed.orders[0].amount = money("1.00", CNY);
    changed.orders[0].charges.clear();
    changed.order_id = Some("O-9999".into());
    assert_eq!(live(&changed).hash, d.hash);
}

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
fn an_authorization_hold_is_never_refunded_and_overdue_holds_go_to_payments() {
    let usd = |s| money(s, USD);
    let hold_at = "2026-11-18T15:29:40Z";
    let week = Duration::days(7);
    // (region, reported after the hold, request, outcome, release text)
    let cases = [
        (
            Region::US,
            week - Duration::seconds(1),
            AuthorizationHold,
            Outcome::Deny,
            "5 business days",
        ),
        (
            Region::EU,
            Duration::days(1),
            DuplicateCharge,
            Outcome::Deny,
            "5 business days",
        ),
        (
            Region::CN,
            Duration::days(1),
            AuthorizationHold,
            Outcome::Deny,
            "7 days",
        ),
        (
            Region::JP,
            Duration::days(1),
            Unclear,
            Outcome::Deny,
            "7 days",
        ),
        (
            Region::US,
            week,
            AuthorizationHold,
            Outcome::Escalate,
            "5 business days",
        ),
        (
            Region::CN,
            week + Duration::days(3),
            DuplicateCharge,
            Outcome::Escalate,
            "7 days",
        ),
    ];
    for (region, after, request, outcome, release) in cases {
        let f = facts(
            region,
            request,
            Some("O-2001"),
            &plus(hold_at, after),
            vec![order(
                "O-2001",
                MonthlyPlan,
                usd("12.00"),
                "2026-11-18T15:30:00Z",
                vec![
                    charge("ch_2001a", usd("12.00"), "2026-11-18T15:30:04Z"),
                    hold("ch_2001h", usd("12.00"), hold_at),
                ],
            )],
        );
        let d = live(&f);
        assert_eq!(
            (d.outcome, d.reason_code),
            (outcome, ReasonCode::AuthorizationHold),
            "{region} {after}"
        );
        assert_eq!(d.hold_release.as_deref(), Some(release));
        assert!(d.refunds.is_empty());
        assert!(citations(&d).contains(&"RP-003@1#1"));
        if request == DuplicateCharge {
            assert!(citations(&d).contains(&"RP-001@2#4.2"));
        }
        if outcome == Outcome::Escalate {
            assert_eq!(d.escalation.as_ref().unwrap().team, Team::Payments);
        }
    }
}

#[test]
fn a_hold_request_without_an_order_id_picks_the_one_order_with_a_hold() {
    let jpy = |s| money(s, JPY);
    let f = facts(
        Region::JP,
        AuthorizationHold,
        None,
        "2026-11-27T10:00:00Z",
        vec![
            order(
                "O-7001",
                MonthlyPlan,
                jpy("1200"),
                "2026-11-26T01:00:00Z",
                vec![
                    charge("ch_7001a", jpy("1200"), "2026-11-26T01:00:03Z"),
                    hold("ch_7001h", jpy("1200"), "2026-11-26T00:59:30Z"),
                    ChargeFacts {
                        status: ChargeStatus::Failed,
                        ..hold("ch_7001f", jpy("1200"), "2026-11-26T00:58:10Z")
                    },
                ],
            ),
            order(
                "O-7002",
                Addon,
                jpy("500"),
                "2026-10-26T01:00:00Z",
                vec![charge("ch_7002a", jpy("500"), "2026-10-26T01:00:03Z")],
            ),
        ],
    );
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Deny, ReasonCode::AuthorizationHold)
    );
    assert_eq!(d.hold_release.as_deref(), Some("7 days"));
    let rule = d.rules.iter().find(|r| r.citation == "RP-003@1#1").unwrap();
    assert!(rule.summary.contains("ch_7001h") && !rule.summary.contains("ch_7001f"));
}

#[test]
fn failed_charges_took_no_money_and_are_never_duplicates() {
    let usd = |s| money(s, USD);
    let failed = ChargeFacts {
        status: ChargeStatus::Failed,
        ..charge("ch_f", usd("50.00"), "2026-11-20T09:00:00Z")
    };
    let f = facts(
        Region::US,
        DuplicateCharge,
        Some("O-1"),
        "2026-11-29T10:00:00Z",
        vec![order(
            "O-1",
            AnnualPlan,
            usd("50.00"),
            "2026-11-20T09:00:00Z",
            vec![
                failed,
                charge("ch_ok", usd("50.00"), "2026-11-20T09:01:00Z"),
            ],
        )],
    );
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Deny, ReasonCode::NotDuplicate)
    );
    assert!(d.rules.iter().any(|r| r.summary.contains("ch_f failed")));
    assert!(citations(&d).contains(&"RP-001@2#1"));
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

#[test]
fn a_duplicate_add_on_charge_is_still_refunded_under_rp_001() {
    let mut f = demo_facts();
    f.orders[0].product = Addon;
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Allow, ReasonCode::DuplicateCharge)
    );
}

#[test]
fn the_draft_is_never_used_by_a_live_decision() {
    for reported in [
        "2026-11-29T10:00:00Z",
        "2027-01-01T00:00:00Z",
        "2030-01-01T00:00:00Z",
    ] {
        let mut f = demo_facts();
        f.reported_at = at(reported);
        let d = live(&f);
        assert!(
            d.policy_versions.contains(&"RP-001@2".to_string()),
            "{reported}"
        );
        assert!(!d.policy_versions.contains(&"RP-001@3".to_string()));
    }
}

#[test]
fn the_draft_pinned_extends_the_window_to_365_days() {
    let mut f = demo_facts();
    f.reported_at = f.orders[0].charges[1].created_at + Duration::days(200);
    assert_eq!(live(&f).reason_code, ReasonCode::OutsideWindow);
    let d = pinned(&f, &["RP-001@3"]);
    assert_eq!(d.outcome, Outcome::Allow);
    assert!(d.policy_versions.contains(&"RP-001@3".to_string()));
    assert!(citations(&d)
        .iter()
        .all(|c| !c.starts_with("RP-001") || c.ends_with("@3#1")));
    for (after, outcome) in [
        (Duration::days(365) - Duration::seconds(1), Outcome::Allow),
        (Duration::days(365), Outcome::Escalate),
    ] {
        f.reported_at = f.orders[0].charges[1].created_at + after;
        assert_eq!(pinned(&f, &["RP-001@3"]).outcome, outcome, "{after}");
    }
}

#[test]
fn the_draft_pinned_auto_approves_duplicates_below_50() {
    // (amount, approver): below 50.00 needs nobody; exactly 50.00 follows RP-004.
    let cases = [
        (money("49.99", USD), None),
        (money("50.00", USD), Some(Role::Agent)),
        (money("49", JPY), None),
        (money("50", JPY), Some(Role::Agent)),
        (money("49.99", CNY), None),
    ];
    for (amount, role) in cases {
        let f = facts(
            Region::US,
            DuplicateCharge,
            Some("O-1"),
            "2026-11-29T10:00:00Z",
            vec![duplicate_order("O-1", amount, "2026-11-20T09:00:00Z")],
        );
        assert_eq!(
            live(&f).approver_role,
            Some(Role::Agent),
            "live ignores the draft"
        );
        let d = pinned(&f, &["RP-001@3"]);
        assert_eq!(d.outcome, Outcome::Allow);
        assert_eq!(d.approver_role, role, "{amount}");
        if role.is_none() {
            assert!(d.policy_versions.iter().all(|v| !v.starts_with("RP-004")));
        }
    }
}

#[test]
fn pinning_replaces_only_the_pinned_document() {
    let f = demo_facts();
    let d = pinned(&f, &["RP-004@1"]);
    assert_eq!(d.policy_versions, ["RP-001@2", "RP-004@1"]);
    let same = pinned(&f, &["RP-001@2", "RP-004@2"]);
    assert_eq!(same, live(&f));
}

#[test]
fn unknown_or_conflicting_pins_are_errors() {
    let set = fixture_set();
    let f = demo_facts();
    for pins in [
        vec!["RP-001@9"],
        vec!["RP-001"],
        vec!["RP-001@2", "RP-001@3"],
    ] {
        let pins: Vec<String> = pins.into_iter().map(String::from).collect();
        assert!(decide_with(&f, &set, &pins).is_err(), "{pins:?}");
    }
}

#[test]
fn a_date_before_any_policy_escalates_instead_of_guessing() {
    let mut f = demo_facts();
    f.reported_at = at("2024-06-01T00:00:00Z");
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Escalate, ReasonCode::Other)
    );
    assert!(d
        .escalation
        .unwrap()
        .reason
        .contains("no version of RP-001"));
}

#[test]
fn policies_loaded_without_rules_files_escalate_instead_of_guessing() {
    let sources: Vec<PolicySource> = fixture_sources()
        .into_iter()
        .map(|s| PolicySource { rules: None, ..s })
        .collect();
    let set = PolicySet::from_sources(sources).unwrap();
    let d = decide(&demo_facts(), &set);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Escalate, ReasonCode::Other)
    );
    assert!(d.escalation.unwrap().reason.contains("rules file"));
}

#[test]
fn inconsistent_currencies_escalate_instead_of_guessing() {
    let mut f = demo_facts();
    f.orders[0].charges[1].amount_refunded = money("1.00", USD);
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Escalate, ReasonCode::Other)
    );
    let mut f = demo_facts();
    f.orders[0].charges[1].amount = money("198.00", USD);
    f.orders[0].charges[1].amount_refunded = money("0.00", USD);
    assert_eq!(live(&f).reason_code, ReasonCode::Other);
}

#[test]
fn more_captured_than_the_order_without_a_rule_escalates() {
    let mut f = demo_facts();
    f.orders[0].charges[1].amount = money("20.00", CNY);
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.reason_code),
        (Outcome::Escalate, ReasonCode::Other)
    );
    assert_eq!(d.escalation.unwrap().team, Team::Supervisor);
}

#[test]
fn an_unclear_request_is_decided_when_the_records_are_clear_and_asked_about_otherwise() {
    let mut f = demo_facts();
    f.request = Unclear;
    assert_eq!(live(&f).reason_code, ReasonCode::DuplicateCharge);
    f.orders[0].charges.truncate(1);
    let d = live(&f);
    assert_eq!(
        (d.outcome, d.missing.as_deref()),
        (Outcome::RequestInfo, Some("request"))
    );
}

#[test]
fn the_order_facts_are_listed_in_does_not_matter() {
    let mut f = two_orders(Duration::minutes(3), AnnualPlan, "2026-11-29T10:00:00Z");
    f.orders[1].charges.push(charge(
        "ch_2x",
        money("198.00", CNY),
        "2026-11-20T09:03:30Z",
    ));
    let d = live(&f);
    f.orders.reverse();
    f.orders[0].charges.reverse();
    assert_eq!(live(&f), d);
}

#[test]
fn facts_json_from_the_cli_parses_and_decides() {
    let json = r#"{
        "reported_at": "2026-11-29T10:00:00Z",
        "customer": {"id": "C-100", "region": "CN"},
        "request": "duplicate_charge",
        "order_id": "O-1001",
        "orders": [{
            "id": "O-1001", "product": "annual_plan",
            "amount": {"amount": "198.00", "currency": "CNY"},
            "created_at": "2026-11-20T09:00:00Z",
            "charges": [
                {"id": "ch_1001a", "amount": {"amount": "198.00", "currency": "CNY"},
                 "captured": true, "status": "succeeded", "disputed": false,
                 "created_at": "2026-11-20T09:00:05Z", "payment_method": "pm_card_unionpay_6212",
                 "amount_refunded": {"amount": "0.00", "currency": "CNY"}, "refunds": []},
                {"id": "ch_1001b", "amount": {"amount": "198.00", "currency": "CNY"},
                 "captured": true, "status": "succeeded", "disputed": false,
                 "created_at": "2026-11-20T09:01:10Z", "payment_method": "pm_card_unionpay_6212",
                 "amount_refunded": {"amount": "0.00", "currency": "CNY"}, "refunds": []}
            ]
        }]
    }"#;
    let f: Facts = serde_json::from_str(json).unwrap();
    assert_eq!(f.order_ownership, Ownership::Owned);
    let mut demo = demo_facts();
    demo.customer.id = "C-100".into();
    assert_eq!(live(&f), live(&demo));
    let round_trip: Facts = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
    assert_eq!(round_trip, f);
    for bad in [
        json.replace("\"CN\"", "\"XX\""),
        json.replace(
            "{\"amount\": \"0.00\", \"currency\": \"CNY\"}",
            "{\"amount\": 0.0, \"currency\": \"CNY\"}",
        ),
        json.replace("\"captured\": true", "\"captured\": \"yes\""),
        json.replace("2026-11-29T10:00:00Z", "yesterday"),
        json.replace("\"request\"", "\"requets\""),
    ] {
        assert!(serde_json::from_str::<Facts>(&bad).is_err());
    }
}

#[test]
fn every_citation_of_a_broad_scenario_mix_resolves() {
    // `live` checks citations; this walks each request kind over each fixture-like order.
    let mut count = 0;
    for request in [
        DuplicateCharge,
        Overcharge,
        Cancellation,
        AuthorizationHold,
        Unclear,
    ] {
        for reported in ["2026-03-01T00:00:00Z", "2026-11-29T10:00:00Z"] {
            let mut f = demo_facts();
            f.request = request;
            f.reported_at = at(reported);
            f.orders[0].created_at = at(reported) - Duration::days(2);
            live(&f);
            let set = fixture_set();
            for pin in ["RP-001@1", "RP-001@3", "RP-004@1"] {
                let d = decide_with(&f, &set, &[pin.to_string()]).unwrap();
                check(&f, &set, &d);
                count += 1;
            }
        }
    }
    assert_eq!(count, 30);
}

mod timestamps {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// `Timestamp` writes RFC 3339 by hand; it must be the time crate's text exactly,
        /// and the instant's own text for years RFC 3339 cannot show (before year 0).
        #[test]
        fn timestamps_are_rfc_3339_as_the_time_crate_writes_them(
            seconds in -200_000_000_000i64..200_000_000_000,
            nanos in prop_oneof![
                Just(0u32),
                0u32..1_000_000_000,
                (1u32..1_000).prop_map(|millis| millis * 1_000_000),
            ],
            offset_minutes in -(23 * 60 + 59)..=(23i32 * 60 + 59),
        ) {
            let offset = UtcOffset::from_whole_seconds(offset_minutes * 60).unwrap();
            let at = (OffsetDateTime::from_unix_timestamp(seconds).unwrap()
                + Duration::nanoseconds(nanos.into()))
            .to_offset(offset);
            let expected = at
                .to_offset(UtcOffset::UTC)
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_else(|_| at.to_string());
            let mut line = String::new();
            Timestamp(at).push_to(&mut line);
            prop_assert_eq!(&line, &expected);
            prop_assert_eq!(Timestamp(at).to_string(), expected);
        }
    }
}
