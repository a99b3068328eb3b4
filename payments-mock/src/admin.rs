//! Admin endpoints under `/__mock/` (not Stripe; no auth): the ledger that tests use
//! to assert "exactly one refund", the fake clock, and the webhook endpoint.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;

use crate::refunds::{RefundObject, RefundRow, REFUND_SELECT};
use crate::state::MockState;
use crate::wire::{json_response, to_json, ApiError};

#[derive(Serialize)]
struct LedgerRefund {
    #[serde(flatten)]
    refund: RefundObject,
    /// `api` (created through `POST /v1/refunds`) or `world` (loaded).
    origin: String,
    idempotency_key: Option<String>,
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    api_key: String,
    idempotency_key: String,
    method: String,
    path: String,
    params: String,
    response_status: i64,
    refund_id: Option<String>,
    request_id: String,
    created: i64,
}

#[derive(Serialize)]
struct LedgerKey {
    idempotency_key: String,
    api_key: String,
    method: String,
    path: String,
    /// The canonical params as `[name, value]` pairs.
    params: Value,
    response_status: i64,
    refund_id: Option<String>,
    request_id: String,
    created: i64,
    expires_at: i64,
    expired: bool,
}

#[derive(Serialize)]
struct Counters {
    /// Refunds created through the API, per charge.
    refunds_created: BTreeMap<String, i64>,
    refunds_created_total: i64,
    /// Replays served since this process started.
    replays: u64,
    events: i64,
    /// Fault applications per mode since this process started (rules are in memory).
    faults_applied: BTreeMap<&'static str, u64>,
    faults_applied_total: u64,
    /// HTTP POSTs of events to the receiver (duplicate copies included).
    webhook_deliveries: i64,
    /// Events not (yet) delivered: pending, retrying, given up, or dropped.
    events_undelivered: i64,
}

#[derive(Serialize, sqlx::FromRow)]
struct LedgerEvent {
    id: String,
    #[serde(rename = "type")]
    #[sqlx(rename = "type")]
    event_type: String,
    created: i64,
    delivery_success: bool,
    attempts: i64,
    dropped: bool,
    /// The `request.idempotency_key` of the event.
    idempotency_key: Option<String>,
}

#[derive(Serialize, sqlx::FromRow)]
struct LedgerDelivery {
    event_id: String,
    attempt: i64,
    copy: i64,
    sent_at: i64,
    status: Option<i64>,
    error: Option<String>,
    fault: Option<String>,
}

#[derive(Serialize)]
struct Clock {
    now: i64,
    offset_seconds: i64,
}

#[derive(Serialize)]
struct Ledger {
    refunds: Vec<LedgerRefund>,
    idempotency_keys: Vec<LedgerKey>,
    events: Vec<LedgerEvent>,
    webhook_deliveries: Vec<LedgerDelivery>,
    counters: Counters,
    clock: Clock,
}

/// `GET /__mock/ledger`: every refund (oldest first), every stored idempotency key,
/// and side-effect counters.
/// What answers here: the emulator, which loads test worlds (`POST /__mock/world`). A
/// client that may write a world asks this first; a real provider has no such route
/// (`seed` refuses a real provider before it writes anything).
pub async fn about() -> Response {
    json_response(
        StatusCode::OK,
        serde_json::json!({ "object": "payments_mock", "loads_worlds": true }).to_string(),
    )
}

