//! The audit log: who did what to which case, and when. Append-only.

mod search;
pub use search::csv_field;
pub use search::{actions, csv, search, AuditFilter, AuditLine, MAX_LINES};

use crate::error::DomainResult;
use store::{new_id, Tx};

/// Lines written in one millisecond (one transaction often writes several: a close and
/// its reply) keep their order: the id sorts by time, then by this process's counter,
/// so the timeline reads in the order things happened.
static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn ordered_id(now: i64) -> String {
    let seq = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 100_000_000;
    let unique = new_id("aud");
    format!("aud_{now:013}_{seq:08}_{}", &unique[4..])
}

pub async fn record(
    tx: &mut Tx<'_>,
    actor: &str,
    action: &str,
    subject: &str,
    detail: &str,
    now: i64,
) -> DomainResult<()> {
    sqlx::query("INSERT INTO audit_log (id, actor, action, subject, detail, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(ordered_id(now))
        .bind(actor)
        .bind(action)
        .bind(subject)
        .bind(detail)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// One audit line in a transaction of its own, for an action that changes nothing else
/// (a tool called over MCP: the call is the event).
// The same parameters as `record` on purpose (a pair the `duplicates` count shows): one
// audit line, written in the caller's transaction or in its own.
pub async fn record_alone(
    db: &store::Db,
    actor: &str,
    action: &str,
    subject: &str,
    detail: &str,
    now: i64,
) -> DomainResult<()> {
    let mut tx = db.begin().await?;
    record(&mut tx, actor, action, subject, detail, now).await?;
    tx.commit().await?;
    Ok(())
}

/// One line of a case's history, in plain words: who did what, and when.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TimelineEntry {
    /// Unix milliseconds.
    pub at: i64,
    /// A staff member's email, "agent" (the investigator), "system" (the workflow and
    /// the provider's answers) or the customer's id.
    pub who: String,
    /// The audit action (`approved`, `refund_status`, …) the words were made from.
    pub action: String,
    pub what: String,
}

/// The history of a case, oldest first, read from the audit log (proposal,
/// decision, approvals, rejection, voids, execution, provider status, replies, notes,
/// close, assign). Nothing is written here: the log stays the one record.
pub async fn case_timeline(db: &store::Db, case_id: &str) -> DomainResult<Vec<TimelineEntry>> {
    use sqlx::Row;
    let rows = sqlx::query(
        "SELECT a.created_at, COALESCE(s.email, a.actor) AS actor, a.action, a.detail
         FROM audit_log a LEFT JOIN staff s ON s.id = a.actor
         WHERE a.subject = $1 ORDER BY a.created_at, a.id",
    )
    .bind(case_id)
    .fetch_all(db.pool())
    .await?;
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        let action: String = row.try_get("action")?;
        let detail: String = row.try_get("detail")?;
        entries.push(TimelineEntry {
            at: row.try_get("created_at")?,
            who: row.try_get("actor")?,
            what: in_plain_words(&action, &detail),
            action,
        });
    }
    Ok(entries)
}

/// What an audit line means, as a support agent would say it.
fn in_plain_words(action: &str, detail: &str) -> String {
    let with = |words: &str| {
        if detail.is_empty() {
            words.to_string()
        } else {
            format!("{words}: {detail}")
        }
    };
    match action {
        "decided" => format!("The policy decided ({})", decision_words(detail)),
        "approved" => "Approved the refund".into(),
        "rejected" => with("Rejected the refund"),
        "proposal_voided" => format!("The proposal was void: {}", void_words(detail)),
        "refund_status" => format!(
            "The provider's refund status is now {}",
            status_words(detail)
        ),
        "staff_reply" => "Replied to the customer".into(),
        "internal_note" => "Added an internal note".into(),
        "closed" => with("Closed the case"),
        "assigned" => with("Assigned the case"),
        "escalated" => with("Escalated to a person"),
        "withdrawn" => "The customer withdrew the request".into(),
        "proposed_by_staff" => "Proposed a refund by hand".into(),
        "decided_by_hand" => with("Recorded a decision by hand (shadow mode)"),
        "shadow_recorded" => "Recorded the agent's decision in shadow mode".into(),
        "mcp_tool_call" => with("Read the case through MCP"),
        other => with(&other.replace('_', " ")),
    }
}

/// `awaiting_approval (duplicate_charge)` → `waiting for approval, duplicate charge`.
fn decision_words(detail: &str) -> String {
    let (status, reason) = detail.split_once(" (").unwrap_or((detail, ""));
    let status = crate::states::CaseStatus::parse(status)
        .ok()
        .map(|s| s.label().to_lowercase())
        .unwrap_or_else(|| status.replace('_', " "));
    match reason.trim_end_matches(')') {
        "" => status,
        reason => format!("{status}, {}", reason.replace('_', " ")),
    }
}

fn status_words(detail: &str) -> String {
    crate::states::CaseStatus::parse(detail)
        .ok()
        .map(|s| s.label().to_lowercase())
        .unwrap_or_else(|| detail.replace('_', " "))
}

/// The executor's and the worker's reasons (`refunds::execute::change_description`,
/// `cases::reinvestigate` callers) in words; one reason may list several changes.
fn void_words(why: &str) -> String {
    let why = why.strip_prefix("approval void: ").unwrap_or(why);
    why.split("; ")
        .map(|part| {
            if part.contains("AlreadyRefunded") {
                "the provider shows a refund made elsewhere".to_string()
            } else if part.starts_with("policy versions") {
                "the policy version changed".into()
            } else if part.starts_with("refunds [") {
                // The boundary re-check read the charge afresh (docs/spec/invariants.md #3): what
                // is left to refund moved, so the provider shows a refund made elsewhere.
                "the provider shows a refund made elsewhere (the amount left changed)".into()
            } else if part == "new customer message" {
                "the customer wrote again".into()
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}
