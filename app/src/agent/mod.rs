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
//! Event kinds written here: `resumed`, `model_output`, `model_error`, `tool_intent`,
//! `tool_result`, `proposal`, `policy_violation`, `budget_exhausted`,
//! `dependency_unavailable`, `handoff`; `runs` writes `run_created` and `state`;
//! `workflow` writes `decision`, `proposal_overridden`, `evidence_rejected` and
//! `escalated`.

pub mod context;
pub mod investigator;
pub mod llm;
pub mod scripted;
pub mod tools;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{AppError, AppResult};
use crate::http::AppState;
use crate::runs::{self, status, Run};

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

// ---------------------------------------------------------------------------------------
// Replay: the run's state rebuilt from its event log.
// ---------------------------------------------------------------------------------------

/// Why the run must go to a human, as recorded in the log.
#[derive(Debug, Clone)]
struct Handoff {
    reason: String,
}

/// The run's state rebuilt from its event log.
#[derive(Default)]
struct Replay {
    /// Every finished tool call, with its result whole.
    exchanges: Vec<Exchange>,
    /// The event seq of each exchange's result (for truncation markers).
    result_seqs: Vec<i64>,
    /// Intents without a result, in order.
    pending: Vec<ToolCall>,
    proposal: Option<Proposal>,
    /// A decision or an escalation is recorded: the run's work is done.
    decided: bool,
    handoff: Option<Handoff>,
    handoff_summarised: bool,
    model_errors: usize,
    invalid_tool_calls: usize,
    tokens: u64,
    dependency_waits: usize,
    /// Milliseconds spent in model and tool calls (see `MAX_WALL_MS`).
    active_ms: i64,
    violations: Vec<Value>,
}

fn replay(events: &[runs::Event]) -> Replay {
    let mut r = Replay::default();
    for e in events {
        r.active_ms += e.payload["latency_ms"].as_i64().unwrap_or(0)
            + e.payload["duration_ms"].as_i64().unwrap_or(0);
        match e.kind.as_str() {
            "model_output" => {
                if let Some(usage) = e.payload.get("usage") {
                    let usage: Usage = serde_json::from_value(usage.clone()).unwrap_or_default();
                    r.tokens += usage.total();
                }
                if let Ok(ModelTurn::Escalate { reason }) =
                    serde_json::from_value::<ModelTurn>(e.payload.clone())
                {
                    r.handoff.get_or_insert(Handoff {
                        reason: format!("the model escalated: {reason}"),
                    });
                }
            }
            "model_error" => {
                r.model_errors += 1;
                if let Some(tokens) = e.payload["usage"].as_object() {
                    r.tokens += tokens.values().filter_map(Value::as_u64).sum::<u64>();
                }
            }
            "tool_intent" => {
                if let Ok(call) = serde_json::from_value::<ToolCall>(e.payload.clone()) {
                    r.pending.push(call);
                }
            }
            "tool_result" => {
                if let Some(pos) = r
                    .pending
                    .iter()
                    .position(|c| Some(&c.id) == e.call_id.as_ref())
                {
                    let call = r.pending.remove(pos);
                    let outcome =
                        serde_json::from_value(e.payload.clone()).unwrap_or(ToolOutcome {
                            ok: false,
                            content: e.payload.clone(),
                        });
                    if is_invalid_call(&outcome) {
                        r.invalid_tool_calls += 1;
                    }
                    r.exchanges.push(Exchange { call, outcome });
                    r.result_seqs.push(e.seq);
                }
            }
            "proposal" => r.proposal = serde_json::from_value(e.payload.clone()).ok(),
            "policy_violation" => {
                r.violations.push(e.payload.clone());
                r.handoff.get_or_insert(Handoff {
                    reason: format!(
                        "the model attempted something it may not do ({})",
                        e.payload["violation"].as_str().unwrap_or("violation")
                    ),
                });
            }
            "budget_exhausted" => {
                r.handoff.get_or_insert(Handoff {
                    reason: format!(
                        "the run exhausted its {} budget ({} of {})",
                        e.payload["budget"].as_str().unwrap_or("unknown"),
                        e.payload["used"],
                        e.payload["limit"]
                    ),
                });
            }
            "dependency_unavailable" => r.dependency_waits += 1,
            "handoff" => r.handoff_summarised = true,
            "decision" | "escalated" => r.decided = true,
            _ => {}
        }
    }
    r
}

fn is_invalid_call(outcome: &ToolOutcome) -> bool {
    !outcome.ok
        && matches!(
            outcome.content["error"].as_str(),
            Some("unknown_tool" | "invalid_arguments")
        )
}

