//! A refund after creation: `POST /v1/refunds/{id}` (metadata), `POST
//! /v1/refunds/{id}/cancel` (only from `requires_action`), and the admin
//! `POST /__mock/refunds/{id}/settle` that stands in for the card network deciding a
//! pending refund.
//!
//! Every transition runs in one transaction with its events (`refund.updated`,
//! `refund.failed`, `charge.refund.updated`, with `data.previous_attributes`), and the
//! charge's `amount_refunded` gives back the amount of a refund that fails or is
//! canceled, so the remaining refundable amount is right again.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;
use serde_json::{json, Value};
use sqlx::SqliteConnection;

use crate::charges;
use crate::events::{Emitter, EventRequest};
use crate::faults::LayerFault;
use crate::idempotency::{self, BoxFuture, Concerned, ExecutionContext, Mutation, Outcome};
use crate::refunds::{self, RefundRow};
use crate::state::MockState;
use crate::wire::{json_response, new_id, to_json, ApiError, ApiKey, FormParams, RequestId};

/// Validated params of `POST /v1/refunds/{id}`: metadata edits in request order.
#[derive(Debug, Clone)]
pub struct UpdateRefund {
    pub refund_id: String,
    /// `(key, Some(value))` sets, `(key, None)` unsets; `clear_all` (`metadata=`)
    /// applies first.
    pub changes: Vec<(String, Option<String>)>,
    pub clear_all: bool,
}

impl UpdateRefund {
    pub fn parse(refund_id: &str, params: &FormParams) -> Result<Self, ApiError> {
        params.reject_unknown(&["metadata", "expand"])?;
        let mut changes = Vec::new();
        let mut clear_all = false;
        for (name, value) in params.pairs() {
            if name == "metadata" {
                if !value.is_empty() {
                    return Err(ApiError::invalid_request(
                        "Invalid metadata: pass metadata[key]=value, or metadata= to unset all keys.",
                    )
                    .with_param("metadata"));
                }
                clear_all = true;
                changes.clear();
                continue;
            }
            let Some(rest) = name.strip_prefix("metadata") else {
                continue;
            };
            // The same limits as on creation (keys ≤ 40, values ≤ 500, no brackets).
            let key = rest
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .filter(|k| !k.is_empty() && !k.contains('[') && !k.contains(']'))
                .ok_or_else(|| {
                    ApiError::invalid_request(format!("Invalid metadata parameter: {name}"))
                        .with_param(name.clone())
                })?
                .to_owned();
            if key.chars().count() > 40 {
                return Err(ApiError::invalid_request(format!(
                    "Metadata keys can have up to 40 characters; '{key}' is too long."
                ))
                .with_param(name.clone()));
            }
            if value.chars().count() > 500 {
                return Err(ApiError::invalid_request(format!(
                    "Metadata values can have up to 500 characters, but you passed in a value that is {} characters long.",
                    value.chars().count()
                ))
                .with_param(name.clone()));
            }
            let value = (!value.is_empty()).then(|| value.clone());
            changes.push((key, value));
        }
        Ok(Self {
            refund_id: refund_id.to_owned(),
            changes,
            clear_all,
        })
    }
}

/// `POST /v1/refunds/{id}`: updates metadata (through the idempotency layer).
// An axum handler: each argument is an extractor.
#[allow(clippy::too_many_arguments)]
pub async fn update(
    State(state): State<MockState>,
    api_key: ApiKey,
    request_id: RequestId,
    fault: Option<Extension<LayerFault>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = idempotency::PostRequest {
        api_key,
        request_id,
        path: format!("/v1/refunds/{id}"),
        headers,
        query,
        body,
        fault: fault.map(|Extension(fault)| fault),
    };
    idempotency::run_post(&state, request, |params| UpdateRefund::parse(&id, params)).await
}

/// `POST /v1/refunds/{id}/cancel` (through the idempotency layer).
// An axum handler: each argument is an extractor.
#[allow(clippy::too_many_arguments)]
pub async fn cancel(
    State(state): State<MockState>,
    api_key: ApiKey,
    request_id: RequestId,
    fault: Option<Extension<LayerFault>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = idempotency::PostRequest {
        api_key,
        request_id,
        path: format!("/v1/refunds/{id}/cancel"),
        headers,
        query,
        body,
        fault: fault.map(|Extension(fault)| fault),
    };
    idempotency::run_post(&state, request, |params| {
        params.reject_unknown(&["expand"])?;
        Ok(CancelRefund(id.clone()))
    })
    .await
}

/// `POST /v1/refunds/{id}/cancel`, validated: the refund's id.
pub(crate) struct CancelRefund(pub String);

/// The charge a refund was made on: what a refusal of a change to it names.
async fn charge_of_refund(
    conn: &mut SqliteConnection,
    refund_id: &str,
) -> Result<Concerned, sqlx::Error> {
    let charge = match refunds::find(conn, refund_id).await? {
        Some(refund) => charges::find(conn, &refund.charge_id).await?,
        None => None,
    };
    Ok((charge, None))
}

