//! The live investigation: [`harness::run_loop`] on the run's SQL event log, then the
//! workflow — the proposal to the policy engine, or the case to a human.
//!
//! Every step the harness takes is a versioned update of the `runs` row plus the events
//! it produced, in one transaction (`runs::record_step`): a worker that lost its lease
//! (another worker claimed the run, or the case cancelled it) writes nothing at its next
//! step and stops. Run states follow SPEC §5: `ready → model_running → tool_pending →
//! tool_running → ready` inside the loop, then `awaiting_approval`, `completed`,
//! `failed` or `cancelled` (the workflow), or `awaiting_dependency`: the payment
//! provider was down when the facts were gathered, so the run rests without a lease and
//! is retried, at most [`crate::agent::MAX_DEPENDENCY_WAITS`] times.

use std::time::Duration;

use harness::{BoxFuture, Counters, EventLog, LogError, Outcome, Phase, Step};
use serde_json::json;

use crate::agent::rules::RefundRules;
use crate::agent::tools::{self, ToolEnv};
use crate::clock::{Clock, HarnessClock};
use crate::error::{AppError, AppResult};
use crate::runs::{self, status, Run, RunStatus};
use crate::state::AppState;
use crate::store::Db;

/// Advances a claimed run until it waits, finishes or fails. Safe to call again on the
/// same run after a crash at any point. A worker whose lease was lost stops at its next
/// versioned update, writes nothing, and returns `Ok`: the run is in other hands.
pub async fn advance(state: &AppState, run: &mut Run) -> AppResult<()> {
    match advance_claimed(state, run).await {
        Err(e) if runs::is_run_changed(&e) => {
            tracing::warn!(run_id = %run.id, "the run changed under this worker (lease lost or run ended); stopping");
            Ok(())
        }
        other => other,
    }
}

async fn advance_claimed(state: &AppState, run: &mut Run) -> AppResult<()> {
    let case = crate::cases::load_case(&state.db, &run.case_id).await?;
    let ticket = match &case {
        Some(case) => crate::tickets::load_ticket(&state.db, &case.ticket_id).await?,
        None => None,
    };
    let (Some(case), Some(ticket)) = (case, ticket) else {
        // Nothing to investigate; end the run so no worker claims it again.
        tracing::error!(run_id = %run.id, "run without a case or ticket; failing it");
        return rest(&state.db, run, status::FAILED, state.clock.now_ms(), vec![]).await;
    };
    let events = runs::events(&state.db, &run.id).await?;
    if events
        .iter()
        .any(|e| e.kind == "decision" || e.kind == "escalated")
    {
        // Only reachable if a decision was recorded without its state change.
        if !run.status.holds_no_worker() {
            rest(
                &state.db,
                run,
                status::COMPLETED,
                state.clock.now_ms(),
                vec![],
            )
            .await?;
        }
        return Ok(());
    }
    let span = tracing::info_span!("investigation", case_id = %case.id, run_id = %run.id);
    tracing::Instrument::instrument(investigate(state, run, &case, &ticket), span).await
}

/// The harness's loop on the run, then the workflow on how it ended.
async fn investigate(
    state: &AppState,
    run: &mut Run,
    case: &crate::cases::Case,
    ticket: &crate::tickets::Ticket,
) -> AppResult<()> {
    let inputs = customer_messages(&state.db, &ticket.id).await?;
    let env = ToolEnv {
        billing: state.billing.as_ref(),
        index: &state.index,
    };
    let tools = tools::toolset(&env, ticket);
    let clock = HarnessClock(state.clock.as_ref());
    let mut spec = harness::Run::new(state.model.as_ref(), &tools, &clock);
    spec.inputs = &inputs;
    spec.limits = crate::agent::limits();
    spec.rules = &RefundRules;
    spec.observer = &Metered;
    loop {
        let mut log = SqlLog {
            db: &state.db,
            clock: state.clock.as_ref(),
            run,
        };
        let ended = match harness::run_loop(&spec, &mut log).await {
            Ok(ended) => ended,
            Err(LogError::Lost) => return Err(runs::run_changed()),
            Err(LogError::Store(e)) => return Err(e),
        };
        let exchanges = &ended.log.exchanges;
        let proposal = match &ended.outcome {
            Outcome::HandedOff { reason, .. } => {
                let w = crate::workflow::escalate_to_human(
                    state, run, &case, &ticket, reason, exchanges,
                );
                return w.await;
            }
            Outcome::Answered(proposal) => proposal,
            // Only a sub-agent's run is cancelled by its parent; a case's run is
            // cancelled by the case (its lease goes), which ends the loop above.
            Outcome::Cancelled => return Ok(()),
        };
        // The proposal goes to the policy engine (never back to the model).
        let decided =
            crate::workflow::decide_case(state, run, case, ticket, proposal, exchanges).await;
        let Err(AppError::Provider(message)) = decided else {
            return decided;
        };
        let waits = ended.log.count("dependency_unavailable");
        if waits >= crate::agent::MAX_DEPENDENCY_WAITS {
            // Recorded; the next pass of the loop hands the case over.
            let limit = crate::agent::MAX_DEPENDENCY_WAITS as i64;
            let exhausted = harness::Exhausted::new("dependency_waits", waits as i64, limit);
            let to = working_status(run);
            rest(
                &state.db,
                run,
                to,
                state.clock.now_ms(),
                vec![exhausted.event()],
            )
            .await?;
            continue;
        }
        // The provider is down: rest without a lease and try again later rather than
        // hold a worker or burn the budget.
        tracing::warn!(run_id = %run.id, error = %message, "provider unavailable; run waits");
        let payload = json!({
            "dependency": "payment_provider",
            "error": message,
            "attempt": waits + 1,
            "retry_after_ms": runs::DEPENDENCY_RETRY_MS,
        });
        let event = harness::NewEvent::new("dependency_unavailable", None, payload);
        let now = state.clock.now_ms();
        return rest(
            &state.db,
            run,
            status::AWAITING_DEPENDENCY,
            now,
            vec![event],
        )
        .await;
    }
}

