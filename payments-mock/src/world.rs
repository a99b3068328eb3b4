//! `POST /__mock/world`: loads a billing world (docs/spec/interfaces.md "Files") as charges and
//! refunds. Decimal strings become minor units; the whole world is validated first
//! and written in one transaction, so a bad file writes nothing.
//!
//! Customers are stored as the provider's customers (id, email, name: what
//! `GET /v1/customers` answers); orders are accepted but not stored: the provider only
//! knows charges (which carry `customer` and, for a world's `order_id`,
//! `metadata.order_id`; a charge's own `metadata` may name its order under another key).

use std::collections::{BTreeMap, BTreeSet};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::money::{to_minor_units, Currency};
use crate::refunds::RESERVING_STATUSES;
use crate::state::MockState;
use crate::wire::{json_response, to_json, ApiError};

#[derive(Deserialize)]
struct World {
    #[serde(default)]
    customers: Vec<WorldCustomer>,
    #[serde(default)]
    charges: Vec<WorldCharge>,
    #[serde(default)]
    refunds: Vec<WorldRefund>,
}

/// Amounts are decimal strings; a bare JSON number is tolerated.
#[derive(Deserialize)]
#[serde(untagged)]
enum Amount {
    Text(String),
    Number(serde_json::Number),
}

impl Amount {
    fn text(&self) -> String {
        match self {
            Amount::Text(text) => text.clone(),
            Amount::Number(number) => number.to_string(),
        }
    }
}

fn default_true() -> bool {
    true
}

fn default_succeeded() -> String {
    "succeeded".to_owned()
}

/// A world's customer; fields beyond these (a shop's `region`) are the shop's, not the
/// provider's, and ignored.
#[derive(Deserialize)]
struct WorldCustomer {
    id: String,
    email: Option<String>,
    name: Option<String>,
    created_at: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct WorldCharge {
    id: String,
    order_id: Option<String>,
    customer_id: Option<String>,
    amount: Amount,
    currency: String,
    #[serde(default = "default_true")]
    captured: bool,
    #[serde(default = "default_succeeded")]
    status: String,
    #[serde(default)]
    disputed: bool,
    created_at: String,
    payment_method: Option<String>,
    payment_intent: Option<String>,
    amount_refunded: Option<Amount>,
    /// Mock extension: status of refunds created through the API.
    refund_profile: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct WorldRefund {
    id: String,
    charge_id: String,
    amount: Amount,
    currency: String,
    #[serde(default = "default_succeeded")]
    status: String,
    created_at: String,
    reason: Option<String>,
    failure_reason: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

struct ChargeRecord {
    id: String,
    amount: i64,
    amount_refunded: i64,
    currency: Currency,
    customer: Option<String>,
    captured: bool,
    status: String,
    disputed: bool,
    created: i64,
    payment_method: Option<String>,
    payment_intent: Option<String>,
    metadata: BTreeMap<String, String>,
    refund_profile: String,
}

struct RefundRecord {
    id: String,
    charge_id: String,
    amount: i64,
    currency: Currency,
    status: String,
    created: i64,
    reason: Option<String>,
    failure_reason: Option<String>,
    metadata: BTreeMap<String, String>,
}

fn timestamp(value: &str, at: &str) -> Result<i64, String> {
    OffsetDateTime::parse(value, &Rfc3339)
        .map(OffsetDateTime::unix_timestamp)
        .map_err(|_| format!("{at}.created_at: invalid RFC 3339 time {value:?}"))
}

fn currency(code: &str, at: &str) -> Result<Currency, String> {
    Currency::parse(code).ok_or_else(|| format!("{at}.currency: unknown currency {code:?}"))
}

fn one_of(value: &str, allowed: &[&str], what: &str) -> Result<(), String> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{what}: {value:?} is not one of {}",
            allowed.join(", ")
        ))
    }
}

