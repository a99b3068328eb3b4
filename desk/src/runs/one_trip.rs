//! A batch of run steps in one round trip to SQLite's connection thread.
//!
//! sqlx runs every SQLite statement on the connection's own thread: a statement is a
//! command sent there and its rows sent back, a transaction's `BEGIN` and `COMMIT` are
//! each a round trip in which that thread waits until the caller takes the answer, and
//! the pool checks a connection with one more when it comes back. A step committed with
//! [`record_step`](super::record_step) in a transaction of its own so costs five trips,
//! and at one run at a time those trips — not SQLite's work — are what a step costs.
//!
//! Here a whole batch goes as one query text: `BEGIN IMMEDIATE`, each step's versioned
//! update (advancing the run's `last_seq`) followed by a guard, its events' insert
//! numbered up to that `last_seq` and a read of it, then `COMMIT` (sqlx's SQLite driver runs every statement of a text, binding
//! `$N` across them). The guard is the one SQLite statement that fails on a condition
//! without a trigger: `abs()` of the smallest integer is an integer-overflow error
//! (documented), taken only when the update before it matched no row. So a step whose
//! run changed stops the text before `COMMIT`; the batch is rolled back and left to the
//! group writer's general path, which refuses that run alone — as it is any other
//! failure, and a step with an event kind this build does not know. What is committed
//! is exactly what `record_step` would have written.
//!
//! The connection never goes back to the pool inside a transaction: a failure rolls
//! back, and a connection dropped during the trip (its task cancelled) is closed, which
//! rolls back in SQLite. Between batches that follow each other without a pause the
//! group writer keeps it ([`Held`]), so a step costs one round trip, not two (the
//! pool's ping on its return): at one run at a time its next step is usually waiting
//! once the run has been answered and had its turn.

use sqlx::any::AnyRow;
use sqlx::pool::PoolConnection;
use sqlx::{Any, Row};

use super::log::{push_step_update, StepPlan, STEP_UPDATE_PARAMS};
use super::{Committed, EventKind, NewEvent, Run, StepWrite};
use crate::error::DomainResult;
use store::Db;

/// Commits `chains` (each one run's steps in order) in one transaction, in one round
/// trip. `None`: nothing was written, and the general path must decide (a run changed,
/// an event kind is unknown, or SQLite failed the batch).
///
/// The writer connection is taken from `held` when it holds one, and left there only
/// once the batch has committed: otherwise it goes back to the pool, where the general
/// path takes its connections (SQLite's pool has one).
pub(super) async fn commit_chains(
    db: &Db,
    held: &mut Held,
    chains: &[&[StepWrite]],
) -> DomainResult<Option<Vec<Vec<Committed>>>> {
    let result = commit_on(db, held, chains).await;
    if !matches!(result, Ok(Some(_))) {
        held.release();
    }
    result
}

/// [`commit_chains`] on the connection `held` keeps, or one from the pool.
async fn commit_on(
    db: &Db,
    held: &mut Held,
    chains: &[&[StepWrite]],
) -> DomainResult<Option<Vec<Vec<Committed>>>> {
    let Some(planned) = plan(chains) else {
        return Ok(None);
    };
    let query = batch_query(&planned).map_err(anyhow::Error::from)?;
    let conn = match held.0.take() {
        Some(conn) => conn,
        None => db.pool().acquire().await?,
    };
    let mut conn = OpenConnection::new(conn);
    match conn.run(query).await {
        Ok(rows) => {
            held.0 = conn.done();
            let seqs = first_seqs(&rows, &planned)?;
            Ok(Some(committed(chains, planned, seqs)))
        }
        Err(e) => {
            tracing::debug!(error = %e, "a batch of run steps stopped in one trip; rolled back");
            conn.roll_back().await;
            Ok(None)
        }
    }
}

/// The one SQLite writer connection, kept by the group writer between batches that
/// follow each other without a pause, so that it is not returned to the pool (and
/// pinged there, a round trip to its thread) only to be taken again at once.
#[derive(Default)]
pub(super) struct Held(Option<PoolConnection<Any>>);

impl Held {
    /// Whether a connection is kept.
    pub(super) fn holds(&self) -> bool {
        self.0.is_some()
    }

    /// Returns the kept connection to the pool, for every other writer.
    fn release(&mut self) {
        self.0 = None;
    }
}

/// One step of the batch: its run as it is before the step, and what it writes.
struct Planned<'w> {
    chain: usize,
    before: Run,
    plan: StepPlan<'w>,
}

