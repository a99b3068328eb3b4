//! RP-003's cases: a hold is never refunded and is released by the issuer; an overdue
//! one goes to the payments team.

use super::*;

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
