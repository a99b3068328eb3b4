//! RP-004's cases: who approves a refund, per currency and version, and the draft's
//! automatic approval of small duplicate refunds.

use super::*;

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
