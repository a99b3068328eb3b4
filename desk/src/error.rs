//! `DomainError`: every failure a domain function can meet, as the domain names it — a
//! code and a message a caller may see, or an internal error that stays opaque. Domain
//! modules return it; the web edge wraps it in `web::error::AppError`, which alone knows
//! the HTTP status and body of each. Nothing here knows HTTP.

pub use domain::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// Malformed or invalid input (`code` names the problem, e.g. `invalid_json`).
    #[error("{message}")]
    BadRequest { code: ErrorCode, message: String },
    /// No valid credentials: an unknown, expired or revoked token or session.
    #[error("authentication required")]
    Unauthorized,
    /// Known principal, but its role or ownership does not allow this.
    #[error("{0}")]
    Forbidden(String),
    /// Unknown id, or an id the principal may not see (never says which).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// Stale state or a lost race: a changed fingerprint, a case in another status.
    #[error("{message}")]
    Conflict { code: ErrorCode, message: String },
    /// A message or body over its size limit.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// One principal asked too often (login throttle, ticket rate).
    #[error("too many requests")]
    TooManyRequests,
    /// The payment provider failed in a way the caller should know about.
    #[error("payment provider: {0}")]
    Provider(String),
    /// Anything else (database, template, bug): logged with its context, never shown.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl DomainError {
    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        DomainError::BadRequest {
            code,
            message: message.into(),
        }
    }

    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        DomainError::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            DomainError::BadRequest { code, .. } | DomainError::Conflict { code, .. } => *code,
            DomainError::Unauthorized => ErrorCode::Unauthorized,
            DomainError::Forbidden(_) => ErrorCode::Forbidden,
            DomainError::NotFound(_) => ErrorCode::NotFound,
            DomainError::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge,
            DomainError::TooManyRequests => ErrorCode::RateLimited,
            DomainError::Provider(_) => ErrorCode::ProviderError,
            DomainError::Internal(_) if self.is_unavailable() => ErrorCode::DatabaseUnavailable,
            DomainError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// Whether this failure is the database being out of reach (stopped, restarting,
    /// no connection free in time) rather than a bug: the same request may succeed when
    /// retried, so it answers 503 with `Retry-After`, not 500 (docs/spec/invariants.md: an outage answers 503).
    pub fn is_unavailable(&self) -> bool {
        let DomainError::Internal(e) = self else {
            return false;
        };
        e.chain()
            .filter_map(|cause| cause.downcast_ref::<sqlx::Error>())
            .any(database_out_of_reach)
    }

    /// The message a client may see.
    pub fn public_message(&self) -> String {
        match self {
            DomainError::Internal(_) if self.is_unavailable() => {
                "the database cannot be reached just now; try again in a few seconds".to_string()
            }
            DomainError::Internal(_) => "internal error".to_string(),
            other => other.to_string(),
        }
    }
}

/// A connection that could not be made or was cut (I/O, TLS, the pool's wait running
/// out or the pool closed), or PostgreSQL's own word for it: SQLSTATE class 08
/// (connection exception) and 57P01–57P03 (shutting down, crashed, starting up).
fn database_out_of_reach(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
        _ => false,
    }
}

/// Text offered as an id that is not one (empty, overlong, a control character): bad
/// input, refused before anything is written.
impl From<domain::ids::IdError> for DomainError {
    fn from(e: domain::ids::IdError) -> Self {
        DomainError::bad_request(ErrorCode::InvalidBody, e.to_string())
    }
}

/// A case status none of ours, named in a request: bad input.
impl From<domain::states::UnknownCaseStatus> for DomainError {
    fn from(e: domain::states::UnknownCaseStatus) -> Self {
        DomainError::bad_request(ErrorCode::InvalidStatus, e.to_string())
    }
}

/// A stored intent status none of ours: a corrupt row, never shown.
impl From<domain::states::CorruptIntentStatus> for DomainError {
    fn from(e: domain::states::CorruptIntentStatus) -> Self {
        DomainError::Internal(e.into())
    }
}

/// The mail tables' failures, as the desk names them: the database's own error kept (an
/// outage answers 503), a corrupt row opaque, a lost race on an outbox row a conflict.
impl From<mailbox::MailboxError> for DomainError {
    fn from(e: mailbox::MailboxError) -> Self {
        match e {
            mailbox::MailboxError::Database(e) => e.into(),
            mailbox::MailboxError::Corrupt(why) => DomainError::Internal(anyhow::anyhow!(why)),
            mailbox::MailboxError::NotFound(what) => DomainError::NotFound(what),
            mailbox::MailboxError::Changed(why) => {
                DomainError::conflict(ErrorCode::MailChanged, why)
            }
        }
    }
}

impl From<sqlx::Error> for DomainError {
    fn from(e: sqlx::Error) -> Self {
        DomainError::Internal(anyhow::Error::new(e).context("database"))
    }
}

pub type DomainResult<T> = Result<T, DomainError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailbox_failures_keep_their_meaning_in_the_desk() {
        let lost = DomainError::from(mailbox::MailboxError::Changed("taken"));
        assert_eq!(lost.code(), ErrorCode::MailChanged);
        let outage = DomainError::from(mailbox::MailboxError::Database(sqlx::Error::PoolTimedOut));
        assert!(outage.is_unavailable(), "an outage answers 503");
        let missing = DomainError::from(mailbox::MailboxError::NotFound("ticket"));
        assert_eq!(missing.code(), ErrorCode::NotFound);
        let corrupt = DomainError::from(mailbox::MailboxError::Corrupt("kind 'x'".into()));
        assert_eq!(corrupt.code(), ErrorCode::Internal);
    }
}
