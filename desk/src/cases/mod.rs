//! Cases: the refund work on a ticket, its lifecycle (docs/spec/lifecycle.md), and its fingerprint.
//!
//! Every status change is a versioned update (`WHERE id = $x AND version = $y`), so two
//! workers or two reviewers can never both move the same case. The fingerprint binds an
//! approval to the exact refund parameters (docs/spec/invariants.md #2).

mod approvals;
pub use approvals::{record_approval, use_approval};
mod fingerprint;
pub use fingerprint::{decision_fingerprint, fingerprint, FingerprintInput, FingerprintRefund};
mod decision;
pub use decision::{record_decision, DecisionRecord, ProposalChange, RecordedDecision, VoidReason};
mod lease;
mod notes;
pub use notes::{add_note, notes, NoteView};
mod closing;
mod queues;
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
    /// The staff member working on the case (issue 17: take, assign to).
    pub assignee_id: Option<String>,
    /// Why a supervisor closed the case by hand.
    pub close_reason: Option<String>,
    /// The case this one was joined into: a second ticket about the same order (issue 17).
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
/// recent live decisions, issue 22): every case decided in the window is among them, as
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
    // Nothing falls through (issue 38): words on a resolved or closed case go to a person,
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

/// Which cases a list shows (`GET /api/v1/cases`, the console's queue).
#[derive(Debug, Default, Clone, Copy)]
pub struct CaseQuery<'a> {
    /// Only cases in one of these statuses; empty is every status.
    pub statuses: &'a [CaseStatus],
    /// Only cases assigned to this staff member.
    pub assignee_id: Option<&'a str>,
    /// Search text (issue 17): a case, ticket, customer, order or charge id (whole, any
    /// case), or part of the customer's name or email.
    pub search: Option<&'a str>,
    /// Of the cases awaiting approval, only those needing one of these approver roles
    /// (issue 17's "needs me" and "needs a supervisor" tabs); empty is any role.
    pub required_roles: &'a [&'a str],
    /// The order: `None` is oldest first within chosen statuses (a queue) and newest
    /// first across all; `Some(true)` newest first, `Some(false)` oldest first.
    pub newest_first: Option<bool>,
    /// The most urgent reply first (issue 38: SLA sort), by the reply clock's due time
    /// under these targets ([`sla::ReplyClock::sort_key`]), the cases with no clock last.
    /// Overrides `newest_first`; the cursor's time is then the sort key.
    pub due_first: Option<ReplyTargets>,
    /// Keyset pagination: only cases after this `(created_at, id)` in the list's order.
    pub after: Option<(i64, &'a str)>,
    /// At most this many cases (1 to 500); `None` is 500.
    pub limit: Option<i64>,
    /// Only these cases (the queue's "stuck" tab: the cases with an open watchdog flag),
    /// so pages and their cursor count only them; `None` is any case.
    pub ids: Option<&'a [String]>,
}

/// A list cursor, `created_at:case_id` ([`CaseQuery::after`]), as a next-page link
/// carries it; `None` when it is not one.
pub fn parse_cursor(after: &str) -> Option<(i64, &str)> {
    let (at, id) = after.split_once(':')?;
    let at = at.parse().ok()?;
    (!id.is_empty()).then_some((at, id))
}

/// The search condition of [`CaseQuery::search`], its values appended to `binds`. The
/// text is only ever a bound value, never part of the SQL. Ids are matched whole (an
/// order or charge id inside the decision's facts as a JSON `"id"` value); names, emails
/// and — for three characters or more — the text of the ticket's messages by substring
/// (issue 38). Lower-cased on both sides: customers type ids in any case.
fn search_condition(search: &str, binds: &mut Vec<String>) -> String {
    let text = search.trim().to_lowercase();
    let json = serde_json::to_string(&text).unwrap_or_default();
    let json = json.trim_matches('"');
    binds.push(text.clone());
    let exact = binds.len();
    binds.push(format!("%{}%", store::like_literal(&text)));
    let part = exact + 1;
    binds.push(format!("%\"id\":\"{}\"%", store::like_literal(json)));
    let in_facts = exact + 2;
    let messages = match text.chars().count() >= 3 {
        true => format!(
            "\n          OR EXISTS (SELECT 1 FROM messages m WHERE m.ticket_id = c.ticket_id
                         AND LOWER(m.body) LIKE ${part} ESCAPE '\\')"
        ),
        false => String::new(),
    };
    format!(
        "(LOWER(c.id) = ${exact} OR LOWER(c.ticket_id) = ${exact} OR LOWER(c.customer_id) = ${exact}
          OR LOWER(COALESCE(t.order_id, '')) = ${exact}
          OR LOWER(COALESCE(cu.name, '')) LIKE ${part} ESCAPE '\\'
          OR LOWER(COALESCE(cu.email, '')) LIKE ${part} ESCAPE '\\'
          OR LOWER(COALESCE(c.facts, '')) LIKE ${in_facts} ESCAPE '\\'
          OR EXISTS (SELECT 1 FROM refund_intents i WHERE i.case_id = c.id AND LOWER(i.charge_id) = ${exact}){messages})"
    )
}

