//! The built-in deterministic investigator: the "model" that runs when no LLM is
//! configured. It drives the same loop through the same tools as an LLM would.
//!
//! It reads the customer's messages (English or Chinese) only to classify the request
//! and find the order in question; nothing in them is obeyed (RP-007). It proposes, with
//! evidence and citations; the policy engine decides.

use std::collections::BTreeSet;

use policy_engine::RequestKind;
use serde_json::{json, Value};

use super::{
    BoxFuture, EvidenceRef, Exchange, Model, ModelContext, ModelTurn, Proposal, ProposedRefund,
    ToolCall,
};

pub struct Investigator;

/// Keywords per request kind, checked in this order (the first match wins).
const KEYWORDS: &[(RequestKind, &[&str])] = &[
    (
        RequestKind::AuthorizationHold,
        &[
            "hold",
            "pending charge",
            "authoriz",
            "预授权",
            "冻结",
            "待处理",
        ],
    ),
    (
        RequestKind::Cancellation,
        &[
            "cancel",
            "cooling",
            "withdraw from",
            "don't want",
            "no longer want",
            "取消",
            "退订",
            "冷静期",
            "不想要",
        ],
    ),
    (
        RequestKind::Overcharge,
        &[
            "overcharge",
            "charged more",
            "too much",
            "wrong amount",
            "多扣",
            "扣多",
            "多收",
        ],
    ),
    (
        RequestKind::DuplicateCharge,
        &[
            "twice",
            "double",
            "duplicate",
            "two charges",
            "charged 2",
            "two times",
            "bought it again",
            "two orders",
            "两次",
            "重复",
            "扣了两",
            "两笔",
        ],
    ),
];

const PRODUCT_WORDS: &[(&str, &[&str])] = &[
    (
        "annual_plan",
        &["annual", "yearly", "year plan", "年度", "年费", "包年"],
    ),
    (
        "monthly_plan",
        &["monthly", "month plan", "月度", "月费", "包月"],
    ),
    ("addon", &["add-on", "addon", "add on", "附加", "插件"]),
];

pub fn classify(text: &str) -> RequestKind {
    let lower = text.to_lowercase();
    for (kind, words) in KEYWORDS {
        if words.iter().any(|w| lower.contains(w)) {
            return *kind;
        }
    }
    RequestKind::Unclear
}

/// Order ids (`O-1234`) mentioned in the text, upper-cased.
pub fn mentioned_orders(text: &str) -> Vec<String> {
    let upper = text.to_uppercase();
    let bytes = upper.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i + 2 < bytes.len() {
        if bytes[i] == b'O'
            && bytes[i + 1] == b'-'
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        {
            let digits: String = upper[i + 2..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if !digits.is_empty() && digits.len() <= 12 {
                let id = format!("O-{digits}");
                if !found.contains(&id) {
                    found.push(id);
                }
            }
        }
        i += 1;
    }
    found
}

fn results<'a>(history: &'a [Exchange], tool: &str) -> impl Iterator<Item = &'a Exchange> {
    let tool = tool.to_string();
    history
        .iter()
        .filter(move |e| e.call.name == tool && e.outcome.ok)
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: name.to_string(),
        name: name.to_string(),
        arguments,
    }
}

impl Model for Investigator {
    fn name(&self) -> String {
        "builtin-investigator".to_string()
    }

    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>> {
        Box::pin(async move { Ok(next_turn(ctx)) })
    }
}

