//! A run's append-only event log: one step's events committed with the run's versioned
//! update (`record_step`), single events, and reading them back.

use sqlx::Row;

use super::{run_changed, Event, EventKind, Run, RunStatus};
use crate::clock::rfc3339;
use crate::error::DomainResult;
use store::{Db, Tx};

/// An event to append with a step.
pub struct NewEvent<'a> {
    pub kind: EventKind,
    pub call_id: Option<&'a str>,
    pub payload: &'a serde_json::Value,
}

/// An event this process appended, as it was stored: what a log that keeps its events
/// in memory (`investigation::sql_log`) adds instead of reading them back.
#[derive(Debug)]
pub struct Appended {
    pub seq: i64,
    pub kind: EventKind,
    pub call_id: Option<String>,
    pub payload: serde_json::Value,
}

/// `set_status` with the events the step produced, logged before the `state` event
/// they led to (so the log reads "model output, intents, then → tool_pending"). The
/// versioned update still comes first: a worker that lost its lease writes nothing,
/// and on PostgreSQL the run's row stays locked until the events are committed.
/// Returns the events as appended (issue 19: a step is three statements — the update,
/// one read of the last sequence number, one insert of all its events — whatever the
/// number of events).
pub async fn record_step(
    tx: &mut Tx<'_>,
    run: &mut Run,
    status: RunStatus,
    add_steps: i64,
    add_tool_calls: i64,
    now: i64,
    events: &[NewEvent<'_>],
) -> DomainResult<Vec<Appended>> {
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
    .bind(run.id.as_str())
    .bind(run.version)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() != 1 {
        return Err(run_changed());
    }
    let mut appended: Vec<(
        EventKind,
        Option<&str>,
        std::borrow::Cow<'_, serde_json::Value>,
    )> = events
        .iter()
        .map(|e| (e.kind, e.call_id, std::borrow::Cow::Borrowed(e.payload)))
        .collect();
    if run.status != status {
        let state = serde_json::json!({ "from": run.status, "to": status, "steps": run.steps + add_steps, "tool_calls": run.tool_calls + add_tool_calls });
        appended.push((EventKind::State, None, std::borrow::Cow::Owned(state)));
    }
    let first = insert_events(tx, &run.id, &appended, now).await?;
    run.version += 1;
    run.status = status;
    run.steps += add_steps;
    run.tool_calls += add_tool_calls;
    run.lease_owner = lease_owner;
    run.lease_expires_at = lease_expires_at;
    Ok(appended
        .into_iter()
        .zip(first..)
        .map(|((kind, call_id, payload), seq)| Appended {
            seq,
            kind,
            call_id: call_id.map(String::from),
            payload: payload.into_owned(),
        })
        .collect())
}

/// Appends one event; returns its sequence number.
pub async fn append_event(
    tx: &mut Tx<'_>,
    run_id: &str,
    kind: EventKind,
    call_id: Option<&str>,
    payload: &serde_json::Value,
    now: i64,
) -> DomainResult<i64> {
    let event = [(kind, call_id, std::borrow::Cow::Borrowed(payload))];
    insert_events(tx, run_id, &event, now).await
}

/// Appends `events` in order after the run's last one, in one statement that reads the
/// last sequence number itself (issue 19: one round trip, however many events); returns
/// the first one's sequence number. Nothing for no events.
async fn insert_events(
    tx: &mut Tx<'_>,
    run_id: &str,
    events: &[(
        EventKind,
        Option<&str>,
        std::borrow::Cow<'_, serde_json::Value>,
    )],
    now: i64,
) -> DomainResult<i64> {
    if events.is_empty() {
        return Ok(0);
    }
    // `$1` the run, `$2` the time; then kind, call id and payload per event.
    let mut sql = String::from(
        "WITH last AS (SELECT COALESCE(MAX(seq), 0) AS seq FROM run_events WHERE run_id = $1)
         INSERT INTO run_events (run_id, seq, kind, call_id, payload, created_at) ",
    );
    for i in 0..events.len() {
        let p = 3 + i * 3;
        if i > 0 {
            sql.push_str(" UNION ALL ");
        }
        sql.push_str(&format!(
            "SELECT $1, seq + {}, ${}, ${}, ${}, $2 FROM last",
            i + 1,
            p,
            p + 1,
            p + 2
        ));
    }
    sql.push_str(" RETURNING seq");
    let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(run_id).bind(now);
    for (kind, call_id, payload) in events {
        insert = insert
            .bind(kind.as_str())
            .bind(*call_id)
            .bind(payload.to_string());
    }
    let rows = insert.fetch_all(&mut **tx).await?;
    let mut first = i64::MAX;
    for row in &rows {
        first = first.min(row.try_get::<i64, _>("seq")?);
    }
    if rows.len() != events.len() {
        return Err(crate::error::DomainError::Internal(anyhow::anyhow!(
            "{} of {} run events stored",
            rows.len(),
            events.len()
        )));
    }
    Ok(first)
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
