//! `AppError`: a [`DomainError`] as it answers a request — its status, and
//! `{"error": {"code", "message"}}`. The domain returns `DomainError` and knows no HTTP;
//! handlers and extractors return `AppError`, and `?` maps one into the other here, at the
//! web edge. A database out of reach answers 503 `database_unavailable` with `Retry-After`;
//! other database and internal errors become an opaque 500 and are logged with their
//! context; nothing internal leaks to a client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;
use utoipa::{IntoResponses, ToSchema};

use desk::error::{DomainError, ErrorCode};

/// Seconds a client is asked to wait when the database is out of reach (503).
pub const RETRY_AFTER_SECS: &str = "5";

/// What a handler, extractor or page answers when it fails.
#[derive(Debug)]
pub struct AppError(pub DomainError);

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
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

/// The status each domain failure answers with (docs/spec/interfaces.md).
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
        DomainError::Internal(_) if e.is_unavailable() => StatusCode::SERVICE_UNAVAILABLE,
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

/// The mail tables' failures, as the desk maps them (`desk::error`).
impl From<mailbox::MailboxError> for AppError {
    fn from(e: mailbox::MailboxError) -> Self {
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
        let unavailable = self.0.is_unavailable();
        if let DomainError::Internal(e) = &self.0 {
            if unavailable {
                tracing::warn!(error = %e, "database unavailable");
            } else {
                tracing::error!(error = ?e, "internal error");
            }
        }
        let body =
            json!({ "error": { "code": self.0.code(), "message": self.0.public_message() } });
        let mut response = (self.status(), Json(body)).into_response();
        if unavailable {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        response
    }
}

// ---------------------------------------------------------------------------------------
// The error shape as the OpenAPI document describes it (`openapi`).
// ---------------------------------------------------------------------------------------

/// `{"error": {"code", "message"}}`, the body of every error (docs/spec/interfaces.md).
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
    /// The database is out of reach just now (`database_unavailable`); retry after the
    /// seconds in `Retry-After`.
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    /// The status and `Retry-After` an error answers with.
    fn answer(e: AppError) -> (StatusCode, Option<String>) {
        let response = e.into_response();
        let retry = response
            .headers()
            .get(axum::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_string());
        (response.status(), retry)
    }

    #[test]
    fn a_database_out_of_reach_answers_503_with_retry_after_even_under_context() {
        for cut in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Io(std::io::ErrorKind::ConnectionRefused.into()),
        ] {
            let wrapped: anyhow::Result<()> = Err(cut).context("loading the queue");
            let e = AppError::from(wrapped.unwrap_err());
            assert_eq!(e.0.code(), "database_unavailable");
            assert!(!e.0.public_message().contains("loading the queue"));
            let (status, retry) = answer(e);
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(retry.as_deref(), Some(RETRY_AFTER_SECS));
        }
    }

    #[test]
    fn other_database_errors_stay_an_opaque_500() {
        let e = AppError::from(DomainError::from(sqlx::Error::RowNotFound));
        assert_eq!(e.0.code(), "internal");
        assert_eq!(e.0.public_message(), "internal error");
        let (status, retry) = answer(e);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(retry, None);
    }
}
