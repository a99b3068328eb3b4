//! The agent harness: a durable loop in which a model (the built-in investigator, or an
//! LLM) calls read-only tools until it proposes an outcome.
//!
//! The run's event log is its only checkpoint. Every step is a versioned update of the
//! run plus the events it produced, in one transaction: the state change to
//! `model_running` is committed before the model is asked; the model's output (with
//! its token usage and latency) and the tool intents it asked for are committed before
//! any tool runs; each tool result (with its duration) is committed before the next
//! tool runs. A worker killed at any point resumes from the log (`replay`): completed
//! tool calls are not repeated, an intent without a result is run again (tools are
//! read-only, so that is safe), and once a proposal is recorded the model is never
//! asked again — the proposal goes to the policy engine.
//!
//! Run states follow SPEC §5: `ready → model_running → tool_pending → tool_running →
//! ready`, then `awaiting_approval` (a human decides), `awaiting_dependency` (the
//! payment provider was down when the facts were gathered; the run rests without a
//! lease and is retried), `completed`, `failed` (handed to a human) or `cancelled`.
//! A waiting run holds no worker and no lease.
//!
//! Budgets (steps, tool calls, tokens, wall time, model errors, invalid tool calls,
//! dependency retries) end a run that does not converge: the budget is named in a
//! `budget_exhausted` event and the case goes to a human with a summary of what was
//! verified, what is open and what was done.
//!
//! The model cannot act (SPEC invariant 7): it only ever sees read-only tools. A turn
//! that asks for a write action or claims an approval is refused whole — nothing in it
//! runs — recorded as a `policy_violation`, and the case goes to a human. Its proposal
//! goes to the policy engine, which decides on facts gathered by code.
//!
//! The rules above (what to do next, budgets, what a reply or a tool result comes to,
//! refusals, the handoff summary) live in [`machine`] as pure functions; this module
//! wraps them in persistence and leases. `replay` (shadow mode) wraps the same rules in
//! an in-memory log, with the same [`ask_model`] and [`run_tool`], so a model is
//! measured in shadow on the loop it would run in production.
//!
//! Event kinds written here: `resumed`, `model_output`, `model_error`, `tool_intent`,
//! `tool_result`, `proposal`, `policy_violation`, `budget_exhausted`,
//! `dependency_unavailable`, `handoff`; `runs` writes `run_created` and `state`;
//! `workflow` writes `decision`, `proposal_overridden`, `evidence_rejected` and
//! `escalated`.

pub mod context;
pub mod investigator;
pub mod llm;
pub mod machine;
pub mod records_kind;
pub mod tools;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::Clock;
use crate::error::{AppError, AppResult};
use crate::http::AppState;
use crate::runs::{self, status, Run};
use machine::{Counters, Exhausted, NewEvent, Next, RunLog, TurnKind};

pub use machine::{garbage, violation};

/// Budgets per run; when one runs out the case goes to a human.
pub const MAX_STEPS: i64 = 24;
pub const MAX_TOOL_CALLS: i64 = 40;
pub const MAX_MODEL_ERRORS: usize = 3;
/// Tokens (prompt + completion, as the model reports them) summed over the run.
pub const MAX_TOKENS: u64 = 200_000;
/// Wall time the run spent working: the sum of its model calls' latencies and its tool
/// calls' durations, on the injected clock. Time nobody worked on it (queued, resting
/// on a dependency, a dead worker's lease running out) does not count: a crashed
/// cluster must not send every run to a human when it comes back.
pub const MAX_WALL_MS: i64 = 15 * 60_000;
/// A model call that does not answer within this (real time) is a model error.
pub const MODEL_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Calls to tools that do not exist or with arguments that do not fit the schema. A
/// model may slip once or twice and correct itself from the hint; not forever.
pub const MAX_INVALID_TOOL_CALLS: usize = 3;
/// Times a run may rest in `awaiting_dependency` before a human takes over.
pub const MAX_DEPENDENCY_WAITS: usize = 5;
/// Tool calls one turn may ask for; more is garbage, not an investigation.
pub const MAX_CALLS_PER_TURN: usize = 8;
/// Tool results larger than this (serialized) are stored whole in the event log once;
/// the model sees a truncated copy with a marker pointing at the event.
pub const MAX_TOOL_RESULT_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// A tool's answer as the model sees it: a result, or a structured error with a hint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub ok: bool,
    pub content: serde_json::Value,
}

/// A tool call and its outcome, in the order they happened.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub call: ToolCall,
    pub outcome: ToolOutcome,
}

