//! Graders of the outcome: the scenario ran as written, the case ended where expected,
//! about the right customer and order, with the refunds decided and held as expected.

use std::collections::BTreeMap;

use super::super::env::Env;
use super::super::scenario::{Action, Expect, ExpectedProviderRefund, ExpectedRefund, Scenario};
use super::grades::Grades;
use super::observed::Observed;

/// The scenario itself: actions met their expectations, disturbances happened, every
/// fault it installed fired (or it did not test what it says).
pub(super) fn scenario_ran_as_written(
    g: &mut Grades,
    env: &Env,
    scenario: &Scenario,
    seen: &Observed,
) {
    let mut failures: Vec<String> = env
        .trace
        .actions
        .iter()
        .filter(|(_, ok, _)| !ok)
        .map(|(what, _, detail)| format!("{what}: {detail}"))
        .collect();
    failures.extend(env.trace.disturbance_notes.iter().cloned());
    let installed = scenario
        .faults
        .iter()
        .chain(scenario.actions.iter().flat_map(|a| match a {
            Action::Faults { rules } => rules.as_slice(),
            _ => &[],
        }));
    for rule in installed {
        let mode = rule["mode"].as_str().unwrap_or_default();
        // A retry policy acts only when a delivery fails; every other fault must have
        // fired, or the scenario did not test what it says.
        if mode != "webhook_retry_policy"
            && seen.ledger["counters"]["faults_applied"][mode]
                .as_u64()
                .unwrap_or(0)
                == 0
        {
            failures.push(format!("the fault {mode} never fired"));
        }
    }
    g.check(
        "staff_actions_and_disturbances",
        failures,
        format!("{} action(s) as expected", env.trace.actions.len()),
    );
}

/// Status, reason code, approver role.
pub(super) fn outcome(g: &mut Grades, expect: &Expect, seen: &Observed) {
    let (status, reason, case) = (&seen.status, &seen.reason, &seen.case);
    let mut failures = Vec::new();
    if !expect.status.accepts(status) {
        failures.push(format!(
            "case status is {status}, expected {}",
            expect.status.describe()
        ));
    }
    if let Some(want) = &expect.reason_code {
        if reason.as_deref() != Some(want.as_str()) {
            failures.push(format!(
                "reason code is {}, expected {want}",
                reason.as_deref().unwrap_or("none")
            ));
        }
    }
    if let Some(want) = &expect.required_role {
        if case["required_role"].as_str() != Some(want.as_str()) {
            failures.push(format!(
                "required role is {}, expected {want}",
                case["required_role"]
            ));
        }
    }
    g.check(
        "outcome",
        failures,
        format!(
            "{status} ({})",
            reason.as_deref().unwrap_or("no reason code")
        ),
    );
}

/// The right customer and order; nothing of anyone else's told to the customer
/// (docs/spec/invariants.md #12).
pub(super) fn customer_and_order(g: &mut Grades, env: &Env, scenario: &Scenario, seen: &Observed) {
    let case = &seen.case;
    let customer = &scenario.conversation.customer_id;
    let mut failures = Vec::new();
    if case["customer_id"].as_str() != Some(customer.as_str()) {
        failures.push(format!(
            "the case belongs to {}, not {customer}",
            case["customer_id"]
        ));
    }
    if let Some(want) = &scenario.expect.order_id {
        let got = case["evidence"]["order_id"]
            .as_str()
            .or(case["proposal"]["order_id"].as_str());
        if got != Some(want.as_str()) {
            failures.push(format!(
                "the facts are about order {}, expected {want}",
                got.unwrap_or("none")
            ));
        }
    }
    let charge_owner: BTreeMap<&str, &str> = env
        .world
        .charges
        .iter()
        .map(|c| (c.id.as_str(), c.customer_id.as_str()))
        .collect();
    for r in case["decision"]["refunds"].as_array().into_iter().flatten() {
        let charge = r["charge_id"].as_str().unwrap_or_default();
        if charge_owner.get(charge) != Some(&customer.as_str()) {
            failures.push(format!("a refund on {charge}, not a charge of {customer}"));
        }
    }
    let foreign = foreign_ids(env, customer);
    for m in seen.replies() {
        let body = m["body"].as_str().unwrap_or_default();
        for id in &foreign {
            if body.contains(id) {
                failures.push(format!("a reply discloses another customer's {id}"));
            }
        }
    }
    g.check(
        "customer_and_order",
        failures,
        format!(
            "customer {customer}, order {}",
            case["evidence"]["order_id"].as_str().unwrap_or("none")
        ),
    );
}

/// The ids and emails of the world that belong to customers other than `customer`.
fn foreign_ids<'a>(env: &'a Env, customer: &str) -> Vec<&'a str> {
    let world = &env.world;
    world
        .customers
        .iter()
        .filter(|c| c.id != customer)
        .flat_map(|c| [c.id.as_str(), c.email.as_str()])
        .chain(
            world
                .orders
                .iter()
                .filter(|o| o.customer_id != customer)
                .map(|o| o.id.as_str()),
        )
        .chain(
            world
                .charges
                .iter()
                .filter(|c| c.customer_id != customer)
                .map(|c| c.id.as_str()),
        )
        .collect()
}

/// The refunds decided: holds, settled charges and existing refunds told apart.
pub(super) fn decision_refunds(g: &mut Grades, expect: &Expect, seen: &Observed) {
    let Some(want) = &expect.decision_refunds else {
        return;
    };
    let mut got: Vec<ExpectedRefund> = seen.case["decision"]["refunds"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| ExpectedRefund {
            charge_id: r["charge_id"].as_str().unwrap_or_default().into(),
            amount: money_string(&r["amount"]),
            currency: r["amount"]["currency"]
                .as_str()
                .or(r["currency"].as_str())
                .unwrap_or_default()
                .into(),
        })
        .collect();
    got.sort();
    let mut want = want.clone();
    want.sort();
    let failures = if got == want {
        vec![]
    } else {
        vec![format!("decided {got:?}, expected {want:?}")]
    };
    g.check(
        "decision_refunds",
        failures,
        format!("{} refund(s) decided as expected", want.len()),
    );
}

/// What the provider holds, against what was expected.
pub(super) fn provider_refunds(g: &mut Grades, expect: &Expect, seen: &Observed) {
    let mut got: Vec<ExpectedProviderRefund> = seen
        .app_refunds
        .iter()
        .map(|r| ExpectedProviderRefund {
            charge_id: r["charge"].as_str().unwrap_or_default().into(),
            amount_minor: r["amount"].as_i64().unwrap_or_default(),
            status: r["status"].as_str().unwrap_or_default().into(),
        })
        .collect();
    got.sort();
    let mut want = expect.provider_refunds.clone();
    want.sort();
    g.check(
        "provider_refunds",
        if got == want {
            vec![]
        } else {
            vec![format!("the provider holds {got:?}, expected {want:?}")]
        },
        format!(
            "the provider holds {} refund(s) of the app, as expected",
            got.len()
        ),
    );
}

/// A decision refund's amount as the decimal string files write.
fn money_string(amount: &serde_json::Value) -> String {
    use serde_json::Value;
    match amount {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("amount")
            .map(|a| {
                a.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| a.to_string())
            })
            .unwrap_or_default(),
        other => other.to_string(),
    }
}
