//! Retention (docs/spec/data.md): after their window, message text and run-event
//! payloads are redacted in place by a job in the worker pass (at most once per
//! [`PERIOD_MS`] of the app clock, across instances); the audit log keeps its lines
//! longer, its details redacted after a window of their own. Rows stay — ids, amounts,
//! statuses, times — so counts, money and timelines still add up.
//!
//! Deliberately not here: anything of a conversation still open (a run not at rest reads
//! its events and messages back), and the money records, which the law keeps.

pub use desk::config::RetentionWindows as Windows;
use sqlx::Row;

use super::classify::{ERASED, ERASED_JSON};
use desk::error::DomainResult;
use store::Db;

/// How often the job runs (app clock).
pub const PERIOD_MS: i64 = 3600 * 1000;
/// The `job_runs` name of the job.
const JOB_NAME: &str = "retention";
const DAY_MS: i64 = 24 * 3600 * 1000;

/// What one run of the job redacted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Redacted {
    pub messages: u64,
    pub run_events: u64,
    pub audit_details: u64,
}

/// Runs at rest: their events and their case's messages are read back by nobody.
const RUN_AT_REST: &str = "('completed', 'failed', 'cancelled')";

/// The job, when no instance ran it within [`PERIOD_MS`].
pub async fn run_if_due(db: &Db, windows: Windows, now: i64) -> DomainResult<Option<Redacted>> {
    if !desk::reconcile::claim_job(db, JOB_NAME, PERIOD_MS, now).await? {
        return Ok(None);
    }
    let redacted = run(db, windows, now).await?;
    if redacted != Redacted::default() {
        tracing::info!(?redacted, "retention redacted expired text");
    }
    Ok(Some(redacted))
}

/// Redacts everything past its window now.
pub async fn run(db: &Db, windows: Windows, now: i64) -> DomainResult<Redacted> {
    let cutoff = |days: u32| now - i64::from(days) * DAY_MS;
    // The three redactions in one transaction (one commit, not three; and a
    // pass sees all of them or none).
    let mut tx = db.begin().await?;
    let messages = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE messages SET body = $1 WHERE created_at < $2 AND body <> $1
           AND ticket_id NOT IN (SELECT c.ticket_id FROM cases c JOIN runs r ON r.case_id = c.id
                                  WHERE r.status NOT IN {RUN_AT_REST})"
    )))
    .bind(ERASED)
    .bind(cutoff(windows.message_days))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    // A translation quotes its message in other words: it goes when the message's
    // text does (docs/spec/data.md).
    sqlx::query(
        "DELETE FROM message_translations WHERE EXISTS (SELECT 1 FROM messages m
           WHERE m.ticket_id = message_translations.ticket_id
             AND m.seq = message_translations.seq AND m.body = $1)",
    )
    .bind(ERASED)
    .execute(&mut *tx)
    .await?;
    let run_events = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE run_events SET payload = $1 WHERE created_at < $2 AND payload <> $1
           AND run_id IN (SELECT id FROM runs WHERE status IN {RUN_AT_REST})"
    )))
    .bind(ERASED_JSON)
    .bind(cutoff(windows.run_event_days))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let audit_details = sqlx::query(
        "UPDATE audit_log SET detail = $1 WHERE created_at < $2 AND detail <> $1 AND detail <> ''",
    )
    .bind(ERASED)
    .bind(cutoff(windows.audit_days))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    if messages > 0 {
        desk::customer::forget_page_splits();
    }
    Ok(Redacted {
        messages,
        run_events,
        audit_details,
    })
}

/// When the job last ran (unix ms), for the console.
pub async fn last_run(db: &Db) -> DomainResult<Option<i64>> {
    let row = sqlx::query("SELECT last_run_at FROM job_runs WHERE name = $1")
        .bind(JOB_NAME)
        .fetch_optional(db.reader())
        .await?;
    Ok(row.map(|r| r.try_get("last_run_at")).transpose()?)
}

#[cfg(test)]
mod tests {
    use super::super::classify::{table, Class};

    #[test]
    fn what_retention_redacts_is_classified_as_customer_text() {
        let class = |t: &str, c: &str| {
            table(t)
                .and_then(|t| t.columns.iter().find(|(n, _)| *n == c))
                .map(|(_, class)| *class)
        };
        assert_eq!(class("messages", "body"), Some(Class::Text));
        assert_eq!(class("run_events", "payload"), Some(Class::Payload));
        assert_eq!(class("audit_log", "detail"), Some(Class::Text));
    }
}