fn validate_charge(charge: WorldCharge, index: usize) -> Result<ChargeRecord, String> {
    let at = format!("charges[{index}] ({})", charge.id);
    if charge.id.is_empty() {
        return Err(format!("charges[{index}].id: empty"));
    }
    let currency = currency(&charge.currency, &at)?;
    let amount =
        to_minor_units(&charge.amount.text(), currency).map_err(|e| format!("{at}.amount: {e}"))?;
    let amount_refunded = match &charge.amount_refunded {
        None => 0,
        Some(value) => to_minor_units(&value.text(), currency)
            .map_err(|e| format!("{at}.amount_refunded: {e}"))?,
    };
    if amount_refunded > amount {
        return Err(format!("{at}.amount_refunded exceeds the amount"));
    }
    one_of(
        &charge.status,
        &["succeeded", "pending", "failed"],
        &format!("{at}.status"),
    )?;
    let refund_profile = charge.refund_profile.unwrap_or_else(default_succeeded);
    one_of(
        &refund_profile,
        &["succeeded", "pending", "requires_action", "fail_later"],
        &format!("{at}.refund_profile"),
    )?;
    let mut metadata = charge.metadata;
    if let Some(order_id) = charge.order_id {
        metadata.insert("order_id".to_owned(), order_id);
    }
    Ok(ChargeRecord {
        created: timestamp(&charge.created_at, &at)?,
        id: charge.id,
        amount,
        amount_refunded,
        currency,
        customer: charge.customer_id,
        captured: charge.captured,
        status: charge.status,
        disputed: charge.disputed,
        payment_method: charge.payment_method,
        payment_intent: charge.payment_intent,
        metadata,
        refund_profile,
    })
}

fn validate_customer(customer: &WorldCustomer, index: usize, now: i64) -> Result<i64, String> {
    let at = format!("customers[{index}] ({})", customer.id);
    if customer.id.is_empty() {
        return Err(format!("customers[{index}].id: empty"));
    }
    match &customer.created_at {
        Some(created) => timestamp(created, &at),
        None => Ok(now),
    }
}

fn validate_refund(refund: WorldRefund, index: usize) -> Result<RefundRecord, String> {
    let at = format!("refunds[{index}] ({})", refund.id);
    if refund.id.is_empty() {
        return Err(format!("refunds[{index}].id: empty"));
    }
    let currency = currency(&refund.currency, &at)?;
    let amount =
        to_minor_units(&refund.amount.text(), currency).map_err(|e| format!("{at}.amount: {e}"))?;
    if amount == 0 {
        return Err(format!("{at}.amount: must be positive"));
    }
    one_of(
        &refund.status,
        &[
            "pending",
            "requires_action",
            "succeeded",
            "failed",
            "canceled",
        ],
        &format!("{at}.status"),
    )?;
    Ok(RefundRecord {
        created: timestamp(&refund.created_at, &at)?,
        id: refund.id,
        charge_id: refund.charge_id,
        amount,
        currency,
        status: refund.status,
        reason: refund.reason,
        failure_reason: refund.failure_reason,
        metadata: refund.metadata,
    })
}

fn bad_world(message: String) -> ApiError {
    ApiError::invalid_request(format!("invalid billing world: {message}"))
}

