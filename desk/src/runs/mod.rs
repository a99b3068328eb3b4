//! Agent runs and their append-only event log.
//!
//! A run is one agent execution on a case. Its events (model outputs, tool intents and
//! results linked by call id, proposals, decisions, state changes) are its checkpoint:
//! a restarted worker rebuilds everything from them. Runs are claimed with a lease and
//! every change is a versioned update, so two workers never advance one run.

mod lease;
pub use lease::{claim_next, release, renew_lease};
mod log;
pub use log::{append_event, events, record_step, Appended, NewEvent};
mod group;
mod one_trip;
pub use group::{commit_batch, Committed, StepWrite, StepWriter};
mod stalled;
pub use stalled::{lock_for_note, progress_of, stalled_runs, Stalled};
mod children;
mod kind;
pub use children::{cancel_children, child_run, children, parent_of, ChildRun};
pub use kind::EventKind;

use crate::columns::stored_id;
use domain::ids::{CaseId, RunId};
use harness::Phase;
use serde::Serialize;
use sqlx::Row;

use crate::error::{DomainError, DomainResult};
use store::{new_id, Db, Tx};

/// Where new runs go: the versions (model, prompt, tool schema) each is made with, the
/// background worker's wake-up, rung once the run is committed, and the rollout mode a
/// new case opens in where no scope has a row of its own (`SHADOW_MODE`).
#[derive(Clone, Copy)]
pub struct Queue<'a> {
    pub versions: &'a harness::Versions,
    pub wake: &'a tokio::sync::Notify,
    pub rollout_default: crate::rollout::Mode,
    /// The language a new ticket written in one we do not answer in is answered in.
    pub default_language: crate::replies::Language,
}

/// How long a run waiting on a dependency (the payment provider being down when facts
/// are gathered) rests before a worker tries it again. It holds no lease meanwhile.
pub const DEPENDENCY_RETRY_MS: i64 = 30_000;

/// The error code of a versioned run update that found the run changed: another worker
/// claimed it after our lease expired, or the case cancelled it. The loser stops.
pub const RUN_CHANGED: crate::error::ErrorCode = crate::error::ErrorCode::RunChanged;

/// docs/spec/lifecycle.md run states.
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
    /// it holds no worker and no lease (docs/spec/lifecycle.md).
    pub fn holds_no_worker(self) -> bool {
        self.phase().is_none()
    }
}

/// The four working states are the harness's phases, stored by their names in docs/spec/lifecycle.md.
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

/// The states by their names in docs/spec/lifecycle.md, for the code that reads best that way.
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
    pub id: RunId,
    pub case_id: CaseId,
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
    #[schema(value_type = String)]
    pub kind: EventKind,
    pub call_id: Option<String>,
    pub payload: serde_json::Value,
    pub at: String,
    /// `at` as unix milliseconds (the injected clock), for budgets and durations.
    pub at_ms: i64,
}

pub async fn create_run(
    tx: &mut Tx<'_>,
    versions: &harness::Versions,
    case_id: &str,
    now: i64,
) -> DomainResult<String> {
    let id = new_id("run");
    sqlx::query(
        "INSERT INTO runs (id, case_id, status, version, model, prompt_version, tool_schema_version, steps, tool_calls, created_at, updated_at)
         VALUES ($1, $2, 'ready', 1, $3, $4, $5, 0, 0, $6, $6)",
    )
    .bind(&id)
    .bind(case_id)
    .bind(&versions.model)
    .bind(&versions.prompt)
    .bind(&versions.tools)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    let v = versions;
    let created = serde_json::json!({ "case_id": case_id, "model": v.model, "prompt_version": v.prompt, "tool_schema_version": v.tools });
    append_event(tx, &id, EventKind::RunCreated, None, &created, now).await?;
    Ok(id)
}

const RUN_COLUMNS: &str =
    "id, case_id, status, version, steps, tool_calls, lease_owner, lease_expires_at, created_at";

/// A stored status this build does not know is a corrupt row, not a state to guess.
fn stored_status(name: &str) -> DomainResult<RunStatus> {
    RunStatus::parse(name).ok_or_else(|| {
        DomainError::Internal(anyhow::anyhow!("unknown run status {name:?} in the store"))
    })
}

fn run_from_row(r: &sqlx::any::AnyRow) -> DomainResult<Run> {
    Ok(Run {
        id: stored_id(r, "id", RunId::parse)?,
        case_id: stored_id(r, "case_id", CaseId::parse)?,
        status: stored_status(&r.try_get::<String, _>("status")?)?,
        version: r.try_get("version")?,
        steps: r.try_get("steps")?,
        tool_calls: r.try_get("tool_calls")?,
        lease_owner: r.try_get("lease_owner")?,
        lease_expires_at: r.try_get("lease_expires_at")?,
        created_at: r.try_get("created_at")?,
    })
}

pub async fn load_run(db: &Db, run_id: &str) -> DomainResult<Option<Run>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"
    )))
    .bind(run_id)
    .fetch_optional(db.pool())
    .await?;
    row.as_ref().map(run_from_row).transpose()
}

pub fn run_changed() -> DomainError {
    DomainError::conflict(
        RUN_CHANGED,
        "the run was advanced elsewhere (lease lost or run cancelled)",
    )
}

/// Whether an error means the run was taken over or ended elsewhere (see `RUN_CHANGED`).
pub fn is_run_changed(error: &DomainError) -> bool {
    matches!(error, DomainError::Conflict { code, .. } if *code == RUN_CHANGED)
}

/// Sets the run's state for a change that is no step of the loop (it counts nothing),
/// only while nobody else changed the run since we read it (a versioned update: a
/// worker whose lease was taken over fails here, before it writes anything else in the
/// transaction). Renews the lease while the run stays active; a run that starts waiting
/// or ends gives its lease up in the same update (docs/spec/lifecycle.md: a waiting run
/// holds no worker). Every change of state is logged as a `state` event.
pub async fn set_status(
    tx: &mut Tx<'_>,
    run: &mut Run,
    status: RunStatus,
    now: i64,
) -> DomainResult<()> {
    record_step(tx, run, status, 0, 0, now, &[]).await.map(drop)
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
) -> DomainResult<()> {
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
            EventKind::State,
            None,
            &serde_json::json!({ "from": previous, "to": status }),
            now,
        )
        .await?;
    }
    cancel_children(tx, run_id, now).await
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
