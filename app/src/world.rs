//! Billing worlds (`fixtures/billing/*.json`): customers, orders, charges, refunds.
//!
//! The app keeps customers and orders (its own commerce records); charges and refunds
//! live at the payment provider, which `seed` loads through the provider's admin API.
//! Loading validates everything first and writes in one transaction: a bad file changes
//! nothing.

use policy_engine::{Currency, Money, Product, Region};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::clock::to_ms;
use crate::store::Db;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct World {
    pub customers: Vec<WorldCustomer>,
    pub orders: Vec<WorldOrder>,
    #[serde(default)]
    pub charges: Vec<serde_json::Value>,
    #[serde(default)]
    pub refunds: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorldCustomer {
    pub id: String,
    pub name: String,
    pub email: String,
    pub region: Region,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorldOrder {
    pub id: String,
    pub customer_id: String,
    pub product: Product,
    pub amount: String,
    pub currency: Currency,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl World {
    /// Parses and validates a world file's text.
    pub fn parse(text: &str) -> anyhow::Result<World> {
        let world: World = serde_json::from_str(text)?;
        for order in &world.orders {
            Money::parse(&order.amount, order.currency)
                .map_err(|e| anyhow::anyhow!("order {}: {e}", order.id))?;
            if !world.customers.iter().any(|c| c.id == order.customer_id) {
                anyhow::bail!(
                    "order {} names unknown customer {}",
                    order.id,
                    order.customer_id
                );
            }
        }
        Ok(world)
    }

    /// Upserts customers and orders into the app's database, in one transaction.
    pub async fn load_into(&self, db: &Db) -> anyhow::Result<()> {
        let mut tx = db.begin().await?;
        for c in &self.customers {
            let region = serde_plain(&c.region);
            sqlx::query(
                "INSERT INTO customers (id, name, email, region, provider_customer_id) VALUES ($1, $2, $3, $4, $1)
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, email = excluded.email, region = excluded.region",
            )
            .bind(&c.id)
            .bind(&c.name)
            .bind(&c.email)
            .bind(region)
            .execute(&mut *tx)
            .await?;
        }
        for o in &self.orders {
            let amount = Money::parse(&o.amount, o.currency)?;
            sqlx::query(
                "INSERT INTO orders (id, customer_id, product, amount_minor, currency, created_at) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (id) DO UPDATE SET customer_id = excluded.customer_id, product = excluded.product,
                 amount_minor = excluded.amount_minor, currency = excluded.currency, created_at = excluded.created_at",
            )
            .bind(&o.id)
            .bind(&o.customer_id)
            .bind(serde_plain(&o.product))
            .bind(amount.minor_units())
            .bind(o.currency.code())
            .bind(to_ms(o.created_at))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

/// The bare string serde gives a unit enum variant (`"CN"`, `"annual_plan"`).
pub fn serde_plain<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Parses a bare string back into a unit enum variant.
pub fn parse_plain<T: serde::de::DeserializeOwned>(s: &str) -> anyhow::Result<T> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|e| anyhow::anyhow!("'{s}': {e}"))
}
