//! Fault rules applied (payments.md §6.4): the middleware that makes API calls misbehave
//! as `faults`' rules say, and the `/__mock/faults` endpoints that install, list and
//! remove them. Above the mock's state (it reads the registry `state` holds).

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path, Request, State};
use axum::http::header::{HeaderValue, CONTENT_TYPE};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::Rng;
use serde::Serialize;
use serde_json::Value;

use crate::connection::{ConnectionHandle, Cut};
use crate::faults::*;
use crate::state::MockState;
use crate::wire::{json_response, to_json, ApiError, FormParams, IDEMPOTENCY_KEY};

/// Requests up to this size are buffered to match `params` predicates.
const MAX_BODY: usize = 1024 * 1024;

/// Middleware applying API fault rules to every non-admin route.
pub async fn layer(State(state): State<MockState>, request: Request, next: Next) -> Response {
    let faults = state.faults();
    if request.uri().path().starts_with("/__mock") || !faults.has_request_rules() {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes: Bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::invalid_request("Request body too large or unreadable.")
                .into_response()
        }
    };
    let query = parts.uri.query();
    let params = FormParams::from_post(&parts.headers, query, &bytes)
        .or_else(|_| FormParams::from_query(query))
        .unwrap_or_default();
    let idempotency_key = parts
        .headers
        .get(IDEMPOTENCY_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned);
    let facts = RequestFacts {
        method: &parts.method,
        path: parts.uri.path(),
        params: &params,
        idempotency_key: idempotency_key.as_deref(),
    };
    let fired = faults.fire_request(&facts);
    let Some(fault) = fired else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let mode = fault.mode();
    tracing::info!(mode, path = %parts.uri.path(), "fault applied");
    let connection = parts
        .extensions
        .get::<ConnectInfo<ConnectionHandle>>()
        .map(|info| info.0.clone());
    let goes_through_layer = parts.method == Method::POST && idempotency_key.is_some();
    match fault {
        Fault::Latency {
            ms,
            jitter,
            hold_key,
        } => {
            let sleep = Duration::from_millis(ms + rand::thread_rng().gen_range(0..=jitter));
            if hold_key && goes_through_layer {
                parts.extensions.insert(LayerFault::HoldKey { sleep });
            } else {
                tokio::time::sleep(sleep).await;
            }
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Fault::FailBeforeCommit { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            match body {
                Some(body) => {
                    let is_json = serde_json::from_str::<Value>(&body).is_ok();
                    let mut response = json_response(status, body);
                    if !is_json {
                        response
                            .headers_mut()
                            .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
                    }
                    response
                }
                None => ApiError::new(
                    status,
                    "api_error",
                    format!(
                        "The request could not be completed ({}). It was not processed; retry it.",
                        status.canonical_reason().unwrap_or("server error")
                    ),
                )
                .into_response(),
            }
        }
        Fault::ConnectRefused => cut(connection, Cut::Close),
        Fault::ResetBeforeCommit => cut(connection, Cut::Reset),
        Fault::RateLimit { code } => rate_limited(code),
        Fault::ConflictInFlight => {
            crate::wire::in_flight_conflict(idempotency_key.as_deref().unwrap_or_default())
        }
        Fault::DropResponseAfterCommit { mode, ms } => {
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            if mode == DropMode::Hang {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            drop(response);
            cut(connection, Cut::Close)
        }
        Fault::ServerErrorAfterBegin {
            commit,
            should_retry,
        } => {
            parts.extensions.insert(LayerFault::ServerErrorAfterBegin {
                commit,
                should_retry,
            });
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Fault::BusinessError { code } => {
            parts.extensions.insert(LayerFault::BusinessError(code));
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Fault::ExpireKey => {
            parts.extensions.insert(LayerFault::ExpireKey);
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        // Webhook modes never match a request (see `Rule::matches_request`).
        _ => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

/// Kills the connection; the response returned is never written. Without a socket
/// (the router driven in-process) there is no connection to cut, so it says so.
fn cut(connection: Option<ConnectionHandle>, how: Cut) -> Response {
    match connection {
        Some(connection) => {
            connection.kill(how);
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
        None => {
            tracing::warn!("connection fault without a socket: answering 500 instead");
            ApiError::internal().into_response()
        }
    }
}

fn rate_limited(code: RateLimitCode) -> Response {
    let error = match code {
        RateLimitCode::RateLimit => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "invalid_request_error",
            "Too many requests hit the API too quickly. We recommend an exponential backoff \
             of your requests.",
        )
        .with_code("rate_limit"),
        RateLimitCode::LockTimeout => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "invalid_request_error",
            "This object cannot be accessed right now because another API request or Stripe \
             process is currently accessing it. If you see this error intermittently, retry \
             the request. If you see this error frequently and are making multiple concurrent \
             requests to a single object, make your requests serially or at a lower rate.",
        )
        .with_code("lock_timeout"),
    };
    let mut response = error.into_response();
    if code == RateLimitCode::LockTimeout {
        // stripe-go retries a 429 only when told to (payments.md §1.4).
        response.headers_mut().insert(
            crate::wire::STRIPE_SHOULD_RETRY,
            HeaderValue::from_static("true"),
        );
    }
    response
}

#[derive(Serialize)]
struct RulesView {
    rules: Vec<Rule>,
    /// Applications per mode since this process started.
    applied: BTreeMap<&'static str, u64>,
}

fn rules_view(state: &MockState) -> Response {
    let view = RulesView {
        rules: state.faults().rules(),
        applied: state.faults().applied(),
    };
    json_response(StatusCode::OK, to_json(&view))
}

/// `POST /__mock/faults` with a rule object or a list of them: appends them (all or
/// none) and answers like `GET`.
pub async fn install(State(state): State<MockState>, body: Bytes) -> Result<Response, ApiError> {
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::invalid_request(format!("invalid fault rules: {e}")))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut object) if object.contains_key("rules") => match object.remove("rules") {
            Some(Value::Array(items)) => items,
            _ => return Err(ApiError::invalid_request("rules must be a list")),
        },
        other => vec![other],
    };
    let mut rules = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let rule = Rule::parse(item)
            .map_err(|e| ApiError::invalid_request(format!("rules[{index}]: {e}")))?;
        rules.push(rule);
    }
    state.faults().install(rules);
    Ok(rules_view(&state))
}

/// `GET /__mock/faults`: installed rules with their counters.
pub async fn list(State(state): State<MockState>) -> Response {
    rules_view(&state)
}

/// `DELETE /__mock/faults`: removes every rule.
pub async fn clear(State(state): State<MockState>) -> Response {
    let removed = state.faults().clear();
    json_response(
        StatusCode::OK,
        to_json(&serde_json::json!({ "removed": removed })),
    )
}

/// `DELETE /__mock/faults/{id}`: removes one rule.
pub async fn remove(
    State(state): State<MockState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if state.faults().remove(&id) {
        Ok(json_response(
            StatusCode::OK,
            to_json(&serde_json::json!({ "removed": 1 })),
        ))
    } else {
        Err(ApiError::missing("fault rule", &id, "id"))
    }
}
