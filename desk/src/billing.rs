//! Where billing records come from: the live system (our store for customers and
//! orders, the payment provider over HTTP for charges and refunds) or a billing-world
//! snapshot (shadow replays and evals, where no live system may be touched).
//!
//! The agent's tools and the workflow's fact gathering read only through this trait, so
//! a replay runs exactly the code a live case runs. Both sources are read-only.
//!
//! Besides billing records, a source answers what it knows of the customer's other
//! tickets (`list_customer_history`): the live system reads our store; a
//! snapshot has no ticket store and says so (`None`), rather than an empty list that
//! would claim the customer never wrote before.

use crate::columns::stored_id;
use domain::ids::{CustomerId, OrderId};
use std::sync::Arc;

use policy_engine::{Money, Region};
use serde_json::{json, Value};
use sqlx::Row;

use crate::clock::rfc3339;
use crate::payments::{PaymentsClient, ProviderCharge, ProviderRefund};
use crate::tickets::{self, OtherTickets};
use crate::world::{parse_plain, World};
use harness::BoxFuture;
use store::Db;

#[derive(Debug, Clone)]
pub struct CustomerRecord {
    pub id: CustomerId,
    pub region: Region,
    /// `''` when the customer is not linked to a provider customer.
    pub provider_customer_id: String,
}

#[derive(Debug, Clone)]
pub struct Order {
    pub id: OrderId,
    pub product: policy_engine::Product,
    pub amount: Money,
    pub created_at: i64,
}

/// What every question to a billing source returns: an answer later, or why not.
pub type Answer<'a, T> = BoxFuture<'a, anyhow::Result<T>>;

pub trait BillingSource: Send + Sync {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>>;
    /// The customer's orders, oldest first.
    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>>;
    /// Whether an order id exists for anybody (never says whose).
    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool>;
    /// The customer's charges, sorted by id.
    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>>;
    /// Refunds on a charge, sorted by id.
    fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>>;
    /// The customer's tickets other than `except_ticket_id`, newest first, at most
    /// `limit`, with their count; `None` when this source holds no tickets.
    fn other_tickets<'a>(
        &'a self,
        customer_id: &'a str,
        except_ticket_id: &'a str,
        limit: i64,
    ) -> Answer<'a, Option<OtherTickets>>;
}

/// The live system. Customers and orders are read on the store's read connections
/// (`Db::reader`): they are committed records, and on SQLite a read there does not
/// queue behind the workers' writes on the one writer connection.
pub struct LiveBilling {
    pub db: Db,
    pub payments: PaymentsClient,
}

impl BillingSource for LiveBilling {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>> {
        Box::pin(async move {
            let row =
                sqlx::query("SELECT id, region, provider_customer_id FROM customers WHERE id = $1")
                    .bind(customer_id)
                    .fetch_optional(self.db.reader())
                    .await?;
            row.map(|r| {
                Ok(CustomerRecord {
                    id: stored_id(&r, "id", CustomerId::parse)?,
                    region: parse_plain(&r.try_get::<String, _>("region")?)?,
                    provider_customer_id: r.try_get("provider_customer_id")?,
                })
            })
            .transpose()
        })
    }

    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT id, product, amount_minor, currency, created_at FROM orders WHERE customer_id = $1 ORDER BY created_at, id",
            )
            .bind(customer_id)
            .fetch_all(self.db.reader())
            .await?;
            rows.iter()
                .map(|r| {
                    let currency = r.try_get::<String, _>("currency")?.parse()?;
                    Ok(Order {
                        id: stored_id(r, "id", OrderId::parse)?,
                        product: parse_plain(&r.try_get::<String, _>("product")?)?,
                        amount: Money::from_minor(r.try_get("amount_minor")?, currency)?,
                        created_at: r.try_get("created_at")?,
                    })
                })
                .collect()
        })
    }

    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool> {
        Box::pin(async move {
            Ok(sqlx::query("SELECT id FROM orders WHERE id = $1")
                .bind(order_id)
                .fetch_optional(self.db.reader())
                .await?
                .is_some())
        })
    }

    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>> {
        Box::pin(async move {
            // A customer not linked to the provider (`''`) has no charges we can see:
            // never a list without the customer filter, which is every customer's.
            let mut charges = if customer.provider_customer_id.is_empty() {
                Vec::new()
            } else {
                self.payments
                    .list_charges(&customer.provider_customer_id)
                    .await?
            };
            crate::onboarding::charges::apply_links(
                &self.db,
                &self.payments,
                &customer.id,
                &mut charges,
            )
            .await?;
            charges.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(charges)
        })
    }

    fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>> {
        Box::pin(async move {
            let mut refunds = self.payments.list_refunds(charge_id).await?;
            refunds.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(refunds)
        })
    }

    fn other_tickets<'a>(
        &'a self,
        customer_id: &'a str,
        except_ticket_id: &'a str,
        limit: i64,
    ) -> Answer<'a, Option<OtherTickets>> {
        Box::pin(async move {
            Ok(Some(
                tickets::other_tickets(&self.db, customer_id, except_ticket_id, limit).await?,
            ))
        })
    }
}

