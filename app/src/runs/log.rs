//! A run's append-only event log: one step's events committed with the run's versioned
//! update (`record_step`), single events, and reading them back.

use sqlx::Row;

use super::{run_changed, Event, EventKind, Run, RunStatus};
use crate::clock::rfc3339;
use crate::error::DomainResult;
use crate::store::{Db, Tx};

/// An event to append with a step.
pub struct NewEvent<'a> {
    pub kind: EventKind,
    pub call_id: Option<&'a str>,
    pub payload: &'a serde_json::Value,
}

/// `set_status` with the events the step produced, logged before the `state` event
/// they led to (so the log reads "model output, intents, then → tool_pending"). The
/// versioned update still comes first: a worker that lost its lease writes nothing,
/// and on PostgreSQL the run's row stays locked until the events are committed.
pub async fn record_step(
    tx: &mut Tx<'_>,
    run: &mut Run,
    status: RunStatus,
    add_steps: i64,
    add_tool_calls: i64,
    now: i64,
    events: &[NewEvent<'_>],
) -> DomainResult<()> {
    let releases = status.holds_no_worker();
    let lease_expires_at = if releases {
        None
    } else {
        run.lease_expires_at.map(|_| now + crate::lease::ms())
    };
    let lease_owner = if releases {
        None
    } else {
        run.lease_owner.clone()
    };
    let done = sqlx::query(
        "UPDATE runs SET status = $1, steps = steps + $2, tool_calls = tool_calls + $3, version = version + 1,
             updated_at = $4, lease_owner = $5, lease_expires_at = $6
         WHERE id = $7 AND version = $8",
    )
    .bind(status.as_str())
    .bind(add_steps)
    .bind(add_tool_calls)
    .bind(now)
    .bind(&lease_owner)
    .bind(lease_expires_at)
    .bind(&run.id)
    .bind(run.version)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() != 1 {
        return Err(run_changed());
    }
    for e in events {
        append_event(tx, &run.id, e.kind, e.call_id, e.payload, now).await?;
    }
    if run.status != status {
        append_event(
            tx,
            &run.id,
            EventKind::State,
            None,
            &serde_json::json!({ "from": run.status, "to": status, "steps": run.steps + add_steps, "tool_calls": run.tool_calls + add_tool_calls }),
            now,
        )
        .await?;
    }
    run.version += 1;
    run.status = status;
    run.steps += add_steps;
    run.tool_calls += add_tool_calls;
    run.lease_owner = lease_owner;
    run.lease_expires_at = lease_expires_at;
    Ok(())
}

pub async fn append_event(
    tx: &mut Tx<'_>,
    run_id: &str,
    kind: EventKind,
    call_id: Option<&str>,
    payload: &serde_json::Value,
    now: i64,
) -> DomainResult<i64> {
    let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) AS last FROM run_events WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(&mut **tx)
        .await?;
    let seq = row.try_get::<i64, _>("last")? + 1;
    sqlx::query("INSERT INTO run_events (run_id, seq, kind, call_id, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(run_id)
        .bind(seq)
        .bind(kind.as_str())
        .bind(call_id)
        .bind(payload.to_string())
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(seq)
}

pub async fn events(db: &Db, run_id: &str) -> DomainResult<Vec<Event>> {
    let rows = sqlx::query("SELECT seq, kind, call_id, payload, created_at FROM run_events WHERE run_id = $1 ORDER BY seq")
        .bind(run_id)
        .fetch_all(db.pool())
        .await?;
    rows.iter()
        .map(|r| {
            let payload: String = r.try_get("payload")?;
            Ok(Event {
                seq: r.try_get("seq")?,
                kind: EventKind::parse(r.try_get("kind")?)?,
                call_id: r.try_get("call_id")?,
                payload: serde_json::from_str(&payload)
                    .unwrap_or(serde_json::Value::String(payload)),
                at: rfc3339(r.try_get("created_at")?),
                at_ms: r.try_get("created_at")?,
            })
        })
        .collect()
}
