//! Where an escalation goes and who hears of it (docs/spec/roles.md, "Where an escalation
//! goes"). A case the policy reserves for supervisors waits in their queue and each of
//! them is told; any other escalation is the agents'. With round robin (the default,
//! `ESCALATION_ROUTING`) the worker gives each unassigned case of the agents' queue to
//! the present agent with the least on their plate, and tells them; with `queue` agents
//! take cases from the queue themselves. A case someone holds stays theirs.
//!
//! "Present" is signed in to the console now: an unexpired console session of an active
//! agent. Nobody present, the case waits in the agents' queue until someone is.

use sqlx::Row;

use super::queues::{IN_AGENTS_QUEUE, NEEDS_A_PERSON};
use super::{load_case_tx, team_queue, TeamQueue};
use crate::channels::{self, Notice};
use crate::error::{DomainError, DomainResult};
use store::{Db, Tx};

/// How the agents' queue is shared out (`ESCALATION_ROUTING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// Each case to the present agent with the fewest cases waiting on them, then the one
    /// given a case longest ago.
    #[default]
    RoundRobin,
    /// Cases wait in the agents' queue until an agent takes one.
    Queue,
}

impl Routing {
    pub fn parse(value: &str) -> Option<Routing> {
        match value.trim() {
            "round_robin" => Some(Routing::RoundRobin),
            "queue" => Some(Routing::Queue),
            _ => None,
        }
    }
}

/// An escalation was just written on `case_id`: the people it now waits for are told
/// (`why` says what it needs). The supervisors for their queue; for the agents' queue its
/// assignee when it has one, else whoever the worker gives it to ([`share_out`]).
pub async fn escalated(tx: &mut Tx<'_>, case_id: &str, why: &str, now: i64) -> DomainResult<()> {
    let case = load_case_tx(tx, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    match (team_queue(&case), case.assignee_id.as_deref()) {
        (Some(TeamQueue::Agents), Some(assignee)) => {
            let notice = Notice::StaffEscalation;
            channels::tell_staff(tx, notice, assignee, case_id, why, now).await
        }
        (Some(TeamQueue::Agents), None) => Ok(()),
        _ => channels::tell_supervisors(tx, case_id, why, now).await,
    }
}

/// Gives each unassigned case of the agents' queue that needs a person to a present
/// agent, round robin, oldest case first; returns how many were given. Nothing under
/// [`Routing::Queue`].
pub async fn share_out(db: &Db, routing: Routing, now: i64) -> DomainResult<usize> {
    // Nobody signed in (a night, a benchmark): nothing to read the queue for.
    if routing == Routing::Queue || !anyone_present(db, now).await? {
        return Ok(0);
    }
    let mut given = 0;
    for case_id in waiting_for_an_agent(db).await? {
        let mut tx = db.begin().await?;
        let Some(agent) = next_present_agent(&mut tx, now).await? else {
            break;
        };
        if give(&mut tx, &case_id, &agent, now).await? {
            given += 1;
        }
        tx.commit().await?;
    }
    Ok(given)
}

/// Whether any agent is signed in to the console now.
async fn anyone_present(db: &Db, now: i64) -> DomainResult<bool> {
    let present: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM auth_tokens t JOIN staff s ON s.id = t.subject_id
         WHERE t.kind = 'session' AND t.subject_kind = 'staff' AND t.expires_at > $1
           AND s.role = 'agent' AND s.deactivated_at IS NULL LIMIT 1",
    )
    .bind(now)
    .fetch_optional(db.reader())
    .await?;
    Ok(present.is_some())
}

/// The agents' queue's unassigned cases that need a person, oldest first.
async fn waiting_for_an_agent(db: &Db) -> DomainResult<Vec<String>> {
    let sql = format!(
        "SELECT c.id FROM cases c WHERE c.assignee_id IS NULL AND c.joined_into IS NULL
           AND {IN_AGENTS_QUEUE} AND {NEEDS_A_PERSON} ORDER BY c.created_at, c.id LIMIT 200"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(db.reader())
        .await?;
    rows.iter()
        .map(|r| r.try_get::<String, _>("id").map_err(Into::into))
        .collect()
}

/// The present agent to give the next case to: fewest cases waiting on them, then the
/// one given a case longest ago (never first), then by id.
async fn next_present_agent(tx: &mut Tx<'_>, now: i64) -> DomainResult<Option<String>> {
    let sql = format!(
        "SELECT id FROM (SELECT s.id,
           (SELECT COUNT(*) FROM cases c WHERE c.assignee_id = s.id AND {NEEDS_A_PERSON}) AS busy,
           (SELECT MAX(a.created_at) FROM audit_log a
             WHERE a.action = 'routed' AND a.detail = s.id) AS routed_at
         FROM staff s WHERE s.role = 'agent' AND s.deactivated_at IS NULL
           AND EXISTS (SELECT 1 FROM auth_tokens t WHERE t.kind = 'session'
               AND t.subject_kind = 'staff' AND t.subject_id = s.id AND t.expires_at > $1)) present
         ORDER BY busy, COALESCE(routed_at, -1), id LIMIT 1"
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now)
        .fetch_optional(&mut **tx)
        .await?;
    row.map(|r| r.try_get::<String, _>("id").map_err(Into::into))
        .transpose()
}

/// Gives `case_id` to `agent` if it is still unassigned, audited as routed, and tells them.
async fn give(tx: &mut Tx<'_>, case_id: &str, agent: &str, now: i64) -> DomainResult<bool> {
    let taken =
        sqlx::query("UPDATE cases SET assignee_id = $1 WHERE id = $2 AND assignee_id IS NULL")
            .bind(agent)
            .bind(case_id)
            .execute(&mut **tx)
            .await?;
    if taken.rows_affected() == 0 {
        return Ok(false);
    }
    crate::audit::record(tx, "system", "routed", case_id, agent, now).await?;
    let why = "the assistant escalated this case and it is yours (round robin)";
    channels::tell_staff(tx, Notice::StaffAssigned, agent, case_id, why, now).await?;
    Ok(true)
}
