//! A customer's billing records, read once (our customer and orders, the provider's
//! charges and every refund on them), and the billing world as it stood at a moment:
//! orders, charges and refunds created at or before it, each charge's
//! `amount_refunded` as its refunds then made it (docs/spec/history.md).
//!
//! What it deliberately does not do: know a past status. A refund pending then and
//! succeeded now, or a dispute opened since, reads as it is now — the provider keeps no
//! history of a record's statuses that the list endpoints show. Charges naming no order
//! of ours are left out of the world, as a live case leaves them out of an order's facts.

use policy_engine::{Currency, Money, Region};
use sqlx::Row;
use time::OffsetDateTime;

use super::infer::RefundSeen;
use desk::billing::CustomerRecord;
use desk::clock::{from_ms, to_ms};
use desk::world::{parse_plain, World, WorldCharge, WorldCustomer, WorldOrder, WorldRefund};
use payments_adapter::{PaymentsClient, ProviderCharge, ProviderRefund};
use store::Db;

/// One customer's records, as read now.
#[derive(Debug, Clone)]
pub struct Records {
    pub customer: WorldCustomer,
    pub orders: Vec<WorldOrder>,
    pub charges: Vec<ProviderCharge>,
    pub refunds: Vec<ProviderRefund>,
}

/// Reads a customer's records: ours from the store, charges (with staff links) and
/// their refunds from the provider, every page.
pub async fn fetch(
    db: &Db,
    payments: &PaymentsClient,
    customer_id: &str,
) -> anyhow::Result<Records> {
    let row = sqlx::query(
        "SELECT id, name, email, region, provider_customer_id FROM customers WHERE id = $1",
    )
    .bind(customer_id)
    .fetch_one(db.reader())
    .await?;
    let region: Region = parse_plain(&row.try_get::<String, _>("region")?)?;
    let record = CustomerRecord {
        id: desk::columns::stored_id(&row, "id", domain::ids::CustomerId::parse)?,
        region,
        provider_customer_id: row.try_get("provider_customer_id")?,
    };
    let customer = WorldCustomer {
        id: record.id.to_string(),
        name: row.try_get("name")?,
        email: row.try_get("email")?,
        region,
    };
    let mut charges = if record.provider_customer_id.is_empty() {
        Vec::new()
    } else {
        payments.list_charges(&record.provider_customer_id).await?
    };
    desk::onboarding::charges::apply_links(db, payments, &record.id, &mut charges).await?;
    let mut refunds = Vec::new();
    for charge in &charges {
        refunds.extend(payments.list_refunds(&charge.id).await?);
    }
    Ok(Records {
        customer,
        orders: orders(db, customer_id).await?,
        charges,
        refunds,
    })
}

async fn orders(db: &Db, customer_id: &str) -> anyhow::Result<Vec<WorldOrder>> {
    let rows = sqlx::query(
        "SELECT id, product, amount_minor, currency, created_at FROM orders WHERE customer_id = $1
         ORDER BY created_at, id",
    )
    .bind(customer_id)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            let currency: Currency = r.try_get::<String, _>("currency")?.parse()?;
            Ok(WorldOrder {
                id: r.try_get("id")?,
                customer_id: customer_id.to_string(),
                product: parse_plain(&r.try_get::<String, _>("product")?)?,
                amount: Money::from_minor(r.try_get("amount_minor")?, currency)?.amount_string(),
                currency,
                created_at: from_ms(r.try_get("created_at")?),
            })
        })
        .collect()
}

fn at_seconds(at: OffsetDateTime) -> i64 {
    to_ms(at).div_euclid(1000)
}

fn money(minor: i64, currency: &str) -> Option<Money> {
    Money::from_minor(minor, currency.parse().ok()?).ok()
}

/// The world as it stood at `at`.
pub fn world_as_of(records: &Records, at: OffsetDateTime) -> World {
    let when = at_seconds(at);
    let orders: Vec<WorldOrder> = records
        .orders
        .iter()
        .filter(|o| o.created_at <= at)
        .cloned()
        .collect();
    let refunds: Vec<&ProviderRefund> = records
        .refunds
        .iter()
        .filter(|r| r.created <= when)
        .collect();
    let mut charges = Vec::new();
    for c in records.charges.iter().filter(|c| c.created <= when) {
        let Some(order_id) = c.order_id().filter(|o| orders.iter().any(|w| w.id == *o)) else {
            continue;
        };
        let (Ok(currency), Some(amount)) = (c.currency(), money(c.amount, &c.currency)) else {
            continue;
        };
        let refunded: i64 = refunds
            .iter()
            .filter(|r| r.is_on(&c.id) && matches!(r.status(), "succeeded" | "pending"))
            .map(|r| r.amount)
            .sum();
        charges.push(WorldCharge {
            id: c.id.clone(),
            order_id: order_id.to_string(),
            customer_id: records.customer.id.clone(),
            amount: amount.amount_string(),
            currency,
            captured: c.captured,
            status: c.status.clone(),
            disputed: c.disputed,
            created_at: from_ms(c.created * 1000),
            payment_method: c.payment_method.clone().unwrap_or_default(),
            amount_refunded: money(refunded, &c.currency).map(|m| m.amount_string()),
        });
    }
    let world_refunds = refunds
        .iter()
        .filter(|r| charges.iter().any(|c| r.is_on(&c.id)))
        .filter_map(|r| {
            Some(WorldRefund {
                id: r.id.clone(),
                charge_id: r.charge.clone()?,
                amount: money(r.amount, &r.currency)?.amount_string(),
                currency: r.currency.parse().ok()?,
                status: r.status().to_string(),
                created_at: from_ms(r.created * 1000),
                metadata: r.metadata.clone(),
            })
        })
        .collect();
    World {
        customers: vec![records.customer.clone()],
        orders,
        charges,
        refunds: world_refunds,
    }
}

/// Every refund on the customer's charges, as the inference reads them.
pub fn refunds_seen(records: &Records) -> Vec<RefundSeen> {
    records
        .refunds
        .iter()
        .filter_map(|r| {
            let charge_id = r.charge.clone()?;
            let order_id = records
                .charges
                .iter()
                .find(|c| c.id == charge_id)
                .and_then(|c| c.order_id().map(String::from));
            Some(RefundSeen {
                refund_id: r.id.clone(),
                charge_id,
                order_id,
                amount: money(r.amount, &r.currency)?,
                status: r.status().to_string(),
                created_at: from_ms(r.created * 1000),
                reason: r.reason.clone(),
            })
        })
        .collect()
}