/// The `WHERE` conditions of a case list, their bound values, and its order.
fn list_conditions(query: &CaseQuery<'_>) -> (Vec<String>, Vec<String>, String) {
    let mut binds: Vec<String> = Vec::new();
    let mut conditions = vec!["1 = 1".to_string()];
    if !query.statuses.is_empty() {
        let mut placeholders = Vec::new();
        for status in query.statuses {
            binds.push(status.as_str().to_string());
            placeholders.push(format!("${}", binds.len()));
        }
        conditions.push(format!("c.status IN ({})", placeholders.join(", ")));
    }
    if let Some(assignee) = query.assignee_id {
        binds.push(assignee.to_string());
        conditions.push(format!("c.assignee_id = ${}", binds.len()));
    }
    if let Some(search) = query.search.filter(|s| !s.trim().is_empty()) {
        conditions.push(search_condition(search, &mut binds));
    }
    if let Some(ids) = query.ids {
        let mut placeholders = vec!["NULL".to_string()];
        for id in ids {
            binds.push(id.clone());
            placeholders.push(format!("${}", binds.len()));
        }
        conditions.push(format!("c.id IN ({})", placeholders.join(", ")));
    }
    if !query.required_roles.is_empty() {
        let mut placeholders = Vec::new();
        for role in query.required_roles {
            binds.push(role.to_string());
            placeholders.push(format!("${}", binds.len()));
        }
        let roles = placeholders.join(", ");
        conditions.push(format!(
            "(c.status <> 'awaiting_approval' OR c.required_role IN ({roles}))"
        ));
    }
    let newest_first = query.newest_first.unwrap_or(query.statuses.is_empty());
    let (key, order, after) = match (query.due_first, newest_first) {
        (Some(targets), _) => {
            let key = sla::due_key_sql(targets);
            let order = format!("{key}, c.id");
            (key, order, ">")
        }
        (None, true) => (
            "c.created_at".into(),
            "c.created_at DESC, c.id DESC".into(),
            "<",
        ),
        (None, false) => ("c.created_at".into(), "c.created_at, c.id".into(), ">"),
    };
    // The cursor's time is an i64 (parsed before it gets here), so it is written into
    // the SQL as a number; its id is bound like every other value.
    if let Some((at, id)) = query.after {
        binds.push(id.to_string());
        let id = binds.len();
        conditions.push(format!(
            "({key} {after} {at} OR ({key} = {at} AND c.id {after} ${id}))"
        ));
    }
    (conditions, binds, order)
}

/// Cases as `query` selects them, at most 500: oldest first within chosen statuses (a
/// queue), newest first across all.
pub async fn list_cases(db: &Db, query: &CaseQuery<'_>) -> DomainResult<Vec<Case>> {
    let (conditions, binds, order) = list_conditions(query);
    let limit = query.limit.unwrap_or(500).clamp(1, 500);
    let columns: Vec<String> = CASE_COLUMNS
        .split(',')
        .map(|c| format!("c.{}", c.trim()))
        .collect();
    let sql = format!(
        "SELECT {} FROM cases c JOIN tickets t ON t.id = c.ticket_id
         LEFT JOIN customers cu ON cu.id = c.customer_id
         WHERE {} ORDER BY {order} LIMIT {limit}",
        columns.join(", "),
        conditions.join(" AND ")
    );
    let mut select = sqlx::query(sqlx::AssertSqlSafe(sql));
    for value in &binds {
        select = select.bind(value);
    }
    let rows = select.fetch_all(db.reader()).await?;
    rows.iter().map(case_from_row).collect()
}

/// How many cases a list would hold without its limit and cursor (issue 38: the queue's
/// tab counts), in one read.
pub async fn count_cases(db: &Db, query: &CaseQuery<'_>) -> DomainResult<i64> {
    let whole = CaseQuery {
        after: None,
        limit: None,
        ..*query
    };
    let (conditions, binds, _) = list_conditions(&whole);
    let sql = format!(
        "SELECT COUNT(*) AS n FROM cases c JOIN tickets t ON t.id = c.ticket_id
         LEFT JOIN customers cu ON cu.id = c.customer_id WHERE {}",
        conditions.join(" AND ")
    );
    let mut select = sqlx::query(sqlx::AssertSqlSafe(sql));
    for value in &binds {
        select = select.bind(value);
    }
    Ok(select.fetch_one(db.reader()).await?.try_get("n")?)
}

/// The customer's other cases about the same order that are still open (not closed or
/// withdrawn), newest first: the order is the one the investigator resolved for each
/// case (`Facts::order_id`), never a pattern matched on ids (docs/spec/domain.md: ids are opaque).
/// A case not yet investigated has no order and matches nothing (issue 17).
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
