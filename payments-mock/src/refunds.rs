//! Refunds: creation (through the idempotency layer), retrieval and listing.
//!
//! Creation runs inside the transaction opened by [`crate::idempotency`], so the
//! refund, the charge's new `amount_refunded`, its events and the stored response
//! of the idempotency key all commit together or not at all.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::charges::{self, ChargeRow};
use crate::events::{self, EventRequest};
use crate::faults::LayerFault;
use crate::idempotency::{self, BoxFuture, Concerned, ExecutionContext, Mutation, Outcome};
use crate::money::{format_major, Currency};
use crate::state::MockState;
use crate::wire::{
    json_response, new_id, positive_integer, to_json, ApiError, ApiKey, CreatedRange, FormParams,
    ListEnvelope, Page, RequestId,
};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RefundRow {
    pub id: String,
    pub charge_id: String,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub reason: Option<String>,
    pub failure_reason: Option<String>,
    pub failure_balance_transaction: Option<String>,
    pub metadata: String,
    pub created: i64,
    pub origin: String,
    pub idempotency_key: Option<String>,
    pub payment_intent: Option<String>,
}

/// Joins the charge for `payment_intent`.
pub(crate) const REFUND_SELECT: &str = "SELECT r.id, r.charge_id, r.amount, r.currency, r.status, \
     r.reason, r.failure_reason, r.failure_balance_transaction, r.metadata, r.created, r.origin, r.idempotency_key, \
     c.payment_intent FROM refunds r JOIN charges c ON c.id = r.charge_id";

/// The wire shape of a refund (field order is the serialisation order).
#[derive(Debug, Clone, Serialize)]
pub struct RefundObject {
    pub id: String,
    pub object: &'static str,
    pub amount: i64,
    pub charge: String,
    pub currency: String,
    pub created: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_balance_transaction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub payment_intent: Option<String>,
    pub reason: Option<String>,
    pub status: String,
}

impl RefundRow {
    pub fn to_object(&self) -> RefundObject {
        RefundObject {
            id: self.id.clone(),
            object: "refund",
            amount: self.amount,
            charge: self.charge_id.clone(),
            currency: self.currency.clone(),
            created: self.created,
            failure_balance_transaction: self.failure_balance_transaction.clone(),
            failure_reason: self.failure_reason.clone(),
            metadata: serde_json::from_str(&self.metadata).unwrap_or_default(),
            payment_intent: self.payment_intent.clone(),
            reason: self.reason.clone(),
            status: self.status.clone(),
        }
    }
}

/// Statuses whose amount is reserved against the charge (counted in
/// `amount_refunded` and so in the remaining amount).
pub const RESERVING_STATUSES: [&str; 3] = ["succeeded", "pending", "requires_action"];

pub async fn find(conn: &mut SqliteConnection, id: &str) -> Result<Option<RefundRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{REFUND_SELECT} WHERE r.id = ?"
    )))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// What to refund: exactly one of `charge` and `payment_intent`.
#[derive(Debug, Clone)]
pub enum RefundTarget {
    Charge(String),
    PaymentIntent(String),
}

/// Validated params of `POST /v1/refunds`.
#[derive(Debug, Clone)]
pub struct CreateRefund {
    pub target: RefundTarget,
    pub amount: Option<i64>,
    pub currency: Option<Currency>,
    pub reason: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

const REASONS: [&str; 3] = ["duplicate", "fraudulent", "requested_by_customer"];

impl CreateRefund {
    /// Validation before execution: failures here are 400s that are never stored.
    pub fn parse(params: &FormParams) -> Result<Self, ApiError> {
        params.reject_unknown(&[
            "charge",
            "payment_intent",
            "amount",
            "currency",
            "reason",
            "metadata",
            "expand",
            "instructions_email",
            "refund_application_fee",
            "reverse_transfer",
        ])?;
        let non_empty = |name: &str| params.get(name).filter(|v| !v.is_empty());
        let target = match (non_empty("charge"), non_empty("payment_intent")) {
            (Some(charge), None) => RefundTarget::Charge(charge.to_owned()),
            (None, Some(pi)) => RefundTarget::PaymentIntent(pi.to_owned()),
            (None, None) => {
                return Err(ApiError::invalid_request(
                    "One of the following params should be provided for this request: payment_intent or charge.",
                )
                .with_code("parameter_missing")
                .with_param("charge"))
            }
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_request(
                    "You may only specify one of these parameters: charge, payment_intent.",
                )
                .with_code("parameters_exclusive")
                .with_param("payment_intent"))
            }
        };
        let currency = match params.get("currency") {
            None => None,
            Some(code) => Some(Currency::parse(code).ok_or_else(|| {
                ApiError::invalid_request(format!("Invalid currency: {code}"))
                    .with_param("currency")
            })?),
        };
        let reason = match params.get("reason") {
            None | Some("") => None,
            Some(reason) if REASONS.contains(&reason) => Some(reason.to_owned()),
            Some(reason) => {
                return Err(ApiError::invalid_request(format!(
                    "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer (got {reason})"
                ))
                .with_param("reason"))
            }
        };
        Ok(Self {
            target,
            amount: positive_integer(params, "amount")?,
            currency,
            reason,
            metadata: params.metadata()?,
        })
    }
}

