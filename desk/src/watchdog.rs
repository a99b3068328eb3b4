//! The stuck-run watchdog (seed §15.1): a run that makes no progress for
//! `WATCHDOG_STUCK_MINUTES` is flagged with a diagnosis — what it waits on and its last
//! event — shown on the console and logged as a `watchdog_flagged` run event; if it
//! still has made none `WATCHDOG_HANDOFF_MINUTES` later, the case goes to a human
//! through the run code's own escalation (`workflow::escalate_to_human`), the diagnosis
//! as the reason.
//!
//! **Progress** is what moves an investigation towards an outcome: new evidence (a
//! `tool_result`), a `proposal`, a `decision` (which is also how a resolved dependency
//! shows: a run resting on the provider resumes into its decision). State changes,
//! model outputs, retries and lease renewals are not progress: a run that loops
//! without learning anything is stuck, however busy it looks.
//!
//! **Watched states** are those in which the agent owes the next move: the active ones
//! (`ready`, `model_running`, `tool_pending`, `tool_running`) and `awaiting_dependency`
//! (the run waits on the provider; the retries may never succeed, or no worker may be
//! left to retry). `awaiting_approval` is not watched: a human owns the case, and the
//! approval TTL (`APPROVAL_TTL_HOURS`) already bounds that wait. Ended runs are not.
//!
//! Idempotent across instances: a flag is a `watchdog_flags` row keyed by the run and
//! the start of its stall, inserted before its event, so two scanners flag a stall
//! once; the hand-off is the escalation's versioned run update, so of two scanners one
//! wins and the other's update finds the run changed. This module writes only
//! `watchdog_flags` and (through `runs`) the flag's event; it never advances a run.

use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::Row;

use crate::agent::Proposal;
use crate::clock::{rfc3339, Clock};
use crate::config::WatchdogPeriods;
use crate::error::{DomainError, DomainResult};
use crate::runs::{self, status, Event, EventKind, Run, RunStatus, Stalled};
use store::Db;

/// The run's log as the harness folds it (the answer is the agent's proposal).
type RunLog = harness::RunLog<Proposal>;

/// The states in which the agent owes the next move (see the module comment).
pub const WATCHED: [RunStatus; 5] = [
    status::READY,
    status::MODEL_RUNNING,
    status::TOOL_PENDING,
    status::TOOL_RUNNING,
    status::AWAITING_DEPENDENCY,
];

/// Event kinds that count as progress; `run_created` starts the first stall.
pub const PROGRESS: [EventKind; 4] = [
    EventKind::RunCreated,
    EventKind::Harness(harness::Kind::ToolResult),
    EventKind::Proposal,
    EventKind::Decision,
];

/// The run event a flag writes (and the trace page shows).
pub const FLAGGED: EventKind = EventKind::WatchdogFlagged;

/// How often `serve`'s worker scans, on the app clock: a flag is at most this late.
pub const SCAN_PERIOD_MS: i64 = 60_000;

/// Stalled runs one scan looks at; the rest wait for the next scan.
const SCAN_LIMIT: i64 = 100;

/// What a stalled run waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitingOn {
    /// No worker holds the run: none is running, or all are busy elsewhere.
    Worker,
    /// A live worker is asking the model (or about to).
    Model,
    /// A live worker is running this tool, or has its intent recorded and not run.
    Tool { name: String },
    /// The run rests on a dependency (`payment_provider`) that failed `attempts` times.
    Dependency {
        dependency: String,
        attempts: usize,
        error: Option<String>,
    },
    /// The lease ran out: the worker holding it died mid-step, and no live worker has
    /// claimed the run since.
    DeadWorker { owner: String, state: String },
}

/// The last event of the run (a flag does not count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastEvent {
    pub seq: i64,
    pub kind: String,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub waiting_on: WaitingOn,
    pub run_status: String,
    pub stalled_since: String,
    pub stalled_minutes: i64,
    pub last_event: Option<LastEvent>,
    /// One line for the console and the escalation reason.
    pub summary: String,
}

