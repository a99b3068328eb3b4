//! Agent runs and their append-only event log.
//!
//! A run is one agent execution on a case. Its events (model outputs, tool intents and
//! results linked by call id, proposals, decisions, state changes) are its checkpoint:
//! a restarted worker rebuilds everything from them. Runs are claimed with a lease and
//! every change is a versioned update, so two workers never advance one run.

use harness::Phase;
use serde::Serialize;
use sqlx::Row;

use crate::clock::rfc3339;
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::{new_id, Backend, Db, Tx};

/// How long a claimed run stays claimed without being renewed. Every versioned status
/// change renews it; `investigation` (the harness's keep-alive) also renews it while a slow model or tool call is
/// in flight, so only a worker that stopped making progress loses it.
pub const LEASE_MS: i64 = 60_000;

/// How long a run waiting on a dependency (the payment provider being down when facts
/// are gathered) rests before a worker tries it again. It holds no lease meanwhile.
pub const DEPENDENCY_RETRY_MS: i64 = 30_000;

/// The error code of a versioned run update that found the run changed: another worker
/// claimed it after our lease expired, or the case cancelled it. The loser stops.
pub const RUN_CHANGED: &str = "run_changed";

/// SPEC §5 run states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Ready,
    ModelRunning,
    ToolPending,
    ToolRunning,
    AwaitingApproval,
    AwaitingDependency,
    Completed,
    Failed,
    Cancelled,
}

impl RunStatus {
    pub const ALL: [RunStatus; 9] = [
        RunStatus::Ready,
        RunStatus::ModelRunning,
        RunStatus::ToolPending,
        RunStatus::ToolRunning,
        RunStatus::AwaitingApproval,
        RunStatus::AwaitingDependency,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ];

