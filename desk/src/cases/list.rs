//! Case lists: which cases the API's list and the console's queue show (statuses,
//! assignee, search, the approver roles a tab asks for, the order, keyset pages), and how
//! many. Only ever reads; every value from a request is bound, never written into SQL.

use sqlx::Row;

use super::queues::{IN_AGENTS_QUEUE, IN_SUPERVISORS_QUEUE, NEEDS_A_PERSON};
use super::{case_from_row, sla, Case, CaseStatus, ReplyTargets, TeamQueue, CASE_COLUMNS};
use crate::error::DomainResult;
use store::Db;

/// Which cases a list shows (`GET /api/v1/cases`, the console's queue).
#[derive(Debug, Default, Clone, Copy)]
pub struct CaseQuery<'a> {
    /// Only cases in one of these statuses; empty is every status.
    pub statuses: &'a [CaseStatus],
    /// Only cases assigned to this staff member.
    pub assignee_id: Option<&'a str>,
    /// Search text: a case, ticket, customer, order or charge id (whole, any
    /// case), or part of the customer's name or email.
    pub search: Option<&'a str>,
    /// Of the cases awaiting approval, only those needing one of these approver roles
    /// (the queue's "needs me" and "needs a supervisor" tabs); empty is any role.
    pub required_roles: &'a [&'a str],
    /// The order: `None` is oldest first within chosen statuses (a queue) and newest
    /// first across all; `Some(true)` newest first, `Some(false)` oldest first.
    pub newest_first: Option<bool>,
    /// The most urgent reply first (SLA sort), by the reply clock's due time
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
    /// Of the escalated cases, only those in this team's queue (docs/spec/roles.md,
    /// "Where an escalation goes"); `None` is every escalation.
    pub escalations_of: Option<TeamQueue>,
    /// Besides what the statuses, roles and escalations select, every case assigned to
    /// this staff member that needs a person ("needs me": a case they took stays theirs,
    /// whatever it waits for).
    pub or_assigned_to: Option<&'a str>,
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
///. Lower-cased on both sides: customers type ids in any case.
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
    let tab = tab_condition(query, &mut binds);
    match query.or_assigned_to {
        Some(staff_id) => {
            binds.push(staff_id.to_string());
            let mine = binds.len();
            conditions.push(format!(
                "({tab} OR (c.assignee_id = ${mine} AND {NEEDS_A_PERSON}))"
            ));
        }
        None => conditions.push(tab),
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
    order_and_cursor(query, conditions, binds)
}

/// What a tab selects by state: the statuses, the approver roles of the cases awaiting
/// approval, and whose escalations.
fn tab_condition(query: &CaseQuery<'_>, binds: &mut Vec<String>) -> String {
    let mut conditions = vec!["1 = 1".to_string()];
    if !query.statuses.is_empty() {
        let mut placeholders = Vec::new();
        for status in query.statuses {
            binds.push(status.as_str().to_string());
            placeholders.push(format!("${}", binds.len()));
        }
        conditions.push(format!("c.status IN ({})", placeholders.join(", ")));
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
    if let Some(team) = query.escalations_of {
        let queue = match team {
            TeamQueue::Agents => IN_AGENTS_QUEUE,
            TeamQueue::Supervisors => IN_SUPERVISORS_QUEUE,
        };
        conditions.push(format!("(c.status <> 'escalated' OR {queue})"));
    }
    format!("({})", conditions.join(" AND "))
}

/// The order of a list and the condition of its cursor.
fn order_and_cursor(
    query: &CaseQuery<'_>,
    mut conditions: Vec<String>,
    mut binds: Vec<String>,
) -> (Vec<String>, Vec<String>, String) {
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

/// How many cases a list would hold without its limit and cursor (the queue's
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
