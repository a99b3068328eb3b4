//! The refund policy's rules, one file per policy document: each file weighs its
//! document's clauses on the facts and records the rules that fire, citing them.
//!
//! The order in which they are weighed is `engine.rs`; the numbers they read (windows,
//! periods, thresholds, the clause each rule cites) come from each version's rules file
//! (`parameters`), never from a constant here. RP-005 (what the customer is told) has
//! no rules here: the desk's replies apply it.

pub(crate) mod rp001_charges;
pub(crate) mod rp001_definitions;
pub(crate) mod rp002_cancellation;
pub(crate) mod rp003_holds;
pub(crate) mod rp004_approval;
pub(crate) mod rp006_disputes;
pub(crate) mod rp007_ownership;
