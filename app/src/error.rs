//! `AppError`: every failure a request or a worker can meet, as the domain names it —
//! a code and a message a client may see, or an internal error that stays opaque. The
//! web edge (`web::error`) gives each its HTTP status and body; nothing here knows HTTP.

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

pub type AppResult<T> = Result<T, AppError>;
