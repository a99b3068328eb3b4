//! Child runs (the LLM path's sub-agents, `investigation::children`): rows
//! with a `parent_run_id`, found again by name after a crash, cancelled with their
//! parent.

use sqlx::Row;

use super::log::append_event;
use super::{load_run, run_from_row, stored_status, EventKind, Run, RunStatus, RUN_COLUMNS};
use crate::error::{DomainError, DomainResult};
use store::{new_id, Db, Tx};

/// A child run as its parent's trace lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ChildRun {
    pub id: String,
    pub name: String,
    pub status: RunStatus,
}

/// The child run named `name` of `parent`, created `ready` on first use (with its own
/// `run_created` event): a parent resumed after a crash finds the children it spawned
/// and their logs. It takes no lease of its own; its parent holds one.
pub async fn child_run(
    db: &Db,
    parent: &Run,
    name: &str,
    versions: &harness::Versions,
    now: i64,
) -> DomainResult<Run> {
    if let Some(run) = find_child(db, &parent.id, name).await? {
        return Ok(run);
    }
    let id = new_id("run");
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO runs (id, case_id, status, version, model, prompt_version, tool_schema_version, steps, tool_calls, created_at, updated_at, parent_run_id, child_name)
         VALUES ($1, $2, 'ready', 1, $3, $4, $5, 0, 0, $6, $6, $7, $8)",
    )
    .bind(&id)
    .bind(parent.case_id.as_str())
    .bind(&versions.model)
    .bind(&versions.prompt)
    .bind(&versions.tools)
    .bind(now)
    .bind(parent.id.as_str())
    .bind(name)
    .execute(&mut *tx)
    .await?;
    let created = serde_json::json!({ "case_id": parent.case_id, "parent_run_id": parent.id, "child": name,
        "model": versions.model, "prompt_version": versions.prompt, "tool_schema_version": versions.tools });
    append_event(&mut tx, &id, EventKind::RunCreated, None, &created, now).await?;
    tx.commit().await?;
    load_run(db, &id)
        .await?
        .ok_or_else(|| DomainError::Internal(anyhow::anyhow!("child run {id} vanished")))
}

async fn find_child(db: &Db, parent_id: &str, name: &str) -> DomainResult<Option<Run>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE parent_run_id = $1 AND child_name = $2"
    )))
    .bind(parent_id)
    .bind(name)
    .fetch_optional(db.pool())
    .await?;
    row.as_ref().map(run_from_row).transpose()
}

/// The runs `parent_id` spawned, oldest first.
pub async fn children(db: &Db, parent_id: &str) -> DomainResult<Vec<ChildRun>> {
    let rows = sqlx::query(
        "SELECT id, child_name, status FROM runs WHERE parent_run_id = $1 ORDER BY created_at, id",
    )
    .bind(parent_id)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(ChildRun {
                id: r.try_get("id")?,
                name: r
                    .try_get::<Option<String>, _>("child_name")?
                    .unwrap_or_default(),
                status: stored_status(&r.try_get::<String, _>("status")?)?,
            })
        })
        .collect()
}

/// The run that spawned `run_id`, if it is a child run.
pub async fn parent_of(db: &Db, run_id: &str) -> DomainResult<Option<String>> {
    let row = sqlx::query("SELECT parent_run_id FROM runs WHERE id = $1")
        .bind(run_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(row
        .map(|r| r.try_get::<Option<String>, _>("parent_run_id"))
        .transpose()?
        .flatten())
}

/// Cancels the unfinished child runs of `parent_id` (its case was withdrawn or
/// re-investigated). A versioned change of each child's row: a worker still advancing a
/// child fails the commit it makes before its next model or tool call, and stops.
pub async fn cancel_children(tx: &mut Tx<'_>, parent_id: &str, now: i64) -> DomainResult<()> {
    let open = sqlx::query(
        "SELECT id, status FROM runs WHERE parent_run_id = $1
         AND status NOT IN ('completed', 'failed', 'cancelled')",
    )
    .bind(parent_id)
    .fetch_all(&mut **tx)
    .await?;
    for row in open {
        let id: String = row.try_get("id")?;
        let from: String = row.try_get("status")?;
        sqlx::query(
            "UPDATE runs SET status = 'cancelled', version = version + 1, updated_at = $1,
                 lease_owner = NULL, lease_expires_at = NULL WHERE id = $2",
        )
        .bind(now)
        .bind(&id)
        .execute(&mut **tx)
        .await?;
        let payload =
            serde_json::json!({ "from": from, "to": RunStatus::Cancelled, "by": "parent" });
        append_event(tx, &id, EventKind::State, None, &payload, now).await?;
    }
    Ok(())
}