/// What a model may say in one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelTurn {
    ToolCalls {
        calls: Vec<ToolCall>,
    },
    Propose {
        proposal: Proposal,
    },
    /// The model gives up and hands the case to a human.
    Escalate {
        reason: String,
    },
}

/// Tokens one model call consumed, as the provider reports them (zero for the built-in
/// investigator). Summed over a run against `MAX_TOKENS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// A turn with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    pub turn: ModelTurn,
    pub usage: Usage,
}

/// The agent's proposal. Facts cite the tool call and record they came from; policy
/// claims cite `doc@version#section` (SPEC invariant 8). The policy engine, not this
/// proposal, decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub request: policy_engine::RequestKind,
    pub order_id: Option<String>,
    pub reason_code: String,
    #[serde(default)]
    pub refunds: Vec<ProposedRefund>,
    #[serde(default)]
    pub evidence: Vec<EvidenceRef>,
    #[serde(default)]
    pub citations: Vec<String>,
    pub summary: String,
    /// Where the decision's order came from (`form`, `message`, `records`, `agent`): set
    /// by the workflow when it resolves the order, never taken from the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_source: Option<crate::resolve::OrderSource>,
    /// Where `request` came from (`text`, `records`): set by the built-in investigator;
    /// absent for a model that does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_source: Option<crate::resolve::RequestSource>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposedRefund {
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceRef {
    pub call_id: String,
    pub record_id: String,
}

/// Everything a model sees. Identity and approvals are never in here as claims: the
/// customer is the ticket's authenticated customer. Tool results over
/// `MAX_TOOL_RESULT_BYTES` appear truncated, with a marker naming the event that holds
/// them whole.
pub struct ModelContext<'a> {
    pub customer_messages: &'a [String],
    pub tools: &'a [tools::ToolDeclaration],
    pub history: &'a [Exchange],
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub trait Model: Send + Sync + 'static {
    fn name(&self) -> String;

    /// The next turn. Models that do not meter tokens implement only this.
    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>>;

    /// The next turn with its token usage; the harness calls only this. Models that
    /// meter tokens (an LLM) override it, and may implement `next_turn` by calling it.
    fn next_reply<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelReply>> {
        Box::pin(async move {
            let turn = self.next_turn(ctx).await?;
            Ok(ModelReply {
                turn,
                usage: Usage::default(),
            })
        })
    }
}

/// Asks the model for its next turn as both loops do: bounded by `MODEL_CALL_TIMEOUT`
/// (real time; a model that does not answer is a model error), its latency measured on
/// `clock` (the wall-time budget's clock). Returns the reply and the latency.
pub async fn ask_model(
    model: &dyn Model,
    ctx: &ModelContext<'_>,
    clock: &dyn Clock,
) -> (anyhow::Result<ModelReply>, u64) {
    let started = clock.now_ms();
    let reply = match tokio::time::timeout(MODEL_CALL_TIMEOUT, model.next_reply(ctx)).await {
        Ok(reply) => reply,
        Err(_) => Err(anyhow::anyhow!(
            "the model did not answer within {}s",
            MODEL_CALL_TIMEOUT.as_secs()
        )),
    };
    (reply, elapsed_ms(clock, started))
}

/// Runs one tool call as both loops do, its duration measured on `clock`. Returns the
/// outcome and the duration.
pub async fn run_tool(
    env: &tools::ToolEnv<'_>,
    ticket: &crate::tickets::Ticket,
    call: &ToolCall,
    clock: &dyn Clock,
) -> (ToolOutcome, u64) {
    let started = clock.now_ms();
    let outcome = tools::execute(env, ticket, call).await;
    (outcome, elapsed_ms(clock, started))
}

/// Milliseconds since `since` on `clock` (the injected one, so tests control durations).
fn elapsed_ms(clock: &dyn Clock, since: i64) -> u64 {
    (clock.now_ms() - since).max(0) as u64
}

// ---------------------------------------------------------------------------------------
// The durable loop: `machine`'s rules, each step committed to the run's event log.
// ---------------------------------------------------------------------------------------

