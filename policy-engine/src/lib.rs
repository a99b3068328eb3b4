//! The refund policy as a pure function: facts and policy versions in, a `Decision` out.
//!
//! This crate does no I/O and reads no clock: the ticket's date, the billing facts and
//! the policy texts are inputs. A denial is a `Decision` value, not an `Err`; errors are
//! for malformed input only.
//!
//! - [`document`] parses a policy version (Markdown with TOML front matter).
//! - [`parameters`] parses the numbers beside it (`*.rules.toml`): windows, periods,
//!   thresholds and the clause each rule cites. No policy number lives in code.
//! - [`agreement`] checks that a text's tables state the numbers of its rules, and
//!   renders them from the rules.
//! - [`policy_set`] holds every version and answers "which version is in force".
//! - [`facts`] is the input of a decision, [`decision`] its output.
//! - [`engine`] is the decision itself: [`decide`] (live) and [`decide_with`] (what-if),
//!   the order in which the policies are weighed; `rules/` holds one file per policy, its
//!   part of the decision; `trace` what every rule records (fired rules, facts, the
//!   decision built from them), `selection` which version of each policy applies.

pub mod agreement;
pub mod catalog;
pub mod decision;
pub mod document;
pub mod engine;
pub mod error;
pub mod facts;
pub mod money;
pub mod parameters;
pub mod policy_set;
mod rules;
mod selection;
mod trace;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod testkit;

pub use decision::{Decision, Escalation, FiredRule, Outcome, ReasonCode, RefundLine, Role, Team};
pub use document::{parse_date, PolicyDocument, PolicyMeta, PolicySection, PolicyStatus};
pub use engine::{decide, decide_with};
pub use facts::{
    ChargeFacts, ChargeStatus, CustomerFacts, Facts, OrderFacts, Ownership, RefundFacts,
    RefundStatus, RequestKind,
};
pub use money::{Currency, Money};
pub use parameters::PolicyRules;
pub use policy_set::{PolicySet, PolicySource};

pub use catalog::{Product, Region};
pub use error::PolicyError;