impl Mutation for UpdateRefund {
    fn execute<'a>(
        &'a self,
        conn: &'a mut SqliteConnection,
        state: &'a MockState,
        context: &'a ExecutionContext,
    ) -> BoxFuture<'a, Result<Outcome, sqlx::Error>> {
        Box::pin(execute_update(conn, state, self, context))
    }

    fn concerns<'a>(
        &'a self,
        conn: &'a mut SqliteConnection,
    ) -> BoxFuture<'a, Result<Concerned, sqlx::Error>> {
        Box::pin(charge_of_refund(conn, &self.refund_id))
    }
}

impl Mutation for CancelRefund {
    fn execute<'a>(
        &'a self,
        conn: &'a mut SqliteConnection,
        state: &'a MockState,
        context: &'a ExecutionContext,
    ) -> BoxFuture<'a, Result<Outcome, sqlx::Error>> {
        Box::pin(execute_cancel(conn, state, &self.0, context))
    }

    fn concerns<'a>(
        &'a self,
        conn: &'a mut SqliteConnection,
    ) -> BoxFuture<'a, Result<Concerned, sqlx::Error>> {
        Box::pin(charge_of_refund(conn, &self.0))
    }
}

pub(crate) async fn execute_update(
    conn: &mut SqliteConnection,
    state: &MockState,
    params: &UpdateRefund,
    context: &ExecutionContext,
) -> Result<Outcome, sqlx::Error> {
    let Some(refund) = refunds::find(conn, &params.refund_id).await? else {
        return Ok(Outcome::error(ApiError::missing(
            "refund",
            &params.refund_id,
            "id",
        )));
    };
    let before: BTreeMap<String, String> =
        serde_json::from_str(&refund.metadata).unwrap_or_default();
    let mut after = if params.clear_all {
        BTreeMap::new()
    } else {
        before.clone()
    };
    for (key, value) in &params.changes {
        match value {
            Some(value) => after.insert(key.clone(), value.clone()),
            None => after.remove(key),
        };
    }
    if after.len() > 50 {
        return Ok(Outcome::error(
            ApiError::invalid_request("Metadata can have up to 50 keys.").with_param("metadata"),
        ));
    }
    if after != before {
        sqlx::query("UPDATE refunds SET metadata = ? WHERE id = ?")
            .bind(to_json(&after))
            .bind(&refund.id)
            .execute(&mut *conn)
            .await?;
        // Stripe lists the previous value of each changed key (null if it was new).
        let mut previous = serde_json::Map::new();
        for key in before.keys().chain(after.keys()) {
            if before.get(key) != after.get(key) {
                previous.insert(key.clone(), json!(before.get(key)));
            }
        }
        let request = context.event_request();
        let emitter = Emitter::new(state, &request, context.now);
        emit_refund_events(
            conn,
            &emitter,
            &refund.id,
            &json!({ "metadata": previous }),
            false,
        )
        .await?;
    }
    refund_outcome(conn, &refund.id).await
}

pub(crate) async fn execute_cancel(
    conn: &mut SqliteConnection,
    state: &MockState,
    refund_id: &str,
    context: &ExecutionContext,
) -> Result<Outcome, sqlx::Error> {
    let Some(refund) = refunds::find(conn, refund_id).await? else {
        return Ok(Outcome::error(ApiError::missing("refund", refund_id, "id")));
    };
    if refund.status != "requires_action" {
        // payments.md §6.2: the message is unverified upstream.
        return Ok(Outcome::error(ApiError::invalid_request(format!(
            "Refund {} cannot be canceled because it has a status of {}. Only refunds with a \
             status of requires_action can be canceled.",
            refund.id, refund.status
        ))));
    }
    set_status_and_release(conn, &refund, "canceled", None, None).await?;
    let request = context.event_request();
    let emitter = Emitter::new(state, &request, context.now);
    emit_refund_events(
        conn,
        &emitter,
        &refund.id,
        &json!({ "status": "requires_action" }),
        false,
    )
    .await?;
    refund_outcome(conn, &refund.id).await
}