/// Runs a validated refund creation inside the caller's transaction. Business
/// refusals are `Ok(Outcome)` with an error status: they are stored like successes.
impl Mutation for CreateRefund {
    fn execute<'a>(
        &'a self,
        conn: &'a mut SqliteConnection,
        state: &'a MockState,
        context: &'a ExecutionContext,
    ) -> BoxFuture<'a, Result<Outcome, sqlx::Error>> {
        Box::pin(execute_create(conn, state, self, context))
    }

    fn concerns<'a>(
        &'a self,
        conn: &'a mut SqliteConnection,
    ) -> BoxFuture<'a, Result<Concerned, sqlx::Error>> {
        Box::pin(async move {
            let charge = match &self.target {
                RefundTarget::Charge(id) => charges::find(conn, id).await?,
                RefundTarget::PaymentIntent(id) => {
                    charges::find_by_payment_intent(conn, id).await?
                }
            };
            Ok((charge, self.amount))
        })
    }
}

pub(crate) async fn execute_create(
    conn: &mut SqliteConnection,
    state: &MockState,
    params: &CreateRefund,
    context: &ExecutionContext,
) -> Result<Outcome, sqlx::Error> {
    let charge = match &params.target {
        RefundTarget::Charge(id) => charges::find(conn, id)
            .await?
            .ok_or_else(|| ApiError::missing("charge", id, "charge")),
        RefundTarget::PaymentIntent(id) => charges::find_by_payment_intent(conn, id)
            .await?
            .ok_or_else(|| ApiError::missing("payment_intent", id, "payment_intent")),
    };
    let charge = match charge {
        Ok(charge) => charge,
        Err(error) => return Ok(Outcome::error(error)),
    };
    if let Err(error) = check_refundable(&charge, params) {
        return Ok(Outcome::error(error));
    }
    let amount = params.amount.unwrap_or_else(|| charge.remaining());

    let status = match charge.refund_profile.as_str() {
        "pending" | "fail_later" => "pending",
        "requires_action" => "requires_action",
        _ => "succeeded",
    };
    let refund_id = new_id("re");
    sqlx::query(
        "INSERT INTO refunds (id, charge_id, amount, currency, status, reason, metadata, created, \
         origin, idempotency_key, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'api', ?, ?)",
    )
    .bind(&refund_id)
    .bind(&charge.id)
    .bind(amount)
    .bind(&charge.currency)
    .bind(status)
    .bind(&params.reason)
    .bind(to_json(&params.metadata))
    .bind(context.now)
    .bind(&context.idempotency_key)
    .bind(&context.request_id)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE charges SET amount_refunded = amount_refunded + ? WHERE id = ?")
        .bind(amount)
        .bind(&charge.id)
        .execute(&mut *conn)
        .await?;

    let refund = find(conn, &refund_id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?
        .to_object();
    let charge_after = charges::find(conn, &charge.id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?
        .to_object();
    let request = EventRequest {
        id: Some(context.request_id.clone()),
        idempotency_key: context.idempotency_key.clone(),
    };
    let pending_webhooks = i64::from(state.webhook_url().is_some());
    let refund_value = serde_json::to_value(&refund).map_err(|e| sqlx::Error::Decode(e.into()))?;
    let charge_value =
        serde_json::to_value(&charge_after).map_err(|e| sqlx::Error::Decode(e.into()))?;
    let previous = serde_json::json!({
        "amount_refunded": charge.amount_refunded,
        "refunded": charge.to_object().refunded,
    });
    events::record(
        conn,
        "refund.created",
        &refund_value,
        None,
        &request,
        context.now,
        pending_webhooks,
    )
    .await?;
    events::record(
        conn,
        "charge.refunded",
        &charge_value,
        Some(&previous),
        &request,
        context.now,
        pending_webhooks,
    )
    .await?;

    tracing::info!(refund_id = %refund_id, charge_id = %charge.id, amount, status, "refund created");
    Ok(Outcome {
        status: StatusCode::OK,
        body: to_json(&refund),
        refund_id: Some(refund_id),
    })
}

/// The business rules of payments.md §2.4 / §6.2, in order.
fn check_refundable(charge: &ChargeRow, params: &CreateRefund) -> Result<(), ApiError> {
    if charge.status == "failed" {
        return Err(ApiError::invalid_request(format!(
            "Charge {} has failed and cannot be refunded.",
            charge.id
        ))
        .with_code("charge_not_refundable"));
    }
    if charge.status != "succeeded" || !charge.captured {
        return Err(ApiError::invalid_request(format!(
            "Charge {} has not been captured and cannot be refunded.",
            charge.id
        ))
        .with_code("charge_not_refundable"));
    }
    if charge.disputed {
        return Err(ApiError::invalid_request(format!(
            "Charge {} has been charged back; cannot issue a refund.",
            charge.id
        ))
        .with_code("charge_disputed"));
    }
    if let Some(currency) = params.currency {
        if currency.code() != charge.currency {
            return Err(ApiError::invalid_request(format!(
                "Currency {} does not match the currency of charge {} ({}).",
                currency.code(),
                charge.id,
                charge.currency
            ))
            .with_param("currency"));
        }
    }
    let remaining = charge.remaining();
    if remaining == 0 {
        return Err(ApiError::invalid_request(format!(
            "Charge {} has already been refunded.",
            charge.id
        ))
        .with_code("charge_already_refunded"));
    }
    if let Some(amount) = params.amount {
        if amount > remaining {
            let major = |minor| match Currency::parse(&charge.currency) {
                Some(currency) => format_major(minor, currency),
                None => minor.to_string(),
            };
            // payments.md §2.4: `code` is absent by default (unverified upstream).
            return Err(ApiError::invalid_request(format!(
                "Refund amount (${}) is greater than unrefunded amount on charge (${})",
                major(amount),
                major(remaining)
            ))
            .with_param("amount"));
        }
    }
    Ok(())
}

/// `POST /v1/refunds`
pub async fn create(
    State(state): State<MockState>,
    api_key: ApiKey,
    request_id: RequestId,
    fault: Option<Extension<LayerFault>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = idempotency::PostRequest {
        api_key,
        request_id,
        path: "/v1/refunds".to_owned(),
        headers,
        query,
        body,
        fault: fault.map(|Extension(fault)| fault),
    };
    idempotency::run_post(&state, request, CreateRefund::parse).await
}

/// `GET /v1/refunds/{id}`
pub async fn retrieve(
    State(state): State<MockState>,
    _key: ApiKey,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let mut conn = state.pool().acquire().await?;
    match find(&mut conn, &id).await? {
        Some(refund) => Ok(json_response(StatusCode::OK, to_json(&refund.to_object()))),
        None => Err(ApiError::missing("refund", &id, "id")),
    }
}

/// `GET /v1/refunds?charge=&payment_intent=&created[gt|gte|lt|lte]=&limit=&starting_after=&ending_before=`,
/// newest first. No metadata filter (Stripe has none either).
pub async fn list(
    State(state): State<MockState>,
    _key: ApiKey,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = FormParams::from_query(query.as_deref())?;
    params.reject_unknown(&[
        "charge",
        "payment_intent",
        "created",
        "limit",
        "starting_after",
        "ending_before",
        "expand",
    ])?;
    let page = Page::from_params(&params)?;
    let created = CreatedRange::from_params(&params)?;
    // A charge filter gets its own statement so SQLite can use the
    // `(charge_id, created, seq)` index instead of scanning every refund.
    let rows: Vec<RefundRow> = match params.get("charge") {
        Some(charge) => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "{REFUND_SELECT} WHERE r.charge_id = ?1 \
                 AND (?2 IS NULL OR c.payment_intent = ?2) ORDER BY r.created DESC, r.seq DESC"
            )))
            .bind(charge)
            .bind(params.get("payment_intent"))
            .fetch_all(state.pool())
            .await?
        }
        None => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "{REFUND_SELECT} WHERE (?1 IS NULL OR c.payment_intent = ?1) \
                 ORDER BY r.created DESC, r.seq DESC"
            )))
            .bind(params.get("payment_intent"))
            .fetch_all(state.pool())
            .await?
        }
    };
    let rows: Vec<RefundRow> = rows
        .into_iter()
        .filter(|r| created.contains(r.created))
        .collect();
    let (rows, has_more) = page.apply(rows, |r| r.id.as_str(), "refund")?;
    let envelope = ListEnvelope {
        object: "list",
        url: "/v1/refunds",
        has_more,
        data: rows.iter().map(RefundRow::to_object).collect(),
    };
    Ok(json_response(StatusCode::OK, to_json(&envelope)))
}
