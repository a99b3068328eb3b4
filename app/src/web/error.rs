//! `AppError`: a [`DomainError`] as it answers a request — its status, and
//! `{"error": {"code", "message"}}`. The domain returns `DomainError` and knows no HTTP;
//! handlers and extractors return `AppError`, and `?` maps one into the other here, at the
//! web edge. Database and internal errors become an opaque 500 and are logged with their
//! context; nothing internal leaks to a client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;
use utoipa::{IntoResponses, ToSchema};

use crate::error::DomainError;

/// What a handler, extractor or page answers when it fails.
#[derive(Debug)]
pub struct AppError(pub DomainError);

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        AppError(DomainError::bad_request(code, message))
    }

    /// No valid bearer token or session.
    pub fn unauthorized() -> Self {
        AppError(DomainError::Unauthorized)
    }

    pub fn forbidden(message: String) -> Self {
        AppError(DomainError::Forbidden(message))
    }

    pub fn not_found(what: &'static str) -> Self {
        AppError(DomainError::NotFound(what))
    }

    pub fn status(&self) -> StatusCode {
        status_of(&self.0)
    }

    pub fn is_unauthorized(&self) -> bool {
        matches!(self.0, DomainError::Unauthorized)
    }
}

/// The status each domain failure answers with (SPEC §7).
pub fn status_of(e: &DomainError) -> StatusCode {
    match e {
        DomainError::BadRequest { .. } => StatusCode::BAD_REQUEST,
        DomainError::Unauthorized => StatusCode::UNAUTHORIZED,
        DomainError::Forbidden(_) => StatusCode::FORBIDDEN,
        DomainError::NotFound(_) => StatusCode::NOT_FOUND,
        DomainError::Conflict { .. } => StatusCode::CONFLICT,
        DomainError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        DomainError::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
        DomainError::Provider(_) => StatusCode::BAD_GATEWAY,
        DomainError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<DomainError> for AppError {
    fn from(e: DomainError) -> Self {
        AppError(e)
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        AppError(e.into())
    }
}

impl From<anyhow::Error> for AppError {
    fn from(e: anyhow::Error) -> Self {
        AppError(e.into())
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        if let DomainError::Internal(e) = &self.0 {
            tracing::error!(error = ?e, "internal error");
        }
        let body =
            json!({ "error": { "code": self.0.code(), "message": self.0.public_message() } });
        (self.status(), Json(body)).into_response()
    }
}

// ---------------------------------------------------------------------------------------
// The error shape as the OpenAPI document describes it (`openapi`).
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
