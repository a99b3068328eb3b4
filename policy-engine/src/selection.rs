//! Which version of each policy document a decision applies, and why a decision may be
//! unable to apply one.
//!
//! The live decision takes the published version in force on the ticket's UTC date; a
//! what-if run pins some versions, a draft included (docs/spec/policies.md). This module
//! only chooses: it weighs no rule, and a missing version or rules file is a [`Stop`]
//! (an escalation with the reason), never a panic.

use std::collections::BTreeMap;

use time::Date;

use crate::error::PolicyError;
use crate::parameters::PolicyRules;
use crate::policy_set::{Citations, PolicySet};

/// Which version of each document this decision uses.
pub(crate) struct Selection<'a> {
    set: &'a PolicySet,
    on: Date,
    /// Document id → the index of its pinned version in `set`.
    pins: BTreeMap<String, usize>,
}

/// A policy version together with its parameters.
#[derive(Clone, Copy)]
pub(crate) struct Bound<'a> {
    pub(crate) rules: &'a PolicyRules,
    citations: &'a Citations,
}

/// Why a decision could not apply the policy; it becomes an escalation, never a panic.
pub(crate) enum Stop {
    Unavailable(String),
    Inconsistent(String),
}

impl From<PolicyError> for Stop {
    fn from(e: PolicyError) -> Self {
        Stop::Inconsistent(e.to_string())
    }
}

impl<'a> Selection<'a> {
    pub(crate) fn new(set: &'a PolicySet, on: Date, pins: BTreeMap<String, usize>) -> Self {
        Selection { set, on, pins }
    }

    /// The version of `doc_id` this decision applies, or why there is none to apply.
    pub(crate) fn get(&self, doc_id: &str) -> Result<Bound<'a>, Stop> {
        let index = match self.pins.get(doc_id) {
            Some(index) => *index,
            None => self.set.in_force_index(doc_id, self.on).ok_or_else(|| {
                Stop::Unavailable(format!("no version of {doc_id} is in force on {}", self.on))
            })?,
        };
        let (rules, citations) = self.set.at(index);
        let rules = rules.ok_or_else(|| {
            Stop::Unavailable(format!("{} came without a rules file", citations.version()))
        })?;
        Ok(Bound { rules, citations })
    }
}

impl<'a> Bound<'a> {
    /// `RP-001@2`.
    pub(crate) fn version(&self) -> &'a str {
        self.citations.version()
    }

    /// `RP-001@2#2.1`: the clause this version's rules file maps `key` to.
    pub(crate) fn cite(&self, key: &str) -> &'a str {
        self.citations.clause(key)
    }

    /// A rules family the engine needs from this version, or why it cannot decide.
    pub(crate) fn family<T>(&self, family: Option<&'a T>, name: &str) -> Result<&'a T, Stop> {
        family.ok_or_else(|| {
            Stop::Unavailable(format!("{} defines no [{name}] rules", self.version()))
        })
    }
}
