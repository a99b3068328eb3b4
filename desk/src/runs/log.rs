//! A run's append-only event log: one step's events committed with the run's versioned
//! update (`record_step`), single events, and reading them back.

use std::borrow::Cow;

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

/// An event as a step appends it: its kind, call id and payload (the step's own borrowed,
/// the `state` event made here owned).
pub(super) type Planned<'e> = (EventKind, Option<&'e str>, Cow<'e, serde_json::Value>);

/// One step as it will be written, decided before anything is: the versioned update of
/// the run and the events it appends — its own, then a `state` event when the status
/// changes. [`record_step`] writes one (one statement on PostgreSQL, two on SQLite);
/// `runs::one_trip` writes a batch of them in one round trip to SQLite's connection
/// thread.
pub(super) struct StepPlan<'e> {
    pub(super) status: RunStatus,
    pub(super) add_steps: i64,
    pub(super) add_tool_calls: i64,
    pub(super) now: i64,
    pub(super) lease_owner: Option<String>,
    pub(super) lease_expires_at: Option<i64>,
    pub(super) events: Vec<Planned<'e>>,
}

/// A query on either backend, its arguments bound in order.
pub(super) type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>;

/// The versioned update every step makes, its parameters numbered from `$p`: status,
/// steps and tool calls added, now, lease owner, lease expiry, run id, its version, the
/// number of events the step appends ([`StepPlan::bind_update`] binds them in this
/// order). It advances `runs.last_seq` by that number: the events take their sequence
/// numbers from the row this update locked, never from a scan of the run's events.
pub(super) fn push_step_update(sql: &mut String, p: usize) {
    use std::fmt::Write;
    let _ = write!(
        sql,
        "UPDATE runs SET status = ${p}, steps = steps + ${}, tool_calls = tool_calls + ${},
             version = version + 1, updated_at = ${}, lease_owner = ${}, lease_expires_at = ${},
             last_seq = last_seq + ${}
         WHERE id = ${} AND version = ${}",
        p + 1,
        p + 2,
        p + 3,
        p + 4,
        p + 5,
        p + 8,
        p + 6,
        p + 7
    );
}

/// The parameters [`push_step_update`] numbers.
pub(super) const STEP_UPDATE_PARAMS: usize = 9;

/// `INSERT INTO run_events … RETURNING seq` of `n` events numbered after `last.seq` (a
/// `last` CTE the caller writes before it): the run is parameter `$run`, the time `$now`,
/// then kind, call id and payload per event from `$first` ([`bind_events`] binds those).
fn push_events_insert(sql: &mut String, (run, now, first): (usize, usize, usize), n: usize) {
    use std::fmt::Write;
    sql.push_str(" INSERT INTO run_events (run_id, seq, kind, call_id, payload, created_at) ");
    for i in 0..n {
        let e = first + i * 3;
        if i > 0 {
            sql.push_str(" UNION ALL ");
        }
        let _ = write!(
            sql,
            "SELECT ${run}, seq + {}, ${e}, ${}, ${}, ${now} FROM last",
            i + 1,
            e + 1,
            e + 2,
        );
    }
    sql.push_str(" RETURNING seq");
}

/// Binds the events [`push_events_insert`] numbers from `$first`.
fn bind_events<'q>(mut query: AnyQuery<'q>, events: &[Planned<'_>]) -> AnyQuery<'q> {
    for (kind, call_id, payload) in events {
        query = query
            .bind(kind.as_str())
            .bind(call_id.map(String::from))
            .bind(payload.to_string());
    }
    query
}

/// A whole step on PostgreSQL, one statement: the versioned update (advancing
/// `last_seq`) in a data-modifying `WITH`, and the insert of its `n` events numbered from
/// the row it returns. Under READ COMMITTED an update that waited for another writer's
/// lock re-checks the version on the row as committed: a stale step updates nothing, so
/// it inserts nothing and returns no row.
fn postgres_step_sql(n: usize) -> String {
    let mut sql = String::from("WITH last AS (");
    push_step_update(&mut sql, 1);
    sql.push_str(" RETURNING last_seq - $9 AS seq)");
    push_events_insert(&mut sql, (7, 4, STEP_UPDATE_PARAMS + 1), n);
    sql
}

/// Appends `n` events to run `$1` at time `$2` (`$3` = n), the events from `$4`: on
/// PostgreSQL one statement that advances `last_seq` and inserts from the row it locked;
/// on SQLite (no data-modifying `WITH`) the same two statements in one text, sent
/// together to its connection thread. `advanced`: the run's `last_seq` was already
/// advanced by a step's update (SQLite's step), so only the insert is written.
fn append_sql(postgres: bool, advanced: bool, n: usize) -> String {
    let mut sql = String::new();
    if postgres {
        sql.push_str(
            "WITH last AS (UPDATE runs SET last_seq = last_seq + $3 WHERE id = $1
             RETURNING last_seq - $3 AS seq)",
        );
    } else {
        if !advanced {
            sql.push_str("UPDATE runs SET last_seq = last_seq + $3 WHERE id = $1;\n");
        }
        sql.push_str("WITH last AS (SELECT last_seq - $3 AS seq FROM runs WHERE id = $1)");
    }
    push_events_insert(&mut sql, (1, 2, 4), n);
    sql
}