/// Moves a refund to a final status and gives its amount back to the charge.
async fn set_status_and_release(
    conn: &mut SqliteConnection,
    refund: &RefundRow,
    status: &str,
    failure_reason: Option<&str>,
    failure_balance_transaction: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE refunds SET status = ?, failure_reason = ?, failure_balance_transaction = ? \
         WHERE id = ?",
    )
    .bind(status)
    .bind(failure_reason)
    .bind(failure_balance_transaction)
    .bind(&refund.id)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE charges SET amount_refunded = MAX(amount_refunded - ?, 0) WHERE id = ?")
        .bind(refund.amount)
        .bind(&refund.charge_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// `refund.updated` (+ `refund.failed`) + `charge.refund.updated` for the refund as
/// it is now.
async fn emit_refund_events(
    conn: &mut SqliteConnection,
    emitter: &Emitter<'_>,
    refund_id: &str,
    previous: &Value,
    failed: bool,
) -> Result<(), sqlx::Error> {
    let refund = refunds::find(conn, refund_id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?
        .to_object();
    let object = serde_json::to_value(&refund).map_err(|e| sqlx::Error::Decode(e.into()))?;
    emitter
        .emit(conn, "refund.updated", &object, Some(previous))
        .await?;
    if failed {
        emitter.emit(conn, "refund.failed", &object, None).await?;
    }
    emitter
        .emit(conn, "charge.refund.updated", &object, Some(previous))
        .await?;
    Ok(())
}

async fn refund_outcome(
    conn: &mut SqliteConnection,
    refund_id: &str,
) -> Result<Outcome, sqlx::Error> {
    let refund = refunds::find(conn, refund_id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    Ok(Outcome {
        status: StatusCode::OK,
        body: to_json(&refund.to_object()),
        refund_id: Some(refund.id),
    })
}

/// Failure reasons a settled refund may carry (payments.md §2.2).
const FAILURE_REASONS: [&str; 6] = [
    "lost_or_stolen_card",
    "expired_or_canceled_card",
    "charge_for_pending_refund_disputed",
    "insufficient_funds",
    "merchant_request",
    "unknown",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settle {
    /// `succeeded` or `failed`; default from the charge's refund profile
    /// (`fail_later` fails, anything else succeeds).
    outcome: Option<String>,
    failure_reason: Option<String>,
}

/// `POST /__mock/refunds/{id}/settle {"outcome":"succeeded"|"failed","failure_reason"?}`:
/// moves a `pending` refund to its final status. Admin-driven, so its events carry
/// `request: {id: null, idempotency_key: null}`.
pub async fn settle(
    State(state): State<MockState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: Settle = if body.is_empty() {
        Settle {
            outcome: None,
            failure_reason: None,
        }
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid_request(format!("invalid settle request: {e}")))?
    };
    if let Some(reason) = &request.failure_reason {
        if !FAILURE_REASONS.contains(&reason.as_str()) {
            return Err(ApiError::invalid_request(format!(
                "failure_reason must be one of {}",
                FAILURE_REASONS.join(", ")
            ))
            .with_param("failure_reason"));
        }
    }
    let mut tx = state.pool().begin_with("BEGIN IMMEDIATE").await?;
    let refund = refunds::find(&mut tx, &id)
        .await?
        .ok_or_else(|| ApiError::missing("refund", &id, "id"))?;
    if refund.status != "pending" {
        return Err(ApiError::invalid_request(format!(
            "Refund {id} has status {}; only pending refunds can be settled.",
            refund.status
        )));
    }
    let outcome = match request.outcome.as_deref() {
        Some(outcome @ ("succeeded" | "failed")) => outcome.to_owned(),
        Some(other) => {
            return Err(ApiError::invalid_request(format!(
                "outcome must be succeeded or failed (got {other})"
            ))
            .with_param("outcome"))
        }
        None => {
            let profile = charges::find(&mut tx, &refund.charge_id)
                .await?
                .map(|charge| charge.refund_profile)
                .unwrap_or_default();
            if profile == "fail_later" {
                "failed".to_owned()
            } else {
                "succeeded".to_owned()
            }
        }
    };
    if outcome == "succeeded" && request.failure_reason.is_some() {
        return Err(
            ApiError::invalid_request("failure_reason only applies to a failed outcome")
                .with_param("failure_reason"),
        );
    }
    let event_request = EventRequest {
        id: None,
        idempotency_key: None,
    };
    let emitter = Emitter::new(&state, &event_request, state.clock().now());
    if outcome == "succeeded" {
        sqlx::query("UPDATE refunds SET status = 'succeeded' WHERE id = ?")
            .bind(&refund.id)
            .execute(&mut *tx)
            .await?;
        emit_refund_events(
            &mut tx,
            &emitter,
            &refund.id,
            &json!({"status": "pending"}),
            false,
        )
        .await?;
    } else {
        let reason = request.failure_reason.as_deref().unwrap_or("unknown");
        // [UNVERIFIED] upstream: a failed refund no longer counts as refunded.
        set_status_and_release(
            &mut tx,
            &refund,
            "failed",
            Some(reason),
            Some(&new_id("txn")),
        )
        .await?;
        let previous = json!({
            "status": "pending",
            "failure_reason": null,
            "failure_balance_transaction": null,
        });
        emit_refund_events(&mut tx, &emitter, &refund.id, &previous, true).await?;
    }
    let settled = refunds::find(&mut tx, &refund.id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    tx.commit().await?;
    state.wake_webhooks();
    tracing::info!(refund_id = %refund.id, status = %settled.status, "refund settled");
    Ok(json_response(StatusCode::OK, to_json(&settled.to_object())))
}
