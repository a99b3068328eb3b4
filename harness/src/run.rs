//! [`run_loop`]: the durable agent loop. Every step is committed to the run's
//! [`EventLog`] before anything outside the log depends on it: the move to
//! `model_running` before the model is asked; the model's output (with usage and
//! latency) and the tool intents it asked for before a tool that could act runs — with
//! only read-only tools offered, together with the first call's result, or while that
//! call runs once it takes longer than [`DEFER_TURN`]; each tool result before the next
//! tool runs (the last one with the next model step). A loop killed at any point and
//! called again resumes from the log: finished tool calls are not repeated, an intent
//! without a result is run again (tools are read-only, so that is safe), a turn not in
//! the log is asked for again, and once an answer is recorded the model is never asked
//! again.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};

use crate::budget::{Limits, Shared};
use crate::log::{Counters, Event, EventLog, Folded, Kind, NewEvent, Phase, RunLog, Step};
use crate::model::{Answer, Model, ModelContext, Reply, Usage};
use crate::rules::{self, Next, Rules, TurnKind};
use crate::tool::{ToolCall, Toolset};

/// Milliseconds on the caller's clock (tests inject one that only moves when told).
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// Hooks a product uses to measure the loop (metrics, spans). Every method defaults to
/// doing nothing.
pub trait Observer: Send + Sync {
    /// One model call: whether it answered, how long it took, what it cost.
    fn model_call(&self, _model: &str, _ok: bool, _latency_ms: u64, _usage: Usage) {}
    fn tool_call(&self, _tool: &str, _ok: bool, _duration_ms: u64) {}
    /// One turn's work: the model call and the tool calls it asked for (a turn resumed
    /// after a crash is not timed).
    fn step(&self, _ms: u64) {}
}

/// An observer that measures nothing (the default: replays, tests).
pub struct Unobserved;
impl Observer for Unobserved {}

/// Everything one run of the loop uses besides its log.
pub struct Run<'a, A: Send + 'static> {
    pub model: &'a dyn Model<A>,
    pub tools: &'a Toolset<'a>,
    /// The task's inputs as the model sees them (untrusted text).
    pub inputs: &'a [String],
    pub limits: Limits,
    pub rules: &'a dyn Rules<A>,
    pub clock: &'a dyn Clock,
    pub observer: &'a dyn Observer,
    /// A budget shared with a parent run (a sub-agent's), and its cancellation.
    pub shared: Option<&'a Shared>,
}

