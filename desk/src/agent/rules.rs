//! What the refund domain adds to the harness's loop ([`harness::Rules`]): the turns it
//! refuses (docs/spec/invariants.md #7: a model that asks for a write action or claims an approval
//! is refused whole and the case goes to a human), the proposals it cannot use, and
//! what a human taking a case over is told.

use harness::{Counters, RunLog, ToolDeclaration};
use serde_json::{json, Value};

use super::{ModelTurn, Proposal};

/// The refund investigation's rules.
pub struct RefundRules;

impl harness::Rules<Proposal> for RefundRules {
    fn unusable(&self, proposal: &Proposal) -> Option<String> {
        proposal
            .summary
            .trim()
            .is_empty()
            .then(|| "the model proposed without a summary".to_string())
    }

    fn refuse(&self, turn: &ModelTurn, offered: &[ToolDeclaration]) -> Option<Value> {
        violation(turn, offered)
    }

    fn handoff_summary(&self, reason: &str, log: &RunLog<Proposal>, counters: Counters) -> Value {
        handoff_summary(reason, log, counters)
    }
}

/// Verbs of tools that would change something. No such tool is offered; a model asking
/// for one has been misled (prompt injection) or is inventing capabilities.
const WRITE_VERBS: &[&str] = &[
    "approve",
    "authorize",
    "authorise",
    "cancel",
    "capture",
    "charge",
    "close",
    "create",
    "credit",
    "delete",
    "execute",
    "grant",
    "issue",
    "mark",
    "modify",
    "patch",
    "pay",
    "post",
    "put",
    "refund",
    "reopen",
    "reverse",
    "send",
    "set",
    "submit",
    "transfer",
    "update",
    "void",
    "write",
];

/// Phrases with which a proposal would claim an approval no human gave, matched on its
/// JSON text lowercased, with quotes and backslashes removed and whitespace collapsed
/// (so `{"approved": true}` in a summary matches `approved:true`). A false alarm sends
/// the case to a human, which is the safe side.
const APPROVAL_CLAIMS: &[&str] = &[
    "approved:true",
    "approval:true",
    "approved_by:",
    "approval_id:",
    "has been approved",
    "have been approved",
    "was approved",
    "were approved",
    "is approved",
    "already approved",
    "pre-approved",
    "preapproved",
    "auto-approved",
    "approval granted",
    "approval:granted",
    "refund approved",
    "已批准",
    "已经批准",
    "已审批",
    "批准了",
];

fn normalized(text: &str) -> String {
    let stripped: String = text
        .to_lowercase()
        .chars()
        .filter(|c| *c != '"' && *c != '\\')
        .collect();
    stripped
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" :", ":")
        .replace(": ", ":")
}

/// Whether a turn tries to act or claims an approval (docs/spec/invariants.md #7): the violation
/// as recorded in a `policy_violation` event.
pub fn violation(turn: &ModelTurn, offered: &[ToolDeclaration]) -> Option<Value> {
    let offered: Vec<&str> = offered.iter().map(|d| d.name).collect();
    match turn {
        ModelTurn::ToolCalls { calls } => calls.iter().find_map(|call| {
            if offered.contains(&call.name.as_str()) {
                return None;
            }
            let name = call.name.to_lowercase();
            let words: Vec<&str> = name
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            let writes = words
                .iter()
                .any(|w| WRITE_VERBS.contains(w) || w.starts_with("approv"));
            writes.then(|| {
                let kind = if name.contains("approv") {
                    "approval_attempt"
                } else {
                    "write_attempt"
                };
                json!({ "violation": kind, "tool": call.name, "arguments": call.arguments,
                        "detail": "the model asked for a tool that would act; only read-only tools exist" })
            })
        }),
        ModelTurn::Answer { answer: proposal } => {
            let text = normalized(&serde_json::to_string(proposal).unwrap_or_default());
            APPROVAL_CLAIMS
                .iter()
                .find(|claim| text.contains(*claim))
                .map(|claim| {
                    json!({ "violation": "approval_claim", "matched": claim,
                            "detail": "the proposal claims an approval; only a human approves, in the console" })
                })
        }
        ModelTurn::HandOff { .. } => None,
    }
}

// ---------------------------------------------------------------------------------------
// What a human taking the case over is told.
// ---------------------------------------------------------------------------------------

