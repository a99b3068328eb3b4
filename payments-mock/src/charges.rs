//! Charges: the provider's record of a payment. The mock never creates charges
//! through `/v1` (they come from a billing world); it reads them and keeps
//! `amount_refunded` in step with refunds.

use std::collections::BTreeMap;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::state::MockState;
use crate::wire::{json_response, to_json, ApiError, ApiKey, FormParams, ListEnvelope, Page};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChargeRow {
    pub id: String,
    pub amount: i64,
    pub amount_refunded: i64,
    pub currency: String,
    pub customer: Option<String>,
    pub captured: bool,
    pub status: String,
    pub disputed: bool,
    pub created: i64,
    pub payment_method: Option<String>,
    pub payment_intent: Option<String>,
    pub metadata: String,
    pub refund_profile: String,
}

const CHARGE_COLUMNS: &str = "id, amount, amount_refunded, currency, customer, captured, status, \
     disputed, created, payment_method, payment_intent, metadata, refund_profile";

/// The wire shape of a charge (field order is the serialisation order).
#[derive(Debug, Clone, Serialize)]
pub struct ChargeObject {
    pub id: String,
    pub object: &'static str,
    pub amount: i64,
    pub amount_captured: i64,
    pub amount_refunded: i64,
    pub captured: bool,
    pub refunded: bool,
    pub currency: String,
    pub customer: Option<String>,
    pub status: String,
    pub disputed: bool,
    pub created: i64,
    pub payment_method: Option<String>,
    pub payment_intent: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

impl ChargeRow {
    /// What is left to refund: amount minus succeeded and pending refunds.
    pub fn remaining(&self) -> i64 {
        (self.amount - self.amount_refunded).max(0)
    }

    pub fn to_object(&self) -> ChargeObject {
        ChargeObject {
            id: self.id.clone(),
            object: "charge",
            amount: self.amount,
            amount_captured: if self.captured { self.amount } else { 0 },
            amount_refunded: self.amount_refunded,
            captured: self.captured,
            refunded: self.amount > 0 && self.amount_refunded >= self.amount,
            currency: self.currency.clone(),
            customer: self.customer.clone(),
            status: self.status.clone(),
            disputed: self.disputed,
            created: self.created,
            payment_method: self.payment_method.clone(),
            payment_intent: self.payment_intent.clone(),
            metadata: serde_json::from_str(&self.metadata).unwrap_or_default(),
        }
    }
}

pub async fn find(conn: &mut SqliteConnection, id: &str) -> Result<Option<ChargeRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {CHARGE_COLUMNS} FROM charges WHERE id = ?"
    )))
    .bind(id)
    .fetch_optional(conn)
    .await
}

pub async fn find_by_payment_intent(
    conn: &mut SqliteConnection,
    payment_intent: &str,
) -> Result<Option<ChargeRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {CHARGE_COLUMNS} FROM charges WHERE payment_intent = ? ORDER BY created DESC, seq DESC LIMIT 1"
    )))
    .bind(payment_intent)
    .fetch_optional(conn)
    .await
}

/// `GET /v1/charges/{id}`
pub async fn retrieve(
    State(state): State<MockState>,
    _key: ApiKey,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let mut conn = state.pool().acquire().await?;
    match find(&mut conn, &id).await? {
        Some(charge) => Ok(json_response(StatusCode::OK, to_json(&charge.to_object()))),
        None => Err(ApiError::missing("charge", &id, "id")),
    }
}

/// `GET /v1/charges?customer=&payment_intent=&limit=&starting_after=&ending_before=`,
/// newest first. The mock's data is small, so it filters in SQL and pages in memory.
pub async fn list(
    State(state): State<MockState>,
    _key: ApiKey,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = FormParams::from_query(query.as_deref())?;
    params.reject_unknown(&[
        "customer",
        "payment_intent",
        "limit",
        "starting_after",
        "ending_before",
        "expand",
    ])?;
    let page = Page::from_params(&params)?;
    // A customer filter gets its own statement so SQLite can use the
    // `(customer, created, seq)` index; `(?1 IS NULL OR customer = ?1)` forces a full scan,
    // which made every list O(all charges).
    let rows: Vec<ChargeRow> = match params.get("customer") {
        Some(customer) => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {CHARGE_COLUMNS} FROM charges \
                 WHERE customer = ?1 AND (?2 IS NULL OR payment_intent = ?2) \
                 ORDER BY created DESC, seq DESC"
            )))
            .bind(customer)
            .bind(params.get("payment_intent"))
            .fetch_all(state.pool())
            .await?
        }
        None => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {CHARGE_COLUMNS} FROM charges \
                 WHERE (?1 IS NULL OR payment_intent = ?1) \
                 ORDER BY created DESC, seq DESC"
            )))
            .bind(params.get("payment_intent"))
            .fetch_all(state.pool())
            .await?
        }
    };
    let (rows, has_more) = page.apply(rows, |c| c.id.as_str(), "charge")?;
    let envelope = ListEnvelope {
        object: "list",
        url: "/v1/charges",
        has_more,
        data: rows.iter().map(ChargeRow::to_object).collect(),
    };
    Ok(json_response(StatusCode::OK, to_json(&envelope)).into_response())
}
