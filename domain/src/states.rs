//! Lifecycle states as types (docs/spec/lifecycle.md), on the ground floor: a case's (`CaseStatus`: the
//! replies speak of them, `cases` stores them, the workflow moves them) and a refund
//! intent's (`IntentStatus`: `refunds` stores and moves them). Runs' are
//! `runs::RunStatus`, beside the harness phase they map to.

use serde::{Deserialize, Serialize};

/// A case status that is none of ours, named in a request: bad input
/// (`ErrorCode::InvalidStatus` where it reaches a caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown case status '{0}'")]
pub struct UnknownCaseStatus(pub String);

/// A refund intent's status that is none of ours, read from a stored row: a corrupt
/// row, an internal error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown intent status '{0}' in refund_intents")]
pub struct CorruptIntentStatus(pub String);

macro_rules! statuses {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// Case lifecycle states, named as in docs/spec/lifecycle.md.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum CaseStatus { $($variant),* }

        impl CaseStatus {
            pub fn as_str(self) -> &'static str {
                match self { $(CaseStatus::$variant => $name),* }
            }

            pub fn parse(s: &str) -> Result<CaseStatus, UnknownCaseStatus> {
                match s {
                    $($name => Ok(CaseStatus::$variant),)*
                    _ => Err(UnknownCaseStatus(s.to_string())),
                }
            }
        }
    };
}

statuses! {
    Open => "open",
    Investigating => "investigating",
    AwaitingCustomer => "awaiting_customer",
    Proposed => "proposed",
    Decided => "decided",
    Denied => "denied",
    Escalated => "escalated",
    AwaitingApproval => "awaiting_approval",
    Approved => "approved",
    Executing => "executing",
    PendingVerification => "pending_verification",
    RefundPending => "refund_pending",
    RefundSucceeded => "refund_succeeded",
    RefundFailed => "refund_failed",
    Replied => "replied",
    Closed => "closed",
    Cancelled => "cancelled",
    Rejected => "rejected",
}

impl CaseStatus {
    /// A case that came to its end (closed by hand, withdrawn): nothing more happens to
    /// it, so it cannot be closed again.
    pub fn is_at_rest(self) -> bool {
        matches!(self, CaseStatus::Closed | CaseStatus::Cancelled)
    }

    /// A case still working on its order: a second ticket about that order joins it
    /// instead of becoming a second refund case. A case at its end — refunded,
    /// failed, rejected, replied, closed, withdrawn — leaves a new ticket its own case.
    pub fn works_on_its_order(self) -> bool {
        !self.is_at_rest()
            && !matches!(
                self,
                CaseStatus::RefundSucceeded
                    | CaseStatus::RefundFailed
                    | CaseStatus::Rejected
                    | CaseStatus::Replied
            )
    }

    /// A case that came to a resolution the customer can rate (CSAT): refunded, answered,
    /// closed, or decided against. A withdrawn or failed case is not one. Exhaustive, so a
    /// new status must say.
    pub fn is_resolved(self) -> bool {
        match self {
            CaseStatus::RefundSucceeded
            | CaseStatus::Replied
            | CaseStatus::Closed
            | CaseStatus::Rejected
            | CaseStatus::Denied => true,
            CaseStatus::Open
            | CaseStatus::Investigating
            | CaseStatus::AwaitingCustomer
            | CaseStatus::Proposed
            | CaseStatus::Decided
            | CaseStatus::Escalated
            | CaseStatus::AwaitingApproval
            | CaseStatus::Approved
            | CaseStatus::Executing
            | CaseStatus::PendingVerification
            | CaseStatus::RefundPending
            | CaseStatus::RefundFailed
            | CaseStatus::Cancelled => false,
        }
    }

    /// Whether the customer can still withdraw: nothing has reached the provider and the
    /// case is not at its end. Exhaustive, so a new status must say.
    pub fn may_be_withdrawn(self) -> bool {
        match self {
            CaseStatus::Open
            | CaseStatus::Investigating
            | CaseStatus::Proposed
            | CaseStatus::Decided
            | CaseStatus::AwaitingCustomer
            | CaseStatus::AwaitingApproval
            | CaseStatus::Approved
            | CaseStatus::Escalated
            | CaseStatus::Denied
            | CaseStatus::Rejected => true,
            CaseStatus::Executing
            | CaseStatus::PendingVerification
            | CaseStatus::RefundPending
            | CaseStatus::RefundSucceeded
            | CaseStatus::RefundFailed
            | CaseStatus::Replied
            | CaseStatus::Closed
            | CaseStatus::Cancelled => false,
        }
    }

    /// Where the agent answered the customer itself and a person can take over when
    /// the customer asks ("talk to a person").
    pub fn may_go_to_a_person(self) -> bool {
        matches!(self, CaseStatus::AwaitingCustomer | CaseStatus::Denied)
    }