/// What the run waits on, from its row and its folded log, at `now`. Pure.
pub fn waiting_on(
    run: &Run,
    log: &RunLog,
    last_dependency_event: Option<&serde_json::Value>,
    now: i64,
) -> WaitingOn {
    if run.status == status::AWAITING_DEPENDENCY {
        let field = |name: &str| last_dependency_event.and_then(|p| p[name].as_str());
        return WaitingOn::Dependency {
            dependency: field("dependency").unwrap_or("payment_provider").into(),
            attempts: log
                .other
                .get("dependency_unavailable")
                .copied()
                .unwrap_or(0),
            error: field("error").map(str::to_string),
        };
    }
    match (&run.lease_owner, run.lease_expires_at) {
        (Some(owner), Some(expires)) if expires < now => WaitingOn::DeadWorker {
            owner: owner.clone(),
            state: run.status.to_string(),
        },
        (Some(_), Some(_)) => match log.pending.first() {
            Some(call) => WaitingOn::Tool {
                name: call.name.clone(),
            },
            None => WaitingOn::Model,
        },
        _ => WaitingOn::Worker,
    }
}

/// Every `WaitingOn::label`, for the `stuck_runs` gauge.
pub const WAITING_ON: [&str; 5] = ["worker", "model", "tool", "payment_provider", "dead_worker"];

impl WaitingOn {
    pub fn label(&self) -> &'static str {
        match self {
            WaitingOn::Worker => "worker",
            WaitingOn::Model => "model",
            WaitingOn::Tool { .. } => "tool",
            WaitingOn::Dependency { .. } => "payment_provider",
            WaitingOn::DeadWorker { .. } => "dead_worker",
        }
    }

    fn describe(&self) -> String {
        match self {
            WaitingOn::Worker => "queued: no worker has claimed it".into(),
            WaitingOn::Model => "waiting on the model".into(),
            WaitingOn::Tool { name } => format!("waiting on tool {name}"),
            WaitingOn::Dependency {
                attempts, error, ..
            } => match error {
                Some(e) => format!(
                    "waiting on the payment provider ({attempts} failed attempts, last: {e})"
                ),
                None => format!("waiting on the payment provider ({attempts} failed attempts)"),
            },
            WaitingOn::DeadWorker { owner, state } => {
                format!("lease held by a dead worker ({owner}, in {state})")
            }
        }
    }
}

/// The full diagnosis of a stalled run. Pure.
pub fn diagnose(stalled: &Stalled, events: &[Event], now: i64) -> Diagnosis {
    let log = fold(events);
    let last_dependency = events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::DependencyUnavailable)
        .map(|e| &e.payload);
    let waiting_on = waiting_on(&stalled.run, &log, last_dependency, now);
    let last_event = events
        .iter()
        .rev()
        .find(|e| e.kind != FLAGGED)
        .map(|e| LastEvent {
            seq: e.seq,
            kind: e.kind.to_string(),
            at: e.at.clone(),
        });
    let stalled_minutes = (now - stalled.last_progress_at).max(0) / 60_000;
    let last = match &last_event {
        Some(e) => format!("; last event #{} {} at {}", e.seq, e.kind, e.at),
        None => String::new(),
    };
    Diagnosis {
        summary: format!(
            "no progress for {stalled_minutes} min, {}{last}",
            waiting_on.describe()
        ),
        waiting_on,
        run_status: stalled.run.status.to_string(),
        stalled_since: rfc3339(stalled.last_progress_at),
        stalled_minutes,
        last_event,
    }
}

fn fold(events: &[Event]) -> RunLog {
    let mut log = RunLog::default();
    for e in events {
        log.apply(e.seq, e.kind.as_str(), e.call_id.as_deref(), &e.payload);
    }
    log
}

/// What one scan did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScanReport {
    pub flagged: usize,
    pub handed_off: usize,
    pub cleared: usize,
}