/// `POST /__mock/world` → `{"customers": n, "charges": n, "refunds": n}`.
pub async fn load(State(state): State<MockState>, body: Bytes) -> Result<Response, ApiError> {
    let world: World = serde_json::from_slice(&body).map_err(|e| bad_world(e.to_string()))?;
    let now = state.clock().now();
    let customer_created = world
        .customers
        .iter()
        .enumerate()
        .map(|(i, c)| validate_customer(c, i, now))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad_world)?;
    let charges = world
        .charges
        .into_iter()
        .enumerate()
        .map(|(i, c)| validate_charge(c, i))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad_world)?;
    let refunds = world
        .refunds
        .into_iter()
        .enumerate()
        .map(|(i, r)| validate_refund(r, i))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad_world)?;

    let mut tx = state.pool().begin_with("BEGIN IMMEDIATE").await?;
    for (customer, created) in world.customers.iter().zip(customer_created) {
        sqlx::query(
            "INSERT INTO customers (id, email, name, created, metadata) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET email = excluded.email, name = excluded.name, \
             created = excluded.created, metadata = excluded.metadata",
        )
        .bind(&customer.id)
        .bind(&customer.email)
        .bind(&customer.name)
        .bind(created)
        .bind(to_json(&customer.metadata))
        .execute(&mut *tx)
        .await?;
    }
    for charge in &charges {
        sqlx::query(
            "INSERT INTO charges (id, amount, amount_refunded, currency, customer, captured, status, \
             disputed, created, payment_method, payment_intent, metadata, refund_profile) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET amount = excluded.amount, \
             amount_refunded = excluded.amount_refunded, currency = excluded.currency, \
             customer = excluded.customer, captured = excluded.captured, status = excluded.status, \
             disputed = excluded.disputed, created = excluded.created, \
             payment_method = excluded.payment_method, payment_intent = excluded.payment_intent, \
             metadata = excluded.metadata, refund_profile = excluded.refund_profile",
        )
        .bind(&charge.id)
        .bind(charge.amount)
        .bind(charge.amount_refunded)
        .bind(charge.currency.code())
        .bind(&charge.customer)
        .bind(charge.captured)
        .bind(&charge.status)
        .bind(charge.disputed)
        .bind(charge.created)
        .bind(&charge.payment_method)
        .bind(&charge.payment_intent)
        .bind(to_json(&charge.metadata))
        .bind(&charge.refund_profile)
        .execute(&mut *tx)
        .await?;
    }
    let mut touched: BTreeSet<String> = charges.iter().map(|c| c.id.clone()).collect();
    for refund in &refunds {
        let charge_currency: Option<String> =
            sqlx::query_scalar("SELECT currency FROM charges WHERE id = ?")
                .bind(&refund.charge_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(charge_currency) = charge_currency else {
            return Err(bad_world(format!(
                "refund {} names unknown charge {}",
                refund.id, refund.charge_id
            )));
        };
        if charge_currency != refund.currency.code() {
            return Err(bad_world(format!(
                "refund {} is in {} but charge {} is in {charge_currency}",
                refund.id,
                refund.currency.code(),
                refund.charge_id
            )));
        }
        sqlx::query(
            "INSERT INTO refunds (id, charge_id, amount, currency, status, reason, failure_reason, \
             metadata, created, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'world') \
             ON CONFLICT (id) DO UPDATE SET charge_id = excluded.charge_id, amount = excluded.amount, \
             currency = excluded.currency, status = excluded.status, reason = excluded.reason, \
             failure_reason = excluded.failure_reason, metadata = excluded.metadata, \
             created = excluded.created",
        )
        .bind(&refund.id)
        .bind(&refund.charge_id)
        .bind(refund.amount)
        .bind(refund.currency.code())
        .bind(&refund.status)
        .bind(&refund.reason)
        .bind(&refund.failure_reason)
        .bind(to_json(&refund.metadata))
        .bind(refund.created)
        .execute(&mut *tx)
        .await?;
        touched.insert(refund.charge_id.clone());
    }
    // A charge's amount_refunded is at least what its live refunds reserve, whatever
    // the file says (a file may list a refund but leave amount_refunded at zero).
    let reserving = RESERVING_STATUSES
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ");
    for charge_id in &touched {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE charges SET amount_refunded = MAX(amount_refunded, \
             (SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE charge_id = ?1 AND status IN ({reserving}))) \
             WHERE id = ?1"
        )))
        .bind(charge_id)
        .execute(&mut *tx)
        .await?;
        let over: Option<i64> = sqlx::query_scalar(
            "SELECT amount_refunded - amount FROM charges WHERE id = ? AND amount_refunded > amount",
        )
        .bind(charge_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(over) = over {
            return Err(bad_world(format!(
                "refunds of charge {charge_id} exceed its amount by {over} minor units"
            )));
        }
    }
    tx.commit().await?;
    tracing::info!(
        customers = world.customers.len(),
        charges = charges.len(),
        refunds = refunds.len(),
        "billing world loaded"
    );
    Ok(json_response(
        StatusCode::OK,
        to_json(
            &serde_json::json!({ "customers": world.customers.len(), "charges": charges.len(), "refunds": refunds.len() }),
        ),
    ))
}
