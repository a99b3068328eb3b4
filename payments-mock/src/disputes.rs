//! Disputes (`dp_…`): a cardholder contesting a charge with their bank. Opened and moved
//! by the admin API only (`POST /__mock/charges/{id}/dispute`), as a bank would, never
//! through `/v1`. Opening one marks the charge `disputed` (and it stays marked, as on
//! Stripe, whatever the dispute's end) and emits `charge.dispute.created`; a later
//! status emits `charge.dispute.updated`, or `charge.dispute.closed` for a final one.
//!
//! What it deliberately does not do: evidence, funds withdrawn or reinstated, balance
//! transactions, or `GET /v1/disputes` (the desk reads a dispute off its charge).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};

use crate::charges;
use crate::events::{Emitter, EventRequest};
use crate::state::MockState;
use crate::wire::{json_response, new_id, to_json, ApiError};

/// Stripe's dispute statuses; the last three are final.
const STATUSES: [&str; 8] = [
    "warning_needs_response",
    "warning_under_review",
    "needs_response",
    "under_review",
    "charge_refunded",
    "warning_closed",
    "won",
    "lost",
];
const FINAL: [&str; 3] = ["warning_closed", "won", "lost"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DisputeRequest {
    /// Default `needs_response`.
    status: Option<String>,
    /// Default `fraudulent`.
    reason: Option<String>,
}

#[derive(Serialize, sqlx::FromRow)]
struct DisputeRow {
    id: String,
    #[sqlx(rename = "charge_id")]
    charge: String,
    amount: i64,
    currency: String,
    status: String,
    reason: String,
    created: i64,
}

/// `POST /__mock/charges/{id}/dispute {"status"?, "reason"?}` → the dispute. Opens one
/// when the charge has none open, else moves the open one to `status`.
pub async fn dispute(
    State(state): State<MockState>,
    Path(charge_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: DisputeRequest = if body.is_empty() {
        DisputeRequest {
            status: None,
            reason: None,
        }
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid_request(format!("invalid dispute request: {e}")))?
    };
    let status = request.status.unwrap_or_else(|| "needs_response".into());
    if !STATUSES.contains(&status.as_str()) {
        return Err(ApiError::invalid_request(format!(
            "status must be one of {}",
            STATUSES.join(", ")
        ))
        .with_param("status"));
    }
    let mut tx = state.pool().begin_with("BEGIN IMMEDIATE").await?;
    let charge = charges::find(&mut tx, &charge_id)
        .await?
        .ok_or_else(|| ApiError::missing("charge", &charge_id, "charge"))?;
    let open: Option<DisputeRow> = sqlx::query_as(
        "SELECT id, charge_id, amount, currency, status, reason, created FROM disputes \
         WHERE charge_id = ? AND status NOT IN ('warning_closed', 'won', 'lost') \
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(&charge.id)
    .fetch_optional(&mut *tx)
    .await?;
    let now = state.clock().now();
    let (dispute, event_type, previous) = match open {
        None => {
            let row = DisputeRow {
                id: new_id("dp"),
                charge: charge.id.clone(),
                amount: charge.amount,
                currency: charge.currency.clone(),
                status: status.clone(),
                reason: request.reason.unwrap_or_else(|| "fraudulent".into()),
                created: now,
            };
            sqlx::query(
                "INSERT INTO disputes (id, charge_id, amount, currency, status, reason, created) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&row.id)
            .bind(&row.charge)
            .bind(row.amount)
            .bind(&row.currency)
            .bind(&row.status)
            .bind(&row.reason)
            .bind(row.created)
            .execute(&mut *tx)
            .await?;
            sqlx::query("UPDATE charges SET disputed = 1 WHERE id = ?")
                .bind(&charge.id)
                .execute(&mut *tx)
                .await?;
            (row, "charge.dispute.created", None)
        }
        Some(mut row) => {
            let previous = serde_json::json!({ "status": row.status });
            sqlx::query("UPDATE disputes SET status = ? WHERE id = ?")
                .bind(&status)
                .bind(&row.id)
                .execute(&mut *tx)
                .await?;
            row.status = status.clone();
            let kind = if FINAL.contains(&status.as_str()) {
                "charge.dispute.closed"
            } else {
                "charge.dispute.updated"
            };
            (row, kind, Some(previous))
        }
    };
    let object = dispute_object(&dispute);
    let event_request = EventRequest {
        id: None,
        idempotency_key: None,
    };
    Emitter::new(&state, &event_request, now)
        .emit(&mut tx, event_type, &object, previous.as_ref())
        .await?;
    tx.commit().await?;
    state.wake_webhooks();
    tracing::info!(charge_id = %charge.id, dispute_id = %dispute.id, status = %dispute.status, "dispute moved");
    Ok(json_response(StatusCode::OK, to_json(&object)))
}

/// The wire shape of a dispute (the fields Stripe always sends that the mock knows).
fn dispute_object(row: &DisputeRow) -> serde_json::Value {
    serde_json::json!({
        "id": row.id, "object": "dispute", "amount": row.amount, "charge": row.charge,
        "currency": row.currency, "created": row.created, "status": row.status,
        "reason": row.reason, "livemode": false, "metadata": {},
        "is_charge_refundable": false,
    })
}
