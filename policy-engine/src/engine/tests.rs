//! Table-driven tests of every clause and boundary, against the real fixture policies:
//! the helpers each policy's table uses and the cases no one policy owns (versions in
//! force, pins and drafts, missing rules files, the facts' shape). Each policy's cases
//! are in `tests/`, in a file named like its file in `rules/`.

use time::{Duration, OffsetDateTime};

use super::*;
use crate::decision::{Outcome, Role};
use crate::facts::{ChargeFacts, OrderFacts, Ownership};
use crate::money::Money;
use crate::testkit::*;
use crate::trace::timestamp;
use crate::{ChargeStatus, Currency, PolicySource, Product, RefundFacts, RefundStatus, Region};

use Currency::{CNY, EUR, JPY, USD};
use Product::{Addon, AnnualPlan, MonthlyPlan};
use RequestKind::{AuthorizationHold, Cancellation, DuplicateCharge, Overcharge, Unclear};

mod rp001_charges;
mod rp001_repeats;
mod rp002_cancellation;
mod rp003_holds;
mod rp004_approval;
mod rp006_disputes;
mod rp007_ownership;

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
