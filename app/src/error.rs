//! `AppError`: every failure a request or a worker can meet, with its HTTP status.
//!
//! Clients get `{"error": {"code", "message"}}`. Database and internal errors become an
//! opaque 500 and are logged with their context; nothing internal leaks to a client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;
use utoipa::{IntoResponses, ToSchema};

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 400: malformed or invalid input (`code` names the problem, e.g. `invalid_json`).
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },
    /// 401: no valid credentials.
    #[error("authentication required")]
    Unauthorized,
    /// 403: authenticated, but this principal may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// 404: unknown id, or an id the principal may not see (never says which).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 409: the request raced or referred to stale state (stale fingerprint, wrong status).
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// 413: a message or body over the size limit.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 429: too many requests from one principal.
    #[error("too many requests")]
    TooManyRequests,
    /// 502: the payment provider failed in a way the caller should know about.
    #[error("payment provider: {0}")]
    Provider(String),
    /// 500: anything else; logged, never shown.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl AppError {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        AppError::BadRequest {
            code,
            message: message.into(),
        }
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        AppError::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Conflict { .. } => StatusCode::CONFLICT,
            AppError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            AppError::Provider(_) => StatusCode::BAD_GATEWAY,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            AppError::BadRequest { code, .. } | AppError::Conflict { code, .. } => code,
            AppError::Unauthorized => "unauthorized",
            AppError::Forbidden(_) => "forbidden",
            AppError::NotFound(_) => "not_found",
            AppError::PayloadTooLarge(_) => "payload_too_large",
            AppError::TooManyRequests => "rate_limited",
            AppError::Provider(_) => "provider_error",
            AppError::Internal(_) => "internal",
        }
    }

    /// The message a client may see.
    pub fn public_message(&self) -> String {
        match self {
            AppError::Internal(_) => "internal error".to_string(),
            other => other.to_string(),
        }
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        AppError::Internal(anyhow::Error::new(e).context("database"))
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        if let AppError::Internal(e) = &self {
            tracing::error!(error = ?e, "internal error");
        }
        let body = json!({ "error": { "code": self.code(), "message": self.public_message() } });
        (self.status(), Json(body)).into_response()
    }
}

pub type AppResult<T> = Result<T, AppError>;

// ---------------------------------------------------------------------------------------
// The error shape as the OpenAPI document describes it (`openapi`), beside the type that
// produces it, so handlers at every floor can name it.
// ---------------------------------------------------------------------------------------

/// `{"error": {"code", "message"}}`, the body of every error (SPEC §7).
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Machine-readable (`invalid_json`, `not_found`, `stale_fingerprint`, …).
    pub code: String,
    pub message: String,
}

/// The errors any API operation may answer with (a superset: each operation answers
/// those its rules produce). 500 is not listed: it is a bug, never an answer.
#[derive(IntoResponses)]
#[allow(dead_code)] // Only its derived documentation is used.
pub enum ApiErrors {
    /// Malformed or invalid input; `code` names the problem.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No valid bearer token or session.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// Authenticated, but this principal may not do this.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// Unknown id, or one the principal may not see.
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// Stale state: a changed fingerprint, a case in another status, a lost race.
    #[response(status = 409)]
    Conflict(ErrorBody),
    /// A body or message over the size limit.
    #[response(status = 413)]
    PayloadTooLarge(ErrorBody),
    /// Too many requests from one principal.
    #[response(status = 429)]
    TooManyRequests(ErrorBody),
    /// The payment provider failed in a way the caller should know about.
    #[response(status = 502)]
    Provider(ErrorBody),
}
