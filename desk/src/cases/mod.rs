//! Cases: the refund work on a ticket, its lifecycle (docs/spec/lifecycle.md), and its fingerprint.
//!
//! Every status change is a versioned update (`WHERE id = $x AND version = $y`), so two
//! workers or two reviewers can never both move the same case. The fingerprint binds an
//! approval to the exact refund parameters (docs/spec/invariants.md #2).

mod approvals;
pub use approvals::{approval_carried_out, record_approval, record_found_approval, use_approval};
mod fingerprint;
pub use fingerprint::{decision_fingerprint, fingerprint, FingerprintInput, FingerprintRefund};
mod decision;
pub use decision::{record_decision, DecisionRecord, ProposalChange, RecordedDecision, VoidReason};
mod lease;
mod notes;
pub use notes::{add_note, notes, NoteView};
mod closing;
mod list;
mod queues;
pub mod routing;
pub use list::{count_cases, list_cases, parse_cursor, CaseQuery};
pub mod sla;
pub use queues::{open_in_nobodys_queue, team_queue, team_queue_of, ReplyTargets, TeamQueue};
mod joining;
pub(crate) use approvals::void_approvals;
pub use closing::{assign, close};
pub use joining::{claim_order, join_into, joined_cases, OrderClaim};
pub(crate) use lease::{claim_case, release_case};

use crate::columns::{stored_id, stored_name, stored_opt_id};
use domain::ids::{CaseId, CustomerId, RunId, TicketId};
use sqlx::Row;

use crate::error::{DomainError, DomainResult};
use crate::runs;
use crate::tickets::Ticket;
use store::{new_id, Db, Tx};

pub use crate::states::CaseStatus;

#[derive(Debug, Clone)]
pub struct Case {
    pub id: CaseId,
    pub ticket_id: TicketId,
    pub customer_id: CustomerId,
    pub status: CaseStatus,
    pub version: i64,
    pub proposal_seq: i64,
    pub run_id: Option<RunId>,
    pub proposal: Option<String>,
    pub facts: Option<String>,
    pub decision: Option<String>,
    pub evidence_hash: Option<String>,
    pub fingerprint: Option<String>,
    pub required_role: Option<policy_engine::Role>,
    pub reason_code: Option<policy_engine::ReasonCode>,
    pub refund_total_minor: Option<i64>,
    pub currency: Option<policy_engine::Currency>,
    pub void_reason: Option<String>,
    pub policy_index: Option<String>,
    /// The staff member working on the case (take, assign to).
    pub assignee_id: Option<String>,
    /// Why a supervisor closed the case by hand.
    pub close_reason: Option<String>,
    /// The case this one was joined into: a second ticket about the same order.
    pub joined_into: Option<String>,
    /// When the customer asked for a person: the case stays with people from then on.
    pub person_requested_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const CASE_COLUMNS: &str = "id, ticket_id, customer_id, status, version, proposal_seq, run_id, proposal, facts, decision, \
     evidence_hash, fingerprint, required_role, reason_code, refund_total_minor, currency, void_reason, policy_index, assignee_id, close_reason, joined_into, person_requested_at, created_at, updated_at";

fn case_from_row(r: &sqlx::any::AnyRow) -> DomainResult<Case> {
    Ok(Case {
        id: stored_id(r, "id", CaseId::parse)?,
        ticket_id: stored_id(r, "ticket_id", TicketId::parse)?,
        customer_id: stored_id(r, "customer_id", CustomerId::parse)?,
        status: CaseStatus::parse(&r.try_get::<String, _>("status")?)?,
        version: r.try_get("version")?,
        proposal_seq: r.try_get("proposal_seq")?,
        run_id: stored_opt_id(r, "run_id", RunId::parse)?,
        proposal: r.try_get("proposal")?,
        facts: r.try_get("facts")?,
        decision: r.try_get("decision")?,
        evidence_hash: r.try_get("evidence_hash")?,
        fingerprint: r.try_get("fingerprint")?,
        required_role: stored_name(r, "required_role")?,
        reason_code: stored_name(r, "reason_code")?,
        refund_total_minor: r.try_get("refund_total_minor")?,
        currency: stored_name(r, "currency")?,
        void_reason: r.try_get("void_reason")?,
        policy_index: r.try_get("policy_index")?,
        assignee_id: r.try_get("assignee_id")?,
        close_reason: r.try_get("close_reason")?,
        joined_into: r.try_get("joined_into")?,
        person_requested_at: r.try_get("person_requested_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

impl Case {
    pub fn decision(&self) -> Option<policy_engine::Decision> {
        self.decision
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
    }
}

pub async fn load_case(db: &Db, case_id: &str) -> DomainResult<Option<Case>> {
    load_case_from(db.pool(), case_id).await
}

/// Loads a case for showing it, on the read pool.
pub async fn load_case_to_show(db: &Db, case_id: &str) -> DomainResult<Option<Case>> {
    load_case_from(db.reader(), case_id).await
}

async fn load_case_from(
    pool: impl sqlx::Executor<'_, Database = sqlx::Any>,
    case_id: &str,
) -> DomainResult<Option<Case>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE id = $1"
    )))
    .bind(case_id)
    .fetch_optional(pool)
    .await?;
    row.as_ref().map(case_from_row).transpose()
}

/// Cases holding the facts of a decision and updated since `since_ms` (a what-if of
/// recent live decisions): every case decided in the window is among them, as
/// are cases decided earlier and touched since (replied, closed). Oldest first, at most
/// `limit`.
pub async fn with_facts_since(db: &Db, since_ms: i64, limit: i64) -> DomainResult<Vec<Case>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE facts IS NOT NULL AND updated_at >= $1
         ORDER BY created_at, id LIMIT $2"
    )))
    .bind(since_ms)
    .bind(limit)
    .fetch_all(db.reader())
    .await?;
    rows.iter().map(case_from_row).collect()
}