impl Replay {
    /// The history as the model sees it: large results truncated, with a marker.
    fn model_history(&self) -> Vec<Exchange> {
        self.exchanges
            .iter()
            .zip(&self.result_seqs)
            .map(|(x, seq)| Exchange {
                call: x.call.clone(),
                outcome: for_model(&x.outcome, *seq),
            })
            .collect()
    }
}

/// A tool outcome as the model sees it: whole when small, else a truncated copy of its
/// JSON text with a marker naming the event that holds it whole.
fn for_model(outcome: &ToolOutcome, seq: i64) -> ToolOutcome {
    let text = outcome.content.to_string();
    if text.len() <= MAX_TOOL_RESULT_BYTES {
        return outcome.clone();
    }
    let mut cut = MAX_TOOL_RESULT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    ToolOutcome {
        ok: outcome.ok,
        content: json!({
            "truncated": true,
            "bytes": text.len(),
            "shown_bytes": cut,
            "result_event_seq": seq,
            "preview": &text[..cut],
            "hint": "the result is too large to show whole; it is stored in the run's event log. Ask a narrower question.",
        }),
    }
}

// ---------------------------------------------------------------------------------------
// The loop.
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
        step(state, run, to, (0, 0), vec![ev("resumed", None, resumed)]).await?;
    }
    let declarations = tools::declarations();
    let env = tools::ToolEnv {
        billing: state.billing.as_ref(),
        index: &state.index,
    };
    loop {
        let events = runs::events(&state.db, &run.id).await?;
        let log = replay(&events);

        if log.decided {
            if !status::holds_no_worker(&run.status) {
                // Only reachable if a decision was recorded without its state change.
                step(state, run, status::COMPLETED, (0, 0), vec![]).await?;
            }
            return Ok(());
        }
        // 1. A recorded reason to stop goes to a human, with a summary of the run.
        if let Some(handoff) = &log.handoff {
            if !log.handoff_summarised {
                let summary = handoff_summary(&handoff.reason, &log, run);
                let unchanged = working_status(run);
                step(
                    state,
                    run,
                    &unchanged,
                    (0, 0),
                    vec![ev("handoff", None, summary)],
                )
                .await?;
            }
            crate::workflow::escalate_to_human(
                state,
                run,
                &case,
                &ticket,
                &handoff.reason,
                &log.exchanges,
            )
            .await?;
            return Ok(());
        }
        // 2. Finish tool intents recorded before a crash or in the last turn.
        if !log.pending.is_empty() {
            run_tools(state, run, &env, &ticket, &log.pending).await?;
            continue;
        }
        // 3. A recorded proposal goes to the policy engine (never back to the model).
        if let Some(proposal) = &log.proposal {
            match crate::workflow::decide_case(state, run, &case, &ticket, proposal, &log.exchanges)
                .await
            {
                Err(AppError::Provider(message)) => {
                    if log.dependency_waits >= MAX_DEPENDENCY_WAITS {
                        exhaust(
                            state,
                            run,
                            "dependency_waits",
                            log.dependency_waits as i64,
                            MAX_DEPENDENCY_WAITS as i64,
                        )
                        .await?;
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
                        vec![ev("dependency_unavailable", None, payload)],
                    )
                    .await?;
                    return Ok(());
                }
                other => return other,
            }
        }
        // 4. Budgets.
        if let Some((budget, used, limit)) = exhausted_budget(run, &log) {
            exhaust(state, run, budget, used, limit).await?;
            continue;
        }
        // 5. Ask the model for the next step.
        model_step(state, run, &ticket, &declarations, &log).await?;
    }
}

/// An event to append in a step's transaction.
struct NewEvent {
    kind: &'static str,
    call_id: Option<String>,
    payload: Value,
}