/// Advances a claimed run until it waits, finishes or fails. Safe to call again on the
/// same run after a crash at any point. A worker whose lease was lost (another worker
/// claimed the run, or the case cancelled it) stops at its next versioned update, writes
/// nothing, and returns `Ok`: the run is in other hands.
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
        step(state, run, status::FAILED, (0, 0), vec![]).await?;
        return Ok(());
    };
    if run.status == status::MODEL_RUNNING || run.status == status::TOOL_RUNNING {
        // The previous holder died inside a step. What it committed stands; the step
        // it was in is taken again from the log.
        // A run dies in `tool_running` only with intents left (the last result moves it to
        // `ready`), so it resumes in `tool_pending`; one that died asking the model, in
        // `ready`.
        let resumed = json!({ "interrupted_in": run.status, "worker": run.lease_owner });
        let to = if run.status == status::TOOL_RUNNING {
            status::TOOL_PENDING
        } else {
            status::READY
        };
        step(
            state,
            run,
            to,
            (0, 0),
            vec![NewEvent::new("resumed", None, resumed)],
        )
        .await?;
    }
    let declarations = tools::declarations();
    let env = tools::ToolEnv {
        billing: state.billing.as_ref(),
        index: &state.index,
    };
    loop {
        let events = runs::events(&state.db, &run.id).await?;
        let log = fold(&events);
        match machine::next(&log, counters(run)) {
            Next::Finished => {
                if !status::holds_no_worker(&run.status) {
                    // Only reachable if a decision was recorded without its state change.
                    step(state, run, status::COMPLETED, (0, 0), vec![]).await?;
                }
                return Ok(());
            }
            // A recorded reason to stop goes to a human, with a summary of the run.
            Next::HandOff { reason, summarised } => {
                if !summarised {
                    let summary = machine::handoff_summary(reason, &log, counters(run));
                    let unchanged = working_status(run);
                    step(
                        state,
                        run,
                        &unchanged,
                        (0, 0),
                        vec![NewEvent::new("handoff", None, summary)],
                    )
                    .await?;
                }
                crate::workflow::escalate_to_human(
                    state,
                    run,
                    &case,
                    &ticket,
                    reason,
                    &log.exchanges,
                )
                .await?;
                return Ok(());
            }
            // Finish tool intents recorded before a crash or in the last turn.
            Next::RunTools(pending) => run_tools(state, run, &env, &ticket, pending).await?,
            // A recorded proposal goes to the policy engine (never back to the model).
            Next::Decide(proposal) => {
                match crate::workflow::decide_case(
                    state,
                    run,
                    &case,
                    &ticket,
                    proposal,
                    &log.exchanges,
                )
                .await
                {
                    Err(AppError::Provider(message)) => {
                        if let Some(exhausted) = Exhausted::dependency_waits(&log) {
                            exhaust(state, run, exhausted).await?;
                            continue;
                        }
                        // The provider is down: rest without a lease and try again later
                        // rather than hold a worker or burn the budget.
                        tracing::warn!(run_id = %run.id, error = %message, "provider unavailable; run waits");
                        let payload = json!({
                            "dependency": "payment_provider",
                            "error": message,
                            "attempt": log.dependency_waits + 1,
                            "retry_after_ms": runs::DEPENDENCY_RETRY_MS,
                        });
                        step(
                            state,
                            run,
                            status::AWAITING_DEPENDENCY,
                            (0, 0),
                            vec![NewEvent::new("dependency_unavailable", None, payload)],
                        )
                        .await?;
                        return Ok(());
                    }
                    other => return other,
                }
            }
            Next::Exhaust(exhausted) => exhaust(state, run, exhausted).await?,
            Next::AskModel => model_step(state, run, &ticket, &declarations, &log).await?,
        }
    }
}

/// The run's state rebuilt from its event log.
fn fold(events: &[runs::Event]) -> RunLog {
    let mut log = RunLog::default();
    for e in events {
        log.apply(e.seq, &e.kind, e.call_id.as_deref(), &e.payload);
    }
    log
}

fn counters(run: &Run) -> Counters {
    Counters {
        steps: run.steps,
        tool_calls: run.tool_calls,
    }
}

/// One durable step: the run's versioned state change and the step's events, in one
/// transaction (`runs::record_step`: a worker that lost its lease writes nothing).
async fn step(
    state: &AppState,
    run: &mut Run,
    to: &str,
    (add_steps, add_tool_calls): (i64, i64),
    events: Vec<NewEvent>,
) -> AppResult<()> {
    let now = state.clock.now_ms();
    let events: Vec<runs::NewEvent<'_>> = events
        .iter()
        .map(|e| runs::NewEvent {
            kind: e.kind,
            call_id: e.call_id.as_deref(),
            payload: &e.payload,
        })
        .collect();
    let mut tx = state.db.begin().await?;
    runs::record_step(&mut tx, run, to, add_steps, add_tool_calls, now, &events).await?;
    tx.commit().await?;
    Ok(())
}