/// Every step's plan, each on its run as the step before it in its chain leaves it;
/// `None` when an event kind is unknown (the general path refuses that step alone).
fn plan<'w>(chains: &[&'w [StepWrite]]) -> Option<Vec<Planned<'w>>> {
    let mut planned = Vec::new();
    for (chain, writes) in chains.iter().enumerate() {
        let Some(first) = writes.first() else {
            continue;
        };
        let mut run = first.run.clone();
        for write in writes.iter() {
            let events = write
                .events
                .iter()
                .map(|e| {
                    Some(NewEvent {
                        kind: EventKind::parse(e.kind).ok()?,
                        call_id: e.call_id.as_deref(),
                        payload: &e.payload,
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            let counts = (write.add_steps, write.add_tool_calls);
            let plan = StepPlan::new(&run, write.status, counts, write.now, &events);
            let before = run.clone();
            plan.apply(&mut run);
            planned.push(Planned {
                chain,
                before,
                plan,
            });
        }
    }
    Some(planned)
}

/// Fails the statement (integer overflow) unless the update before it changed a row.
const GUARD: &str =
    "SELECT 1 WHERE abs(CASE changes() WHEN 1 THEN 0 ELSE -9223372036854775807 - 1 END) < 0;\n";

/// `BEGIN IMMEDIATE`; per step `k` its update, the guard, the insert of its events and
/// a row `(k, last seq)`; `COMMIT`. A step's events are one parameter, a JSON array of
/// `[kind, call id, payload as text]`, so a step's text is the same whatever it appends
/// and a batch's text depends only on its number of steps: SQLite's connection keeps
/// each prepared (preparing a new text per batch was an eighth of the CPU).
fn batch_query<'q>(planned: &[Planned<'_>]) -> serde_json::Result<super::log::AnyQuery<'q>> {
    let mut sql = String::from("BEGIN IMMEDIATE;\n");
    let mut p = 1;
    for k in 0..planned.len() {
        push_step_update(&mut sql, p);
        sql.push_str(";\n");
        sql.push_str(GUARD);
        let (run, now, n, events) = (p + 6, p + 3, p + 8, p + STEP_UPDATE_PARAMS);
        // The update advanced the run's `last_seq` by the step's number of events: they
        // are numbered up to it.
        sql.push_str(&format!(
            "INSERT INTO run_events (run_id, seq, kind, call_id, payload, created_at)
             SELECT ${run}, r.last_seq - ${n} + e.key + 1, e.value ->> '$[0]', e.value ->> '$[1]',
                    e.value ->> '$[2]', ${now}
             FROM runs r, json_each(${events}) AS e WHERE r.id = ${run};
             SELECT {k} AS step, last_seq AS seq FROM runs WHERE id = ${run};\n"
        ));
        p += STEP_UPDATE_PARAMS + 1;
    }
    sql.push_str("COMMIT;");
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for step in planned {
        query = step.plan.bind_update(query, &step.before);
        query = query.bind(events_json(&step.plan)?);
    }
    Ok(query)
}

/// A step's events as the JSON array its insert reads: `[kind, call id, payload]`, the
/// payload as the text `record_step` would store.
fn events_json(plan: &StepPlan<'_>) -> serde_json::Result<String> {
    let events: Vec<(&str, Option<&str>, String)> = plan
        .events
        .iter()
        .map(|(kind, call_id, payload)| (kind.as_str(), *call_id, payload.to_string()))
        .collect();
    serde_json::to_string(&events)
}

/// Each step's first event's sequence number, from its last one (0 for a step without
/// events).
fn first_seqs(rows: &[AnyRow], planned: &[Planned<'_>]) -> DomainResult<Vec<i64>> {
    let mut first = vec![0; planned.len()];
    for row in rows {
        let step = usize::try_from(row.try_get::<i64, _>("step")?).unwrap_or(usize::MAX);
        let last: i64 = row.try_get("seq")?;
        let Some(planned) = planned.get(step) else {
            return Err(crate::error::DomainError::Internal(anyhow::anyhow!(
                "a batch of run steps returned a row for step {step}, which it does not have"
            )));
        };
        first[step] = last + 1 - planned.plan.events.len() as i64;
    }
    Ok(first)
}

/// The runs as updated and the events as stored, per chain in order.
fn committed(
    chains: &[&[StepWrite]],
    planned: Vec<Planned<'_>>,
    seqs: Vec<i64>,
) -> Vec<Vec<Committed>> {
    let mut out: Vec<Vec<Committed>> = chains.iter().map(|c| Vec::with_capacity(c.len())).collect();
    for (step, first) in planned.into_iter().zip(seqs) {
        let mut run = step.before;
        step.plan.apply(&mut run);
        out[step.chain].push((run, step.plan.appended(first)));
    }
    out
}

/// The writer connection while a batch's transaction may be open: closed rather than
/// returned to the pool if it is dropped before [`OpenConnection::done`].
struct OpenConnection {
    conn: Option<PoolConnection<Any>>,
    open: bool,
}

impl OpenConnection {
    fn new(conn: PoolConnection<Any>) -> OpenConnection {
        OpenConnection {
            conn: Some(conn),
            open: true,
        }
    }

    /// Runs the batch's text.
    async fn run(&mut self, query: super::log::AnyQuery<'_>) -> sqlx::Result<Vec<AnyRow>> {
        match self.conn.as_mut() {
            Some(conn) => query.fetch_all(&mut **conn).await,
            None => Err(sqlx::Error::PoolClosed),
        }
    }

    /// Rolls the batch back; a connection that cannot is closed, not reused.
    async fn roll_back(mut self) {
        let rolled_back = match self.conn.as_mut() {
            Some(conn) => sqlx::query("ROLLBACK").execute(&mut **conn).await.is_ok(),
            None => false,
        };
        if rolled_back {
            drop(self.done());
        }
    }

    /// The transaction is over: the connection, to keep or to return to the pool.
    fn done(mut self) -> Option<PoolConnection<Any>> {
        self.open = false;
        self.conn.take()
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        if let (true, Some(conn)) = (self.open, self.conn.as_mut()) {
            conn.close_on_drop();
        }
    }
}