impl<'a, A: Send + 'static> Run<'a, A> {
    pub fn new(model: &'a dyn Model<A>, tools: &'a Toolset<'a>, clock: &'a dyn Clock) -> Self {
        Run {
            model,
            tools,
            inputs: &[],
            limits: Limits::default(),
            rules: &crate::rules::NoRules,
            clock,
            observer: &Unobserved,
            shared: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<A> {
    /// The model answered; the answer is in the log (calling the loop again returns it
    /// again without asking the model).
    Answered(A),
    /// The run goes to a human: why, and what they are told (recorded as `handoff`).
    HandedOff { reason: String, summary: Value },
    /// The parent cancelled the run (a sub-agent), before its next model or tool call.
    Cancelled,
}

/// What [`run_loop`] returns: the outcome and the run's state it came from.
#[derive(Debug, Clone)]
pub struct Ended<A> {
    pub outcome: Outcome<A>,
    pub log: RunLog<A>,
    pub counters: Counters,
}

/// Advances a run until it has an answer or must go to a human. Safe to call again on
/// the same log after a crash at any point. A log that fails a step (its lease is gone:
/// [`crate::LogError::Lost`]) stops the loop with nothing more written.
pub async fn run_loop<A: Answer, L: EventLog>(
    run: &Run<'_, A>,
    log: &mut L,
) -> Result<Ended<A>, L::Error> {
    // Spans named after the OpenTelemetry GenAI conventions: `invoke_agent` around the
    // run, `chat` around each model call, `execute_tool` around each tool call. The
    // caller's span (e.g. one carrying the case and run ids) is their parent.
    let span = tracing::info_span!("invoke_agent", gen_ai.operation.name = "invoke_agent", gen_ai.request.model = %run.model.name());
    tracing::Instrument::instrument(looped(run, log), span).await
}

async fn looped<A: Answer, L: EventLog>(
    run: &Run<'_, A>,
    log: &mut L,
) -> Result<Ended<A>, L::Error> {
    resume(log).await?;
    let mut turn_started = None;
    // Steps not committed yet (`run_tools`, `model_step`): a turn of read-only calls
    // and its last result go with the next model step, a quick call's turn with its
    // result; before anything else they are committed alone.
    let mut carried: Vec<Step> = Vec::new();
    let mut folded = Folded::<A>::new();
    loop {
        // Only the events not folded yet: the state is kept folded between turns.
        let after = folded.last_seq();
        log.fold_after(after, &mut |seq, kind, call_id, payload| {
            folded.fold_one(seq, kind, call_id, payload)
        })
        .await?;
        let mut counters = log.counters();
        let with_step;
        let state = if carried.is_empty() {
            &folded.log
        } else {
            let events = with_carried(log, folded.last_seq(), &mut counters, &carried);
            with_step = folded.with(&events);
            &with_step
        };
        let next = rules::next(state, counters, &run.limits);
        if !carried.is_empty() && !matches!(next, Next::AskModel | Next::RunTools(_)) {
            // Only a model or tool step takes them along: committed alone, then looked
            // at again.
            log.commit_steps(std::mem::take(&mut carried)).await?;
            continue;
        }
        if cancelled(run, &next) {
            let event = NewEvent::of(Kind::Cancelled, None, json!({ "by": "parent" }));
            log.commit(Step::events(vec![event])).await?;
            return Ok(ended(Outcome::Cancelled, state.clone(), log));
        }
        if let (Next::AskModel, Some(exhausted)) = (&next, run.shared.and_then(Shared::exhausted)) {
            log.commit(Step::events(vec![exhausted.event()])).await?;
            continue;
        }
        match next {
            Next::HandOff { reason, summarised } => {
                let reason = reason.to_string();
                let summary = if summarised {
                    // The summary was recorded earlier in the run: read the whole log.
                    recorded_summary(&log.load().await?)
                } else {
                    let summary = run.rules.handoff_summary(&reason, state, counters);
                    let event = NewEvent::of(Kind::Handoff, None, summary.clone());
                    log.commit(Step::events(vec![event])).await?;
                    summary
                };
                let outcome = Outcome::HandedOff { reason, summary };
                return Ok(ended(outcome, state.clone(), log));
            }
            Next::RunTools(pending) => {
                let turn = std::mem::take(&mut carried);
                carried = run_tools(run, log, pending.to_vec(), turn).await?;
                if let Some(started) = turn_started.take() {
                    run.observer.step(elapsed_ms(run.clock, started));
                }
            }
            Next::Answered(answer) => {
                let outcome = Outcome::Answered(answer.clone());
                return Ok(ended(outcome, state.clone(), log));
            }
            Next::Exhaust(exhausted) => {
                tracing::warn!(budget = %exhausted.budget, used = exhausted.used, limit = exhausted.limit, "run budget exhausted");
                log.commit(Step::events(vec![exhausted.event()])).await?;
            }
            Next::AskModel => {
                let started = run.clock.now_ms();
                let earlier = std::mem::take(&mut carried);
                let (tools_next, turn) = model_step(run, log, state, earlier).await?;
                carried = turn;
                if tools_next {
                    turn_started = Some(started);
                } else {
                    run.observer.step(elapsed_ms(run.clock, started));
                }
            }
        }
    }
}

/// Whether a shared budget's owner cancelled the run, checked before each model or
/// tool call (a call already under way finishes; its result is recorded first).
fn cancelled<A: Send + 'static>(run: &Run<'_, A>, next: &Next<'_, A>) -> bool {
    let working = matches!(next, Next::AskModel | Next::RunTools(_));
    working && run.shared.is_some_and(Shared::is_cancelled)
}

fn ended<A, L: EventLog>(outcome: Outcome<A>, log: RunLog<A>, from: &L) -> Ended<A> {
    Ended {
        outcome,
        log,
        counters: from.counters(),
    }
}

fn recorded_summary(events: &[Event]) -> Value {
    events
        .iter()
        .rev()
        .find(|e| e.kind == Kind::Handoff.as_str())
        .map(|e| e.payload.clone())
        .unwrap_or(Value::Null)
}

/// A run whose holder died inside a step: what it committed stands; the step it was in
/// is taken again. It dies in `tool_running` only with intents left (the last result
/// moves it to `ready`), so it resumes in `tool_pending`; asking the model, in `ready`.
async fn resume<L: EventLog>(log: &mut L) -> Result<(), L::Error> {
    let to = match log.phase() {
        Some(Phase::ToolRunning) => Phase::ToolPending,
        Some(Phase::ModelRunning) => Phase::Ready,
        _ => return Ok(()),
    };
    let interrupted = log.phase().map(Phase::as_str);
    let payload = json!({ "interrupted_in": interrupted, "worker": log.holder() });
    let mut step = Step::to(to);
    step.events.push(NewEvent::of(Kind::Resumed, None, payload));
    log.commit(step).await
}

/// Runs `work` while keeping the run's lease, so a slow model or tool does not let
/// another worker take the run. If the lease is lost meanwhile the work is abandoned.
async fn keeping<L: EventLog, T>(
    log: &mut L,
    work: impl Future<Output = T>,
) -> Result<T, L::Error> {
    let Some(period) = log.keep_alive_every() else {
        return Ok(work.await);
    };
    let mut work = std::pin::pin!(work);
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tokio::select! {
            out = &mut work => return Ok(out),
            _ = renew.tick() => log.keep_alive().await?,
        }
    }
}