/// Runs `work` while renewing the run's lease every third of its length, so a slow model
/// or tool does not let another worker take the run. If the lease is lost meanwhile the
/// work is abandoned and `RUN_CHANGED` returned.
async fn with_lease<T>(
    state: &AppState,
    run: &mut Run,
    work: impl Future<Output = T>,
) -> AppResult<T> {
    let mut work = std::pin::pin!(work);
    let period = Duration::from_millis((runs::LEASE_MS / 3) as u64);
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tokio::select! {
            out = &mut work => return Ok(out),
            _ = renew.tick() => runs::renew_lease(&state.db, run, state.clock.now_ms()).await?,
        }
    }
}

/// Runs the recorded intents that have no result yet, one durable step each.
async fn run_tools(
    state: &AppState,
    run: &mut Run,
    env: &tools::ToolEnv<'_>,
    ticket: &crate::tickets::Ticket,
    pending: &[ToolCall],
) -> AppResult<()> {
    for (i, call) in pending.iter().enumerate() {
        let next = if i + 1 == pending.len() {
            status::READY
        } else {
            status::TOOL_RUNNING
        };
        if !machine::tool_may_run(counters(run)) {
            // Every intent gets exactly one result, even one the budget does not run.
            let result = machine::skipped_tool_result(call);
            step(state, run, next, (0, 0), vec![result]).await?;
            continue;
        }
        if run.status != status::TOOL_RUNNING {
            step(state, run, status::TOOL_RUNNING, (0, 0), vec![]).await?;
        }
        let work = run_tool(env, ticket, call, state.clock.as_ref());
        let (outcome, duration_ms) = with_lease(state, run, work).await?;
        let result = machine::tool_result(call, &outcome, duration_ms);
        step(state, run, next, (0, 1), vec![result]).await?;
    }
    Ok(())
}

/// Asks the model for a turn and records it, or records why it cannot be used.
async fn model_step(
    state: &AppState,
    run: &mut Run,
    ticket: &crate::tickets::Ticket,
    declarations: &[tools::ToolDeclaration],
    log: &RunLog,
) -> AppResult<()> {
    let messages = crate::tickets::messages(&state.db, &ticket.id).await?;
    let customer_messages: Vec<String> = messages
        .into_iter()
        .filter(|m| m.author == "customer")
        .map(|m| m.body)
        .collect();
    let history = log.model_history();
    // The step is counted, and committed, before the model is asked: a crash during the
    // call leaves `model_running` in the log, and the budget sees the attempt.
    step(state, run, status::MODEL_RUNNING, (1, 0), vec![]).await?;
    let ctx = ModelContext {
        customer_messages: &customer_messages,
        tools: declarations,
        history: &history,
    };
    let call = ask_model(state.model.as_ref(), &ctx, state.clock.as_ref());
    let (reply, latency_ms) = with_lease(state, run, call).await?;
    let turn = machine::record_turn(run.steps, reply, latency_ms, &state.model.name());
    match turn.kind {
        TurnKind::ModelError | TurnKind::Garbage => {
            let error = turn.events.last().map(|e| e.payload["error"].clone());
            tracing::warn!(run_id = %run.id, error = ?error, "model error");
        }
        TurnKind::Refused => {
            let violation = turn.events.last().map(|e| e.payload["violation"].clone());
            tracing::warn!(run_id = %run.id, violation = ?violation, "model policy violation");
        }
        TurnKind::ToolCalls | TurnKind::Proposal | TurnKind::Escalation => {}
    }
    let to = if turn.tools_pending() {
        status::TOOL_PENDING
    } else {
        status::READY
    };
    step(state, run, to, (0, 0), turn.events).await
}

/// Records which budget ran out; the next pass of the loop hands the case over.
async fn exhaust(state: &AppState, run: &mut Run, exhausted: Exhausted) -> AppResult<()> {
    let Exhausted {
        budget,
        used,
        limit,
    } = exhausted;
    tracing::warn!(run_id = %run.id, budget, used, limit, "run budget exhausted");
    let to = working_status(run);
    step(state, run, &to, (0, 0), vec![exhausted.event()]).await
}

/// The status a step that does not change the run's state keeps: its own, unless the
/// run was resting (claimed again from `awaiting_dependency`), when it is `ready` —
/// a run being worked on keeps its lease.
fn working_status(run: &Run) -> String {
    if status::holds_no_worker(&run.status) {
        status::READY.to_string()
    } else {
        run.status.clone()
    }
}
