//! The tools offered to the model: read-only views of the ticket's customer, orders,
//! provider charges and refunds, and the policy index.
//!
//! Every tool is declared once with a JSON Schema; the same declaration is sent to the
//! model and used to validate its arguments. Unknown tools, bad arguments, records that
//! are not the customer's and provider failures come back as structured results with a
//! hint, never as a crash. There are no write tools: nothing here can move money.

use serde::Serialize;
use serde_json::{json, Value};

use super::{ToolCall, ToolOutcome};
use crate::billing::BillingSource;
use crate::tickets::Ticket;

/// What tools read from: billing records (live or a snapshot) and the policy index.
pub struct ToolEnv<'a> {
    pub billing: &'a dyn BillingSource,
    pub index: &'a std::sync::Arc<rag_index::PolicyIndex>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolDeclaration {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Value,
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

pub fn declarations() -> Vec<ToolDeclaration> {
    vec![
        ToolDeclaration {
            name: "get_customer",
            description: "The authenticated customer of this ticket: id and region.",
            parameters: object(json!({}), &[]),
        },
        ToolDeclaration {
            name: "list_orders",
            description: "The customer's orders: id, product, amount, currency, created_at.",
            parameters: object(json!({}), &[]),
        },
        ToolDeclaration {
            name: "list_charges",
            description: "The payment provider's charges on one of the customer's orders.",
            parameters: object(json!({ "order_id": { "type": "string", "maxLength": 64 } }), &["order_id"]),
        },
        ToolDeclaration {
            name: "list_refunds",
            description: "The payment provider's refunds on one of the customer's charges.",
            parameters: object(json!({ "charge_id": { "type": "string", "maxLength": 64 } }), &["charge_id"]),
        },
        ToolDeclaration {
            name: "search_policy",
            description: "Refund policy passages in force at the ticket's date for the customer's region, cited as doc@version#section.",
            parameters: object(
                json!({ "query": { "type": "string", "maxLength": 500 }, "product": { "type": "string", "enum": ["annual_plan", "monthly_plan", "addon"] } }),
                &["query"],
            ),
        },
    ]
}

/// A structured tool error: what went wrong, a hint the caller can act on, and whether
/// the same call may succeed if tried again (only a transient failure may).
pub fn error(code: &str, hint: &str) -> ToolOutcome {
    ToolOutcome {
        ok: false,
        content: json!({ "error": code, "hint": hint, "retryable": code == UNAVAILABLE }),
    }
}

/// The error code of a transient failure (the provider or the index did not answer).
const UNAVAILABLE: &str = "unavailable";

/// Checks arguments against the declaration's schema (the subset the declarations use:
/// an object of string properties, required names, no extra properties, maxLength, enum).
pub fn validate(declaration: &ToolDeclaration, args: &Value) -> Result<(), String> {
    let Some(args) = args.as_object() else {
        return Err("arguments must be a JSON object".into());
    };
    let schema = &declaration.parameters;
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for name in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !args.contains_key(name) {
            return Err(format!("missing required argument '{name}'"));
        }
    }
    for (name, value) in args {
        let Some(spec) = properties.get(name) else {
            return Err(format!("unknown argument '{name}'"));
        };
        let Some(text) = value.as_str() else {
            return Err(format!("argument '{name}' must be a string"));
        };
        if let Some(max) = spec["maxLength"].as_u64() {
            if text.chars().count() as u64 > max {
                return Err(format!("argument '{name}' is longer than {max} characters"));
            }
        }
        if let Some(options) = spec["enum"].as_array() {
            if !options.iter().any(|o| o.as_str() == Some(text)) {
                return Err(format!(
                    "argument '{name}' must be one of {}",
                    Value::Array(options.clone())
                ));
            }
        }
    }
    Ok(())
}

