//! RP-001's cases: duplicate charges and overcharges refunded (§2), capped by what is
//! left (§2.4), reported in time or escalated (§3), missing payment records (§1), and
//! what is not a duplicate (§4).

use super::*;

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

/// RP-001 §1 (a charge is what the provider recorded): a paid order the provider shows
/// no charge for (records missing or not linked) goes to the payments team for every
/// request kind that would decide on its charges — never a denial — while a failed
/// charge on record is still a record.
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