fn next_turn(ctx: &ModelContext<'_>) -> ModelTurn {
    let history = ctx.history;
    let text = ctx.customer_messages.join("\n");
    let request = classify(&text);

    let Some(customer_call) = results(history, "get_customer").next() else {
        return ModelTurn::ToolCalls {
            calls: vec![
                call("get_customer", json!({})),
                call("list_orders", json!({})),
            ],
        };
    };
    let Some(orders_call) = results(history, "list_orders").next() else {
        return ModelTurn::ToolCalls {
            calls: vec![call("list_orders", json!({}))],
        };
    };
    let orders: Vec<Value> = orders_call.outcome.content["orders"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let order_ids: Vec<String> = orders
        .iter()
        .filter_map(|o| o["id"].as_str().map(String::from))
        .collect();
    let mut evidence = vec![EvidenceRef {
        call_id: customer_call.call.id.clone(),
        record_id: customer_call.outcome.content["customer"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }];

    // Which order? A mentioned id first (even one that is not theirs: the workflow
    // handles ownership), then a product named in the text, then the only order.
    let mentioned = mentioned_orders(&text);
    let order_id: Option<String> = if let Some(first) = mentioned.first() {
        Some(first.clone())
    } else if order_ids.len() == 1 {
        Some(order_ids[0].clone())
    } else {
        let lower = text.to_lowercase();
        let named: Vec<&String> = orders
            .iter()
            .filter(|o| {
                PRODUCT_WORDS.iter().any(|(product, words)| {
                    o["product"].as_str() == Some(product)
                        && words.iter().any(|w| lower.contains(w))
                })
            })
            .filter_map(|o| {
                o["id"]
                    .as_str()
                    .and_then(|id| order_ids.iter().find(|x| *x == id))
            })
            .collect();
        (named.len() == 1).then(|| named[0].clone())
    };

    let Some(order_id) = order_id else {
        return propose(
            ctx,
            request,
            None,
            evidence,
            vec![],
            "The customer has several orders and did not say which one.",
        );
    };
    if !order_ids.contains(&order_id) {
        return propose(
            ctx,
            request,
            Some(order_id),
            evidence,
            vec![],
            "The order named is not one of this customer's orders.",
        );
    }
    evidence.push(EvidenceRef {
        call_id: orders_call.call.id.clone(),
        record_id: order_id.clone(),
    });

    let charges_call = results(history, "list_charges")
        .find(|e| e.call.arguments["order_id"].as_str() == Some(order_id.as_str()));
    let Some(charges_call) = charges_call else {
        return ModelTurn::ToolCalls {
            calls: vec![call("list_charges", json!({ "order_id": order_id }))],
        };
    };
    let charges: Vec<Value> = charges_call.outcome.content["charges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in &charges {
        if let Some(id) = c["id"].as_str() {
            evidence.push(EvidenceRef {
                call_id: charges_call.call.id.clone(),
                record_id: id.to_string(),
            });
        }
    }

    // Refunds of every captured charge.
    let missing: Vec<ToolCall> = charges
        .iter()
        .filter(|c| c["captured"].as_bool() == Some(true))
        .filter_map(|c| c["id"].as_str())
        .filter(|id| {
            !results(history, "list_refunds")
                .any(|e| e.call.arguments["charge_id"].as_str() == Some(id))
        })
        .map(|id| call("list_refunds", json!({ "charge_id": id })))
        .collect();
    if !missing.is_empty() {
        return ModelTurn::ToolCalls { calls: missing };
    }
    let mut refunded: BTreeSet<String> = BTreeSet::new();
    for e in results(history, "list_refunds") {
        for r in e.outcome.content["refunds"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if matches!(r["status"].as_str(), Some("succeeded" | "pending")) {
                if let Some(charge) = r["charge"].as_str() {
                    refunded.insert(charge.to_string());
                }
                if let Some(id) = r["id"].as_str() {
                    evidence.push(EvidenceRef {
                        call_id: e.call.id.clone(),
                        record_id: id.to_string(),
                    });
                }
            }
        }
    }

    if results(history, "search_policy").next().is_none() {
        let query = match request {
            RequestKind::AuthorizationHold => "authorization hold released",
            RequestKind::Cancellation => "cooling-off cancellation refund",
            RequestKind::Overcharge => "overcharge refund difference",
            _ => "duplicate charge refund",
        };
        return ModelTurn::ToolCalls {
            calls: vec![call("search_policy", json!({ "query": query }))],
        };
    }

    // Its own reading: later identical captured charges on the order, not yet refunded.
    let mut proposed = Vec::new();
    if request == RequestKind::DuplicateCharge {
        let mut taken: Vec<(String, String, String)> = charges
            .iter()
            .filter(|c| {
                c["captured"].as_bool() == Some(true) && c["status"].as_str() == Some("succeeded")
            })
            .map(|c| {
                (
                    c["created_at"].as_str().unwrap_or_default().to_string(),
                    c["id"].as_str().unwrap_or_default().to_string(),
                    format!(
                        "{} {}",
                        c["amount"].as_str().unwrap_or_default(),
                        c["currency"].as_str().unwrap_or_default()
                    ),
                )
            })
            .collect();
        taken.sort();
        for (i, (_, id, money)) in taken.iter().enumerate() {
            if i > 0 && taken[..i].iter().any(|(_, _, m)| m == money) && !refunded.contains(id) {
                let (amount, currency) = money.split_once(' ').unwrap_or_default();
                proposed.push(ProposedRefund {
                    charge_id: id.clone(),
                    amount: amount.into(),
                    currency: currency.into(),
                });
            }
        }
    }
    let summary = match (request, proposed.len()) {
        (RequestKind::DuplicateCharge, n) if n > 0 => {
            format!("{n} duplicate charge(s) on order {order_id}.")
        }
        (RequestKind::DuplicateCharge, _) => {
            format!("No unrefunded duplicate charge found on order {order_id}.")
        }
        (kind, _) => format!(
            "Customer request ({}) about order {order_id}.",
            kind.as_str()
        ),
    };
    propose(ctx, request, Some(order_id), evidence, proposed, &summary)
}

fn propose(
    ctx: &ModelContext<'_>,
    request: RequestKind,
    order_id: Option<String>,
    evidence: Vec<EvidenceRef>,
    refunds: Vec<ProposedRefund>,
    summary: &str,
) -> ModelTurn {
    let citations: Vec<String> = results(ctx.history, "search_policy")
        .flat_map(|e| {
            e.outcome.content["passages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|p| p["citation"].as_str().map(String::from))
        .take(2)
        .collect();
    let reason_code = if refunds.is_empty() {
        "other"
    } else {
        "duplicate_charge"
    };
    ModelTurn::Propose {
        proposal: Proposal {
            request,
            order_id,
            reason_code: reason_code.to_string(),
            refunds,
            evidence,
            citations,
            summary: summary.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests_in_english_and_chinese() {
        let cases = [
            (
                "I was charged twice for my annual plan",
                RequestKind::DuplicateCharge,
            ),
            ("我的年度会员被扣了两次款", RequestKind::DuplicateCharge),
            (
                "There is a pending charge hold on my card",
                RequestKind::AuthorizationHold,
            ),
            ("I want to cancel my annual plan", RequestKind::Cancellation),
            ("我想取消订阅", RequestKind::Cancellation),
            ("You charged more than the price", RequestKind::Overcharge),
            ("hello?", RequestKind::Unclear),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text), kind, "{text}");
        }
    }

    #[test]
    fn finds_order_ids_in_text() {
        assert_eq!(
            mentioned_orders("order o-1001 and O-2002, not FOO-3"),
            ["O-1001", "O-2002"]
        );
        assert!(mentioned_orders("no order here").is_empty());
    }
}