/// Runs one tool call for the ticket's customer. Never panics, never writes.
pub async fn execute(env: &ToolEnv<'_>, ticket: &Ticket, call: &ToolCall) -> ToolOutcome {
    let declarations = declarations();
    let Some(declaration) = declarations.iter().find(|d| d.name == call.name) else {
        let names: Vec<_> = declarations.iter().map(|d| d.name).collect();
        return error(
            "unknown_tool",
            &format!(
                "there is no tool '{}'; available tools: {}",
                call.name,
                names.join(", ")
            ),
        );
    };
    if let Err(problem) = validate(declaration, &call.arguments) {
        return error(
            "invalid_arguments",
            &format!("{problem}; see the tool's JSON Schema"),
        );
    }
    let arg = |name: &str| {
        call.arguments
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let result = match call.name.as_str() {
        "get_customer" => get_customer(env, ticket).await,
        "list_orders" => list_orders(env, ticket).await,
        "list_charges" => list_charges(env, ticket, &arg("order_id")).await,
        "list_refunds" => list_refunds(env, ticket, &arg("charge_id")).await,
        "search_policy" => {
            search_policy(
                env,
                ticket,
                &arg("query"),
                call.arguments.get("product").and_then(Value::as_str),
            )
            .await
        }
        _ => Err(error("unknown_tool", "not available")),
    };
    result.unwrap_or_else(|e| e)
}

type ToolResult = Result<ToolOutcome, ToolOutcome>;

fn ok(content: Value) -> ToolResult {
    Ok(ToolOutcome { ok: true, content })
}

/// A transient failure (logged): the `unavailable` error, retryable.
pub fn internal(e: impl std::fmt::Display) -> ToolOutcome {
    tracing::warn!(error = %e, "tool failed");
    error(
        UNAVAILABLE,
        "a transient failure; you may try the same call again",
    )
}

async fn customer(
    env: &ToolEnv<'_>,
    ticket: &Ticket,
) -> Result<crate::billing::CustomerRecord, ToolOutcome> {
    env.billing
        .customer(&ticket.customer_id)
        .await
        .map_err(internal)?
        .ok_or_else(|| error("not_found", "the ticket's customer has no billing record"))
}

async fn get_customer(env: &ToolEnv<'_>, ticket: &Ticket) -> ToolResult {
    let c = customer(env, ticket).await?;
    ok(json!({ "customer": { "id": c.id, "region": c.region } }))
}

async fn list_orders(env: &ToolEnv<'_>, ticket: &Ticket) -> ToolResult {
    let orders = env
        .billing
        .orders(&ticket.customer_id)
        .await
        .map_err(internal)?;
    let orders: Vec<Value> = orders
        .iter()
        .map(|o| {
            json!({ "id": o.id, "product": o.product, "amount": o.amount.amount_string(),
                    "currency": o.amount.currency(), "created_at": crate::clock::rfc3339(o.created_at) })
        })
        .collect();
    ok(json!({ "orders": orders }))
}

async fn list_charges(env: &ToolEnv<'_>, ticket: &Ticket, order_id: &str) -> ToolResult {
    let orders = env
        .billing
        .orders(&ticket.customer_id)
        .await
        .map_err(internal)?;
    if !orders.iter().any(|o| o.id == order_id) {
        // RP-007: never confirm or deny anything about an order that is not theirs.
        return Err(error(
            "not_found",
            "no such order for this customer; ask the customer which of their orders they mean",
        ));
    }
    let c = customer(env, ticket).await?;
    let charges = env.billing.charges(&c).await.map_err(internal)?;
    let charges: Vec<Value> = charges
        .iter()
        .filter(|c| c.order_id() == Some(order_id))
        .map(crate::workflow::charge_json)
        .collect();
    ok(json!({ "order_id": order_id, "charges": charges }))
}

async fn list_refunds(env: &ToolEnv<'_>, ticket: &Ticket, charge_id: &str) -> ToolResult {
    let c = customer(env, ticket).await?;
    let charges = env.billing.charges(&c).await.map_err(internal)?;
    if !charges.iter().any(|c| c.id == charge_id) {
        return Err(error(
            "not_found",
            "no such charge for this customer; use list_charges to find the customer's charges",
        ));
    }
    let refunds = env.billing.refunds(charge_id).await.map_err(internal)?;
    let refunds: Vec<Value> = refunds.iter().map(crate::workflow::refund_json).collect();
    ok(json!({ "charge_id": charge_id, "refunds": refunds }))
}

async fn search_policy(
    env: &ToolEnv<'_>,
    ticket: &Ticket,
    query: &str,
    product: Option<&str>,
) -> ToolResult {
    let region = customer(env, ticket).await.ok().map(|c| c.region);
    let mut q = rag_index::SearchQuery::new(query);
    q.as_of = Some(crate::clock::from_ms(ticket.created_at).date());
    q.region = region;
    q.product = product.and_then(|p| crate::world::parse_plain(p).ok());
    q.limit = 3;
    let index = env.index.clone();
    let passages = tokio::task::spawn_blocking(move || index.search(&q))
        .await
        .map_err(internal)?
        .map_err(internal)?;
    let passages: Vec<Value> = passages
        .iter()
        .map(|p| json!({ "citation": p.citation(), "title": p.title, "text": p.text }))
        .collect();
    ok(json!({ "passages": passages }))
}
