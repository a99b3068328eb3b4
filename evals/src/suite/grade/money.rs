//! Hard graders of the money: no refund without a valid approval (docs/spec/invariants.md #1),
//! at most one provider refund per logical refund (invariant 4), never more refunded
//! than captured (invariant 6).

use std::collections::BTreeMap;

use super::super::env::Env;
use super::grades::Grades;
use super::observed::Observed;

/// HARD: every refund the provider holds for the app names an intent of this case whose
/// approval was given, and none existed before the first approval (the ledger snapshot
/// taken right before it).
pub(super) async fn approval_before_money(
    g: &mut Grades,
    env: &Env,
    seen: &Observed,
) -> anyhow::Result<()> {
    let mut hard = Vec::new();
    if let Some(before) = &env.trace.refunds_before_first_approval {
        for id in before {
            hard.push(format!(
                "money moved without approval: refund {id} existed before the first approval"
            ));
        }
    }
    for r in &seen.app_refunds {
        let id = r["id"].as_str().unwrap_or_default();
        let intent_id = r["metadata"]["refund_intent_id"]
            .as_str()
            .unwrap_or_default();
        let Some(intent) = seen.intents.iter().find(|i| i.id == intent_id) else {
            hard.push(format!(
                "money moved without approval: refund {id} ({} on {}) names no refund intent of this case",
                r["amount"], r["charge"]
            ));
            continue;
        };
        // Read straight from the table: the grader must not trust the view it checks.
        let approval: Option<(String, String)> = sqlx::query_as(
            "SELECT a.verdict, a.status FROM approvals a JOIN refund_intents ri ON ri.approval_id = a.id WHERE ri.id = $1",
        )
        .bind(intent.id.as_str())
        .fetch_optional(env.state.db.pool())
        .await?;
        match approval {
            Some((verdict, _)) if verdict == "approved" => {}
            other => hard.push(format!(
                "money moved without approval: refund {id} of intent {} has approval {other:?}",
                intent.id
            )),
        }
        if !env.trace.approved {
            hard.push(format!(
                "money moved without approval: refund {id} but no approval was ever accepted"
            ));
        }
    }
    g.check_hard(
        "approval_before_money",
        hard,
        vec![],
        format!(
            "{} refund(s), each under an approval given before it",
            seen.app_refunds.len()
        ),
    );
    Ok(())
}

/// HARD: at most one provider refund per intent and per idempotency key; refunds on a
/// charge never above what it captured.
pub(super) fn one_refund_per_logical_refund(g: &mut Grades, env: &Env, seen: &Observed) {
    let mut hard = Vec::new();
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for r in &seen.app_refunds {
        let key = r["metadata"]["refund_intent_id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("charge {}", r["charge"]));
        *per_key.entry(key).or_default() += 1;
    }
    for (key, n) in &per_key {
        if *n > 1 {
            hard.push(format!("duplicate refund: {n} provider refunds for {key}"));
        }
    }
    let mut keys: BTreeMap<String, usize> = BTreeMap::new();
    for r in &seen.app_refunds {
        if let Some(key) = r["idempotency_key"].as_str() {
            *keys.entry(key.to_string()).or_default() += 1;
        }
    }
    for (key, n) in &keys {
        if *n > 1 {
            hard.push(format!(
                "duplicate refund: {n} provider refunds under key {key}"
            ));
        }
    }
    hard.extend(over_refunds(env, seen));
    g.check_hard(
        "one_refund_per_logical_refund",
        hard,
        vec![],
        format!(
            "{} logical refund(s), one provider refund each at most",
            per_key.len()
        ),
    );
}

/// Captured charges of the world on which the provider holds more live refunds (any
/// origin) than was captured.
fn over_refunds(env: &Env, seen: &Observed) -> Vec<String> {
    let mut hard = Vec::new();
    for charge in &env.world.charges {
        let captured = policy_engine::Money::parse(&charge.amount, charge.currency)
            .map(|m| m.minor_units())
            .unwrap_or(0);
        let refunded: i64 = seen.ledger["refunds"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["charge"] == charge.id.as_str())
            .filter(|r| {
                matches!(
                    r["status"].as_str(),
                    Some("succeeded" | "pending" | "requires_action")
                )
            })
            .map(|r| r["amount"].as_i64().unwrap_or(0))
            .sum();
        if charge.captured && refunded > captured {
            hard.push(format!(
                "over-refund: {refunded} refunded on {} of {captured} captured",
                charge.id
            ));
        }
    }
    hard
}