pub async fn load_case_tx(tx: &mut Tx<'_>, case_id: &str) -> DomainResult<Option<Case>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE id = $1"
    )))
    .bind(case_id)
    .fetch_optional(&mut **tx)
    .await?;
    row.as_ref().map(case_from_row).transpose()
}

pub async fn case_for_ticket(db: &Db, ticket_id: &str) -> DomainResult<Option<Case>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE ticket_id = $1"
    )))
    .bind(ticket_id)
    .fetch_optional(db.reader())
    .await?;
    row.as_ref().map(case_from_row).transpose()
}

pub async fn case_for_ticket_tx(tx: &mut Tx<'_>, ticket_id: &str) -> DomainResult<Option<Case>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE ticket_id = $1"
    )))
    .bind(ticket_id)
    .fetch_optional(&mut **tx)
    .await?;
    row.as_ref().map(case_from_row).transpose()
}

/// Opens the case of a new ticket with its first run, ready for a worker.
pub async fn open_case(
    tx: &mut Tx<'_>,
    versions: &harness::Versions,
    ticket: &Ticket,
    now: i64,
) -> DomainResult<String> {
    let case_id = new_id("case");
    sqlx::query(
        "INSERT INTO cases (id, ticket_id, customer_id, status, version, proposal_seq, created_at, updated_at)
         VALUES ($1, $2, $3, 'investigating', 1, 1, $4, $4)",
    )
    .bind(&case_id)
    .bind(ticket.id.as_str())
    .bind(ticket.customer_id.as_str())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    let run_id = runs::create_run(tx, versions, &case_id, now).await?;
    sqlx::query("UPDATE cases SET run_id = $1 WHERE id = $2")
        .bind(&run_id)
        .bind(&case_id)
        .execute(&mut **tx)
        .await?;
    Ok(case_id)
}

/// Opens the case of a ticket whose first words are a mail that does not prove its
/// sender (docs/spec/email.md): it waits for the customer with no agent run, so nothing
/// is investigated or proposed until [`start_investigation`].
pub async fn open_case_waiting_for_sender(
    tx: &mut Tx<'_>,
    ticket: &Ticket,
    now: i64,
) -> DomainResult<String> {
    let case_id = new_id("case");
    sqlx::query(
        "INSERT INTO cases (id, ticket_id, customer_id, status, version, proposal_seq, created_at, updated_at)
         VALUES ($1, $2, $3, 'awaiting_customer', 1, 1, $4, $4)",
    )
    .bind(&case_id)
    .bind(ticket.id.as_str())
    .bind(ticket.customer_id.as_str())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(case_id)
}

/// A case that waited with no run starts its first investigation (a versioned update).
pub async fn start_investigation(
    tx: &mut Tx<'_>,
    versions: &harness::Versions,
    case: &Case,
    now: i64,
) -> DomainResult<()> {
    let run_id = runs::create_run(tx, versions, &case.id, now).await?;
    let done = sqlx::query(
        "UPDATE cases SET status = 'investigating', version = version + 1, run_id = $1, updated_at = $2
         WHERE id = $3 AND version = $4",
    )
    .bind(&run_id)
    .bind(now)
    .bind(case.id.as_str())
    .bind(case.version)
    .execute(&mut **tx)
    .await?;
    expect_versioned(&done)
}

/// The error code of a versioned case update that found the case changed since it was
/// read (another worker, reviewer or customer moved it). The caller's transaction must
/// roll back: nothing it wrote stands.
pub const CASE_CHANGED: crate::error::ErrorCode = crate::error::ErrorCode::CaseChanged;

/// The conflict a lost versioned case update reports (see [`CASE_CHANGED`]).
pub fn case_changed() -> DomainError {
    DomainError::conflict(CASE_CHANGED, "the case changed meanwhile; reload it")
}

