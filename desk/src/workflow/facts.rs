//! The facts a decision is made on, gathered by code: the customer and orders from our
//! store, charges and refunds fresh from the provider (or a billing-world snapshot), the
//! order resolved from the ticket, the conversation and the records — never from the
//! model's words. The same gathering runs again at the payment boundary (docs/spec/invariants.md #3).

use policy_engine::{
    ChargeFacts, ChargeStatus, CustomerFacts, Facts, Money, OrderFacts, Ownership, RefundFacts,
    RefundStatus, RequestKind,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::agent::{Exchange, Proposal};
use crate::billing::BillingSource;
use crate::clock::from_ms;
use crate::error::{DomainError, DomainResult};
use crate::tickets::Ticket;
use domain::resolve::{self, OrderCandidate, OrderSource, ResolveInput};
use payments_adapter::{ProviderCharge, ProviderRefund};

fn charge_facts(c: &ProviderCharge, refunds: &[ProviderRefund]) -> anyhow::Result<ChargeFacts> {
    let currency = c.currency()?;
    let status = match c.status.as_str() {
        "succeeded" => ChargeStatus::Succeeded,
        "pending" => ChargeStatus::Pending,
        _ => ChargeStatus::Failed,
    };
    let mut refund_facts = Vec::new();
    for r in refunds {
        let status = match r.status() {
            "succeeded" => RefundStatus::Succeeded,
            "pending" | "requires_action" => RefundStatus::Pending,
            "canceled" => RefundStatus::Canceled,
            _ => RefundStatus::Failed,
        };
        refund_facts.push(RefundFacts {
            id: r.id.clone(),
            amount: Money::from_minor(r.amount, r.currency.parse()?)?,
            status,
        });
    }
    refund_facts.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(ChargeFacts {
        id: c.id.clone(),
        amount: Money::from_minor(c.amount, currency)?,
        captured: c.captured,
        status,
        disputed: c.disputed,
        created_at: from_ms(c.created * 1000),
        payment_method: c.payment_method.clone().unwrap_or_default(),
        amount_refunded: Money::from_minor(c.amount_refunded, currency)?,
        refunds: refund_facts,
    })
}

/// Gathers the facts for a decision, fresh from the billing source: the ticket's
/// customer, all their orders, every charge and refund, the order `order_id` names, and
/// the earlier order it repeats when the proposal says one thing was bought twice.
pub async fn gather_facts(
    billing: &dyn BillingSource,
    ticket: &Ticket,
    request: RequestKind,
    (order_id, repeat_of): (Option<&str>, Option<&str>),
) -> DomainResult<Facts> {
    let facts = gather_records(billing, ticket, request).await?;
    let mut facts = with_order(billing, facts, order_id).await?;
    facts.repeat_of = repeat_of.map(String::from);
    Ok(facts)
}

/// The facts without an order: customer, orders, charges and refunds.
async fn gather_records(
    billing: &dyn BillingSource,
    ticket: &Ticket,
    request: RequestKind,
) -> DomainResult<Facts> {
    let customer = billing
        .customer(&ticket.customer_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("customer {} has no billing record", ticket.customer_id))?;
    let orders = billing.orders(&ticket.customer_id).await?;
    let charges = billing
        .charges(&customer)
        .await
        .map_err(provider_unavailable)?;
    let mut order_facts = Vec::new();
    for order in &orders {
        let mut charge_list = Vec::new();
        for c in charges
            .iter()
            .filter(|c| c.order_id() == Some(order.id.as_str()))
        {
            let refunds = billing.refunds(&c.id).await.map_err(provider_unavailable)?;
            charge_list.push(charge_facts(c, &refunds)?);
        }
        order_facts.push(OrderFacts {
            id: order.id.to_string(),
            product: order.product,
            amount: order.amount,
            created_at: from_ms(order.created_at),
            charges: charge_list,
        });
    }
    Ok(Facts {
        reported_at: from_ms(ticket.created_at),
        customer: CustomerFacts {
            id: ticket.customer_id.to_string(),
            region: customer.region,
        },
        request,
        order_id: None,
        order_ownership: Ownership::Owned,
        repeat_of: None,
        orders: order_facts,
    })
}

/// The facts about `order_id`. An order id that is not the customer's: someone else's
/// (escalate, disclose nothing, RP-007) or nobody's (kept as named: the engine then
/// asks which order they mean).
async fn with_order(
    billing: &dyn BillingSource,
    mut facts: Facts,
    order_id: Option<&str>,
) -> DomainResult<Facts> {
    let owned = |id: &str| facts.orders.iter().any(|o| o.id == id);
    facts.order_ownership = match order_id {
        Some(id) if !owned(id) && billing.order_exists(id).await? => Ownership::OtherCustomer,
        _ => Ownership::Owned,
    };
    facts.order_id = order_id.map(String::from);
    Ok(facts)
}

/// The facts as a proposal weighs them: a repeat purchase is the customer's claim only
/// when their words made it (named the orders, said they bought it twice). One the
/// records alone show — no order named (`order_source` not `message`) and the request
/// kind read from the records (`RequestSource::Records`) — is weighed by RP-001 §1 only
/// (an accidental repeat purchase is refunded as a duplicate), never as a cancellation of
/// the later order they did not ask for (RP-002).
pub fn repeat_as_claimed(
    mut facts: Facts,
    proposal: &Proposal,
    order_source: Option<OrderSource>,
) -> Facts {
    let records_only = proposal.request_source == Some(domain::resolve::RequestSource::Records)
        && order_source != Some(OrderSource::Message);
    if records_only {
        facts.repeat_of = None;
    }
    facts
}

/// The facts of a decision with the order resolved, where it came from, and another
/// customer's order the customer named when their own records decided anyway.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub facts: Facts,
    pub order_source: Option<OrderSource>,
    /// RP-007: an order of someone else's the customer named, while the case was decided
    /// on their own order their records show. Flagged for security by the workflow;
    /// never shown to the customer, never changing what they are told.
    pub others_order: Option<String>,
}