/// Steps not committed yet, as the loop reads the log: their events numbered on from
/// `folded` (the last seq folded) as `log` will number them, and their counts added.
fn with_carried<L: EventLog>(
    log: &L,
    folded: Option<i64>,
    counters: &mut Counters,
    steps: &[Step],
) -> Vec<Event> {
    let (mut seq, mut phase) = (folded.unwrap_or(0), log.phase());
    let mut events = Vec::new();
    for step in steps {
        counters.steps += step.add_steps;
        counters.tool_calls += step.add_tool_calls;
        for e in &step.events {
            seq += 1;
            events.push(Event {
                seq,
                kind: e.kind.to_string(),
                call_id: e.call_id.clone(),
                payload: e.payload.clone(),
            });
        }
        seq += log.added_events(phase, step) as i64;
        phase = step.phase.or(phase);
    }
    events
}

/// Runs the recorded intents that have no result yet, one durable step each — except
/// the last one's result, which a run without a shared budget returns uncommitted (on a
/// log that carries steps, `EventLog::carries_steps`): the loop commits it with the
/// model step that follows it (one commit fewer per turn; nothing happens
/// outside the log between the two, so a crash before that commit runs the read-only
/// tool again, as a crash before its own commit would have).
///
/// `turn`: the model's turn that asked for them, not committed yet (`model_step`, read-
/// only tools only). It goes with the first call's result, or, when that call takes
/// longer than [`DEFER_TURN`], is committed while the call runs.
async fn run_tools<A: Send + 'static, L: EventLog>(
    run: &Run<'_, A>,
    log: &mut L,
    pending: Vec<ToolCall>,
    mut turn: Vec<Step>,
) -> Result<Vec<Step>, L::Error> {
    for (i, call) in pending.iter().enumerate() {
        let next = if i + 1 == pending.len() {
            Phase::Ready
        } else {
            Phase::ToolRunning
        };
        if run.shared.is_some_and(Shared::is_cancelled) {
            // Cancelled mid-turn: the next pass of the loop records it and stops.
            commit_with(log, &mut turn, None).await?;
            return Ok(Vec::new());
        }
        // The run's own budget first: a call it refuses takes nothing from the shared one.
        let may_run = run.limits.tool_may_run(log.counters())
            && run.shared.is_none_or(Shared::take_tool_call);
        if !may_run {
            // Every intent gets exactly one result, even one the budget does not run.
            let mut step = Step::to(next);
            step.events = vec![rules::skipped_tool_result(call, &run.limits)];
            commit_with(log, &mut turn, Some(step)).await?;
            continue;
        }
        if turn.is_empty() && log.phase() != Some(Phase::ToolRunning) {
            log.commit(Step::to(Phase::ToolRunning)).await?;
        }
        let started = run.clock.now_ms();
        let span = tracing::info_span!("execute_tool", gen_ai.operation.name = "execute_tool", gen_ai.tool.name = %call.name, gen_ai.tool.call.id = %call.id);
        let work = tracing::Instrument::instrument(run.tools.execute(call), span);
        let outcome = if turn.is_empty() {
            keeping(log, work).await?
        } else {
            deferring(log, work, &mut turn).await?
        };
        let duration_ms = elapsed_ms(run.clock, started);
        run.observer.tool_call(&call.name, outcome.ok, duration_ms);
        let mut step = Step::to(next);
        step.add_tool_calls = 1;
        step.events = vec![rules::tool_result(call, outcome, duration_ms, &run.limits)];
        if next == Phase::Ready && run.shared.is_none() && log.carries_steps() {
            turn.push(step);
            return Ok(turn);
        }
        commit_with(log, &mut turn, Some(step)).await?;
    }
    commit_with(log, &mut turn, None).await?;
    Ok(Vec::new())
}

