//! RP-006's cases: a disputed charge is never refunded.

use super::*;

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