/// Whether an error is a lost versioned case update (see [`CASE_CHANGED`]).
pub fn is_case_changed(error: &DomainError) -> bool {
    matches!(error, DomainError::Conflict { code, .. } if *code == CASE_CHANGED)
}

/// The outcome of a versioned case update (`… WHERE id = $x AND version = $y`): it moved
/// exactly the one case, or the case changed since it was read and [`case_changed`].
pub fn expect_versioned(done: &sqlx::any::AnyQueryResult) -> DomainResult<()> {
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(case_changed())
    }
}

/// The versioned update every case change goes through: `sets` (assignments of this
/// module's, never of input, naming `values` as `$1…`), then the version bumped and the
/// time stamped, only if nobody moved the case since `case.version` was read.
async fn update_case(
    tx: &mut Tx<'_>,
    case: &Case,
    sets: &str,
    values: &[&str],
    now: i64,
) -> DomainResult<()> {
    let n = values.len();
    let sql = format!(
        "UPDATE cases SET {sets}, version = version + 1, updated_at = ${} WHERE id = ${} AND version = ${}",
        n + 1,
        n + 2,
        n + 3
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for value in values {
        query = query.bind(*value);
    }
    let done = query
        .bind(now)
        .bind(case.id.as_str())
        .bind(case.version)
        .execute(&mut **tx)
        .await?;
    expect_versioned(&done)
}

/// Moves a case to `to` if nobody moved it since `case.version` was read.
pub async fn transition(
    tx: &mut Tx<'_>,
    case: &Case,
    to: CaseStatus,
    now: i64,
) -> DomainResult<i64> {
    update_case(tx, case, "status = $1", &[to.as_str()], now).await?;
    tracing::info!(case_id = %case.id, from = case.status.as_str(), to = to.as_str(), "case transition");
    Ok(case.version + 1)
}

/// The case goes to a human (`why` is kept as its void reason). Versioned.
pub async fn escalate(tx: &mut Tx<'_>, case: &Case, why: &str, now: i64) -> DomainResult<()> {
    update_case(
        tx,
        case,
        "status = 'escalated', void_reason = $1",
        &[why],
        now,
    )
    .await
}

/// The customer asked for a person: the case is escalated and marked, so their next
/// message does not hand it back to the agent (`take_customer_message`).
pub async fn escalate_to_person(
    tx: &mut Tx<'_>,
    case: &Case,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    let at = now.to_string();
    update_case(
        tx,
        case,
        "status = 'escalated', void_reason = $1, person_requested_at = CAST($2 AS BIGINT)",
        &[why, &at],
        now,
    )
    .await
}

/// The customer asked for a person on a case that stays where it is (a refund awaiting
/// approval goes back to investigation and returns there): the request is kept on the
/// case, shown on its row and page, until a person writes to them (docs/spec/roles.md,
/// "A person requested"). Versioned.
pub async fn mark_person_requested(tx: &mut Tx<'_>, case: &Case, now: i64) -> DomainResult<()> {
    let at = now.to_string();
    let sets = "person_requested_at = CAST($1 AS BIGINT)";
    update_case(tx, case, sets, &[&at], now).await
}

/// Whether the customer asked for a person and no person has written to them since:
/// no staff message after the customer's last message at the time of the request.
pub async fn person_awaited(tx: &mut Tx<'_>, case: &Case) -> DomainResult<bool> {
    let Some(at) = case.person_requested_at else {
        return Ok(false);
    };
    let answered: i64 = sqlx::query_scalar(ANSWERED_SINCE)
        .bind(case.ticket_id.as_str())
        .bind(at)
        .fetch_one(&mut **tx)
        .await?;
    Ok(answered == 0)
}

/// [`person_awaited`] outside a transaction (the case page).
pub async fn person_awaited_now(db: &Db, case: &Case) -> DomainResult<bool> {
    let Some(at) = case.person_requested_at else {
        return Ok(false);
    };
    let answered: i64 = sqlx::query_scalar(ANSWERED_SINCE)
        .bind(case.ticket_id.as_str())
        .bind(at)
        .fetch_one(db.reader())
        .await?;
    Ok(answered == 0)
}

/// Staff messages on ticket `$1` after the customer's last message at time `$2`.
const ANSWERED_SINCE: &str = "SELECT COUNT(*) FROM messages s WHERE s.ticket_id = $1
     AND s.author = 'staff' AND s.seq > COALESCE((SELECT MAX(m.seq) FROM messages m
         WHERE m.ticket_id = $1 AND m.author = 'customer' AND m.created_at <= $2), 0)";

/// Live shadow mode: the case goes to a reviewer holding the facts (billing records, not
/// conclusions) and nothing else of the agent's — no proposal, decision, reason or
/// fingerprint a reviewer could anchor on. Versioned: a lost race is `case_changed`.
pub async fn hold_for_review(
    tx: &mut Tx<'_>,
    case: &Case,
    facts: &policy_engine::Facts,
    note: &str,
    now: i64,
) -> DomainResult<()> {
    let facts = serde_json::to_string(facts).unwrap_or_default();
    let sets = "status = 'escalated', proposal = NULL, decision = NULL, fingerprint = NULL, \
                required_role = NULL, reason_code = NULL, refund_total_minor = NULL, currency = NULL, \
                facts = $1, void_reason = $2";
    update_case(tx, case, sets, &[&facts, note], now).await
}

/// Notes why a case stays where it is (a reviewer escalated it on): versioned.
pub async fn note_void_reason(
    tx: &mut Tx<'_>,
    case: &Case,
    reason: &str,
    now: i64,
) -> DomainResult<()> {
    update_case(tx, case, "void_reason = $1", &[reason], now).await
}

/// A new customer message reached the case's conversation: a decision that waits on the
/// conversation as it was is void, and the case is investigated again (docs/spec/invariants.md
/// #2); a case still investigating reads the message with the rest, and one with money
/// in flight or at its end keeps its state. Returns whether the case went back to
/// investigation.
pub async fn take_customer_message(
    tx: &mut Tx<'_>,
    versions: &harness::Versions,
    case: &Case,
    why: &str,
    now: i64,
) -> DomainResult<bool> {
    // A case the customer asked a person for stays with people: their next message is
    // for that person, not a reason to hand the case back to the agent.
    let with_a_person = case.status == CaseStatus::Escalated && case.person_requested_at.is_some();
    if case.status.reopens_on_customer_message() && !with_a_person {
        reinvestigate(tx, versions, case, why, now).await?;
        return Ok(true);
    }
    // Nothing falls through: words on a resolved or closed case go to a person,
    // into its owner's or the supervisors' queue — never back to an agent run that already
    // answered, never nowhere. A joined case stays closed: its words went to the other.
    if case.status.resolved_but_open_to_words() && case.joined_into.is_none() {
        let why = "the customer wrote again after the case was resolved";
        escalate_to_person(tx, case, why, now).await?;
        crate::audit::record(tx, "system", "reopened", &case.id, why, now).await?;
        return Ok(true);
    }
    Ok(false)
}

/// Voids the current proposal (and any approval bound to its fingerprint) and starts a
/// new investigation run.
pub async fn reinvestigate(
    tx: &mut Tx<'_>,
    versions: &harness::Versions,
    case: &Case,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    let run_id = runs::create_run(tx, versions, &case.id, now).await?;
    let done = sqlx::query(
        "UPDATE cases SET status = 'investigating', version = version + 1, proposal_seq = proposal_seq + 1,
             fingerprint = NULL, void_reason = $1, run_id = $2, updated_at = $3
         WHERE id = $4 AND version = $5",
    )
    .bind(why)
    .bind(&run_id)
    .bind(now)
    .bind(case.id.as_str())
    .bind(case.version)
    .execute(&mut **tx)
    .await?;
    expect_versioned(&done)?;
    void_approvals(tx, &case.id).await?;
    if let Some(old_run) = &case.run_id {
        runs::finish_run(tx, old_run, runs::RunStatus::Cancelled, now).await?;
    }
    crate::audit::record(tx, "system", "proposal_voided", &case.id, why, now).await?;
    tracing::info!(case_id = %case.id, why, "proposal voided; re-investigating");
    Ok(())
}

/// The customer's other cases about the same order that are still open (not closed or
/// withdrawn), newest first: the order is the one the investigator resolved for each
/// case (`Facts::order_id`), never a pattern matched on ids (docs/spec/domain.md: ids are opaque).
/// A case not yet investigated has no order and matches nothing.
pub async fn other_open_cases_on_order(db: &Db, case: &Case) -> DomainResult<Vec<Case>> {
    let Some(order_id) = resolved_order(case) else {
        return Ok(Vec::new());
    };
    let sql = format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE customer_id = $1 AND id <> $2
         AND status NOT IN ('closed', 'cancelled') AND facts IS NOT NULL
         ORDER BY created_at DESC, id LIMIT 200"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(case.customer_id.as_str())
        .bind(case.id.as_str())
        .fetch_all(db.pool())
        .await?;
    let mut same = Vec::new();
    for row in &rows {
        let other = case_from_row(row)?;
        if resolved_order(&other).as_deref() == Some(order_id.as_str()) {
            same.push(other);
        }
    }
    Ok(same)
}

fn resolved_order(case: &Case) -> Option<String> {
    let facts = case.facts.as_deref()?;
    serde_json::from_str::<policy_engine::Facts>(facts)
        .ok()?
        .order_id
}