/// What a human taking the case over needs: the facts the tools verified (with the call
/// that verified each), what is still open, and what the agent did.
///
/// Long because it is one walk over the run's exchanges that sorts each into verified,
/// open or done; split, the three lists would be built by three walks that must agree.
pub fn handoff_summary(reason: &str, log: &RunLog<Proposal>, counters: Counters) -> Value {
    let mut verified = Vec::new();
    let mut open = Vec::new();
    for x in &log.exchanges {
        let c = &x.outcome.content;
        if !x.outcome.ok {
            open.push(format!(
                "{} failed ({}): {}",
                x.call.name,
                c["error"].as_str().unwrap_or("error"),
                c["hint"].as_str().unwrap_or_default()
            ));
            continue;
        }
        let fact = |text: String| json!({ "call_id": x.call.id, "fact": text });
        match x.call.name.as_str() {
            "get_customer" => verified.push(fact(format!(
                "customer {} (region {})",
                c["customer"]["id"].as_str().unwrap_or("?"),
                c["customer"]["region"].as_str().unwrap_or("?")
            ))),
            "list_orders" => {
                for o in c["orders"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "order {}: {} {} {} on {}",
                        o["id"].as_str().unwrap_or("?"),
                        o["product"].as_str().unwrap_or("?"),
                        o["amount"].as_str().unwrap_or("?"),
                        o["currency"].as_str().unwrap_or("?"),
                        o["created_at"].as_str().unwrap_or("?")
                    )));
                }
            }
            "list_charges" => {
                for ch in c["charges"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "charge {} on order {}: {} {}, {}, captured {}, refunded {}",
                        ch["id"].as_str().unwrap_or("?"),
                        ch["order_id"].as_str().unwrap_or("?"),
                        ch["amount"].as_str().unwrap_or("?"),
                        ch["currency"].as_str().unwrap_or("?"),
                        ch["status"].as_str().unwrap_or("?"),
                        ch["captured"],
                        ch["amount_refunded"].as_str().unwrap_or("?")
                    )));
                }
            }
            "list_refunds" => {
                let refunds = c["refunds"].as_array().cloned().unwrap_or_default();
                if refunds.is_empty() {
                    verified.push(fact(format!(
                        "no refunds on charge {}",
                        c["charge_id"].as_str().unwrap_or("?")
                    )));
                }
                for r in refunds {
                    verified.push(fact(format!(
                        "refund {} on charge {}: {} {}, {}",
                        r["id"].as_str().unwrap_or("?"),
                        r["charge"].as_str().unwrap_or("?"),
                        r["amount"].as_str().unwrap_or("?"),
                        r["currency"].as_str().unwrap_or("?"),
                        r["status"].as_str().unwrap_or("?")
                    )));
                }
            }
            "list_customer_history" => {
                match c["tickets"].as_array() {
                    Some(tickets) => verified.push(fact(format!(
                        "{} other tickets from the customer",
                        c["tickets_total"].as_i64().unwrap_or(tickets.len() as i64)
                    ))),
                    None => open.push("the customer's other tickets are unknown here".into()),
                }
                for t in c["tickets"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "earlier ticket {} on {}: {}",
                        t["id"].as_str().unwrap_or("?"),
                        t["created_at"].as_str().unwrap_or("?"),
                        t["case_status_label"].as_str().unwrap_or("no case")
                    )));
                }
                for r in c["refunds"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "past refund {} on charge {}: {} {}, {}",
                        r["id"].as_str().unwrap_or("?"),
                        r["charge"].as_str().unwrap_or("?"),
                        r["amount"].as_str().unwrap_or("?"),
                        r["currency"].as_str().unwrap_or("?"),
                        r["status"].as_str().unwrap_or("?")
                    )));
                }
            }
            "search_policy" => {
                for p in c["passages"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "policy {}",
                        p["citation"].as_str().unwrap_or("?")
                    )));
                }
            }
            _ => {}
        }
    }
    let tools_used: Vec<&str> = log.exchanges.iter().map(|x| x.call.name.as_str()).collect();
    for (tool, question) in [
        ("get_customer", "the customer's billing record was not read"),
        ("list_orders", "the customer's orders were not listed"),
        ("list_charges", "the provider's charges were not checked"),
    ] {
        if !tools_used.contains(&tool) {
            open.push(question.to_string());
        }
    }
    if log.answer.is_none() {
        open.push("what the customer is owed has not been decided".into());
    }
    let mut actions = vec![format!(
        "{} model steps and {} read-only tool calls; no write action was taken (the agent has none)",
        counters.steps, counters.tool_calls
    )];
    for v in &log.violations {
        actions.push(format!(
            "refused a turn: {} ({})",
            v["violation"].as_str().unwrap_or("violation"),
            v["tool"].as_str().or(v["matched"].as_str()).unwrap_or("")
        ));
    }
    if log.model_errors > 0 {
        actions.push(format!("{} model errors", log.model_errors));
    }
    json!({
        "reason": reason,
        "verified_facts": verified,
        "open_questions": open,
        "actions_taken": actions,
        "tokens": log.tokens,
    })
}
