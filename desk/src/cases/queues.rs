//! Whose queue a case is in (nothing falls through). A case that needs a
//! person is either its assignee's or in a team queue: `agents` (an approval an agent
//! may give, an escalation that is theirs) or `supervisors` (an approval above an agent's
//! limit, an escalation the policy reserves for them), as docs/spec/interfaces.md names
//! the `queue` field. [`open_in_nobodys_queue`] is the
//! invariant as one query, for the day-of-traffic test and the console.
//!
//! What it deliberately does not do: move a case. It reads; the workflow decides where
//! a case goes.

use domain::ids::CaseId;

use policy_engine::ReasonCode;

use super::{Case, CaseStatus};
use crate::columns::stored_id;
use crate::error::DomainResult;
use store::Db;

/// A team's queue (docs/spec/interfaces.md: `queue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeamQueue {
    Agents,
    Supervisors,
}

impl TeamQueue {
    pub fn as_str(self) -> &'static str {
        match self {
            TeamQueue::Agents => "agents",
            TeamQueue::Supervisors => "supervisors",
        }
    }
}

/// The team queue a case waits in, or `None` when no team is asked to act on it. The
/// SQL of [`open_in_nobodys_queue`] says the same thing (`IN_A_TEAM_QUEUE`), and
/// [`IN_SUPERVISORS_QUEUE`] which of the two it is.
pub fn team_queue(case: &Case) -> Option<TeamQueue> {
    team_queue_of(case.status, case.required_role, case.reason_code)
}

/// [`team_queue`] of a status, the approver role a decision asks for and its reason.
pub fn team_queue_of(
    status: CaseStatus,
    required_role: Option<policy_engine::Role>,
    reason: Option<ReasonCode>,
) -> Option<TeamQueue> {
    use policy_engine::Role;
    match (status, required_role) {
        (CaseStatus::Escalated, _) => Some(escalation_queue(required_role, reason)),
        (CaseStatus::AwaitingApproval, Some(Role::Agent)) => Some(TeamQueue::Agents),
        (CaseStatus::AwaitingApproval, Some(Role::Supervisor | Role::Admin)) => {
            Some(TeamQueue::Supervisors)
        }
        _ => None,
    }
}

/// What the policy reserves for supervisors when the assistant escalates
/// (docs/spec/roles.md, "Where an escalation goes"): another customer's order (RP-007),
/// a report outside the window, a decision the policy could not make (`other`), or money
/// above an agent's limit. Everything else — a dispute, a request the assistant cannot
/// read, a person asked for, a question that is not about money — is the agents'.
pub const SUPERVISORS_REASONS: [ReasonCode; 3] = [
    ReasonCode::OwnershipMismatch,
    ReasonCode::OutsideWindow,
    ReasonCode::Other,
];

fn escalation_queue(
    required_role: Option<policy_engine::Role>,
    reason: Option<ReasonCode>,
) -> TeamQueue {
    use policy_engine::Role;
    let above_an_agent = matches!(required_role, Some(Role::Supervisor | Role::Admin));
    match reason.is_some_and(|r| SUPERVISORS_REASONS.contains(&r)) || above_an_agent {
        true => TeamQueue::Supervisors,
        false => TeamQueue::Agents,
    }
}

/// [`team_queue`] as SQL over `cases c`.
const IN_A_TEAM_QUEUE: &str = "(c.status = 'escalated'
     OR (c.status = 'awaiting_approval' AND c.required_role IN ('agent', 'supervisor', 'admin')))";

/// `team_queue(case) == Some(TeamQueue::Supervisors)` as SQL over `cases c` (the reasons
/// are [`SUPERVISORS_REASONS`]; a unit test holds the two together).
pub(super) const IN_SUPERVISORS_QUEUE: &str = "(c.required_role IN ('supervisor', 'admin')
         AND c.status IN ('awaiting_approval', 'escalated')
     OR (c.status = 'escalated'
         AND c.reason_code IN ('ownership_mismatch', 'outside_window', 'other')))";

/// `team_queue(case) == Some(TeamQueue::Agents)` as SQL over `cases c`.
pub(super) const IN_AGENTS_QUEUE: &str = "((c.status = 'awaiting_approval' AND c.required_role = 'agent')
     OR (c.status = 'escalated' AND COALESCE(c.required_role, '') NOT IN ('supervisor', 'admin')
         AND COALESCE(c.reason_code, '') NOT IN ('ownership_mismatch', 'outside_window', 'other')))";