/// Gathers the facts with the order resolved by the workflow itself, whatever model
/// investigated: the ticket form's order, else the customer's own
/// order named in their words (or in what they forwarded or pasted), else what the
/// records show (`resolve`). When none of these settles it, a reference that is none of
/// theirs is looked up among all orders (another customer's goes the RP-007 way), else
/// nothing (RP-002 §4: ask). The model's order is used only when it is another
/// customer's (RP-007 again): it never chooses among the customer's own orders, and an
/// id is never trusted only because the model wrote it.
pub async fn gather_facts_resolved(
    billing: &dyn BillingSource,
    ticket: &Ticket,
    customer_messages: &[String],
    request: RequestKind,
    model_order: Option<&str>,
) -> DomainResult<Resolved> {
    let facts = gather_records(billing, ticket, request).await?;
    let owned = |id: &str| facts.orders.iter().any(|o| o.id == id);
    if let Some(form) = ticket.order_id.as_deref().filter(|f| !owned(f)) {
        // A form order that is not theirs is a reference like any other (RP-007).
        let facts = with_order(billing, facts, Some(form)).await?;
        return Ok(Resolved {
            facts,
            order_source: Some(OrderSource::Form),
            others_order: None,
        });
    }
    let candidates: Vec<OrderCandidate> = facts
        .orders
        .iter()
        .map(OrderCandidate::from_facts)
        .collect();
    let resolution = resolve::resolve(&ResolveInput {
        messages: customer_messages,
        form_order: ticket.order_id.as_deref(),
        request,
        orders: &candidates,
        moment: Some(resolve::Moment {
            reported_at: facts.reported_at,
            region: Some(facts.customer.region),
            script_offset: None,
        }),
    });
    let named_elsewhere = lookup_references(billing, &resolution.unmatched)
        .await?
        .filter(|id| !owned(id));
    // The earlier order of one thing bought twice goes with the order resolution chose,
    // and only with it.
    let repeat_of = match &resolution.order_id {
        Some(id) if owned(id) => resolution.repeat_of.clone(),
        _ => None,
    };
    let (order_id, order_source, others_order) = match resolution.order_id {
        Some(id) if owned(&id) => (Some(id), resolution.source, named_elsewhere),
        _ => match (named_elsewhere, resolution.named_not_theirs) {
            (Some(other), _) => (Some(other), Some(OrderSource::Message), None),
            // Named as an order, and nobody's: kept as written, so the engine asks which
            // order they mean (RP-002 §4), as the customer naming someone else's is asked.
            (None, Some(named)) => (Some(named), Some(OrderSource::Message), None),
            (None, None) => {
                let (id, source) =
                    others_order(billing, model_order.filter(|id| !owned(id))).await?;
                (id, source, None)
            }
        },
    };
    let mut facts = with_order(billing, facts, order_id.as_deref()).await?;
    facts.repeat_of = repeat_of;
    Ok(Resolved {
        facts,
        order_source,
        others_order,
    })
}

