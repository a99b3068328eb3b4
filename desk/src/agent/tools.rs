//! The tools offered to the model: read-only views of the ticket's customer, orders,
//! provider charges and refunds, the customer's history (other tickets, past refunds)
//! and the policy index, as [`harness::Tool`]s.
//!
//! Every tool is declared once with a JSON Schema; the same declaration is sent to the
//! model and used (by the harness's [`Toolset`]) to validate its arguments. Unknown
//! tools, bad arguments, records that are not the customer's and provider failures come
//! back as structured results with a hint, never as a crash. There are no write tools:
//! nothing here can move money (every declaration is `read_only`; a test checks).

use harness::{BoxFuture, Tool, ToolError, Toolset};
use serde_json::{json, Value};

pub use harness::{validate, ToolDeclaration};

use crate::billing::BillingSource;
use crate::tickets::Ticket;
use harness::{ToolCall, ToolOutcome};

/// What tools read from: billing records (live or a snapshot) and the policy index.
pub struct ToolEnv<'a> {
    pub billing: &'a dyn BillingSource,
    pub index: &'a std::sync::Arc<rag_index::PolicyIndex>,
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

fn declaration(
    name: &'static str,
    description: &'static str,
    parameters: Value,
) -> ToolDeclaration {
    ToolDeclaration {
        name,
        description,
        parameters,
        read_only: true,
    }
}

/// The investigation's tools for one ticket, in the order the model is offered them.
pub fn toolset<'a>(env: &'a ToolEnv<'a>, ticket: &'a Ticket) -> Toolset<'a> {
    let at = Scope { env, ticket };
    billing_toolset(env, ticket)
        .with(ListCustomerHistory(at))
        .with(SearchPolicy(at))
}

/// The `billing` sub-agent's tools: the customer's records, no policy search.
pub fn billing_toolset<'a>(env: &'a ToolEnv<'a>, ticket: &'a Ticket) -> Toolset<'a> {
    let at = Scope { env, ticket };
    Toolset::new()
        .with(GetCustomer(at))
        .with(ListOrders(at))
        .with(ListCharges(at))
        .with(ListRefunds(at))
}

/// The `policy` sub-agent's tools: policy search only.
pub fn policy_toolset<'a>(env: &'a ToolEnv<'a>, ticket: &'a Ticket) -> Toolset<'a> {
    Toolset::new().with(SearchPolicy(Scope { env, ticket }))
}

/// The declarations alone (for clients that list tools, e.g. MCP and the LLM tests).
/// The declared tool called `name`, as its `'static` name (for metric labels, which must
/// never carry text a model made up).
pub fn declared_name(name: &str) -> Option<&'static str> {
    declarations()
        .into_iter()
        .find(|d| d.name == name)
        .map(|d| d.name)
}

pub fn declarations() -> Vec<ToolDeclaration> {
    vec![
        GetCustomer::declared(),
        ListOrders::declared(),
        ListCharges::declared(),
        ListRefunds::declared(),
        ListCustomerHistory::declared(),
        SearchPolicy::declared(),
    ]
}

/// Runs one tool call for the ticket's customer. Never panics, never writes.
pub async fn execute(env: &ToolEnv<'_>, ticket: &Ticket, call: &ToolCall) -> ToolOutcome {
    toolset(env, ticket).execute(call).await
}

/// A structured tool error: what went wrong, a hint the caller can act on, and whether
/// the same call may succeed if tried again (only a transient failure may).
pub fn error(code: &str, hint: &str) -> ToolOutcome {
    ToolError::permanent(code, hint).outcome()
}

/// A transient failure (logged): the `unavailable` error, retryable.
pub fn internal(e: impl std::fmt::Display) -> ToolOutcome {
    unavailable(e).outcome()
}

fn unavailable(e: impl std::fmt::Display) -> ToolError {
    tracing::warn!(error = %e, "tool failed");
    ToolError::transient(
        "unavailable",
        "a transient failure; you may try the same call again",
    )
}

fn not_found(hint: &str) -> ToolError {
    ToolError::permanent("not_found", hint)
}

type ToolResult = Result<Value, ToolError>;

/// What every tool reads within: the ticket's customer, through the ticket's records.
#[derive(Clone, Copy)]
struct Scope<'a> {
    env: &'a ToolEnv<'a>,
    ticket: &'a Ticket,
}