/// A case needs a person when it waits for one (an approval, an escalation), when it is
/// with the agent but no run of the agent is alive to move it, or when the customer had
/// the last word and no agent run will answer it (docs/spec/lifecycle.md: the customer is heard)
/// — unless their words are a mail that waits for its sender's confirmation
/// (docs/spec/email.md): that case waits for the customer, not for a person.
pub(super) const NEEDS_A_PERSON: &str = "(c.status IN ('awaiting_approval', 'escalated')
     OR (c.status IN ('open', 'investigating', 'proposed', 'decided')
         AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id AND r.status IN
             ('ready', 'model_running', 'tool_pending', 'tool_running', 'awaiting_approval', 'awaiting_dependency')))
     OR (c.status NOT IN ('open', 'investigating', 'proposed', 'decided')
         AND NOT EXISTS (SELECT 1 FROM mail_inbound i WHERE i.ticket_id = c.ticket_id AND i.status = 'unverified')
         AND EXISTS (SELECT 1 FROM messages m WHERE m.ticket_id = c.ticket_id AND m.author = 'customer'
             AND m.seq = (SELECT MAX(m2.seq) FROM messages m2 WHERE m2.ticket_id = c.ticket_id))))";

/// Every case that needs a person and is in nobody's queue: no assignee and no team
/// queue. A case joined into another is not here: its words go on to the other case.
/// The invariant is that this is empty; oldest first.
pub async fn open_in_nobodys_queue(db: &Db) -> DomainResult<Vec<CaseId>> {
    let sql = format!(
        "SELECT c.id FROM cases c
         WHERE c.assignee_id IS NULL AND c.joined_into IS NULL
           AND NOT {IN_A_TEAM_QUEUE} AND {NEEDS_A_PERSON}
         ORDER BY c.created_at, c.id"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(db.reader())
        .await?;
    rows.iter()
        .map(|r| stored_id(r, "id", CaseId::parse))
        .collect()
}

/// The hours each team queue usually answers within: what the customer's
/// page promises, in "usually" words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyTargets {
    pub agents_hours: u32,
    pub supervisors_hours: u32,
}

impl ReplyTargets {
    /// The target of a team queue.
    pub fn of(self, queue: TeamQueue) -> u32 {
        match queue {
            TeamQueue::Agents => self.agents_hours,
            TeamQueue::Supervisors => self.supervisors_hours,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_engine::Role;

    #[test]
    fn an_escalation_goes_to_the_supervisors_only_for_what_the_policy_reserves_for_them() {
        let escalated = |role, reason| team_queue_of(CaseStatus::Escalated, role, reason);
        for reason in SUPERVISORS_REASONS {
            assert_eq!(escalated(None, Some(reason)), Some(TeamQueue::Supervisors));
            // The SQL says the same.
            assert!(IN_SUPERVISORS_QUEUE.contains(&format!("'{}'", reason.as_str())));
            assert!(IN_AGENTS_QUEUE.contains(&format!("'{}'", reason.as_str())));
        }
        for reason in [
            ReasonCode::DisputeOpen,
            ReasonCode::InsufficientInfo,
            ReasonCode::NotEligible,
        ] {
            assert_eq!(
                escalated(None, Some(reason)),
                Some(TeamQueue::Agents),
                "{reason:?}"
            );
            assert_eq!(
                escalated(Some(Role::Agent), Some(reason)),
                Some(TeamQueue::Agents)
            );
        }
        assert_eq!(
            escalated(None, None),
            Some(TeamQueue::Agents),
            "a run that failed"
        );
        let above = escalated(Some(Role::Supervisor), Some(ReasonCode::DuplicateCharge));
        assert_eq!(
            above,
            Some(TeamQueue::Supervisors),
            "money above an agent's limit"
        );
        assert_eq!(
            team_queue_of(CaseStatus::AwaitingApproval, Some(Role::Agent), None),
            Some(TeamQueue::Agents)
        );
        assert_eq!(team_queue_of(CaseStatus::Denied, None, None), None);
    }
}
