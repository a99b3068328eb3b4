//! Agent runs and their append-only event log.
//!
//! A run is one agent execution on a case. Its events (model outputs, tool intents and
//! results linked by call id, proposals, decisions, state changes) are its checkpoint:
//! a restarted worker rebuilds everything from them. Runs are claimed with a lease and
//! every change is a versioned update, so two workers never advance one run.

use axum::extract::{Path, State};
use axum::Json;
use serde::Serialize;
use sqlx::Row;

use crate::auth::Principal;
use crate::clock::rfc3339;
use crate::error::{AppError, AppResult};
use crate::http::AppState;
use crate::store::{new_id, Db, Tx};

/// Version of the investigator prompt/instructions, recorded on every run.
pub const PROMPT_VERSION: &str = "investigate-v1";

/// How long a claimed run stays claimed without being renewed.
pub const LEASE_MS: i64 = 60_000;

#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub case_id: String,
    pub status: String,
    pub version: i64,
    pub steps: i64,
    pub tool_calls: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Event {
    pub seq: i64,
    pub kind: String,
    pub call_id: Option<String>,
    pub payload: serde_json::Value,
    pub at: String,
}

pub async fn create_run(tx: &mut Tx<'_>, state: &AppState, case_id: &str) -> AppResult<String> {
    let now = state.clock.now_ms();
    let id = new_id("run");
    sqlx::query(
        "INSERT INTO runs (id, case_id, status, version, model, prompt_version, steps, tool_calls, created_at, updated_at)
         VALUES ($1, $2, 'ready', 1, $3, $4, 0, 0, $5, $5)",
    )
    .bind(&id)
    .bind(case_id)
    .bind(state.model.name())
    .bind(PROMPT_VERSION)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    append_event(tx, &id, "run_created", None, &serde_json::json!({ "case_id": case_id, "model": state.model.name(), "prompt_version": PROMPT_VERSION }), now).await?;
    Ok(id)
}

pub async fn load_run(db: &Db, run_id: &str) -> AppResult<Option<Run>> {
    let row = sqlx::query(
        "SELECT id, case_id, status, version, steps, tool_calls FROM runs WHERE id = $1",
    )
    .bind(run_id)
    .fetch_optional(db.pool())
    .await?;
    row.map(|r| {
        Ok(Run {
            id: r.try_get("id")?,
            case_id: r.try_get("case_id")?,
            status: r.try_get("status")?,
            version: r.try_get("version")?,
            steps: r.try_get("steps")?,
            tool_calls: r.try_get("tool_calls")?,
        })
    })
    .transpose()
}

/// Claims a runnable run whose lease is free or expired. Returns the claimed run.
pub async fn claim_next(db: &Db, owner: &str, now: i64) -> AppResult<Option<Run>> {
    let candidates = sqlx::query(
        "SELECT id, version FROM runs
         WHERE status IN ('ready', 'model_running', 'tool_pending', 'tool_running')
           AND (lease_expires_at IS NULL OR lease_expires_at < $1)
         ORDER BY created_at LIMIT 10",
    )
    .bind(now)
    .fetch_all(db.pool())
    .await?;
    for row in candidates {
        let id: String = row.try_get("id")?;
        let version: i64 = row.try_get("version")?;
        let done = sqlx::query(
            "UPDATE runs SET lease_owner = $1, lease_expires_at = $2, version = version + 1
             WHERE id = $3 AND version = $4 AND (lease_expires_at IS NULL OR lease_expires_at < $5)",
        )
        .bind(owner)
        .bind(now + LEASE_MS)
        .bind(&id)
        .bind(version)
        .bind(now)
        .execute(db.pool())
        .await?;
        if done.rows_affected() == 1 {
            return load_run(db, &id).await;
        }
    }
    Ok(None)
}

/// Sets the run's state, counting a step or tool call, only while we hold its lease.
pub async fn set_status(
    tx: &mut Tx<'_>,
    run: &mut Run,
    status: &str,
    add_steps: i64,
    add_tool_calls: i64,
    now: i64,
) -> AppResult<()> {
    let done = sqlx::query(
        "UPDATE runs SET status = $1, steps = steps + $2, tool_calls = tool_calls + $3, version = version + 1, updated_at = $4
         WHERE id = $5 AND version = $6",
    )
    .bind(status)
    .bind(add_steps)
    .bind(add_tool_calls)
    .bind(now)
    .bind(&run.id)
    .bind(run.version)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() != 1 {
        return Err(AppError::conflict(
            "run_changed",
            "the run was advanced elsewhere",
        ));
    }
    if run.status != status {
        append_event(
            tx,
            &run.id,
            "state",
            None,
            &serde_json::json!({ "from": run.status, "to": status }),
            now,
        )
        .await?;
    }
    run.version += 1;
    run.status = status.to_string();
    run.steps += add_steps;
    run.tool_calls += add_tool_calls;
    Ok(())
}

/// Releases the lease (the run may continue elsewhere later, or is finished).
pub async fn release(db: &Db, run: &Run) -> AppResult<()> {
    sqlx::query("UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL, version = version + 1 WHERE id = $1 AND version = $2")
        .bind(&run.id)
        .bind(run.version)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Ends a run that is not running (cancelled when its case was re-investigated).
pub async fn finish_run(tx: &mut Tx<'_>, run_id: &str, status: &str, now: i64) -> AppResult<()> {
    sqlx::query(
        "UPDATE runs SET status = $1, version = version + 1, updated_at = $2
         WHERE id = $3 AND status NOT IN ('completed', 'failed', 'cancelled')",
    )
    .bind(status)
    .bind(now)
    .bind(run_id)
    .execute(&mut **tx)
    .await?;
    append_event(
        tx,
        run_id,
        "state",
        None,
        &serde_json::json!({ "to": status }),
        now,
    )
    .await?;
    Ok(())
}

pub async fn append_event(
    tx: &mut Tx<'_>,
    run_id: &str,
    kind: &str,
    call_id: Option<&str>,
    payload: &serde_json::Value,
    now: i64,
) -> AppResult<i64> {
    let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) AS last FROM run_events WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(&mut **tx)
        .await?;
    let seq = row.try_get::<i64, _>("last")? + 1;
    sqlx::query("INSERT INTO run_events (run_id, seq, kind, call_id, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(run_id)
        .bind(seq)
        .bind(kind)
        .bind(call_id)
        .bind(payload.to_string())
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(seq)
}

pub async fn events(db: &Db, run_id: &str) -> AppResult<Vec<Event>> {
    let rows = sqlx::query("SELECT seq, kind, call_id, payload, created_at FROM run_events WHERE run_id = $1 ORDER BY seq")
        .bind(run_id)
        .fetch_all(db.pool())
        .await?;
    rows.iter()
        .map(|r| {
            let payload: String = r.try_get("payload")?;
            Ok(Event {
                seq: r.try_get("seq")?,
                kind: r.try_get("kind")?,
                call_id: r.try_get("call_id")?,
                payload: serde_json::from_str(&payload)
                    .unwrap_or(serde_json::Value::String(payload)),
                at: rfc3339(r.try_get("created_at")?),
            })
        })
        .collect()
}

/// `GET /api/v1/runs/{id}/events` (staff).
pub async fn get_events(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> AppResult<Json<Vec<Event>>> {
    principal.staff()?;
    load_run(&state.db, &id)
        .await?
        .ok_or(AppError::NotFound("run"))?;
    Ok(Json(events(&state.db, &id).await?))
}
