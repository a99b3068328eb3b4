//! `MailboxError`: what a read or write of the mail tables can meet. The desk maps it into
//! its `DomainError` (`desk::error`), which alone says what a caller is shown.
//!
//! What it deliberately does not do: name an HTTP status or hide the database's own error
//! (the desk tells an outage from a bug by it: docs/spec/invariants.md, an outage answers
//! 503).

#[derive(Debug, thiserror::Error)]
pub enum MailboxError {
    /// The database failed; kept whole, so an outage can be told from a bug.
    #[error("database")]
    Database(#[from] sqlx::Error),
    /// A stored row none of ours could have written (a kind, a recipient, an attachment's
    /// encoding): a corrupt row, never shown.
    #[error("corrupt mail row: {0}")]
    Corrupt(String),
    /// The row a write is about does not exist (a ticket).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The outbox row changed between its read and this versioned update: another sender
    /// took it.
    #[error("{0}")]
    Changed(&'static str),
}

pub type MailboxResult<T> = Result<T, MailboxError>;