fn ev(kind: &'static str, call_id: Option<&str>, payload: Value) -> NewEvent {
    NewEvent {
        kind,
        call_id: call_id.map(str::to_string),
        payload,
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

/// Milliseconds since `since` on the injected clock (so tests control durations).
fn elapsed_ms(state: &AppState, since: i64) -> u64 {
    (state.clock.now_ms() - since).max(0) as u64
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
        if run.tool_calls >= MAX_TOOL_CALLS {
            // Every intent gets exactly one result, even one the budget does not run.
            let outcome = ToolOutcome {
                ok: false,
                content: json!({ "error": "budget_exhausted", "hint": "the run's tool-call budget is spent; this call was not run" }),
            };
            let payload = result_payload(call, &outcome, 0, true);
            step(
                state,
                run,
                next,
                (0, 0),
                vec![ev("tool_result", Some(&call.id), payload)],
            )
            .await?;
            continue;
        }
        if run.status != status::TOOL_RUNNING {
            step(state, run, status::TOOL_RUNNING, (0, 0), vec![]).await?;
        }
        let started = state.clock.now_ms();
        let outcome = with_lease(state, run, tools::execute(env, ticket, call)).await?;
        let payload = result_payload(call, &outcome, elapsed_ms(state, started), false);
        step(
            state,
            run,
            next,
            (0, 1),
            vec![ev("tool_result", Some(&call.id), payload)],
        )
        .await?;
    }
    Ok(())
}

/// A tool result as stored: the outcome whole (stored once, however large), the tool,
/// how long it took and how big it is.
fn result_payload(
    call: &ToolCall,
    outcome: &ToolOutcome,
    duration_ms: u64,
    skipped: bool,
) -> Value {
    let bytes = outcome.content.to_string().len();
    let mut payload = json!({
        "ok": outcome.ok,
        "content": outcome.content,
        "tool": call.name,
        "duration_ms": duration_ms,
        "bytes": bytes,
    });
    if bytes > MAX_TOOL_RESULT_BYTES {
        payload["truncated_for_model"] = json!(true);
    }
    if skipped {
        payload["skipped"] = json!(true);
    }
    payload
}

/// Asks the model for a turn and records it, or records why it cannot be used.
async fn model_step(
    state: &AppState,
    run: &mut Run,
    ticket: &crate::tickets::Ticket,
    declarations: &[tools::ToolDeclaration],
    log: &Replay,
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
    let started = state.clock.now_ms();
    let call = tokio::time::timeout(MODEL_CALL_TIMEOUT, state.model.next_reply(&ctx));
    let reply = match with_lease(state, run, call).await? {
        Ok(reply) => reply,
        Err(_) => Err(anyhow::anyhow!(
            "the model did not answer within {}s",
            MODEL_CALL_TIMEOUT.as_secs()
        )),
    };
    let latency_ms = elapsed_ms(state, started);
    let model = state.model.name();

    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            tracing::warn!(run_id = %run.id, error = %e, "model error");
            let payload =
                json!({ "error": format!("{e:#}"), "latency_ms": latency_ms, "model": model });
            return step(
                state,
                run,
                status::READY,
                (0, 0),
                vec![ev("model_error", None, payload)],
            )
            .await;
        }
    };
    let mut output = serde_json::to_value(&reply.turn).unwrap_or_default();
    output["usage"] = serde_json::to_value(reply.usage).unwrap_or_default();
    output["latency_ms"] = json!(latency_ms);
    output["model"] = json!(model);
    let mut events = vec![ev("model_output", None, output)];

    if let Some(problem) = garbage(&reply.turn) {
        events.push(ev(
            "model_error",
            None,
            json!({ "error": problem, "latency_ms": latency_ms, "model": model }),
        ));
        return step(state, run, status::READY, (0, 0), events).await;
    }
    if let Some(violation) = violation(&reply.turn) {
        // Refused whole: no intent of this turn is recorded, so nothing in it runs.
        tracing::warn!(run_id = %run.id, violation = %violation, "model policy violation");
        events.push(ev("policy_violation", None, violation));
        return step(state, run, status::READY, (0, 0), events).await;
    }
    match reply.turn {
        ModelTurn::ToolCalls { calls } => {
            for (i, call) in calls.into_iter().enumerate() {
                // Call ids are made unique per run; a model repeating an id must not
                // collide with an earlier result. (`replay::investigate` does the same.)
                let call = ToolCall {
                    id: format!("s{}c{}:{}", run.steps, i, call.id),
                    ..call
                };
                let mut payload = serde_json::to_value(&call).unwrap_or_default();
                payload["step"] = json!(run.steps);
                events.push(ev("tool_intent", Some(&call.id), payload));
            }
            step(state, run, status::TOOL_PENDING, (0, 0), events).await
        }
        ModelTurn::Propose { proposal } => {
            events.push(ev(
                "proposal",
                None,
                serde_json::to_value(&proposal).unwrap_or_default(),
            ));
            step(state, run, status::READY, (0, 0), events).await
        }
        ModelTurn::Escalate { .. } => step(state, run, status::READY, (0, 0), events).await,
    }
}

