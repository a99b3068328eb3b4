//! One turn of the investigator: from the tool history so far, the next tool calls, a
//! hand-off, or the proposal. The order is resolved by `resolve` against the customer's
//! records, the kind read from the customer's new words (`structure`: never from a
//! quoted thread, a pasted statement or a signature) or, where they leave it open, from
//! the records. Sentences that try to instruct the agent (RP-007) are not read at all;
//! what such a case comes to when the records decide nothing is the workflow's call
//! (`workflow::instructed`: escalate, never ask).

use std::collections::BTreeMap;

use policy_engine::RequestKind;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::candidates::{attempted, call, candidate, charges_result, decimal, results, took_money};
use crate::agent::{
    EvidenceRef, Exchange, ModelContext, ModelTurn, Proposal, ProposedRefund, ToolCall,
};
use domain::request::asks::asks_for_money_back;
use domain::request::records as records_kind;
use domain::request::{classify, kinds_named, speaks_of_money};
use domain::resolve::{self, OrderCandidate, OrderSource, RequestSource, Resolution, ResolveInput};

// Long because it is the built-in investigator's one decision per turn, read top to bottom
// as its steps (customer and orders, which order, charges, request kind, policy, proposal),
// each returning early with the turn it needs; the details are in `resolve_order`,
// `read_charges`, `read_request` and `propose`.
pub(super) fn next_turn(ctx: &ModelContext<'_>) -> ModelTurn {
    let history = ctx.history;
    let tiers = resolve::Tiers::of(ctx.inputs);
    let text = tiers.decisive.join("\n");
    let text_kind = match classify(&text) {
        // Words forwarded by the customer (their own earlier complaint) may name it.
        RequestKind::Unclear => classify(&tiers.forwarded.join("\n")),
        kind => kind,
    };

    if !attempted(history, "get_customer", None) || !attempted(history, "list_orders", None) {
        let mut calls = Vec::new();
        if !attempted(history, "get_customer", None) {
            calls.push(call("get_customer", json!({})));
        }
        if !attempted(history, "list_orders", None) {
            calls.push(call("list_orders", json!({})));
        }
        return ModelTurn::ToolCalls { calls };
    }
    let (Some(customer_call), Some(orders_call)) = (
        results(history, "get_customer").next(),
        results(history, "list_orders").next(),
    ) else {
        return ModelTurn::HandOff {
            reason: "the customer's billing records could not be read".into(),
        };
    };
    let orders: &[Value] = orders_call.outcome.content["orders"]
        .as_array()
        .map_or(&[], Vec::as_slice);
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

    // Which order: resolved against this customer's records (`resolve`): an id they
    // wrote, else what else they wrote (product, amount, date), else the records. An id
    // that is none of theirs is proposed as written; the workflow looks it up (RP-007).
    let candidates: Vec<OrderCandidate> = orders.iter().map(|o| candidate(o, history)).collect();
    let resolution = resolve_order(ctx, text_kind, &candidates);
    if let Some(turn) = read_charges(history, &resolution.needs_charges) {
        return turn;
    }
    let (request, request_source, resolution) =
        match read_request(ctx, &text, text_kind, &candidates, resolution) {
            Ok(read) => read,
            Err(turn) => return *turn,
        };
    let noted = noted_references(&resolution);
    let order_id = resolution.order_id;
    if order_id.as_ref().is_none_or(|id| !order_ids.contains(id)) {
        if let Some(turn) = search_policy_first(history, request, None) {
            return turn;
        }
    }
    let Some(order_id) = order_id else {
        let why = resolution
            .missing
            .unwrap_or("which order the request is about");
        return propose(
            ctx,
            (request, request_source),
            None,
            evidence,
            vec![],
            &format!("Missing: {why}.{noted}"),
        );
    };
    if !order_ids.contains(&order_id) {
        return propose(
            ctx,
            (request, request_source),
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
    let order = orders
        .iter()
        .find(|o| o["id"].as_str() == Some(order_id.as_str()))
        .cloned()
        .unwrap_or_default();
    read_order(
        ctx,
        (request, request_source),
        order_id,
        &order,
        evidence,
        &noted,
    )
}

/// " Noted: 88812, #552 match none of the customer's orders." or nothing: numbers the
/// customer wrote that are none of theirs, said in the summary a reviewer reads.
fn noted_references(resolution: &Resolution) -> String {
    if resolution.unmatched.is_empty() {
        return String::new();
    }
    let list: Vec<&str> = resolution
        .unmatched
        .iter()
        .map(|r| r.text.as_str())
        .collect();
    format!(
        " Noted: {} match none of the customer's orders.",
        list.join(", ")
    )
}

/// The rest of the investigation once the order is known and is the customer's: its
/// charges, the refunds of each captured charge (RP-001 §2.1), the policy passages, then
/// the proposal.
fn read_order(
    ctx: &ModelContext<'_>,
    (request, request_source): (RequestKind, RequestSource),
    order_id: String,
    order: &Value,
    mut evidence: Vec<EvidenceRef>,
    noted: &str,
) -> ModelTurn {
    let history = ctx.history;
    if !attempted(history, "list_charges", Some(("order_id", &order_id))) {
        return ModelTurn::ToolCalls {
            calls: vec![call("list_charges", json!({ "order_id": order_id }))],
        };
    }
    let Some(charges_call) = charges_result(history, &order_id) else {
        return ModelTurn::HandOff {
            reason: format!("the charges of order {order_id} could not be read"),
        };
    };
    let charges: &[Value] = charges_call.outcome.content["charges"]
        .as_array()
        .map_or(&[], Vec::as_slice);
    for c in charges {
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
        .filter(|id| !attempted(history, "list_refunds", Some(("charge_id", id))))
        .map(|id| call("list_refunds", json!({ "charge_id": id })))
        .collect();
    if !missing.is_empty() {
        return ModelTurn::ToolCalls { calls: missing };
    }
    // Already refunded or pending, per charge (RP-001 §2.1).
    let mut refunded: BTreeMap<String, Decimal> = BTreeMap::new();
    for e in results(history, "list_refunds") {
        for r in e.outcome.content["refunds"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if matches!(r["status"].as_str(), Some("succeeded" | "pending")) {
                if let Some(charge) = r["charge"].as_str() {
                    *refunded.entry(charge.to_string()).or_default() += decimal(&r["amount"]);
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

    if let Some(turn) = search_policy_first(history, request, order["product"].as_str()) {
        return turn;
    }

    let proposed = own_reading(request, order, charges, &refunded);
    let summary = match (request, proposed.len()) {
        (RequestKind::DuplicateCharge, n) if n > 0 => {
            format!("{n} duplicate charge(s) on order {order_id}.{noted}")
        }
        (RequestKind::DuplicateCharge, _) => {
            format!("No unrefunded duplicate charge found on order {order_id}.{noted}")
        }
        (kind, _) => format!(
            "Customer request ({}) about order {order_id}.{noted}",
            kind.as_str()
        ),
    };
    propose(
        ctx,
        (request, request_source),
        Some(order_id),
        evidence,
        proposed,
        &summary,
    )
}

fn resolve_order(
    ctx: &ModelContext<'_>,
    request: RequestKind,
    candidates: &[OrderCandidate],
) -> Resolution {
    resolve::resolve(&ResolveInput {
        messages: ctx.inputs,
        form_order: None,
        request,
        orders: candidates,
        moment: moment(ctx.history),
    })
}

/// When the ticket was opened and where the customer lives, from `get_customer`: the
/// frame of the days the customer names.
fn moment(history: &[Exchange]) -> Option<resolve::Moment> {
    let answer = &results(history, "get_customer").next()?.outcome.content;
    let opened = answer["ticket_opened_at"].as_str()?;
    Some(resolve::Moment {
        reported_at: time::OffsetDateTime::parse(
            opened,
            &time::format_description::well_known::Rfc3339,
        )
        .ok()?,
        region: serde_json::from_value(answer["customer"]["region"].clone()).ok(),
        script_offset: None,
    })
}

/// `list_charges` for the orders not read yet, if any.
fn read_charges(history: &[Exchange], order_ids: &[String]) -> Option<ModelTurn> {
    let calls: Vec<ToolCall> = order_ids
        .iter()
        .filter(|id| !attempted(history, "list_charges", Some(("order_id", id))))
        .map(|id| call("list_charges", json!({ "order_id": id })))
        .collect();
    (!calls.is_empty()).then_some(ModelTurn::ToolCalls { calls })
}

/// The request kind and where it came from: the text's, unless the records settle it
/// (`domain::request::records`: the words say nothing of the kind, or the order's charges
/// contradict them, and exactly one reading fits). Unclear words are read against the
/// records only when they speak of money at all ("hello?" stays unclear), and never
/// when they name an order that is not the customer's (RP-007 is about that order).
/// The order is resolved again for the new kind, by the same `resolve` the workflow
/// applies, and the reading is dropped unless that lands on the order showing it.
fn read_request(
    ctx: &ModelContext<'_>,
    text: &str,
    text_kind: RequestKind,
    candidates: &[OrderCandidate],
    resolution: Resolution,
) -> Result<(RequestKind, RequestSource, Resolution), Box<ModelTurn>> {
    let kept = |resolution| Ok((text_kind, RequestSource::Text, resolution));
    let named = resolution.order_id.as_deref();
    let own = named.and_then(|id| candidates.iter().find(|o| o.id == id));
    let open = match text_kind {
        RequestKind::Cancellation => false,
        RequestKind::Unclear => speaks_of_money(text) && (named.is_none() || own.is_some()),
        _ => own.is_some(),
    };
    let scope: Vec<&OrderCandidate> = match own {
        Some(order) => vec![order],
        None => candidates.iter().collect(),
    };
    if !open || scope.len() > records_kind::MAX_ORDERS_SCANNED {
        return kept(resolution);
    }
    let unread: Vec<String> = scope
        .iter()
        .filter(|o| o.charges.is_none())
        .map(|o| o.id.clone())
        .collect();
    if let Some(turn) = read_charges(ctx.history, &unread) {
        return Err(Box::new(turn));
    }
    let Some((kind, order)) = records_kind::read_kind(text_kind, &scope, candidates) else {
        return match (text_kind, own) {
            (RequestKind::Unclear, Some(order)) if words_point_at(text, &resolution, order) => {
                let instructed = resolve::Tiers::of(ctx.inputs).instructed;
                let kind = unclear_about_one_order(text, instructed);
                Ok((kind, RequestSource::Text, resolution))
            }
            _ => kept(resolution),
        };
    };
    if own.is_some() {
        return Ok((kind, RequestSource::Records, resolution));
    }
    let again = resolve_order(ctx, kind, candidates);
    if again.order_id.as_deref() == Some(order.id.as_str()) {
        Ok((kind, RequestSource::Records, again))
    } else {
        kept(resolution)
    }
}

/// The other kinds the customer's new words name where they disagree on money: a wish
/// to cancel beside a charge complaint ("annulez le second débit", "cancel it, charged
/// twice"). The workflow decides each reading and keeps the smallest refund allowed.
fn other_readings(ctx: &ModelContext<'_>, request: RequestKind) -> Vec<RequestKind> {
    use RequestKind::{Cancellation, DuplicateCharge, Overcharge};
    let named = kinds_named(&resolve::Tiers::of(ctx.inputs).decisive.join("\n"));
    let charge = named.contains(&DuplicateCharge) || named.contains(&Overcharge);
    if !(charge && named.contains(&Cancellation)) {
        return Vec::new();
    }
    named
        .into_iter()
        .filter(|k| matches!(k, Cancellation | DuplicateCharge | Overcharge) && *k != request)
        .collect()
}

/// Whether the customer's words single out `order`: its id, or (when it is their only
/// order, so nothing was left to narrow) its product or amount.
fn words_point_at(text: &str, resolution: &Resolution, order: &OrderCandidate) -> bool {
    resolution.source == Some(OrderSource::Message)
        || resolve::mentioned_products(text).contains(&order.product.as_str())
        || resolve::mentioned_amounts(&domain::structure::fold_words(text))
            .contains(&order.amount.normalize())
}

/// What words that name no kind ask about one order of theirs the customer singled out
/// and whose records show nothing wrong: money back undoes the purchase (a cancellation,
/// RP-002 decides what it is owed), anything else about money asks whether it was
/// charged right (a charge complaint, RP-001 answers that nothing is duplicated). Asking
/// the customer what they mean would ask what the records already answer. In a message
/// that also tries to instruct the agent, "money back" may be the instruction's own
/// words slipped past its marking, so only the charge is checked (RP-007: injection is
/// never a reason to refund).
fn unclear_about_one_order(text: &str, instructed: bool) -> RequestKind {
    if !instructed && asks_for_money_back(text) {
        RequestKind::Cancellation
    } else {
        RequestKind::DuplicateCharge
    }
}

/// The policy passages for the request, once per run, so the proposal can cite them.
fn search_policy_first(
    history: &[Exchange],
    request: RequestKind,
    product: Option<&str>,
) -> Option<ModelTurn> {
    if attempted(history, "search_policy", None) {
        return None;
    }
    let query = match request {
        RequestKind::AuthorizationHold => "authorization hold released",
        RequestKind::Cancellation => "cooling-off cancellation refund",
        RequestKind::Overcharge => "overcharge refund difference",
        RequestKind::Unclear => "refund request which order",
        RequestKind::DuplicateCharge => "duplicate charge refund",
    };
    let mut args = json!({ "query": query });
    if let Some(product) = product {
        args["product"] = json!(product);
    }
    Some(ModelTurn::ToolCalls {
        calls: vec![call("search_policy", args)],
    })
}

/// The investigator's own reading of the order's records, for the proposal. The policy
/// engine recomputes everything from the facts; a disagreement is logged as an override.
fn own_reading(
    request: RequestKind,
    order: &Value,
    charges: &[Value],
    refunded: &BTreeMap<String, Decimal>,
) -> Vec<ProposedRefund> {
    let mut taken: Vec<&Value> = charges.iter().filter(|c| took_money(c)).collect();
    taken.sort_by_key(|c| (c["created_at"].as_str(), c["id"].as_str()));
    let left = |c: &Value, wanted: Decimal| {
        let id = c["id"].as_str().unwrap_or_default();
        let already = refunded.get(id).copied().unwrap_or_default();
        let available = decimal(&c["amount"]) - already;
        wanted.min(available).max(Decimal::ZERO)
    };
    let line = |c: &Value, amount: Decimal| ProposedRefund {
        charge_id: c["id"].as_str().unwrap_or_default().to_string(),
        amount: amount.to_string(),
        currency: c["currency"].as_str().unwrap_or_default().to_string(),
    };
    let order_amount = decimal(&order["amount"]);
    let mut proposed = Vec::new();
    match request {
        RequestKind::DuplicateCharge => {
            for (i, c) in taken.iter().enumerate() {
                let same =
                    |e: &&Value| e["amount"] == c["amount"] && e["currency"] == c["currency"];
                if i > 0 && taken[..i].iter().any(same) {
                    let amount = left(c, decimal(&c["amount"]));
                    if !amount.is_zero() {
                        proposed.push(line(c, amount));
                    }
                }
            }
        }
        RequestKind::Overcharge => {
            if let [only] = taken.as_slice() {
                let already = refunded
                    .get(only["id"].as_str().unwrap_or_default())
                    .copied()
                    .unwrap_or_default();
                let difference = decimal(&only["amount"]) - order_amount - already;
                let amount = left(only, difference);
                if amount > Decimal::ZERO {
                    proposed.push(line(only, amount));
                }
            }
        }
        RequestKind::Cancellation if order["product"].as_str() == Some("annual_plan") => {
            for c in &taken {
                let amount = left(c, decimal(&c["amount"]));
                if !amount.is_zero() {
                    proposed.push(line(c, amount));
                }
            }
        }
        _ => {}
    }
    proposed
}

fn propose(
    ctx: &ModelContext<'_>,
    (request, request_source): (RequestKind, RequestSource),
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
    // The reason the investigator believes applies; the engine's reason code is final.
    let reason_code = match (request, refunds.is_empty()) {
        (RequestKind::DuplicateCharge, false) => "duplicate_charge",
        (RequestKind::DuplicateCharge, true) => "not_duplicate",
        (RequestKind::Overcharge, false) => "overcharge",
        (RequestKind::Cancellation, false) => "cooling_off",
        (RequestKind::AuthorizationHold, _) => "authorization_hold",
        (_, _) if order_id.is_none() => "insufficient_info",
        _ => "other",
    };
    let others = other_readings(ctx, request);
    ModelTurn::Answer {
        answer: Proposal {
            request,
            order_id,
            reason_code: reason_code.to_string(),
            refunds,
            evidence,
            citations,
            summary: summary.to_string(),
            order_source: None,
            request_source: Some(request_source),
            repeat_of: None,
            other_readings: others.clone(),
            reading: Some(super::reading::reading_of(ctx, request, &others)),
        },
    }
}