/// One scan: clear flags of runs that moved on, flag new stalls, hand off old ones.
pub async fn scan(
    db: &Db,
    clock: &dyn Clock,
    periods: WatchdogPeriods,
) -> DomainResult<ScanReport> {
    let now = clock.now_ms();
    let mut report = ScanReport {
        cleared: clear_moved_on(db, now).await?,
        ..ScanReport::default()
    };
    let stalled =
        runs::stalled_runs(db, &WATCHED, &PROGRESS, now - periods.stuck_ms, SCAN_LIMIT).await?;
    for stalled in stalled {
        match flag_of(db, &stalled).await? {
            None => report.flagged += usize::from(flag(db, &stalled, now).await?),
            Some(flag)
                if flag.handed_off_at.is_none() && flag.flagged_at + periods.handoff_ms <= now =>
            {
                report.handed_off += usize::from(hand_off(db, clock, &stalled, now).await?);
            }
            Some(_) => {}
        }
    }
    Ok(report)
}

/// A stall as recorded.
#[derive(Debug, Clone)]
pub struct Flag {
    pub run_id: String,
    pub case_id: String,
    pub stalled_since: i64,
    pub waiting_on: String,
    pub summary: String,
    pub flagged_at: i64,
    pub handed_off_at: Option<i64>,
}

const FLAG_COLUMNS: &str =
    "run_id, case_id, stalled_since, waiting_on, summary, flagged_at, handed_off_at";

fn flag_from_row(r: &sqlx::any::AnyRow) -> DomainResult<Flag> {
    Ok(Flag {
        run_id: r.try_get("run_id")?,
        case_id: r.try_get("case_id")?,
        stalled_since: r.try_get("stalled_since")?,
        waiting_on: r.try_get("waiting_on")?,
        summary: r.try_get("summary")?,
        flagged_at: r.try_get("flagged_at")?,
        handed_off_at: r.try_get("handed_off_at")?,
    })
}

async fn flag_of(db: &Db, stalled: &Stalled) -> DomainResult<Option<Flag>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {FLAG_COLUMNS} FROM watchdog_flags WHERE run_id = $1 AND stalled_since = $2"
    )))
    .bind(stalled.run.id.as_str())
    .bind(stalled.last_progress_at)
    .fetch_optional(db.pool())
    .await?;
    row.as_ref().map(flag_from_row).transpose()
}

/// How many standing flags wait on each diagnosis, every diagnosis named (zeros too):
/// the `/metrics` gauge.
pub async fn stuck_counts(db: &Db) -> DomainResult<Vec<(&'static str, usize)>> {
    let flags = open_flags(db).await?;
    Ok(WAITING_ON
        .iter()
        .map(|&kind| (kind, flags.iter().filter(|f| f.waiting_on == kind).count()))
        .collect())
}

/// Flags still standing: not cleared by progress and not handed off (the console's
/// "stuck" cases), newest stall last.
pub async fn open_flags(db: &Db) -> DomainResult<Vec<Flag>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {FLAG_COLUMNS} FROM watchdog_flags
         WHERE cleared_at IS NULL AND handed_off_at IS NULL ORDER BY stalled_since LIMIT 500"
    )))
    .fetch_all(db.reader())
    .await?;
    rows.iter().map(flag_from_row).collect()
}

/// The standing flag of a case, if its run is stuck now.
pub async fn open_flag_of_case(db: &Db, case_id: &str) -> DomainResult<Option<Flag>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {FLAG_COLUMNS} FROM watchdog_flags
         WHERE case_id = $1 AND cleared_at IS NULL AND handed_off_at IS NULL
         ORDER BY stalled_since DESC LIMIT 1"
    )))
    .bind(case_id)
    .fetch_optional(db.reader())
    .await?;
    row.as_ref().map(flag_from_row).transpose()
}