fn arg<'v>(arguments: &'v Value, name: &str) -> &'v str {
    arguments
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A read-only tool: its struct over the ticket's `Scope`, its declaration (name,
/// description, JSON Schema of its arguments; `declared()` serves `declarations`) and the
/// call it runs. Six tools differ only in these, so the impls are written once.
macro_rules! tool {
    ($(#[$doc:meta])* $name:ident, $tool:literal, $description:literal, $parameters:expr,
     |$at:ident, $arguments:pat_param| $run:expr) => {
        $(#[$doc])*
        struct $name<'a>(Scope<'a>);

        impl $name<'_> {
            fn declared() -> ToolDeclaration {
                declaration($tool, $description, $parameters)
            }
        }

        impl Tool for $name<'_> {
            fn declaration(&self) -> ToolDeclaration {
                Self::declared()
            }
            fn run<'a>(&'a self, $arguments: &'a Value) -> BoxFuture<'a, ToolResult> {
                let $at = self.0;
                Box::pin($run)
            }
        }
    };
}

tool!(
    GetCustomer,
    "get_customer",
    "The authenticated customer of this ticket: id and region.",
    object(json!({}), &[]),
    |at, _| get_customer(at)
);

tool!(
    ListOrders,
    "list_orders",
    "The customer's orders: id, product, amount, currency, created_at.",
    object(json!({}), &[]),
    |at, _| list_orders(at)
);

tool!(
    ListCharges,
    "list_charges",
    "The payment provider's charges on one of the customer's orders.",
    object(
        json!({ "order_id": { "type": "string", "maxLength": 64 } }),
        &["order_id"],
    ),
    |at, arguments| list_charges(at, arg(arguments, "order_id"))
);

tool!(
    ListRefunds,
    "list_refunds",
    "The payment provider's refunds on one of the customer's charges.",
    object(
        json!({ "charge_id": { "type": "string", "maxLength": 64 } }),
        &["charge_id"],
    ),
    |at, arguments| list_refunds(at, arg(arguments, "charge_id"))
);

tool!(
    ListCustomerHistory,
    "list_customer_history",
    "The ticket's customer's history, newest first, at most 20 of each with the full counts: their other tickets (subject, created_at, case status in words) and the payment provider's refunds on their charges (charge, amount, currency, status, created_at). No arguments: always the ticket's own customer. Where there is no ticket store (a replay), tickets is null and notes says so.",
    object(json!({}), &[]),
    |at, _| list_customer_history(at)
);

tool!(
    SearchPolicy,
    "search_policy",
    "Refund policy passages in force at the ticket's date for the customer's region, cited as doc@version#section.",
    object(
        json!({ "query": { "type": "string", "maxLength": 500 }, "product": { "type": "string", "enum": ["annual_plan", "monthly_plan", "addon"] } }),
        &["query"],
    ),
    |at, arguments| search_policy(
        at,
        arg(arguments, "query"),
        arguments.get("product").and_then(Value::as_str)
    )
);

async fn customer(at: Scope<'_>) -> Result<crate::billing::CustomerRecord, ToolError> {
    at.env
        .billing
        .customer(&at.ticket.customer_id)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| not_found("the ticket's customer has no billing record"))
}

/// The ticket's customer's orders (a provider failure is `unavailable`, retryable).
async fn orders(at: Scope<'_>) -> Result<Vec<crate::billing::Order>, ToolError> {
    at.env
        .billing
        .orders(&at.ticket.customer_id)
        .await
        .map_err(unavailable)
}

/// The customer, and when their ticket was opened: the day "yesterday" or "on
/// Saturday" counts from (docs/spec/domain.md, "Reading a customer's words").
async fn get_customer(at: Scope<'_>) -> ToolResult {
    let c = customer(at).await?;
    Ok(json!({ "customer": { "id": c.id, "region": c.region },
               "ticket_opened_at": crate::clock::rfc3339(at.ticket.created_at) }))
}

async fn list_orders(at: Scope<'_>) -> ToolResult {
    let orders = orders(at).await?;
    let orders: Vec<Value> = orders
        .iter()
        .map(|o| {
            json!({ "id": o.id, "product": o.product, "amount": o.amount.amount_string(),
                    "currency": o.amount.currency(), "created_at": crate::clock::rfc3339(o.created_at) })
        })
        .collect();
    Ok(json!({ "orders": orders }))
}

async fn list_charges(at: Scope<'_>, order_id: &str) -> ToolResult {
    let orders = orders(at).await?;
    if !orders.iter().any(|o| o.id == order_id) {
        // RP-007: never confirm or deny anything about an order that is not theirs.
        return Err(not_found(
            "no such order for this customer; ask the customer which of their orders they mean",
        ));
    }
    let c = customer(at).await?;
    let charges = at.env.billing.charges(&c).await.map_err(unavailable)?;
    let charges: Vec<Value> = charges
        .iter()
        .filter(|c| c.order_id() == Some(order_id))
        .map(crate::billing::charge_json)
        .collect();
    Ok(json!({ "order_id": order_id, "charges": charges }))
}