/// How long a read-only tool may run before the model's turn that asked for it is
/// committed (while it runs): a quicker call's turn goes with its result, one commit
/// instead of two. A crash before that commit loses the turn, and the
/// model is asked again — as a crash while it was being asked would have.
pub const DEFER_TURN: Duration = Duration::from_millis(50);

/// Runs `work` with the turn that asked for it not committed yet: past [`DEFER_TURN`]
/// the turn is committed and `work` goes on (keeping the lease).
async fn deferring<L: EventLog, T>(
    log: &mut L,
    work: impl Future<Output = T>,
    turn: &mut Vec<Step>,
) -> Result<T, L::Error> {
    let mut work = std::pin::pin!(work);
    if let Ok(out) = tokio::time::timeout(DEFER_TURN, &mut work).await {
        return Ok(out);
    }
    log.commit_steps(std::mem::take(turn)).await?;
    keeping(log, work).await
}

/// Commits the steps not committed yet (`turn`), then `step`, as one.
async fn commit_with<L: EventLog>(
    log: &mut L,
    turn: &mut Vec<Step>,
    step: Option<Step>,
) -> Result<(), L::Error> {
    let mut steps = std::mem::take(turn);
    steps.extend(step);
    match steps.len() {
        0 => Ok(()),
        1 => log.commit(steps.remove(0)).await,
        _ => log.commit_steps(steps).await,
    }
}

/// Whether the loop's next step after a turn of tool calls is `tool_running` at once:
/// nothing can stop the first call (no shared budget to take it from or cancel it, and
/// the run's own budget allows it), as `run_tools` checks.
fn runs_tools_at_once<A: Send + 'static>(run: &Run<'_, A>, counters: Counters) -> bool {
    run.shared.is_none() && run.limits.tool_may_run(counters)
}

