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
use crate::onboarding::charges::{put_links, read_links, ChargeLink};
use crate::tickets::{self, OtherTickets};
use crate::world::{parse_plain, World};
use harness::BoxFuture;
use payments_adapter::{PaymentsClient, ProviderCharge, ProviderRefund};
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

/// The links staff made from charges to a customer's orders.
pub type Links = Vec<ChargeLink>;

pub trait BillingSource: Send + Sync {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>>;
    /// The customer's orders, oldest first.
    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>>;
    /// Whether an order id exists for anybody (never says whose).
    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool>;
    /// The customer's charges, sorted by id.
    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>>;
    /// The links staff made from charges to the customer's orders, where this source
    /// keeps them apart from the provider's listing; `None`: its `charges` are whole.
    fn charge_links<'a>(&'a self, _customer: &'a CustomerRecord) -> Answer<'a, Option<Links>> {
        Box::pin(async { Ok(None) })
    }
    /// [`BillingSource::charges`] with the links [`BillingSource::charge_links`] gave.
    fn linked_charges<'a>(
        &'a self,
        customer: &'a CustomerRecord,
        _links: &'a Links,
    ) -> Answer<'a, Vec<ProviderCharge>> {
        self.charges(customer)
    }
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
            let links = read_links(&self.db, &customer.id).await?;
            self.linked_charges(customer, &links).await
        })
    }

    fn charge_links<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Option<Links>> {
        Box::pin(async move { Ok(Some(read_links(&self.db, &customer.id).await?)) })
    }

    fn linked_charges<'a>(
        &'a self,
        customer: &'a CustomerRecord,
        links: &'a Links,
    ) -> Answer<'a, Vec<ProviderCharge>> {
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
            put_links(&self.payments, links, &mut charges).await?;
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

/// One investigation's billing source: the ticket's customer row and orders read once
/// from the source beneath, then answered from memory for the rest of the investigation
/// (every tool of one turn and of the next asks for them again). Only the customer it
/// was made for is remembered: a question about any other customer reads through, so
/// nothing one customer's investigation read is ever answered to another. Lives as long
/// as one pass of the investigation (`investigation::investigate`), never across
/// investigations. The links staff made from charges to the customer's orders are ours,
/// read once per pass too: a link made during a pass is seen by the next one. Charges
/// and refunds always read through: they are the provider's, and a provider outage
/// between two tool calls must show (docs/spec/lifecycle.md, `awaiting_dependency`).
/// The workflow's facts are gathered afresh, not through this.
pub struct TicketBilling<'a> {
    inner: &'a dyn BillingSource,
    customer_id: &'a str,
    customer: tokio::sync::OnceCell<Option<CustomerRecord>>,
    orders: tokio::sync::OnceCell<Vec<Order>>,
    links: tokio::sync::OnceCell<Option<Links>>,
}

impl<'a> TicketBilling<'a> {
    /// Remembers what `inner` answers about `customer_id` (the ticket's customer).
    pub fn new(inner: &'a dyn BillingSource, customer_id: &'a str) -> TicketBilling<'a> {
        TicketBilling {
            inner,
            customer_id,
            customer: tokio::sync::OnceCell::new(),
            orders: tokio::sync::OnceCell::new(),
            links: tokio::sync::OnceCell::new(),
        }
    }
}

impl BillingSource for TicketBilling<'_> {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>> {
        if customer_id != self.customer_id {
            return self.inner.customer(customer_id);
        }
        Box::pin(async move {
            // A failed read is not remembered: the next call reads again.
            let read = || self.inner.customer(customer_id);
            Ok(self.customer.get_or_try_init(read).await?.clone())
        })
    }

    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>> {
        if customer_id != self.customer_id {
            return self.inner.orders(customer_id);
        }
        Box::pin(async move {
            let read = || self.inner.orders(customer_id);
            Ok(self.orders.get_or_try_init(read).await?.clone())
        })
    }

    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool> {
        self.inner.order_exists(order_id)
    }

    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>> {
        if customer.id.as_str() != self.customer_id {
            return self.inner.charges(customer);
        }
        Box::pin(async move {
            let read = || self.inner.charge_links(customer);
            match self.links.get_or_try_init(read).await? {
                Some(links) => self.inner.linked_charges(customer, links).await,
                None => self.inner.charges(customer).await,
            }
        })
    }

    fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>> {
        self.inner.refunds(charge_id)
    }

    fn other_tickets<'a>(
        &'a self,
        customer_id: &'a str,
        except_ticket_id: &'a str,
        limit: i64,
    ) -> Answer<'a, Option<OtherTickets>> {
        self.inner
            .other_tickets(customer_id, except_ticket_id, limit)
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

