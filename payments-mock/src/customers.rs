//! Customers: the provider's record of who pays. A shop links its own customers to these
//! by id (`cus_…`) or, when it does not know the id, by email through
//! `GET /v1/customers?email=` (Stripe's exact, case-sensitive email filter).
//!
//! What it deliberately does not do: create, update or delete customers through `/v1`
//! (they come from a billing world, as charges do), or search (`/v1/customers/search`).

use std::collections::BTreeMap;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;

use crate::state::MockState;
use crate::wire::{json_response, to_json, ApiError, ApiKey, FormParams, ListEnvelope, Page};

#[derive(Debug, Clone, sqlx::FromRow)]
struct CustomerRow {
    id: String,
    email: Option<String>,
    name: Option<String>,
    created: i64,
    metadata: String,
}

/// The wire shape of a customer: the fields Stripe always sends that the mock knows.
#[derive(Serialize)]
struct CustomerObject {
    id: String,
    object: &'static str,
    created: i64,
    email: Option<String>,
    name: Option<String>,
    livemode: bool,
    metadata: BTreeMap<String, String>,
}

impl CustomerRow {
    fn to_object(&self) -> CustomerObject {
        CustomerObject {
            id: self.id.clone(),
            object: "customer",
            created: self.created,
            email: self.email.clone(),
            name: self.name.clone(),
            livemode: false,
            metadata: serde_json::from_str(&self.metadata).unwrap_or_default(),
        }
    }
}

const CUSTOMER_SELECT: &str = "SELECT id, email, name, created, metadata FROM customers";

/// `GET /v1/customers/{id}`
pub async fn retrieve(
    State(state): State<MockState>,
    _key: ApiKey,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let row: Option<CustomerRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{CUSTOMER_SELECT} WHERE id = ?"
    )))
    .bind(&id)
    .fetch_optional(state.pool())
    .await?;
    match row {
        Some(row) => Ok(json_response(StatusCode::OK, to_json(&row.to_object()))),
        None => Err(ApiError::missing("customer", &id, "id")),
    }
}

/// `GET /v1/customers?email=&limit=&starting_after=&ending_before=`, newest first.
pub async fn list(
    State(state): State<MockState>,
    _key: ApiKey,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = FormParams::from_query(query.as_deref())?;
    params.reject_unknown(&[
        "email",
        "limit",
        "starting_after",
        "ending_before",
        "expand",
    ])?;
    let page = Page::from_params(&params)?;
    let email = params.get("email");
    if email.is_some_and(|e| e.chars().count() > 512) {
        return Err(
            ApiError::invalid_request("Invalid email: must be at most 512 characters")
                .with_param("email"),
        );
    }
    let rows: Vec<CustomerRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{CUSTOMER_SELECT} WHERE (?1 IS NULL OR email = ?1) ORDER BY created DESC, seq DESC"
    )))
    .bind(email)
    .fetch_all(state.pool())
    .await?;
    let (rows, has_more) = page.apply(rows, |c| c.id.as_str(), "customer")?;
    let envelope = ListEnvelope {
        object: "list",
        url: "/v1/customers",
        has_more,
        data: rows.iter().map(CustomerRow::to_object).collect(),
    };
    Ok(json_response(StatusCode::OK, to_json(&envelope)))
}