/// Asks the model for a turn and records it, or records why it cannot be used. Returns
/// whether the turn left tool calls to run, and the turn's steps when they are left
/// for `run_tools` to commit with the first call's result (every tool read-only).
async fn model_step<A: Answer, L: EventLog>(
    run: &Run<'_, A>,
    log: &mut L,
    state: &RunLog<A>,
    mut carried: Vec<Step>,
) -> Result<(bool, Vec<Step>), L::Error> {
    let history = state.model_history(run.limits.tool_result_bytes);
    // The step is counted, and committed, before the model is asked: a crash during the
    // call leaves `model_running` in the log, and the budget sees the attempt. The last
    // tool result, if the loop carried it, is committed with it.
    let mut step = Step::to(Phase::ModelRunning);
    step.add_steps = 1;
    commit_with(log, &mut carried, Some(step)).await?;
    let ctx = ModelContext {
        inputs: run.inputs,
        tools: run.tools.declarations(),
        history: &history,
    };
    let call = ask(run.model, &ctx, run.clock, run.limits.model_call_timeout);
    let span = tracing::info_span!("chat", gen_ai.operation.name = "chat", gen_ai.request.model = %run.model.name(), gen_ai.usage.input_tokens = tracing::field::Empty, gen_ai.usage.output_tokens = tracing::field::Empty);
    let (reply, latency_ms) =
        keeping(log, tracing::Instrument::instrument(call, span.clone())).await?;
    let usage = reply.as_ref().map(|r| r.usage).unwrap_or_default();
    span.record("gen_ai.usage.input_tokens", usage.prompt_tokens);
    span.record("gen_ai.usage.output_tokens", usage.completion_tokens);
    if let Some(shared) = run.shared {
        shared.spend_tokens(usage.total());
    }
    let name = run.model.name();
    run.observer
        .model_call(&name, reply.is_ok(), latency_ms, usage);
    let hooks = (&run.limits, run.rules, run.tools.declarations());
    let turned = rules::record_turn(log.counters().steps, reply, latency_ms, &name, hooks);
    match turned.kind {
        TurnKind::ModelError | TurnKind::Garbage => {
            let error = turned.events.last().map(|e| e.payload["error"].clone());
            tracing::warn!(error = ?error, "model error");
        }
        TurnKind::Refused => {
            let violation = turned.events.last().map(|e| e.payload["violation"].clone());
            tracing::warn!(violation = ?violation, "model policy violation");
        }
        TurnKind::ToolCalls | TurnKind::Answer | TurnKind::HandOff => {}
    }
    let tools_next = turned.kind == TurnKind::ToolCalls;
    let mut step = Step::to(if tools_next {
        Phase::ToolPending
    } else {
        Phase::Ready
    });
    step.events = turned.events;
    if tools_next && runs_tools_at_once(run, log.counters()) {
        // `tool_pending` then `tool_running` in one commit: `run_tools` would
        // commit the second right after the first, with nothing in between. When no
        // tool can act, not even that: they go with the first call's result.
        let steps = vec![step, Step::to(Phase::ToolRunning)];
        if log.carries_steps() && run.tools.writers().is_empty() {
            return Ok((true, steps));
        }
        log.commit_steps(steps).await?;
    } else {
        log.commit(step).await?;
    }
    Ok((tools_next, Vec::new()))
}

/// Asks the model for its next turn, bounded by `timeout` (real time; a model that does
/// not answer is a model error), its latency measured on `clock`.
pub async fn ask<A: Send + 'static>(
    model: &dyn Model<A>,
    ctx: &ModelContext<'_>,
    clock: &dyn Clock,
    timeout: Duration,
) -> (anyhow::Result<Reply<A>>, u64) {
    let started = clock.now_ms();
    let reply = match tokio::time::timeout(timeout, model.next_reply(ctx)).await {
        Ok(reply) => reply,
        Err(_) => Err(anyhow::anyhow!(
            "the model did not answer within {}s",
            timeout.as_secs()
        )),
    };
    (reply, elapsed_ms(clock, started))
}

/// Milliseconds since `since` on `clock`.
fn elapsed_ms(clock: &dyn Clock, since: i64) -> u64 {
    (clock.now_ms() - since).max(0) as u64
}
