//! Billing worlds (`fixtures/billing/*.json`): customers, orders, charges, refunds.
//!
//! The app keeps customers and orders (its own commerce records); charges and refunds
//! live at the payment provider, which `seed` loads through the provider's admin API.
//! Loading validates everything first and writes in one transaction: a bad file changes
//! nothing.

use anyhow::Context;
use policy_engine::{Currency, Money, Product, Region};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use payments_adapter::{ProviderCharge, ProviderRefund};
use store::Db;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct World {
    pub customers: Vec<WorldCustomer>,
    pub orders: Vec<WorldOrder>,
    #[serde(default)]
    pub charges: Vec<WorldCharge>,
    #[serde(default)]
    pub refunds: Vec<WorldRefund>,
}

/// A provider charge as a world file writes it (decimal strings, RFC 3339 times).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorldCharge {
    pub id: String,
    pub order_id: String,
    pub customer_id: String,
    pub amount: String,
    pub currency: Currency,
    pub captured: bool,
    pub status: String,
    #[serde(default)]
    pub disputed: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub payment_method: String,
    #[serde(default)]
    pub amount_refunded: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorldRefund {
    pub id: String,
    pub charge_id: String,
    pub amount: String,
    pub currency: Currency,
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(default)]
    pub metadata: std::collections::BTreeMap<String, String>,
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

    /// The world's refunds in the provider's wire shape (minor units).
    pub fn refunds(&self) -> anyhow::Result<Vec<ProviderRefund>> {
        self.refunds
            .iter()
            .map(|r| {
                Ok(ProviderRefund {
                    id: r.id.clone(),
                    amount: Money::parse(&r.amount, r.currency)?.minor_units(),
                    charge: Some(r.charge_id.clone()),
                    currency: r.currency.code().to_ascii_lowercase(),
                    status: Some(r.status.clone()),
                    created: r.created_at.unix_timestamp(),
                    metadata: r.metadata.clone(),
                    failure_reason: None,
                    reason: None,
                })
            })
            .collect()
    }

    /// The world's charges in the provider's wire shape. `amount_refunded` is the larger
    /// of the file's figure and the sum of the charge's live refunds, as the provider keeps it.
    pub fn charges(&self) -> anyhow::Result<Vec<ProviderCharge>> {
        let refunds = self.refunds()?;
        self.charges
            .iter()
            .map(|c| {
                let amount = Money::parse(&c.amount, c.currency)?.minor_units();
                let listed = match &c.amount_refunded {
                    Some(a) => Money::parse(a, c.currency)?.minor_units(),
                    None => 0,
                };
                let live: i64 = refunds
                    .iter()
                    .filter(|r| {
                        r.is_on(&c.id)
                            && matches!(r.status(), "succeeded" | "pending" | "requires_action")
                    })
                    .map(|r| r.amount)
                    .sum();
                let refunded = listed.max(live);
                Ok(ProviderCharge {
                    id: c.id.clone(),
                    amount,
                    amount_captured: if c.captured { amount } else { 0 },
                    amount_refunded: refunded,
                    captured: c.captured,
                    currency: c.currency.code().to_ascii_lowercase(),
                    customer: Some(c.customer_id.clone()),
                    status: c.status.clone(),
                    disputed: c.disputed,
                    created: c.created_at.unix_timestamp(),
                    payment_method: Some(c.payment_method.clone()),
                    metadata: [("order_id".to_string(), c.order_id.clone())]
                        .into_iter()
                        .collect(),
                    order_id: Some(c.order_id.clone()),
                })
            })
            .collect()
    }

    /// Upserts customers and orders into the app's database, in one transaction,
    /// through their writer (`onboarding::records`). A world's customer is linked to the
    /// provider customer of its own id, as the payments mock's worlds name them.
    pub async fn load_into(&self, db: &Db) -> anyhow::Result<()> {
        use crate::onboarding::records::{upsert_customer_tx, upsert_order_tx, Customer, Order};
        let mut tx = db.begin().await?;
        for c in &self.customers {
            let customer = Customer {
                id: c.id.clone(),
                name: c.name.clone(),
                email: c.email.clone(),
                region: c.region,
                provider_customer_id: Some(c.id.clone()),
            };
            upsert_customer_tx(&mut tx, &customer).await?;
        }
        for o in &self.orders {
            let order = Order {
                id: o.id.clone(),
                customer_id: o.customer_id.clone(),
                product: o.product,
                amount: Money::parse(&o.amount, o.currency)?,
                created_at: o.created_at,
            };
            upsert_order_tx(&mut tx, &order).await?;
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

/// Why a world cannot go to the provider at `url`.
#[derive(Debug, thiserror::Error)]
pub enum WorldLoadError {
    /// The provider is not the payments mock (a real provider has no world to load):
    /// nothing was written, here or there.
    #[error(
        "{url} is not the payments mock ({answer}): a world's charges and refunds can only be loaded into the mock. \
         Nothing was written. `seed --app-only` loads the app's customers and orders without touching the provider; \
         a real account's customers and orders come in with `import customers|orders FILE`"
    )]
    NotTheMock { url: String, answer: String },
    #[error("the payment provider at {url} cannot be reached: {reason}")]
    Unreachable { url: String, reason: String },
}

/// Asks the provider at `base_url` whether it is the payments mock (`GET /__mock/about`),
/// sending no key: a real provider answers anything but the mock's own reply, and
/// nothing is written anywhere either way.
pub async fn ensure_mock(base_url: &str) -> Result<(), WorldLoadError> {
    let url = base_url.trim_end_matches('/').to_string();
    let unreachable = |e: reqwest::Error| WorldLoadError::Unreachable {
        url: url.clone(),
        reason: e.to_string(),
    };
    let response = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(unreachable)?
        .get(format!("{url}/__mock/about"))
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    let body: Option<serde_json::Value> = response.json().await.ok();
    let object = body
        .as_ref()
        .and_then(|b| b.get("object"))
        .and_then(|o| o.as_str());
    if status.is_success() && object == Some("payments_mock") {
        return Ok(());
    }
    Err(WorldLoadError::NotTheMock {
        url,
        answer: format!("GET /__mock/about answered {status}"),
    })
}

/// Loads a world (its JSON text) into a provider that speaks our mock's admin API
/// (`POST /__mock/world`): `seed`, the scenario suite and the tests load the provider's
/// half of a world this way; the app's half goes through [`World::load_into`].
pub async fn load_into_provider(base_url: &str, world_json: &str) -> anyhow::Result<()> {
    let resp = reqwest::Client::new()
        .post(format!("{}/__mock/world", base_url.trim_end_matches('/')))
        .header("content-type", "application/json")
        .body(world_json.to_string())
        .send()
        .await
        .context("loading the world into the payment provider")?;
    if !resp.status().is_success() {
        anyhow::bail!(
            "the payment provider refused the world: {} {}",
            resp.status(),
            resp.text().await.unwrap_or_default()
        );
    }
    Ok(())
}
