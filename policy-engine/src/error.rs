//! The one error type of this crate: malformed input, never a denial (a denial is a
//! `Decision`). Currencies are named by their codes so this file depends on nothing.

/// Errors for malformed input. Policy outcomes are never errors.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("unknown currency '{0}'")]
    UnknownCurrency(String),
    #[error("invalid amount: {0}")]
    InvalidAmount(String),
    #[error("currency mismatch: {0} vs {1}")]
    CurrencyMismatch(&'static str, &'static str),
    #[error("policy document: {0}")]
    Document(String),
    /// A `*.rules.toml` file is malformed or does not match its policy text.
    #[error("policy rules: {0}")]
    Rules(String),
    /// The set of versions is inconsistent (duplicate versions, overlapping intervals).
    #[error("policy set: {0}")]
    PolicySet(String),
    /// A what-if run pinned a version that does not exist (`RP-001@9`) or is malformed.
    #[error("unknown policy version '{0}'")]
    UnknownVersion(String),
    /// A stored or sent name that is not a reason code or a role of `docs/spec/domain.md`.
    #[error("unknown {0} '{1}'")]
    UnknownName(&'static str, String),
}