/// The first unmatched reference that is an order of any customer, by its stored id.
async fn lookup_references(
    billing: &dyn BillingSource,
    references: &[resolve::Reference],
) -> DomainResult<Option<String>> {
    for reference in references {
        for spelling in resolve::lookup_spellings(reference) {
            if billing.order_exists(&spelling).await? {
                return Ok(Some(spelling));
            }
        }
    }
    Ok(None)
}

/// The model's order when it is another customer's (RP-007 escalates); an order of the
/// customer's own is never taken from the model (ask, never guess), and an id
/// that exists nowhere is dropped.
async fn others_order(
    billing: &dyn BillingSource,
    model_order: Option<&str>,
) -> DomainResult<(Option<String>, Option<OrderSource>)> {
    match model_order {
        Some(id) if billing.order_exists(id).await? => {
            Ok((Some(id.to_string()), Some(OrderSource::Agent)))
        }
        _ => Ok((None, None)),
    }
}

fn provider_unavailable(e: anyhow::Error) -> DomainError {
    DomainError::Provider(e.to_string())
}

/// Hash of the evidence a decision rests on: the canonical JSON of its facts.
pub fn evidence_hash(facts: &Facts) -> String {
    hex::encode(Sha256::digest(
        serde_json::to_vec(facts).expect("facts are plain data and always serialise"),
    ))
}

/// Evidence references that do not point at a successful tool call whose result
/// contains the cited record (docs/spec/invariants.md #8).
pub fn invalid_evidence(proposal: &Proposal, exchanges: &[Exchange]) -> Vec<String> {
    proposal
        .evidence
        .iter()
        .filter(|ev| {
            !exchanges.iter().any(|x| {
                x.call.id == ev.call_id
                    && x.outcome.ok
                    && !ev.record_id.is_empty()
                    && contains_value(&x.outcome.content, &ev.record_id)
            })
        })
        .map(|ev| format!("{}#{}", ev.call_id, ev.record_id))
        .collect()
}

