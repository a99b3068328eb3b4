//! How an `AppError` answers a request: its status, and `{"error": {"code", "message"}}`.
//! Database and internal errors become an opaque 500 and are logged with their context;
//! nothing internal leaks to a client.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;
use utoipa::{IntoResponses, ToSchema};

use crate::error::AppError;

impl AppError {
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
