//! The refund policy as a pure function: facts and policy versions in, a `Decision` out.
//!
//! This crate does no I/O and reads no clock: the ticket's date, the billing facts and
//! the policy texts are inputs. A denial is a `Decision` value, not an `Err`; errors are
//! for malformed input only.
//!
//! - [`document`] parses a policy version (Markdown with TOML front matter).
//! - [`rules`] parses the parameters beside it (`*.rules.toml`): windows, periods,
//!   thresholds and the clause each rule cites. No policy number lives in code.
//! - [`policy_set`] holds every version and answers "which version is in force".
//! - [`facts`] is the input of a decision, [`decision`] its output.
//! - [`engine`] is the decision itself: [`decide`] (live) and [`decide_with`] (what-if).

pub mod decision;
pub mod document;
pub mod engine;
pub mod facts;
pub mod money;
pub mod policy_set;
pub mod rules;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod testkit;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use decision::{Decision, Escalation, FiredRule, Outcome, ReasonCode, RefundLine, Role, Team};
pub use document::{parse_date, PolicyDocument, PolicyMeta, PolicySection, PolicyStatus};
pub use engine::{decide, decide_with};
pub use facts::{
    ChargeFacts, ChargeStatus, CustomerFacts, Facts, OrderFacts, Ownership, RefundFacts,
    RefundStatus, RequestKind,
};
pub use money::{Currency, Money};
pub use policy_set::{PolicySet, PolicySource};
pub use rules::PolicyRules;

/// Customer regions, each with its own cooling-off and hold-release periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Region {
    CN,
    US,
    EU,
    JP,
}

impl Region {
    pub const ALL: [Region; 4] = [Region::CN, Region::US, Region::EU, Region::JP];

    pub fn code(self) -> &'static str {
        match self {
            Region::CN => "CN",
            Region::US => "US",
            Region::EU => "EU",
            Region::JP => "JP",
        }
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl FromStr for Region {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Region::ALL
            .into_iter()
            .find(|r| r.code() == s)
            .ok_or_else(|| PolicyError::Rules(format!("unknown region '{s}'")))
    }
}

/// What an order bought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Product {
    AnnualPlan,
    MonthlyPlan,
    Addon,
}

impl Product {
    pub const ALL: [Product; 3] = [Product::AnnualPlan, Product::MonthlyPlan, Product::Addon];

    /// The snake-case name used in files and JSON (`annual_plan`).
    pub fn as_str(self) -> &'static str {
        match self {
            Product::AnnualPlan => "annual_plan",
            Product::MonthlyPlan => "monthly_plan",
            Product::Addon => "addon",
        }
    }
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Product {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Product::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| PolicyError::Rules(format!("unknown product '{s}'")))
    }
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