impl<'e> StepPlan<'e> {
    /// The step `record_step` describes, on `run` as it is before it. A run that starts
    /// waiting or ends gives its lease up; one that keeps working renews it.
    pub(super) fn new(
        run: &Run,
        status: RunStatus,
        (add_steps, add_tool_calls): (i64, i64),
        now: i64,
        events: &[NewEvent<'e>],
    ) -> StepPlan<'e> {
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
        let mut planned: Vec<Planned<'e>> = events
            .iter()
            .map(|e| (e.kind, e.call_id, Cow::Borrowed(e.payload)))
            .collect();
        if run.status != status {
            let (steps, calls) = (run.steps + add_steps, run.tool_calls + add_tool_calls);
            let state = serde_json::json!({ "from": run.status, "to": status, "steps": steps, "tool_calls": calls });
            planned.push((EventKind::State, None, Cow::Owned(state)));
        }
        StepPlan {
            status,
            add_steps,
            add_tool_calls,
            now,
            lease_owner,
            lease_expires_at,
            events: planned,
        }
    }

    /// Binds what [`push_step_update`] numbers, for `run` as it is before the step.
    pub(super) fn bind_update<'q>(&self, query: AnyQuery<'q>, run: &Run) -> AnyQuery<'q> {
        query
            .bind(self.status.as_str())
            .bind(self.add_steps)
            .bind(self.add_tool_calls)
            .bind(self.now)
            .bind(self.lease_owner.clone())
            .bind(self.lease_expires_at)
            .bind(run.id.as_str().to_string())
            .bind(run.version)
            .bind(self.events.len() as i64)
    }

    /// `run` as this step leaves it once its update has matched.
    pub(super) fn apply(&self, run: &mut Run) {
        run.version += 1;
        run.status = self.status;
        run.steps += self.add_steps;
        run.tool_calls += self.add_tool_calls;
        run.lease_owner = self.lease_owner.clone();
        run.lease_expires_at = self.lease_expires_at;
    }

    /// The events as stored, the first at sequence number `first`.
    pub(super) fn appended(self, first: i64) -> Vec<Appended> {
        self.events
            .into_iter()
            .zip(first..)
            .map(|((kind, call_id, payload), seq)| Appended {
                seq,
                kind,
                call_id: call_id.map(String::from),
                payload: payload.into_owned(),
            })
            .collect()
    }
}

/// `set_status` with the events the step produced, logged before the `state` event
/// they led to (so the log reads "model output, intents, then → tool_pending"). The
/// versioned update still comes first: a worker that lost its lease writes nothing,
/// and on PostgreSQL the run's row stays locked until the events are committed.
/// Returns the events as appended. On PostgreSQL a step is one statement (the update
/// and its events' insert, [`postgres_step_sql`]); on SQLite two (the update, then the
/// insert), whatever the number of events.
pub async fn record_step(
    tx: &mut Tx<'_>,
    run: &mut Run,
    status: RunStatus,
    add_steps: i64,
    add_tool_calls: i64,
    now: i64,
    events: &[NewEvent<'_>],
) -> DomainResult<Vec<Appended>> {
    let plan = StepPlan::new(run, status, (add_steps, add_tool_calls), now, events);
    let first = if is_postgres(tx) && !plan.events.is_empty() {
        let sql = postgres_step_sql(plan.events.len());
        let query = plan.bind_update(sqlx::query(sqlx::AssertSqlSafe(sql)), run);
        let rows = bind_events(query, &plan.events)
            .fetch_all(&mut **tx)
            .await?;
        if rows.is_empty() {
            return Err(run_changed());
        }
        first_seq(&rows, plan.events.len())?
    } else {
        static UPDATE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            let mut sql = String::new();
            push_step_update(&mut sql, 1);
            sql
        });
        let update = sqlx::query(sqlx::AssertSqlSafe(UPDATE.as_str()));
        let done = plan.bind_update(update, run).execute(&mut **tx).await?;
        if done.rows_affected() != 1 {
            return Err(run_changed());
        }
        insert_events(tx, &run.id, &plan.events, now, true).await?
    };
    plan.apply(run);
    Ok(plan.appended(first))
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
    let event = [(kind, call_id, Cow::Borrowed(payload))];
    insert_events(tx, run_id, &event, now, false).await
}

/// Whether `tx` is on PostgreSQL (the one backend with data-modifying `WITH`).
fn is_postgres(tx: &Tx<'_>) -> bool {
    tx.backend_name() == <sqlx::Postgres as sqlx::Database>::NAME
}

/// Appends `events` in order after the run's last one, numbered from its `last_seq`
/// (advanced here, unless a step's update already did: `advanced`), in one round trip
/// however many events; returns the first one's sequence number. Nothing for no events.
async fn insert_events(
    tx: &mut Tx<'_>,
    run_id: &str,
    events: &[Planned<'_>],
    now: i64,
    advanced: bool,
) -> DomainResult<i64> {
    if events.is_empty() {
        return Ok(0);
    }
    let sql = append_sql(is_postgres(tx), advanced, events.len());
    let insert = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(run_id.to_string())
        .bind(now)
        .bind(events.len() as i64);
    let rows = bind_events(insert, events).fetch_all(&mut **tx).await?;
    first_seq(&rows, events.len())
}

/// The smallest `seq` of the rows an insert of `n` events returned; an error unless it
/// returned all `n` (a run that does not exist stores none).
fn first_seq(rows: &[sqlx::any::AnyRow], n: usize) -> DomainResult<i64> {
    let mut first = i64::MAX;
    for row in rows {
        first = first.min(row.try_get::<i64, _>("seq")?);
    }
    if rows.len() != n {
        return Err(crate::error::DomainError::Internal(anyhow::anyhow!(
            "{} of {n} run events stored",
            rows.len(),
        )));
    }
    Ok(first)
}

pub async fn events(db: &Db, run_id: &str) -> DomainResult<Vec<Event>> {
    let rows = sqlx::query("SELECT seq, kind, call_id, payload, created_at FROM run_events WHERE run_id = $1 ORDER BY seq")
        .bind(run_id)
        .fetch_all(db.reader())
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