    /// The name stored in `runs.status` and shown in events.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ready => "ready",
            RunStatus::ModelRunning => "model_running",
            RunStatus::ToolPending => "tool_pending",
            RunStatus::ToolRunning => "tool_running",
            RunStatus::AwaitingApproval => "awaiting_approval",
            RunStatus::AwaitingDependency => "awaiting_dependency",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(name: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Where a working run is inside the harness's loop; `None` for the states in which
    /// the run waits for the world (a human, a dependency) or is over.
    pub fn phase(self) -> Option<Phase> {
        match self {
            RunStatus::Ready => Some(Phase::Ready),
            RunStatus::ModelRunning => Some(Phase::ModelRunning),
            RunStatus::ToolPending => Some(Phase::ToolPending),
            RunStatus::ToolRunning => Some(Phase::ToolRunning),
            _ => None,
        }
    }

    /// States in which the run waits for the world (a human, a dependency) or is over:
    /// it holds no worker and no lease (SPEC §5).
    pub fn holds_no_worker(self) -> bool {
        self.phase().is_none()
    }
}

/// The four working states are the harness's phases, stored by their SPEC names.
impl From<Phase> for RunStatus {
    fn from(phase: Phase) -> Self {
        match phase {
            Phase::Ready => RunStatus::Ready,
            Phase::ModelRunning => RunStatus::ModelRunning,
            Phase::ToolPending => RunStatus::ToolPending,
            Phase::ToolRunning => RunStatus::ToolRunning,
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status compares with its stored name (`run.status == "ready"`).
impl PartialEq<&str> for RunStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The states by their SPEC names, for the code that reads best that way.
pub mod status {
    use super::RunStatus;

    pub const READY: RunStatus = RunStatus::Ready;
    pub const MODEL_RUNNING: RunStatus = RunStatus::ModelRunning;
    pub const TOOL_PENDING: RunStatus = RunStatus::ToolPending;
    pub const TOOL_RUNNING: RunStatus = RunStatus::ToolRunning;
    pub const AWAITING_APPROVAL: RunStatus = RunStatus::AwaitingApproval;
    pub const AWAITING_DEPENDENCY: RunStatus = RunStatus::AwaitingDependency;
    pub const COMPLETED: RunStatus = RunStatus::Completed;
    pub const FAILED: RunStatus = RunStatus::Failed;
    pub const CANCELLED: RunStatus = RunStatus::Cancelled;

    /// States in which a worker is (or was, before a crash) advancing the run.
    pub const ACTIVE: [RunStatus; 4] = [READY, MODEL_RUNNING, TOOL_PENDING, TOOL_RUNNING];

    /// See [`RunStatus::holds_no_worker`].
    pub fn holds_no_worker(status: RunStatus) -> bool {
        status.holds_no_worker()
    }
}

#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub case_id: String,
    pub status: RunStatus,
    pub version: i64,
    pub steps: i64,
    pub tool_calls: i64,
    /// The worker holding the lease, if any (`claim_next` sets it).
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<i64>,
    pub created_at: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Event {
    pub seq: i64,
    pub kind: String,
    pub call_id: Option<String>,
    pub payload: serde_json::Value,
    pub at: String,
    /// `at` as unix milliseconds (the injected clock), for budgets and durations.
    pub at_ms: i64,
}

pub async fn create_run(tx: &mut Tx<'_>, state: &AppState, case_id: &str) -> AppResult<String> {
    let now = state.clock.now_ms();
    let id = new_id("run");
    sqlx::query(
        "INSERT INTO runs (id, case_id, status, version, model, prompt_version, tool_schema_version, steps, tool_calls, created_at, updated_at)
         VALUES ($1, $2, 'ready', 1, $3, $4, $5, 0, 0, $6, $6)",
    )
    .bind(&id)
    .bind(case_id)
    .bind(&state.versions.model)
    .bind(&state.versions.prompt)
    .bind(&state.versions.tools)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    let v = &state.versions;
    let created = serde_json::json!({ "case_id": case_id, "model": v.model, "prompt_version": v.prompt, "tool_schema_version": v.tools });
    append_event(tx, &id, "run_created", None, &created, now).await?;
    Ok(id)
}

const RUN_COLUMNS: &str =
    "id, case_id, status, version, steps, tool_calls, lease_owner, lease_expires_at, created_at";

/// A stored status this build does not know is a corrupt row, not a state to guess.
fn stored_status(name: &str) -> AppResult<RunStatus> {
    RunStatus::parse(name).ok_or_else(|| {
        AppError::Internal(anyhow::anyhow!("unknown run status {name:?} in the store"))
    })
}

fn run_from_row(r: &sqlx::any::AnyRow) -> AppResult<Run> {
    Ok(Run {
        id: r.try_get("id")?,
        case_id: r.try_get("case_id")?,
        status: stored_status(&r.try_get::<String, _>("status")?)?,
        version: r.try_get("version")?,
        steps: r.try_get("steps")?,
        tool_calls: r.try_get("tool_calls")?,
        lease_owner: r.try_get("lease_owner")?,
        lease_expires_at: r.try_get("lease_expires_at")?,
        created_at: r.try_get("created_at")?,
    })
}

pub async fn load_run(db: &Db, run_id: &str) -> AppResult<Option<Run>> {
    let row = sqlx::query(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"))
        .bind(run_id)
        .fetch_optional(db.pool())
        .await?;
    row.as_ref().map(run_from_row).transpose()
}

/// The runs a worker may claim: active ones (being advanced, or abandoned by a worker
/// that died) and ones that waited on a dependency long enough, whose lease is free or
/// expired. `$1` is now, `$2` is now minus [`DEPENDENCY_RETRY_MS`]. Only top-level runs:
/// a child run is advanced inside its parent's step, under its parent's lease.
const CLAIMABLE_RUNS: &str = "(status IN ('ready', 'model_running', 'tool_pending', 'tool_running')
                OR (status = 'awaiting_dependency' AND updated_at <= $2))
           AND (lease_expires_at IS NULL OR lease_expires_at < $1)
           AND parent_run_id IS NULL";

/// Claims a runnable run whose lease is free or expired: one a worker is advancing (or
/// was, before it died), or one that waited on a dependency long enough. Returns the
/// claimed run; the claim is a versioned update, so of two workers racing for one run
/// exactly one gets it, and the version it bumps makes every later update of the
/// previous holder fail.
///
/// On PostgreSQL the candidate is picked with `FOR UPDATE SKIP LOCKED` in a short
/// transaction, so workers of several instances never queue behind one another's
/// claims: each takes the oldest run nobody is claiming right now. SQLite has one
/// writer and no row locks; it reads a few candidates and relies on the versioned
/// update alone (a lost race just moves on to the next candidate).
pub async fn claim_next(db: &Db, owner: &str, now: i64) -> AppResult<Option<Run>> {
    let claimed = match db.backend() {
        Backend::Postgres => claim_next_skip_locked(db, owner, now).await?,
        Backend::Sqlite => claim_next_versioned(db, owner, now).await?,
    };
    let Some(id) = claimed else {
        return Ok(None);
    };
    tracing::debug!(run_id = %id, owner, "run claimed");
    load_run(db, &id).await
}

/// PostgreSQL: lock one claimable run, skipping rows other claims hold, then take its
/// lease with the versioned update, and commit (the row lock lasts only this long).
async fn claim_next_skip_locked(db: &Db, owner: &str, now: i64) -> AppResult<Option<String>> {
    let mut tx = db.begin().await?;
    let candidate = sqlx::query(&format!(
        "SELECT id, version FROM runs WHERE {CLAIMABLE_RUNS}
         ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED"
    ))
    .bind(now)
    .bind(now - DEPENDENCY_RETRY_MS)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = candidate else {
        tx.rollback().await?;
        return Ok(None);
    };
    let id: String = row.try_get("id")?;
    let version: i64 = row.try_get("version")?;
    let taken = take_run_lease(&mut tx, &id, version, owner, now).await?;
    tx.commit().await?;
    Ok(taken.then_some(id))
}

/// SQLite (and any backend without row locks): a few candidates, each tried with the
/// versioned update until one is won. Candidates are read one status at a time in
/// creation order, so each read walks the `(status, created_at)` index instead of
/// sorting every queued run: runs abandoned mid-step first, then ready runs, then runs
/// whose dependency wait is over.
async fn claim_next_versioned(db: &Db, owner: &str, now: i64) -> AppResult<Option<String>> {
    const GROUPS: [(&str, bool); 5] = [
        ("model_running", false),
        ("tool_running", false),
        ("tool_pending", false),
        ("ready", false),
        ("awaiting_dependency", true),
    ];
    for (status, rested) in GROUPS {
        let candidates = sqlx::query(
            "SELECT id, version FROM runs
             WHERE status = $1 AND (lease_expires_at IS NULL OR lease_expires_at < $2)
               AND ($3 = 0 OR updated_at <= $4) AND parent_run_id IS NULL
             ORDER BY created_at LIMIT 10",
        )
        .bind(status)
        .bind(now)
        .bind(i64::from(rested))
        .bind(now - DEPENDENCY_RETRY_MS)
        .fetch_all(db.pool())
        .await?;
        for row in candidates {
            let id: String = row.try_get("id")?;
            let version: i64 = row.try_get("version")?;
            let mut conn = db.pool().acquire().await?;
            if take_run_lease(&mut conn, &id, version, owner, now).await? {
                return Ok(Some(id));
            }
        }
    }
    Ok(None)
}

/// The versioned lease update both claim paths end with: it succeeds only if the run
/// is still at `version` and its lease still free or expired.
async fn take_run_lease(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    version: i64,
    owner: &str,
    now: i64,
) -> AppResult<bool> {
    let done = sqlx::query(
        "UPDATE runs SET lease_owner = $1, lease_expires_at = $2, version = version + 1
         WHERE id = $3 AND version = $4 AND (lease_expires_at IS NULL OR lease_expires_at < $5)",
    )
    .bind(owner)
    .bind(now + LEASE_MS)
    .bind(id)
    .bind(version)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Extends the lease of a run we hold, during a step that takes long (a slow model).
/// Fails with `RUN_CHANGED` when the lease was lost: the caller must stop.
pub async fn renew_lease(db: &Db, run: &mut Run, now: i64) -> AppResult<()> {
    let Some(owner) = run.lease_owner.clone() else {
        return Ok(());
    };
    let done = sqlx::query(
        "UPDATE runs SET lease_expires_at = $1, version = version + 1
         WHERE id = $2 AND version = $3 AND lease_owner = $4",
    )
    .bind(now + LEASE_MS)
    .bind(&run.id)
    .bind(run.version)
    .bind(&owner)
    .execute(db.pool())
    .await?;
    if done.rows_affected() != 1 {
        return Err(run_changed());
    }
    run.version += 1;
    run.lease_expires_at = Some(now + LEASE_MS);
    Ok(())
}

pub fn run_changed() -> AppError {
    AppError::conflict(
        RUN_CHANGED,
        "the run was advanced elsewhere (lease lost or run cancelled)",
    )
}

/// Whether an error means the run was taken over or ended elsewhere (see `RUN_CHANGED`).
pub fn is_run_changed(error: &AppError) -> bool {
    matches!(error, AppError::Conflict { code, .. } if *code == RUN_CHANGED)
}

/// Sets the run's state, counting a step or tool call, only while nobody else changed
/// the run since we read it (a versioned update: a worker whose lease was taken over
/// fails here, before it writes anything else in the transaction). Renews the lease
/// while the run stays active; a run that starts waiting or ends gives its lease up
/// in the same update (SPEC §5: a waiting run holds no worker). Every change of state
/// is logged as a `state` event.
pub async fn set_status(
    tx: &mut Tx<'_>,
    run: &mut Run,
    status: RunStatus,
    add_steps: i64,
    add_tool_calls: i64,
    now: i64,
) -> AppResult<()> {
    record_step(tx, run, status, add_steps, add_tool_calls, now, &[]).await
}

/// An event to append with a step.
pub struct NewEvent<'a> {
    pub kind: &'a str,
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
) -> AppResult<()> {
    let releases = status.holds_no_worker();
    let lease_expires_at = if releases {
        None
    } else {
        run.lease_expires_at.map(|_| now + LEASE_MS)
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
            "state",
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

/// Releases the lease `run` holds (the run may continue elsewhere later). A versioned
/// update naming the owner: it does nothing if the run changed since `run` was read or
/// holds no lease (a run that waits or ended gave its lease up already).
pub async fn release(db: &Db, run: &Run) -> AppResult<()> {
    sqlx::query(
        "UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL, version = version + 1
         WHERE id = $1 AND version = $2 AND lease_owner = $3",
    )
    .bind(&run.id)
    .bind(run.version)
    .bind(&run.lease_owner)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Ends a run that is not running (cancelled when its case was re-investigated, completed
/// when its refund was executed). Takes the lease away too: a worker still advancing it
/// fails its next versioned update and stops. Logs the change only if there was one.
/// Its unfinished child runs are cancelled with it ([`cancel_children`]).
pub async fn finish_run(
    tx: &mut Tx<'_>,
    run_id: &str,
    status: RunStatus,
    now: i64,
) -> AppResult<()> {
    let previous = sqlx::query("SELECT status FROM runs WHERE id = $1")
        .bind(run_id)
        .fetch_optional(&mut **tx)
        .await?
        .map(|r| r.try_get::<String, _>("status"))
        .transpose()?;
    let done = sqlx::query(
        "UPDATE runs SET status = $1, version = version + 1, updated_at = $2,
             lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $3 AND status NOT IN ('completed', 'failed', 'cancelled')",
    )
    .bind(status.as_str())
    .bind(now)
    .bind(run_id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 1 {
        append_event(
            tx,
            run_id,
            "state",
            None,
            &serde_json::json!({ "from": previous, "to": status }),
            now,
        )
        .await?;
    }
    cancel_children(tx, run_id, now).await
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
                at_ms: r.try_get("created_at")?,
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The stuck-run watchdog's scan (issue 18; the rules are in `watchdog`).
// ---------------------------------------------------------------------------------------

/// A run in a watched state whose last progress event is old enough to look at.
#[derive(Debug, Clone)]
pub struct Stalled {
    pub run: Run,
    /// When its last progress event was written (unix ms, the injected clock).
    pub last_progress_at: i64,
}

/// `kinds` as an SQL list of literals. Only ever given the watchdog's constants (never
/// input): sqlx's `Any` driver binds no arrays, and these lists are fixed at build time.
fn sql_list(kinds: &[&'static str]) -> String {
    let quoted: Vec<String> = kinds.iter().map(|k| format!("'{k}'")).collect();
    quoted.join(", ")
}

/// The time of the run's last event of one of `progress` (`run_created` is always one),
/// its child runs' included: a parent joining its sub-agents progresses through them.
fn last_progress_sql(run_id: &str, progress: &[&'static str]) -> String {
    format!(
        "(SELECT MAX(e.created_at) FROM run_events e
          WHERE (e.run_id = {run_id} OR e.run_id IN (SELECT c.id FROM runs c WHERE c.parent_run_id = {run_id}))
            AND e.kind IN ({}))",
        sql_list(progress)
    )
}

/// Runs in one of `watched` states whose last event of a `progress` kind was written
/// at or before `cutoff`, the longest-stalled first, at most `limit`. A run created
/// after `cutoff` cannot qualify, so the `(status, created_at)` index bounds the scan.
pub async fn stalled_runs(
    db: &Db,
    watched: &[RunStatus],
    progress: &[&'static str],
    cutoff: i64,
    limit: i64,
) -> AppResult<Vec<Stalled>> {
    let sql = format!(
        "SELECT * FROM (
             SELECT {RUN_COLUMNS}, {} AS last_progress_at FROM runs r
             WHERE r.status IN ({}) AND r.created_at <= $1 AND r.parent_run_id IS NULL
         ) s WHERE s.last_progress_at <= $1 ORDER BY s.last_progress_at, s.id LIMIT $2",
        last_progress_sql("r.id", progress),
        sql_list(&watched.iter().map(|s| s.as_str()).collect::<Vec<_>>())
    );
    let rows = sqlx::query(&sql)
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
    progress: &[&'static str],
) -> AppResult<Option<(String, i64)>> {
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
    progress: &[&'static str],
) -> AppResult<Option<(String, i64)>> {
    let row = sqlx::query(&format!(
        "SELECT status, {} AS last_progress_at FROM runs WHERE id = $1",
        last_progress_sql("runs.id", progress)
    ))
    .bind(run_id)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| Ok((r.try_get("status")?, r.try_get("last_progress_at")?)))
        .transpose()
}

// ---------------------------------------------------------------------------------------
// Child runs (issue 18: the LLM path's sub-agents, `investigation::children`).
// ---------------------------------------------------------------------------------------

/// A child run as its parent's trace lists it.
#[derive(Debug, Clone)]
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
) -> AppResult<Run> {
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
    .bind(&parent.case_id)
    .bind(&versions.model)
    .bind(&versions.prompt)
    .bind(&versions.tools)
    .bind(now)
    .bind(&parent.id)
    .bind(name)
    .execute(&mut *tx)
    .await?;
    let created = serde_json::json!({ "case_id": parent.case_id, "parent_run_id": parent.id, "child": name,
        "model": versions.model, "prompt_version": versions.prompt, "tool_schema_version": versions.tools });
    append_event(&mut tx, &id, "run_created", None, &created, now).await?;
    tx.commit().await?;
    load_run(db, &id)
        .await?
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("child run {id} vanished")))
}

async fn find_child(db: &Db, parent_id: &str, name: &str) -> AppResult<Option<Run>> {
    let row = sqlx::query(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE parent_run_id = $1 AND child_name = $2"
    ))
    .bind(parent_id)
    .bind(name)
    .fetch_optional(db.pool())
    .await?;
    row.as_ref().map(run_from_row).transpose()
}

/// The runs `parent_id` spawned, oldest first.
pub async fn children(db: &Db, parent_id: &str) -> AppResult<Vec<ChildRun>> {
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
pub async fn parent_of(db: &Db, run_id: &str) -> AppResult<Option<String>> {
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
pub async fn cancel_children(tx: &mut Tx<'_>, parent_id: &str, now: i64) -> AppResult<()> {
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
        append_event(tx, &id, "state", None, &payload, now).await?;
    }
    Ok(())
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn every_run_status_is_stored_by_its_spec_name_and_read_back() {
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::json!(s.as_str()))
            );
        }
        assert_eq!(RunStatus::parse("Ready"), None);
        assert!(
            stored_status("paused").is_err(),
            "an unknown stored status is an error"
        );
        let working: Vec<_> = RunStatus::ALL
            .into_iter()
            .filter(|s| !s.holds_no_worker())
            .collect();
        assert_eq!(working, status::ACTIVE);
    }
}