/// A turn that is well-formed JSON but no usable step: counted as a model error. Public
/// so the in-memory loop of `replay` can apply the same checks.
pub fn garbage(turn: &ModelTurn) -> Option<String> {
    match turn {
        ModelTurn::ToolCalls { calls } if calls.is_empty() => {
            Some("the model asked for no tool calls and made no proposal".into())
        }
        ModelTurn::ToolCalls { calls } if calls.len() > MAX_CALLS_PER_TURN => Some(format!(
            "the model asked for {} tool calls in one turn (at most {MAX_CALLS_PER_TURN})",
            calls.len()
        )),
        ModelTurn::ToolCalls { calls } if calls.iter().any(|c| c.name.trim().is_empty()) => {
            Some("the model asked for a tool without a name".into())
        }
        ModelTurn::Propose { proposal } if proposal.summary.trim().is_empty() => {
            Some("the model proposed without a summary".into())
        }
        _ => None,
    }
}

/// Verbs of tools that would change something. No such tool is offered; a model asking
/// for one has been misled (prompt injection) or is inventing capabilities.
const WRITE_VERBS: &[&str] = &[
    "approve",
    "authorize",
    "authorise",
    "cancel",
    "capture",
    "charge",
    "close",
    "create",
    "credit",
    "delete",
    "execute",
    "grant",
    "issue",
    "mark",
    "modify",
    "patch",
    "pay",
    "post",
    "put",
    "refund",
    "reopen",
    "reverse",
    "send",
    "set",
    "submit",
    "transfer",
    "update",
    "void",
    "write",
];

/// Phrases with which a proposal would claim an approval no human gave, matched on its
/// JSON text lowercased, with quotes and backslashes removed and whitespace collapsed
/// (so `{"approved": true}` in a summary matches `approved:true`). A false alarm sends
/// the case to a human, which is the safe side.
const APPROVAL_CLAIMS: &[&str] = &[
    "approved:true",
    "approval:true",
    "approved_by:",
    "approval_id:",
    "has been approved",
    "have been approved",
    "was approved",
    "were approved",
    "is approved",
    "already approved",
    "pre-approved",
    "preapproved",
    "auto-approved",
    "approval granted",
    "approval:granted",
    "refund approved",
    "已批准",
    "已经批准",
    "已审批",
    "批准了",
];

fn normalized(text: &str) -> String {
    let stripped: String = text
        .to_lowercase()
        .chars()
        .filter(|c| *c != '"' && *c != '\\')
        .collect();
    stripped
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" :", ":")
        .replace(": ", ":")
}

/// Whether a turn tries to act or claims an approval (SPEC invariant 7): the violation
/// as recorded in a `policy_violation` event. Public so `replay` can apply it too.
pub fn violation(turn: &ModelTurn) -> Option<Value> {
    let offered: Vec<&str> = tools::declarations().iter().map(|d| d.name).collect();
    match turn {
        ModelTurn::ToolCalls { calls } => calls.iter().find_map(|call| {
            if offered.contains(&call.name.as_str()) {
                return None;
            }
            let name = call.name.to_lowercase();
            let words: Vec<&str> = name
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            let writes = words
                .iter()
                .any(|w| WRITE_VERBS.contains(w) || w.starts_with("approv"));
            writes.then(|| {
                let kind = if name.contains("approv") {
                    "approval_attempt"
                } else {
                    "write_attempt"
                };
                json!({ "violation": kind, "tool": call.name, "arguments": call.arguments,
                        "detail": "the model asked for a tool that would act; only read-only tools exist" })
            })
        }),
        ModelTurn::Propose { proposal } => {
            let text = normalized(&serde_json::to_string(proposal).unwrap_or_default());
            APPROVAL_CLAIMS
                .iter()
                .find(|claim| text.contains(*claim))
                .map(|claim| {
                    json!({ "violation": "approval_claim", "matched": claim,
                            "detail": "the proposal claims an approval; only a human approves, in the console" })
                })
        }
        ModelTurn::Escalate { .. } => None,
    }
}

/// The first budget the run has used up, if any: (name, used, limit).
fn exhausted_budget(run: &Run, log: &Replay) -> Option<(&'static str, i64, i64)> {
    [
        (
            "model_errors",
            log.model_errors as i64,
            MAX_MODEL_ERRORS as i64,
        ),
        (
            "invalid_tool_calls",
            log.invalid_tool_calls as i64,
            MAX_INVALID_TOOL_CALLS as i64,
        ),
        ("steps", run.steps, MAX_STEPS),
        ("tool_calls", run.tool_calls, MAX_TOOL_CALLS),
        ("tokens", log.tokens as i64, MAX_TOKENS as i64),
        ("wall_time_ms", log.active_ms, MAX_WALL_MS),
    ]
    .into_iter()
    .find(|(_, used, limit)| used >= limit)
}