#[cfg(test)]
mod ticket_billing_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::world::World;

    /// A world source that counts its customer and order reads, and fails the next
    /// `fail` of them; it keeps charge links apart (counting their reads and the
    /// listings they are put on), as the live source does.
    struct Counted {
        world: WorldBilling,
        reads: AtomicUsize,
        fail: AtomicUsize,
        link_reads: AtomicUsize,
        listings: AtomicUsize,
    }

    impl Counted {
        fn new() -> Counted {
            let order = |id: &str, customer: &str| {
                json!({ "id": id, "customer_id": customer, "product": "addon", "amount": "4.99",
                        "currency": "USD", "created_at": "2026-11-20T10:00:00Z" })
            };
            let world = json!({
                "customers": [
                    { "id": "C-1", "name": "Emma", "email": "e@example.com", "region": "US" },
                    { "id": "C-2", "name": "Ava", "email": "a@example.com", "region": "EU" }
                ],
                "orders": [order("O-1", "C-1"), order("O-2", "C-2")]
            });
            let world = World::parse(&world.to_string()).expect("the test world parses");
            Counted {
                world: WorldBilling::new(Arc::new(world)),
                reads: AtomicUsize::new(0),
                fail: AtomicUsize::new(0),
                link_reads: AtomicUsize::new(0),
                listings: AtomicUsize::new(0),
            }
        }

        fn read(&self) -> anyhow::Result<()> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let failing = self.fail.load(Ordering::SeqCst);
            if failing > 0 {
                self.fail.store(failing - 1, Ordering::SeqCst);
                anyhow::bail!("the store is away");
            }
            Ok(())
        }
    }

    impl BillingSource for Counted {
        fn customer<'a>(&'a self, id: &'a str) -> Answer<'a, Option<CustomerRecord>> {
            Box::pin(async move {
                self.read()?;
                self.world.customer(id).await
            })
        }
        fn orders<'a>(&'a self, id: &'a str) -> Answer<'a, Vec<Order>> {
            Box::pin(async move {
                self.read()?;
                self.world.orders(id).await
            })
        }
        fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool> {
            self.world.order_exists(order_id)
        }
        fn charges<'a>(&'a self, c: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>> {
            Box::pin(async move {
                let links = self.charge_links(c).await?.unwrap_or_default();
                self.linked_charges(c, &links).await
            })
        }
        fn charge_links<'a>(&'a self, c: &'a CustomerRecord) -> Answer<'a, Option<Links>> {
            Box::pin(async move {
                self.link_reads.fetch_add(1, Ordering::SeqCst);
                let order_id = format!("O-{}", &c.id.as_str()[2..]);
                let charge_id = format!("ch_{}", c.id.as_str());
                Ok(Some(vec![ChargeLink {
                    charge_id,
                    order_id,
                }]))
            })
        }
        fn linked_charges<'a>(
            &'a self,
            c: &'a CustomerRecord,
            links: &'a Links,
        ) -> Answer<'a, Vec<ProviderCharge>> {
            Box::pin(async move {
                self.listings.fetch_add(1, Ordering::SeqCst);
                // Each listing answers the links it was given, so a test sees whose they are.
                assert!(self.world.charges(c).await?.is_empty());
                let charge = |l: &ChargeLink| {
                    let mut charge: ProviderCharge = serde_json::from_value(json!({
                        "id": l.charge_id, "amount": 499, "currency": "usd", "created": 0,
                        "captured": true, "status": "succeeded", "disputed": false,
                        "amount_refunded": 0, "metadata": {}
                    }))
                    .expect("a provider charge");
                    charge.order_id = Some(l.order_id.clone());
                    charge
                };
                Ok(links.iter().map(charge).collect())
            })
        }
        fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>> {
            self.world.refunds(charge_id)
        }
        fn other_tickets<'a>(
            &'a self,
            id: &'a str,
            except: &'a str,
            limit: i64,
        ) -> Answer<'a, Option<OtherTickets>> {
            self.world.other_tickets(id, except, limit)
        }
    }

    fn order_ids(orders: &[Order]) -> Vec<&str> {
        orders.iter().map(|o| o.id.as_str()).collect()
    }

    #[tokio::test]
    async fn one_investigation_reads_its_customer_and_orders_once_and_no_one_elses_from_memory() {
        let source = Counted::new();
        let billing = TicketBilling::new(&source, "C-1");
        for _ in 0..4 {
            let c = billing.customer("C-1").await.unwrap().unwrap();
            assert_eq!((c.id.as_str(), c.region), ("C-1", Region::US));
            assert_eq!(order_ids(&billing.orders("C-1").await.unwrap()), ["O-1"]);
        }
        assert_eq!(source.reads.load(Ordering::SeqCst), 2, "each read once");
        // Another customer is read through, every time, and gets their own records.
        for _ in 0..2 {
            let other = billing.customer("C-2").await.unwrap().unwrap();
            assert_eq!((other.id.as_str(), other.region), ("C-2", Region::EU));
            assert_eq!(order_ids(&billing.orders("C-2").await.unwrap()), ["O-2"]);
        }
        assert_eq!(source.reads.load(Ordering::SeqCst), 6);
        // The next investigation reads afresh.
        let next = TicketBilling::new(&source, "C-1");
        next.customer("C-1").await.unwrap();
        assert_eq!(source.reads.load(Ordering::SeqCst), 7);
    }

    fn linked(charges: &[ProviderCharge]) -> Vec<(&str, Option<&str>)> {
        charges
            .iter()
            .map(|c| (c.id.as_str(), c.order_id()))
            .collect()
    }

    #[tokio::test]
    async fn one_pass_reads_its_customers_charge_links_once_and_lists_the_provider_every_time() {
        let source = Counted::new();
        let billing = TicketBilling::new(&source, "C-1");
        let c1 = billing.customer("C-1").await.unwrap().unwrap();
        for _ in 0..3 {
            let charges = billing.charges(&c1).await.unwrap();
            assert_eq!(linked(&charges), [("ch_C-1", Some("O-1"))]);
        }
        assert_eq!(
            source.link_reads.load(Ordering::SeqCst),
            1,
            "links read once"
        );
        assert_eq!(
            source.listings.load(Ordering::SeqCst),
            3,
            "the provider each time"
        );
        // Another customer's charges read through, with their own links.
        let c2 = source.customer("C-2").await.unwrap().unwrap();
        for _ in 0..2 {
            let charges = billing.charges(&c2).await.unwrap();
            assert_eq!(linked(&charges), [("ch_C-2", Some("O-2"))]);
        }
        assert_eq!(source.link_reads.load(Ordering::SeqCst), 3);
        // The next pass reads the links afresh (a link made between passes shows).
        let next = TicketBilling::new(&source, "C-1");
        next.charges(&c1).await.unwrap();
        assert_eq!(source.link_reads.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_failed_read_is_not_remembered() {
        let source = Counted::new();
        let billing = TicketBilling::new(&source, "C-1");
        source.fail.store(2, Ordering::SeqCst);
        assert!(billing.customer("C-1").await.is_err());
        assert!(billing.orders("C-1").await.is_err());
        assert!(billing.customer("C-1").await.unwrap().is_some());
        assert_eq!(order_ids(&billing.orders("C-1").await.unwrap()), ["O-1"]);
        billing.customer("C-1").await.unwrap();
        assert_eq!(source.reads.load(Ordering::SeqCst), 4);
    }
}
