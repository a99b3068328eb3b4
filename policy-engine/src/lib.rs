//! The refund policy as a pure function: facts and policy versions in, a `Decision` out.
//!
//! This crate does no I/O and reads no clock: the ticket's date, the billing facts and
//! the policy texts are inputs. A denial is a `Decision` value, not an `Err`; errors are
//! for malformed input only.

pub mod document;
pub mod money;

use serde::{Deserialize, Serialize};

pub use document::{PolicyDocument, PolicyMeta, PolicySection, PolicyStatus};
pub use money::{Currency, Money};

/// Customer regions, each with its own cooling-off and hold-release periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Region {
    CN,
    US,
    EU,
    JP,
}

/// What an order bought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Product {
    AnnualPlan,
    MonthlyPlan,
    Addon,
}

/// Errors for malformed input. Policy outcomes are never errors.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("unknown currency '{0}'")]
    UnknownCurrency(String),
    #[error("invalid amount: {0}")]
    InvalidAmount(String),
    #[error("currency mismatch: {0} vs {1}")]
    CurrencyMismatch(Currency, Currency),
    #[error("policy document: {0}")]
    Document(String),
}