/// What the customer wrote, oldest first: the task's inputs.
async fn customer_messages(db: &Db, ticket_id: &str) -> AppResult<Vec<String>> {
    let messages = crate::tickets::messages(db, ticket_id).await?;
    Ok(messages
        .into_iter()
        .filter(|m| m.author == "customer")
        .map(|m| m.body)
        .collect())
}

/// One step outside the harness's loop (a rest, an end), committed like the loop's.
async fn rest(
    db: &Db,
    run: &mut Run,
    to: RunStatus,
    now: i64,
    events: Vec<harness::NewEvent>,
) -> AppResult<()> {
    commit(db, run, to, (0, 0), now, &events).await
}

/// The run's versioned state change and the step's events, in one transaction
/// (`runs::record_step`: a worker that lost its lease writes nothing).
async fn commit(
    db: &Db,
    run: &mut Run,
    to: RunStatus,
    (add_steps, add_tool_calls): (i64, i64),
    now: i64,
    events: &[harness::NewEvent],
) -> AppResult<()> {
    let events: Vec<runs::NewEvent<'_>> = events
        .iter()
        .map(|e| runs::NewEvent {
            kind: e.kind,
            call_id: e.call_id.as_deref(),
            payload: &e.payload,
        })
        .collect();
    let mut tx = db.begin().await?;
    runs::record_step(&mut tx, run, to, add_steps, add_tool_calls, now, &events).await?;
    tx.commit().await?;
    Ok(())
}

/// The status a step that does not change the run's state keeps: its own, unless the
/// run was resting (claimed again from `awaiting_dependency`), when it is `ready` — a
/// run being worked on keeps its lease.
fn working_status(run: &Run) -> RunStatus {
    if run.status.holds_no_worker() {
        RunStatus::Ready
    } else {
        run.status
    }
}

/// The harness's [`EventLog`] on the `runs` row and `run_events`.
struct SqlLog<'a> {
    db: &'a Db,
    clock: &'a dyn Clock,
    run: &'a mut Run,
}

fn from_app(e: AppError) -> LogError<AppError> {
    if runs::is_run_changed(&e) {
        LogError::Lost
    } else {
        LogError::Store(e)
    }
}

impl EventLog for SqlLog<'_> {
    type Error = LogError<AppError>;

    fn load(&mut self) -> BoxFuture<'_, Result<Vec<harness::Event>, Self::Error>> {
        Box::pin(async move {
            let events = runs::events(self.db, &self.run.id)
                .await
                .map_err(from_app)?;
            Ok(events
                .into_iter()
                .map(|e| harness::Event {
                    seq: e.seq,
                    kind: e.kind,
                    call_id: e.call_id,
                    payload: e.payload,
                })
                .collect())
        })
    }

    fn commit(&mut self, step: Step) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async move {
            let to = step
                .phase
                .map_or_else(|| working_status(self.run), RunStatus::from);
            let now = self.clock.now_ms();
            let counts = (step.add_steps, step.add_tool_calls);
            commit(self.db, self.run, to, counts, now, &step.events)
                .await
                .map_err(from_app)
        })
    }

    fn counters(&self) -> Counters {
        Counters {
            steps: self.run.steps,
            tool_calls: self.run.tool_calls,
        }
    }

    fn phase(&self) -> Option<Phase> {
        self.run.status.phase()
    }

    fn holder(&self) -> Option<String> {
        self.run.lease_owner.clone()
    }

    /// Every third of the lease, so a slow model or tool does not let another worker
    /// take the run.
    fn keep_alive_every(&self) -> Option<Duration> {
        Some(Duration::from_millis((runs::LEASE_MS / 3) as u64))
    }

    fn keep_alive(&mut self) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async move {
            let now = self.clock.now_ms();
            runs::renew_lease(self.db, self.run, now)
                .await
                .map_err(from_app)
        })
    }
}

/// The loop's measurements, as `/metrics` shows them.
pub struct Metered;

impl harness::Observer for Metered {
    fn model_call(&self, model: &str, ok: bool, latency_ms: u64, usage: harness::Usage) {
        let (prompt, completion) = (usage.prompt_tokens, usage.completion_tokens);
        crate::metrics::record_model_call(model, ok, latency_ms, prompt, completion);
    }

    fn tool_call(&self, tool: &str, ok: bool, duration_ms: u64) {
        crate::metrics::record_tool_call(tool, ok, duration_ms);
    }

    fn step(&self, ms: u64) {
        crate::metrics::record_step(ms);
    }
}
