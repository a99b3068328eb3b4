//! `POST /api/v1/webhooks/payments`: provider events, signed with `Stripe-Signature`
//! (verified in constant time by `payments_adapter::signature`; no bearer token). What an event
//! does is `webhooks::process_event`.

use desk::error::ErrorCode;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{post, MethodRouter};
use axum::{Extension, Json};
use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use desk::webhooks::{process_event, Event, Outcome, TOLERANCE_SECS};

/// The secret that signs provider webhooks. Its `Debug` never shows it.
#[derive(Clone)]
pub struct WebhookSecret(Arc<str>);

impl WebhookSecret {
    pub fn new(secret: impl Into<String>) -> Self {
        WebhookSecret(Arc::from(secret.into()))
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(…)")
    }
}

/// The webhook route verifying with `secret`.
pub fn route_with_secret(secret: WebhookSecret) -> MethodRouter<AppState> {
    post(post_payments_webhook).layer(Extension(secret))
}

#[derive(Debug, Serialize)]
pub struct WebhookAck {
    pub received: bool,
    pub event_id: String,
    pub outcome: Outcome,
}

/// `POST /api/v1/webhooks/payments` (signed by the provider; no bearer token).
pub async fn post_payments_webhook(
    State(state): State<AppState>,
    Extension(secret): Extension<WebhookSecret>,
    headers: HeaderMap,
    body: Bytes,
) -> AppResult<Json<WebhookAck>> {
    let header = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let now_secs = state.clock.now_ms().div_euclid(1000);
    if let Err(e) =
        payments_adapter::signature::verify(&secret.0, header, &body, now_secs, TOLERANCE_SECS)
    {
        tracing::warn!(error = %e, "webhook refused: bad signature");
        desk::metrics::record_webhook("invalid_signature");
        return Err(AppError::bad_request(
            ErrorCode::InvalidSignature,
            e.to_string(),
        ));
    }
    let event: Event = serde_json::from_slice(&body).map_err(|e| {
        AppError::bad_request(
            ErrorCode::InvalidEvent,
            format!("not a provider event: {e}"),
        )
    })?;
    let outcome = process_event(state.sender(), &state.wake, &state.versions, &event).await?;
    desk::metrics::record_webhook(outcome.as_str());
    tracing::info!(event_id = %event.id, event_type = %event.kind, outcome = outcome.as_str(), "webhook processed");
    Ok(Json(WebhookAck {
        received: true,
        event_id: event.id,
        outcome,
    }))
}
