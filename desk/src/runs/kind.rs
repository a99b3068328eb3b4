//! `EventKind`: what a run's event records — the harness's own kinds, the agent's answer,
//! and what the app writes around the loop. Stored by name in `run_events.kind`; a name
//! nobody writes is refused on load, never folded as something else.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::error::{DomainError, DomainResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// What the loop writes: model turns, tool calls, budgets, hand-offs, joins.
    Harness(harness::Kind),
    /// The agent's answer (`agent::Proposal`).
    Proposal,
    /// A sub-agent's answer (`agent::findings::Findings`).
    Findings,
    /// The run was made (its versions and parent).
    RunCreated,
    /// The run moved from one state to another.
    State,
    /// The policy engine's decision, with the index it cited.
    Decision,
    /// The engine's refunds differ from the model's proposal.
    ProposalOverridden,
    /// The proposal cited evidence no tool returned.
    EvidenceRejected,
    /// The case went to a human, with what was verified and what is open.
    Escalated,
    /// The payment provider was down when the facts were gathered.
    DependencyUnavailable,
    /// The stuck-run watchdog flagged the run.
    WatchdogFlagged,
}

/// The app's own kinds, beside the harness's (`harness::Kind::ALL`).
const APP: [EventKind; 10] = [
    EventKind::Proposal,
    EventKind::Findings,
    EventKind::RunCreated,
    EventKind::State,
    EventKind::Decision,
    EventKind::ProposalOverridden,
    EventKind::EvidenceRejected,
    EventKind::Escalated,
    EventKind::DependencyUnavailable,
    EventKind::WatchdogFlagged,
];

impl EventKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Harness(kind) => kind.as_str(),
            EventKind::Proposal => "proposal",
            EventKind::Findings => "findings",
            EventKind::RunCreated => "run_created",
            EventKind::State => "state",
            EventKind::Decision => "decision",
            EventKind::ProposalOverridden => "proposal_overridden",
            EventKind::EvidenceRejected => "evidence_rejected",
            EventKind::Escalated => "escalated",
            EventKind::DependencyUnavailable => "dependency_unavailable",
            EventKind::WatchdogFlagged => "watchdog_flagged",
        }
    }

    /// The kind a stored name is; a name nobody writes is an internal error.
    pub fn parse(name: &str) -> DomainResult<EventKind> {
        if let Some(kind) = harness::Kind::parse(name) {
            return Ok(EventKind::Harness(kind));
        }
        APP.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
            DomainError::Internal(anyhow::anyhow!("unknown run event kind {name:?}"))
        })
    }

    /// Every kind, the harness's first.
    pub fn all() -> impl Iterator<Item = EventKind> {
        harness::Kind::ALL
            .into_iter()
            .map(EventKind::Harness)
            .chain(APP)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Tests and views compare a kind with its stored name.
impl PartialEq<&str> for EventKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<harness::Kind> for EventKind {
    fn from(kind: harness::Kind) -> Self {
        EventKind::Harness(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_name_and_no_two_share_one() {
        let all: Vec<EventKind> = EventKind::all().collect();
        let names: std::collections::BTreeSet<&str> = all.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), all.len());
        for kind in all {
            assert_eq!(EventKind::parse(kind.as_str()).ok(), Some(kind));
        }
    }

    #[test]
    fn a_name_nobody_writes_is_refused() {
        assert!(EventKind::parse("model_outptu").is_err());
        assert!(EventKind::parse("").is_err());
    }
}
