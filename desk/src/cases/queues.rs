//! Whose queue a case is in (issue 38: nothing falls through). A case that needs a
//! person is either its assignee's or in a team queue: `agents` (an approval an agent
//! may give) or `supervisors` (an approval above an agent's limit, an escalation), as
//! docs/spec/interfaces.md names the `queue` field. [`open_in_nobodys_queue`] is the
//! invariant as one query, for the day-of-traffic test and the console.
//!
//! What it deliberately does not do: move a case. It reads; the workflow decides where
//! a case goes.

use domain::ids::CaseId;

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
/// SQL of [`open_in_nobodys_queue`] says the same thing (`IN_A_TEAM_QUEUE`).
pub fn team_queue(case: &Case) -> Option<TeamQueue> {
    team_queue_of(case.status, case.required_role)
}

/// [`team_queue`] of a status and the approver role a decision asks for.
pub fn team_queue_of(
    status: CaseStatus,
    required_role: Option<policy_engine::Role>,
) -> Option<TeamQueue> {
    use policy_engine::Role;
    match (status, required_role) {
        (CaseStatus::Escalated, _) => Some(TeamQueue::Supervisors),
        (CaseStatus::AwaitingApproval, Some(Role::Agent)) => Some(TeamQueue::Agents),
        (CaseStatus::AwaitingApproval, Some(Role::Supervisor | Role::Admin)) => {
            Some(TeamQueue::Supervisors)
        }
        _ => None,
    }
}

/// [`team_queue`] as SQL over `cases c`.
const IN_A_TEAM_QUEUE: &str = "(c.status = 'escalated'
     OR (c.status = 'awaiting_approval' AND c.required_role IN ('agent', 'supervisor', 'admin')))";

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
/// The invariant is that this is empty (issue 38); oldest first.
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

/// The hours each team queue usually answers within (issue 38): what the customer's
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