pub async fn ledger(State(state): State<MockState>) -> Result<Response, ApiError> {
    let pool = state.pool();
    let refunds: Vec<RefundRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{REFUND_SELECT} ORDER BY r.seq"
    )))
    .fetch_all(pool)
    .await?;
    let keys: Vec<KeyRow> = sqlx::query_as(
        "SELECT api_key, idempotency_key, method, path, params, response_status, refund_id, \
         request_id, created FROM idempotency_keys ORDER BY created, rowid",
    )
    .fetch_all(pool)
    .await?;
    let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events")
        .fetch_one(pool)
        .await?;

    let ledger_events: Vec<LedgerEvent> = sqlx::query_as(
        "SELECT id, type, created, delivery_success, attempts, dropped, \
         json_extract(payload, '$.request.idempotency_key') AS idempotency_key \
         FROM events ORDER BY seq",
    )
    .fetch_all(pool)
    .await?;
    let deliveries: Vec<LedgerDelivery> = sqlx::query_as(
        "SELECT event_id, attempt, copy, sent_at, status, error, fault FROM webhook_deliveries \
         ORDER BY seq",
    )
    .fetch_all(pool)
    .await?;
    let faults_applied = state.faults().applied();

    let mut refunds_created = BTreeMap::new();
    for refund in refunds.iter().filter(|r| r.origin == "api") {
        *refunds_created.entry(refund.charge_id.clone()).or_insert(0) += 1;
    }
    let now = state.clock().now();
    let ttl = i64::try_from(state.config().idempotency_ttl.as_secs()).unwrap_or(i64::MAX);
    let ledger = Ledger {
        counters: Counters {
            refunds_created_total: refunds_created.values().sum(),
            refunds_created,
            replays: state.replays(),
            events,
            faults_applied_total: faults_applied.values().sum(),
            faults_applied,
            webhook_deliveries: i64::try_from(deliveries.len()).unwrap_or(i64::MAX),
            events_undelivered: i64::try_from(
                ledger_events.iter().filter(|e| !e.delivery_success).count(),
            )
            .unwrap_or(i64::MAX),
        },
        events: ledger_events,
        webhook_deliveries: deliveries,
        refunds: refunds
            .iter()
            .map(|row| LedgerRefund {
                refund: row.to_object(),
                origin: row.origin.clone(),
                idempotency_key: row.idempotency_key.clone(),
            })
            .collect(),
        idempotency_keys: keys
            .into_iter()
            .map(|key| {
                let expires_at = key.created.saturating_add(ttl);
                LedgerKey {
                    params: serde_json::from_str(&key.params).unwrap_or(Value::Null),
                    idempotency_key: key.idempotency_key,
                    api_key: key.api_key,
                    method: key.method,
                    path: key.path,
                    response_status: key.response_status,
                    refund_id: key.refund_id,
                    request_id: key.request_id,
                    created: key.created,
                    expires_at,
                    expired: now >= expires_at,
                }
            })
            .collect(),
        clock: Clock {
            now,
            offset_seconds: state.clock().offset_seconds(),
        },
    };
    Ok(json_response(StatusCode::OK, to_json(&ledger)))
}

#[derive(serde::Deserialize)]
struct AdvanceClock {
    advance_seconds: i64,
}

/// `POST /__mock/clock {"advance_seconds": n}` → `{"now", "offset_seconds"}`. Moves
/// the fake clock forward (persisted), e.g. past an idempotency key's TTL.
pub async fn advance_clock(
    State(state): State<MockState>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let request: AdvanceClock = serde_json::from_slice(&body)
        .map_err(|e| ApiError::invalid_request(format!("invalid clock request: {e}")))?;
    if request.advance_seconds < 0 {
        return Err(
            ApiError::invalid_request("the clock only moves forward").with_param("advance_seconds")
        );
    }
    let offset = state
        .clock()
        .offset_seconds()
        .saturating_add(request.advance_seconds);
    sqlx::query("UPDATE clock SET offset_seconds = ? WHERE id = 1")
        .bind(offset)
        .execute(state.pool())
        .await?;
    state.clock().set_offset(offset);
    let clock = Clock {
        now: state.clock().now(),
        offset_seconds: offset,
    };
    Ok(json_response(StatusCode::OK, to_json(&clock)))
}

#[derive(serde::Deserialize)]
struct WebhookEndpoint {
    url: Option<String>,
}

/// `POST /__mock/webhooks {"url": "http://…" | null}` → `{"url"}`: where events
/// recorded from now on are delivered (for a receiver that starts after the mock).
pub async fn set_webhook_endpoint(
    State(state): State<MockState>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let request: WebhookEndpoint = serde_json::from_slice(&body)
        .map_err(|e| ApiError::invalid_request(format!("invalid webhook endpoint: {e}")))?;
    if let Some(url) = &request.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ApiError::invalid_request("url must be http(s)").with_param("url"));
        }
    }
    state.set_webhook_url(request.url);
    Ok(json_response(
        StatusCode::OK,
        to_json(&serde_json::json!({ "url": state.webhook_url() })),
    ))
}