/// Records the stall once (the row's key is the run and the stall's start) and its
/// `watchdog_flagged` event, in one transaction. Returns whether this scanner flagged
/// it: another scanner's row, or progress made since the scan read the run, flags nothing.
async fn flag(db: &Db, stalled: &Stalled, now: i64) -> DomainResult<bool> {
    let events = runs::events(db, &stalled.run.id).await?;
    let diagnosis = diagnose(stalled, &events, now);
    let mut tx = db.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO watchdog_flags (run_id, stalled_since, case_id, waiting_on, summary, diagnosis, flagged_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, stalled_since) DO NOTHING",
    )
    .bind(stalled.run.id.as_str())
    .bind(stalled.last_progress_at)
    .bind(stalled.run.case_id.as_str())
    .bind(diagnosis.waiting_on.label())
    .bind(&diagnosis.summary)
    .bind(json!(diagnosis).to_string())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() != 1 || !still_stalled(&mut tx, stalled).await? {
        tx.rollback().await?;
        return Ok(false);
    }
    let payload = json!({ "diagnosis": diagnosis });
    runs::append_event(&mut tx, &stalled.run.id, FLAGGED, None, &payload, now).await?;
    tx.commit().await?;
    tracing::warn!(run_id = %stalled.run.id, case_id = %stalled.run.case_id,
        waiting_on = diagnosis.waiting_on.label(), summary = %diagnosis.summary, "run flagged as stuck");
    Ok(true)
}

/// Whether the run, locked now, is still in a watched state with no progress since
/// the scan read it.
async fn still_stalled(tx: &mut store::Tx<'_>, stalled: &Stalled) -> DomainResult<bool> {
    let now = runs::lock_for_note(tx, &stalled.run.id, &PROGRESS).await?;
    Ok(matches!(now, Some((status, since))
        if RunStatus::parse(&status).is_some_and(|s| WATCHED.contains(&s)) && since == stalled.last_progress_at))
}

/// Hands the case to a human through the run code's escalation, the diagnosis as the
/// reason. Its versioned updates (case, then run) are the guard: a scanner or worker
/// that changed either first makes this one a `Conflict`, which means "handled
/// elsewhere". Returns whether this scanner handed it off.
async fn hand_off(db: &Db, clock: &dyn Clock, stalled: &Stalled, now: i64) -> DomainResult<bool> {
    let events = runs::events(db, &stalled.run.id).await?;
    let diagnosis = diagnose(stalled, &events, now);
    let case = crate::cases::load_case(db, &stalled.run.case_id).await?;
    let ticket = match &case {
        Some(case) => crate::tickets::load_ticket(db, &case.ticket_id).await?,
        None => None,
    };
    let (Some(case), Some(ticket)) = (case, ticket) else {
        // Nobody to hand it to; the worker fails such a run when it next claims it. Not an
        // error of the scan, which must go on to the other stalled runs.
        tracing::error!(run_id = %stalled.run.id, "stuck run without a case or ticket");
        return Ok(false);
    };
    let mut run = stalled.run.clone();
    let reason = format!("stuck-run watchdog: {}", diagnosis.summary);
    let log = fold(&events);
    let escalated = crate::workflow::escalate_to_human(
        db,
        clock,
        &mut run,
        &case,
        &ticket,
        &reason,
        &log.exchanges,
    )
    .await;
    match escalated {
        Err(DomainError::Conflict { .. }) => return Ok(false),
        other => other?,
    }
    sqlx::query(
        "UPDATE watchdog_flags SET handed_off_at = $1
         WHERE run_id = $2 AND stalled_since = $3 AND handed_off_at IS NULL",
    )
    .bind(now)
    .bind(stalled.run.id.as_str())
    .bind(stalled.last_progress_at)
    .execute(db.pool())
    .await?;
    tracing::warn!(run_id = %stalled.run.id, case_id = %case.id, "stuck run handed to a human");
    Ok(true)
}

