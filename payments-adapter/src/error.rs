//! What the provider answered when it did not answer with the object asked for: its
//! error body, and [`ProviderError`], the adapter's one error, which says whether money
//! may have moved (`Unknown`, `StoredServerError`) or surely did not.
//!
//! What it deliberately does not do: decide what a failure means for a refund intent
//! (the desk's `refunds` does: docs/spec/payments.md, "What the adapter does with
//! answers").

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub(crate) struct ErrorEnvelope {
    pub(crate) error: ProviderErrorBody,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ProviderErrorBody {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub param: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The request may or may not have taken effect (timeout, lost response, replayed
    /// 5xx, in-flight conflict that never cleared). Reconcile; never resubmit blindly.
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// The provider answered a retry with a *replay* of a stored 5xx
    /// (`Idempotent-Replayed: true`): execution began under this key and its result is
    /// an error, final for the key. Still unknown whether money moved — only a look at
    /// the charge's refunds tells (payments.md §4.1) — but resending cannot change it.
    #[error("provider replays a stored {status} for this key: {message}")]
    StoredServerError { status: u16, message: String },
    /// The provider refused the request for a business reason (stored under the key).
    #[error("rejected ({status}): {}", .body.message)]
    Rejected {
        status: u16,
        body: ProviderErrorBody,
    },
    /// Same key, other parameters: our bug, never a "refund failed".
    #[error("idempotency key reused with other parameters: {0}")]
    IdempotencyMismatch(String),
    #[error("not found: {0}")]
    NotFound(String),
    /// A read failed (network, 5xx); safe to try again later.
    #[error("provider unavailable: {0}")]
    Unavailable(String),
    #[error("malformed provider response: {0}")]
    Malformed(String),
}