/// Records which budget ran out; the next pass of the loop hands the case over.
async fn exhaust(
    state: &AppState,
    run: &mut Run,
    budget: &'static str,
    used: i64,
    limit: i64,
) -> AppResult<()> {
    tracing::warn!(run_id = %run.id, budget, used, limit, "run budget exhausted");
    let payload = json!({ "budget": budget, "used": used, "limit": limit });
    let to = working_status(run);
    step(
        state,
        run,
        &to,
        (0, 0),
        vec![ev("budget_exhausted", None, payload)],
    )
    .await
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

/// What a human taking the case over needs: the facts the tools verified (with the call
/// that verified each), what is still open, and what the agent did.
fn handoff_summary(reason: &str, log: &Replay, run: &Run) -> Value {
    let mut verified = Vec::new();
    let mut open = Vec::new();
    for x in &log.exchanges {
        let c = &x.outcome.content;
        if !x.outcome.ok {
            open.push(format!(
                "{} failed ({}): {}",
                x.call.name,
                c["error"].as_str().unwrap_or("error"),
                c["hint"].as_str().unwrap_or_default()
            ));
            continue;
        }
        let fact = |text: String| json!({ "call_id": x.call.id, "fact": text });
        match x.call.name.as_str() {
            "get_customer" => verified.push(fact(format!(
                "customer {} (region {})",
                c["customer"]["id"].as_str().unwrap_or("?"),
                c["customer"]["region"].as_str().unwrap_or("?")
            ))),
            "list_orders" => {
                for o in c["orders"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "order {}: {} {} {} on {}",
                        o["id"].as_str().unwrap_or("?"),
                        o["product"].as_str().unwrap_or("?"),
                        o["amount"].as_str().unwrap_or("?"),
                        o["currency"].as_str().unwrap_or("?"),
                        o["created_at"].as_str().unwrap_or("?")
                    )));
                }
            }
            "list_charges" => {
                for ch in c["charges"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "charge {} on order {}: {} {}, {}, captured {}, refunded {}",
                        ch["id"].as_str().unwrap_or("?"),
                        ch["order_id"].as_str().unwrap_or("?"),
                        ch["amount"].as_str().unwrap_or("?"),
                        ch["currency"].as_str().unwrap_or("?"),
                        ch["status"].as_str().unwrap_or("?"),
                        ch["captured"],
                        ch["amount_refunded"].as_str().unwrap_or("?")
                    )));
                }
            }
            "list_refunds" => {
                let refunds = c["refunds"].as_array().cloned().unwrap_or_default();
                if refunds.is_empty() {
                    verified.push(fact(format!(
                        "no refunds on charge {}",
                        c["charge_id"].as_str().unwrap_or("?")
                    )));
                }
                for r in refunds {
                    verified.push(fact(format!(
                        "refund {} on charge {}: {} {}, {}",
                        r["id"].as_str().unwrap_or("?"),
                        r["charge"].as_str().unwrap_or("?"),
                        r["amount"].as_str().unwrap_or("?"),
                        r["currency"].as_str().unwrap_or("?"),
                        r["status"].as_str().unwrap_or("?")
                    )));
                }
            }
            "search_policy" => {
                for p in c["passages"].as_array().into_iter().flatten() {
                    verified.push(fact(format!(
                        "policy {}",
                        p["citation"].as_str().unwrap_or("?")
                    )));
                }
            }
            _ => {}
        }
    }
    let tools_used: Vec<&str> = log.exchanges.iter().map(|x| x.call.name.as_str()).collect();
    for (tool, question) in [
        ("get_customer", "the customer's billing record was not read"),
        ("list_orders", "the customer's orders were not listed"),
        ("list_charges", "the provider's charges were not checked"),
    ] {
        if !tools_used.contains(&tool) {
            open.push(question.to_string());
        }
    }
    if log.proposal.is_none() {
        open.push("what the customer is owed has not been decided".into());
    }
    let mut actions = vec![format!(
        "{} model steps and {} read-only tool calls; no write action was taken (the agent has none)",
        run.steps, run.tool_calls
    )];
    for v in &log.violations {
        actions.push(format!(
            "refused a turn: {} ({})",
            v["violation"].as_str().unwrap_or("violation"),
            v["tool"].as_str().or(v["matched"].as_str()).unwrap_or("")
        ));
    }
    if log.model_errors > 0 {
        actions.push(format!("{} model errors", log.model_errors));
    }
    json!({
        "reason": reason,
        "verified_facts": verified,
        "open_questions": open,
        "actions_taken": actions,
        "tokens": log.tokens,
    })
}