async fn list_refunds(at: Scope<'_>, charge_id: &str) -> ToolResult {
    let c = customer(at).await?;
    let charges = at.env.billing.charges(&c).await.map_err(unavailable)?;
    if !charges.iter().any(|c| c.id == charge_id) {
        return Err(not_found(
            "no such charge for this customer; use list_charges to find the customer's charges",
        ));
    }
    let refunds = at
        .env
        .billing
        .refunds(charge_id)
        .await
        .map_err(unavailable)?;
    let refunds: Vec<Value> = refunds.iter().map(crate::billing::refund_json).collect();
    Ok(json!({ "charge_id": charge_id, "refunds": refunds }))
}

/// The customer's charges whose refunds one history reads, newest first: one provider
/// call per charge, so a customer with hundreds of charges costs a bounded read.
const HISTORY_CHARGES: usize = 50;

/// The customer's other tickets (from the billing source's ticket store, if it has one)
/// and the provider's refunds on their charges. Identity is the ticket's customer: the
/// tool takes no customer argument (docs/spec/invariants.md #7).
async fn list_customer_history(at: Scope<'_>) -> ToolResult {
    let lines = crate::tickets::HISTORY_LINES;
    let c = customer(at).await?;
    let mut notes = Vec::new();
    let other = at
        .env
        .billing
        .other_tickets(&at.ticket.customer_id, &at.ticket.id, lines)
        .await
        .map_err(unavailable)?;
    let (tickets, tickets_total) = match other {
        Some(other) => {
            if other.total > other.lines.len() as i64 {
                notes.push(format!(
                    "tickets: the newest {} of {}",
                    other.lines.len(),
                    other.total
                ));
            }
            (json!(other.lines), json!(other.total))
        }
        None => {
            notes.push(
                "tickets: unknown here, not absent: this is a replay of a historical ticket, \
                 which has billing records only and no ticket store"
                    .to_string(),
            );
            (Value::Null, Value::Null)
        }
    };
    let mut charges = at.env.billing.charges(&c).await.map_err(unavailable)?;
    charges.sort_by(|a, b| (b.created, &b.id).cmp(&(a.created, &a.id)));
    if charges.len() > HISTORY_CHARGES {
        notes.push(format!(
            "refunds: read on the newest {HISTORY_CHARGES} of the customer's {} charges",
            charges.len()
        ));
        charges.truncate(HISTORY_CHARGES);
    }
    let mut refunds = Vec::new();
    for charge in &charges {
        refunds.extend(
            at.env
                .billing
                .refunds(&charge.id)
                .await
                .map_err(unavailable)?,
        );
    }
    refunds.sort_by(|a, b| (b.created, &b.id).cmp(&(a.created, &a.id)));
    let refunds_total = refunds.len();
    if refunds_total as i64 > lines {
        notes.push(format!("refunds: the newest {lines} of {refunds_total}"));
    }
    let refunds: Vec<Value> = refunds
        .iter()
        .take(lines as usize)
        .map(crate::billing::refund_json)
        .collect();
    Ok(
        json!({ "customer_id": c.id, "tickets": tickets, "tickets_total": tickets_total,
               "refunds": refunds, "refunds_total": refunds_total, "notes": notes }),
    )
}

async fn search_policy(at: Scope<'_>, query: &str, product: Option<&str>) -> ToolResult {
    let region = customer(at).await.ok().map(|c| c.region);
    let mut q = rag_index::SearchQuery::new(query);
    q.as_of = Some(crate::clock::from_ms(at.ticket.created_at).date());
    q.region = region;
    q.product = product.and_then(|p| crate::world::parse_plain(p).ok());
    q.limit = 3;
    let index = at.env.index.clone();
    // An answer the index has given before needs no index read, so no blocking hand-off.
    let passages = match index.remembered(&q) {
        Some(known) => known,
        None => tokio::task::spawn_blocking(move || index.search(&q))
            .await
            .map_err(unavailable)?
            .map_err(unavailable)?,
    };
    let passages: Vec<Value> = passages
        .iter()
        .map(|p| json!({ "citation": p.citation(), "title": p.title, "text": p.text }))
        .collect();
    Ok(json!({ "passages": passages }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_declared_read_only_and_the_history_names_no_customer() {
        let declarations = declarations();
        assert!(declarations.iter().all(|d| d.read_only));
        let history = declarations
            .iter()
            .find(|d| d.name == "list_customer_history")
            .expect("declared");
        // docs/spec/invariants.md #7: the ticket's customer, never one the model names.
        assert_eq!(history.parameters["properties"], json!({}));
        assert!(validate(history, &json!({})).is_ok());
        assert!(validate(history, &json!({ "customer_id": "C-200" })).is_err());
    }
}
