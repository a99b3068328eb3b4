//! RP-007's cases: another customer's order is escalated without its facts.

use super::*;

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
