//! Reading the tool history: which calls were made and answered, and the customer's
//! orders as `resolve` needs them (`OrderCandidate`), with their charges once read.

use rust_decimal::Decimal;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::agent::{Exchange, ToolCall};
use domain::resolve::{ChargeSummary, OrderCandidate};

/// Successful results of one tool.
pub(super) fn results<'a>(
    history: &'a [Exchange],
    tool: &'a str,
) -> impl Iterator<Item = &'a Exchange> {
    history
        .iter()
        .filter(move |e| e.call.name == tool && e.outcome.ok)
}

/// Whether a call with this tool and argument was already made (whatever its outcome):
/// a failed read is not retried forever, the budget is not for that.
pub(super) fn attempted(history: &[Exchange], tool: &str, arg: Option<(&str, &str)>) -> bool {
    history.iter().any(|e| {
        e.call.name == tool
            && arg.is_none_or(|(name, value)| e.call.arguments[name].as_str() == Some(value))
    })
}

pub(super) fn charges_result<'a>(history: &'a [Exchange], order_id: &str) -> Option<&'a Exchange> {
    results(history, "list_charges")
        .find(|e| e.call.arguments["order_id"].as_str() == Some(order_id))
}

pub(super) fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: name.to_string(),
        name: name.to_string(),
        arguments,
    }
}

pub(super) fn decimal(v: &Value) -> Decimal {
    v.as_str()
        .and_then(|s| s.parse::<Decimal>().ok())
        .unwrap_or(Decimal::ZERO)
}

pub(super) fn took_money(charge: &Value) -> bool {
    charge["captured"].as_bool() == Some(true) && charge["status"].as_str() == Some("succeeded")
}

fn is_hold(charge: &Value) -> bool {
    charge["captured"].as_bool() == Some(false) && charge["status"].as_str() != Some("failed")
}

/// An order as `resolve` needs it, with its charges once `list_charges` answered (an
/// empty list when the read failed, so it is not asked again).
pub(super) fn candidate(order: &Value, history: &[Exchange]) -> OrderCandidate {
    let id = order["id"].as_str().unwrap_or_default();
    let placed_at = order["created_at"]
        .as_str()
        .and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let charges = if let Some(e) = charges_result(history, id) {
        let list: &[Value] = e.outcome.content["charges"]
            .as_array()
            .map_or(&[], Vec::as_slice);
        Some(
            list.iter()
                .map(|c| ChargeSummary {
                    amount: decimal(&c["amount"]),
                    took_money: took_money(c),
                    hold: is_hold(c),
                })
                .collect(),
        )
    } else if attempted(history, "list_charges", Some(("order_id", id))) {
        Some(Vec::new())
    } else {
        None
    };
    OrderCandidate {
        id: id.to_string(),
        product: order["product"].as_str().unwrap_or_default().to_string(),
        amount: decimal(&order["amount"]),
        currency: order["currency"]
            .as_str()
            .unwrap_or_default()
            .to_uppercase(),
        placed_at,
        charges,
    }
}