    /// A case whose decision was built from the conversation as it was, and waits: a new
    /// customer message voids it and the case is investigated again (docs/spec/invariants.md #2).
    pub fn reopens_on_customer_message(self) -> bool {
        matches!(
            self,
            CaseStatus::AwaitingApproval
                | CaseStatus::AwaitingCustomer
                | CaseStatus::Denied
                | CaseStatus::Escalated
        )
    }

    /// A case at its end that a customer's new words reopen for a person: closed,
    /// replied, rejected, withdrawn, or its refund settled either way. Money still moving
    /// is not here: its case is not at an end.
    pub fn resolved_but_open_to_words(self) -> bool {
        matches!(
            self,
            CaseStatus::Closed
                | CaseStatus::Replied
                | CaseStatus::Rejected
                | CaseStatus::Cancelled
                | CaseStatus::RefundSucceeded
                | CaseStatus::RefundFailed
        )
    }

    /// A refund was approved and is on its way to the provider or waiting for its answer
    /// (the executor's states): closing the case now would hide an outcome that is not
    /// known yet (docs/spec/invariants.md #5), so nobody closes it until the provider answers.
    pub fn has_refund_in_flight(self) -> bool {
        matches!(
            self,
            CaseStatus::Approved
                | CaseStatus::Executing
                | CaseStatus::PendingVerification
                | CaseStatus::RefundPending
        )
    }

    /// The status in words, as staff read it in the console.
    pub fn label(self) -> &'static str {
        match self {
            CaseStatus::Open => "Open",
            CaseStatus::Investigating => "Being investigated",
            CaseStatus::AwaitingCustomer => "Waiting for the customer",
            CaseStatus::Proposed => "Proposed",
            CaseStatus::Decided => "Decided",
            CaseStatus::Denied => "Denied by policy",
            CaseStatus::Escalated => "Escalated to a person",
            CaseStatus::AwaitingApproval => "Waiting for approval",
            CaseStatus::Approved => "Approved, refund queued",
            CaseStatus::Executing => "Refund being sent",
            CaseStatus::PendingVerification => "Refund being verified",
            CaseStatus::RefundPending => "Refund submitted, pending",
            CaseStatus::RefundSucceeded => "Refunded",
            CaseStatus::RefundFailed => "Refund failed",
            CaseStatus::Replied => "Replied",
            CaseStatus::Closed => "Closed",
            CaseStatus::Cancelled => "Withdrawn by the customer",
            CaseStatus::Rejected => "Rejected by a reviewer",
        }
    }
}

/// A refund intent's states (docs/spec/lifecycle.md), as stored in `refund_intents.status`. They only
/// move forward (`refunds::advance_intent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntentStatus {
    Created,
    Submitting,
    Pending,
    PendingVerification,
    NeedsReview,
    Succeeded,
    Failed,
    Canceled,
    Void,
}

impl IntentStatus {
    pub const ALL: [IntentStatus; 9] = [
        IntentStatus::Created,
        IntentStatus::Submitting,
        IntentStatus::Pending,
        IntentStatus::PendingVerification,
        IntentStatus::NeedsReview,
        IntentStatus::Succeeded,
        IntentStatus::Failed,
        IntentStatus::Canceled,
        IntentStatus::Void,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IntentStatus::Created => "created",
            IntentStatus::Submitting => "submitting",
            IntentStatus::Pending => "pending",
            IntentStatus::PendingVerification => "pending_verification",
            IntentStatus::NeedsReview => "needs_review",
            IntentStatus::Succeeded => "succeeded",
            IntentStatus::Failed => "failed",
            IntentStatus::Canceled => "canceled",
            IntentStatus::Void => "void",
        }
    }

    /// The status in words, as staff read it in the console (a refund's own status, not
    /// the customer's RP-005 wording).
    pub fn label(self) -> &'static str {
        match self {
            IntentStatus::Created => "Approved, not sent yet",
            IntentStatus::Submitting => "Being sent",
            IntentStatus::Pending => "Submitted, pending",
            IntentStatus::PendingVerification => "Being verified",
            IntentStatus::NeedsReview => "Needs a person's review",
            IntentStatus::Succeeded => "Refunded",
            IntentStatus::Failed => "Failed",
            IntentStatus::Canceled => "Canceled",
            IntentStatus::Void => "Never sent (void)",
        }
    }

    /// A stored status; anything else is a corrupt row, an internal error.
    pub fn from_stored(s: &str) -> Result<IntentStatus, CorruptIntentStatus> {
        IntentStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| CorruptIntentStatus(s.to_string()))
    }
}

impl std::fmt::Display for IntentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for IntentStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_intent_status_reads_back_from_its_stored_name() {
        for status in IntentStatus::ALL {
            assert_eq!(IntentStatus::from_stored(status.as_str()).unwrap(), status);
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::Value::from(status.as_str())
            );
        }
        assert!(IntentStatus::from_stored("refunded").is_err());
    }
}