fn contains_value(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s == needle,
        Value::Array(items) => items.iter().any(|i| contains_value(i, needle)),
        Value::Object(map) => map.values().any(|i| contains_value(i, needle)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::billing::WorldBilling;
    use crate::world::World;
    use serde_json::json;

    /// C-1 has `#10234` (an add-on) and `#10235` (an annual plan); C-2 has `MX5H38`.
    fn billing() -> WorldBilling {
        let order = |id: &str, customer: &str, product: &str, amount: &str| {
            json!({ "id": id, "customer_id": customer, "product": product, "amount": amount,
                    "currency": "USD", "created_at": "2026-11-20T10:00:00Z" })
        };
        let charge = |id: &str, order: &str, customer: &str, amount: &str| {
            json!({ "id": id, "order_id": order, "customer_id": customer, "amount": amount,
                    "currency": "USD", "captured": true, "status": "succeeded", "disputed": false,
                    "created_at": "2026-11-20T10:00:01Z", "payment_method": "pm_card_visa" })
        };
        let world = json!({
            "customers": [
                { "id": "C-1", "name": "Emma", "email": "e@example.com", "region": "US" },
                { "id": "C-2", "name": "Ava", "email": "a@example.com", "region": "US" }
            ],
            "orders": [
                order("#10234", "C-1", "addon", "4.99"),
                order("#10235", "C-1", "annual_plan", "99.00"),
                order("MX5H38", "C-2", "addon", "4.99")
            ],
            "charges": [
                charge("ch_1", "#10234", "C-1", "4.99"),
                charge("ch_2", "#10235", "C-1", "99.00"),
                charge("ch_3", "MX5H38", "C-2", "4.99")
            ],
            "refunds": []
        });
        let world = World::parse(&world.to_string()).expect("the test world parses");
        WorldBilling::new(Arc::new(world))
    }

    fn ticket(form: Option<&str>) -> Ticket {
        Ticket {
            id: domain::ids::TicketId::parse("T-1").unwrap(),
            customer_id: domain::ids::CustomerId::parse("C-1").unwrap(),
            order_id: form.map(|f| domain::ids::OrderId::parse(f).unwrap()),
            language: crate::replies::Language::En,
            created_at: crate::clock::to_ms(time::macros::datetime!(2026-11-25 10:00 UTC)),
        }
    }

    async fn resolved(
        form: Option<&str>,
        text: &str,
        model_order: Option<&str>,
    ) -> (Option<String>, Ownership, Option<OrderSource>) {
        let r = gather_facts_resolved(
            &billing(),
            &ticket(form),
            &[text.to_string()],
            RequestKind::Cancellation,
            model_order,
        )
        .await
        .expect("facts gather from the in-memory world");
        (r.facts.order_id, r.facts.order_ownership, r.order_source)
    }

    #[tokio::test]
    async fn the_order_the_customer_wrote_wins_over_the_one_the_model_named() {
        assert_eq!(
            resolved(None, "please cancel order no. １０２３５", Some("MX5H38")).await,
            (
                Some("#10235".into()),
                Ownership::Owned,
                Some(OrderSource::Message)
            )
        );
    }

    #[tokio::test]
    async fn the_form_order_wins_over_text_and_model() {
        assert_eq!(
            resolved(Some("#10234"), "cancel #10235", Some("#10235")).await,
            (
                Some("#10234".into()),
                Ownership::Owned,
                Some(OrderSource::Form)
            )
        );
    }

    #[tokio::test]
    async fn another_customers_order_in_the_text_is_looked_up_and_goes_the_rp007_way() {
        assert_eq!(
            resolved(None, "cancel mx5h38 please", Some("#10234")).await,
            (
                Some("MX5H38".into()),
                Ownership::OtherCustomer,
                Some(OrderSource::Message)
            )
        );
    }

    #[tokio::test]
    async fn an_id_only_the_model_wrote_is_used_only_when_it_is_another_customers_order() {
        // Nothing in the text, two orders: the model never chooses among the customer's
        // own orders (ask, never guess).
        assert_eq!(
            resolved(None, "I want to cancel", Some("#10234")).await,
            (None, Ownership::Owned, None)
        );
        // An invented id is dropped: the engine asks which order (RP-002 §4).
        assert_eq!(
            resolved(None, "I want to cancel", Some("O-INVENTED-9")).await,
            (None, Ownership::Owned, None)
        );
        // Someone else's order named only by the model still escalates (RP-007).
        assert_eq!(
            resolved(None, "I want to cancel", Some("MX5H38")).await.1,
            Ownership::OtherCustomer
        );
    }

    #[tokio::test]
    async fn what_the_customer_writes_besides_ids_is_secondary_evidence() {
        assert_eq!(
            resolved(None, "cancel my yearly plan", None).await,
            (
                Some("#10235".into()),
                Ownership::Owned,
                Some(OrderSource::Message)
            )
        );
    }
}
