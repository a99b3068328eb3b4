//! The stuck-run watchdog's scan (the rules are in `watchdog`): runs in a
//! watched state whose last progress event is old enough to look at.

use sqlx::Row;

use super::{run_from_row, EventKind, Run, RunStatus, RUN_COLUMNS};
use crate::error::DomainResult;
use store::{Db, Tx};

/// A run in a watched state whose last progress event is old enough to look at.
#[derive(Debug, Clone)]
pub struct Stalled {
    pub run: Run,
    /// When its last progress event was written (unix ms, the injected clock).
    pub last_progress_at: i64,
}

/// `kinds` as an SQL list of literals. Only ever given the watchdog's constants (never
/// input): sqlx's `Any` driver binds no arrays, and these lists are fixed at build time.
fn sql_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = names.into_iter().map(|k| format!("'{k}'")).collect();
    quoted.join(", ")
}

/// The time of the run's last event of one of `progress` (`run_created` is always one),
/// its child runs' included: a parent joining its sub-agents progresses through them.
fn last_progress_sql(run_id: &str, progress: &[EventKind]) -> String {
    format!(
        "(SELECT MAX(e.created_at) FROM run_events e
          WHERE (e.run_id = {run_id} OR e.run_id IN (SELECT c.id FROM runs c WHERE c.parent_run_id = {run_id}))
            AND e.kind IN ({}))",
        sql_list(progress.iter().map(|k| k.as_str()))
    )
}

/// Runs in one of `watched` states whose last event of a `progress` kind was written
/// at or before `cutoff`, the longest-stalled first, at most `limit`. A run created
/// after `cutoff` cannot qualify, so the `(status, created_at)` index bounds the scan.
pub async fn stalled_runs(
    db: &Db,
    watched: &[RunStatus],
    progress: &[EventKind],
    cutoff: i64,
    limit: i64,
) -> DomainResult<Vec<Stalled>> {
    let sql = format!(
        "SELECT * FROM (
             SELECT {RUN_COLUMNS}, {} AS last_progress_at FROM runs r
             WHERE r.status IN ({}) AND r.created_at <= $1 AND r.parent_run_id IS NULL
         ) s WHERE s.last_progress_at <= $1 ORDER BY s.last_progress_at, s.id LIMIT $2",
        last_progress_sql("r.id", progress),
        sql_list(watched.iter().map(|s| s.as_str()))
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(cutoff)
        .bind(limit)
        .fetch_all(db.pool())
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Stalled {
                run: run_from_row(r)?,
                last_progress_at: r.try_get("last_progress_at")?,
            })
        })
        .collect()
}

/// Locks the run's row for the rest of `tx` (a write that changes nothing, so no
/// worker's versioned update fails for it) and returns its status and last progress
/// time as they are now. Appending an event under this lock cannot race a worker's
/// step for the next sequence number: the worker's versioned update waits for it.
pub async fn lock_for_note(
    tx: &mut Tx<'_>,
    run_id: &str,
    progress: &[EventKind],
) -> DomainResult<Option<(String, i64)>> {
    sqlx::query("UPDATE runs SET updated_at = updated_at WHERE id = $1")
        .bind(run_id)
        .execute(&mut **tx)
        .await?;
    progress_of(tx, run_id, progress).await
}

/// The run's status and the time of its last `progress` event, as they are now.
pub async fn progress_of(
    conn: &mut sqlx::AnyConnection,
    run_id: &str,
    progress: &[EventKind],
) -> DomainResult<Option<(String, i64)>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT status, {} AS last_progress_at FROM runs WHERE id = $1",
        last_progress_sql("runs.id", progress)
    )))
    .bind(run_id)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| Ok((r.try_get("status")?, r.try_get("last_progress_at")?)))
        .transpose()
}