/// A billing-world snapshot, read in memory.
pub struct WorldBilling {
    world: Arc<World>,
}

impl WorldBilling {
    pub fn new(world: Arc<World>) -> Self {
        WorldBilling { world }
    }
}

impl BillingSource for WorldBilling {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>> {
        Box::pin(async move {
            let Some(c) = self.world.customers.iter().find(|c| c.id == customer_id) else {
                return Ok(None);
            };
            Ok(Some(CustomerRecord {
                id: CustomerId::parse(c.id.clone())?,
                region: c.region,
                provider_customer_id: c.id.clone(),
            }))
        })
    }

    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>> {
        Box::pin(async move {
            let mut orders = Vec::new();
            for o in self
                .world
                .orders
                .iter()
                .filter(|o| o.customer_id == customer_id)
            {
                orders.push(Order {
                    id: OrderId::parse(o.id.clone())?,
                    product: o.product,
                    amount: Money::parse(&o.amount, o.currency)?,
                    created_at: crate::clock::to_ms(o.created_at),
                });
            }
            orders.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            Ok(orders)
        })
    }

    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool> {
        Box::pin(async move { Ok(self.world.orders.iter().any(|o| o.id == order_id)) })
    }

    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>> {
        Box::pin(async move {
            let mut charges: Vec<ProviderCharge> = self
                .world
                .charges()?
                .into_iter()
                .filter(|c| c.customer.as_deref() == Some(customer.id.as_str()))
                .collect();
            charges.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(charges)
        })
    }

    fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>> {
        Box::pin(async move {
            let mut refunds: Vec<ProviderRefund> = self
                .world
                .refunds()?
                .into_iter()
                .filter(|r| r.is_on(charge_id))
                .collect();
            refunds.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(refunds)
        })
    }

    /// A snapshot is billing records only (docs/spec/interfaces.md's world file): no tickets.
    fn other_tickets<'a>(
        &'a self,
        _customer_id: &'a str,
        _except_ticket_id: &'a str,
        _limit: i64,
    ) -> Answer<'a, Option<OtherTickets>> {
        Box::pin(async { Ok(None) })
    }
}

pub fn charge_json(c: &ProviderCharge) -> Value {
    let money = |minor| {
        c.currency()
            .ok()
            .and_then(|cur| Money::from_minor(minor, cur).ok())
            .map(|m| m.amount_string())
    };
    json!({
        "id": c.id, "order_id": c.order_id(), "amount": money(c.amount), "currency": c.currency.to_uppercase(),
        "captured": c.captured, "status": c.status, "disputed": c.disputed,
        "amount_refunded": money(c.amount_refunded), "payment_method": c.payment_method,
        "created_at": rfc3339(c.created * 1000),
    })
}

pub fn refund_json(r: &ProviderRefund) -> Value {
    let amount = r
        .currency
        .parse()
        .ok()
        .and_then(|cur| Money::from_minor(r.amount, cur).ok())
        .map(|m| m.amount_string());
    json!({ "id": r.id, "charge": r.charge, "amount": amount, "currency": r.currency.to_uppercase(),
            "status": r.status(), "created_at": rfc3339(r.created * 1000) })
}