/// Clears the standing flags of runs that progressed or left the watched states since.
async fn clear_moved_on(db: &Db, now: i64) -> DomainResult<usize> {
    let mut cleared = 0;
    for flag in open_flags(db).await? {
        // The connection goes back before the update: SQLite's pool has one.
        let current = {
            let mut conn = db.pool().acquire().await?;
            runs::progress_of(&mut conn, &flag.run_id, &PROGRESS).await?
        };
        let stands = matches!(&current, Some((status, since))
            if RunStatus::parse(status).is_some_and(|s| WATCHED.contains(&s)) && *since == flag.stalled_since);
        if stands {
            continue;
        }
        sqlx::query(
            "UPDATE watchdog_flags SET cleared_at = $1
             WHERE run_id = $2 AND stalled_since = $3 AND cleared_at IS NULL",
        )
        .bind(now)
        .bind(&flag.run_id)
        .bind(flag.stalled_since)
        .execute(db.pool())
        .await?;
        cleared += 1;
    }
    Ok(cleared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::ids::{CaseId, RunId};

    fn run(status: &str, lease: Option<(&str, i64)>) -> Run {
        Run {
            id: RunId::parse("run_1").unwrap(),
            case_id: CaseId::parse("case_1").unwrap(),
            status: RunStatus::parse(status).unwrap_or(RunStatus::Failed),
            version: 3,
            steps: 1,
            tool_calls: 0,
            lease_owner: lease.map(|(owner, _)| owner.to_string()),
            lease_expires_at: lease.map(|(_, at)| at),
            created_at: 0,
        }
    }

    fn log_with_intent(tool: &str) -> RunLog {
        let mut log = RunLog::default();
        let intent = json!({ "id": "call-1", "name": tool, "arguments": {} });
        log.apply(2, "tool_intent", Some("call-1"), &intent);
        log
    }

    #[test]
    fn what_a_stalled_run_waits_on_follows_its_state_and_lease() {
        const NOW: i64 = 1_000_000;
        let live = Some(("inst_a", NOW + 1));
        let expired = Some(("inst_a", NOW - 1));
        let dead = |state: &str| WaitingOn::DeadWorker {
            owner: "inst_a".into(),
            state: state.into(),
        };
        let cases = [
            (run("ready", None), RunLog::default(), WaitingOn::Worker),
            (
                run("tool_pending", None),
                log_with_intent("get_charge"),
                WaitingOn::Worker,
            ),
            (run("ready", live), RunLog::default(), WaitingOn::Model),
            (
                run("model_running", live),
                RunLog::default(),
                WaitingOn::Model,
            ),
            (
                run("tool_running", live),
                log_with_intent("get_charge"),
                WaitingOn::Tool {
                    name: "get_charge".into(),
                },
            ),
            (
                run("model_running", expired),
                RunLog::default(),
                dead("model_running"),
            ),
            (
                run("tool_running", expired),
                log_with_intent("get_charge"),
                dead("tool_running"),
            ),
        ];
        for (run, log, expected) in cases {
            assert!(
                WAITING_ON.contains(&expected.label()),
                "the gauge lists {expected:?}"
            );
            assert_eq!(
                waiting_on(&run, &log, None, NOW),
                expected,
                "{}",
                run.status
            );
        }
    }

    #[test]
    fn a_run_resting_on_a_dependency_waits_on_the_payment_provider_with_its_attempts() {
        let mut log = RunLog::default();
        let event = json!({ "dependency": "payment_provider", "error": "503" });
        for seq in 1..=2 {
            log.apply(seq, "dependency_unavailable", None, &event);
        }
        let waiting = waiting_on(&run("awaiting_dependency", None), &log, Some(&event), 0);
        assert_eq!(
            waiting,
            WaitingOn::Dependency {
                dependency: "payment_provider".into(),
                attempts: 2,
                error: Some("503".into()),
            }
        );
        assert_eq!(
            waiting.describe(),
            "waiting on the payment provider (2 failed attempts, last: 503)"
        );
    }
}
