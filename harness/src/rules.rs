//! The loop's rules as pure functions — what to do next, and what a model's reply or a
//! tool's result comes to — and [`Rules`], what the domain adds to them.

use serde_json::{json, Value};

use crate::budget::{Counters, Exhausted, Limits};
use crate::log::{NewEvent, RunLog};
use crate::model::{Answer, Reply, Turn};
use crate::tool::{ToolCall, ToolDeclaration, ToolOutcome};

/// What the domain decides about turns and hand-offs. The harness knows nothing of what
/// an answer means; these hooks do.
pub trait Rules<A>: Send + Sync {
    /// A well-formed answer that is no usable step (e.g. one without a summary): recorded
    /// as said and counted as a model error.
    fn unusable(&self, _answer: &A) -> Option<String> {
        None
    }

    /// A turn refused whole (nothing in it runs; the run goes to a human): the violation
    /// as recorded in a `policy_violation` event. `offered` are the run's tools.
    fn refuse(&self, _turn: &Turn<A>, _offered: &[ToolDeclaration]) -> Option<Value> {
        None
    }

    /// What a human taking the run over is told.
    fn handoff_summary(&self, reason: &str, log: &RunLog<A>, counters: Counters) -> Value {
        json!({ "reason": reason, "steps": counters.steps, "tool_calls": counters.tool_calls,
                "model_errors": log.model_errors, "tokens": log.tokens })
    }
}

/// The rules with nothing added.
pub struct NoRules;

impl<A> Rules<A> for NoRules {}

/// The one thing the loop does next, decided from the run's state alone.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next<'a, A> {
    /// The run goes to a human for `reason`, with a summary unless one is recorded.
    HandOff { reason: &'a str, summarised: bool },
    /// Run these intents, in order, each to exactly one result.
    RunTools(&'a [ToolCall]),
    /// The answer is recorded: the run ends with it (never back to the model).
    Answered(&'a A),
    /// Record that this budget ran out; the next pass hands the run over.
    Exhaust(Exhausted),
    /// Ask the model for its next turn (the step is counted before it is asked).
    AskModel,
}

/// The order of these checks is the loop's contract: a recorded reason to stop wins over
/// everything; intents recorded before a crash (or in the last turn) are finished before
/// anything else; an answer ends the run even if a budget ran out meanwhile (the work is
/// done); only then are budgets checked, and the model asked.
pub(crate) fn next<'a, A: Answer>(
    log: &'a RunLog<A>,
    counters: Counters,
    limits: &Limits,
) -> Next<'a, A> {
    if let Some(reason) = &log.handoff {
        return Next::HandOff {
            reason,
            summarised: log.handoff_summarised,
        };
    }
    if !log.pending.is_empty() {
        return Next::RunTools(&log.pending);
    }
    if let Some(answer) = &log.answer {
        return Next::Answered(answer);
    }
    if let Some(exhausted) = limits.exhausted(log, counters) {
        return Next::Exhaust(exhausted);
    }
    Next::AskModel
}

/// How a model call ended, as far as the loop is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// The call failed or timed out: a model error.
    ModelError,
    /// Well-formed but unusable (no calls, too many, a nameless tool, an unusable
    /// answer): recorded as said, and counted as a model error.
    Garbage,
    /// The domain refused the turn: recorded as said and refused whole.
    Refused,
    ToolCalls,
    Answer,
    HandOff,
}

/// One model call, classified, with the events that record it.
#[derive(Debug, Clone)]
pub struct Turned {
    pub kind: TurnKind,
    pub events: Vec<NewEvent>,
}

/// A turn that is well-formed JSON but no usable step.
fn garbage<A>(turn: &Turn<A>, limits: &Limits, rules: &dyn Rules<A>) -> Option<String> {
    match turn {
        Turn::ToolCalls { calls } if calls.is_empty() => {
            Some("the model asked for no tool calls and made no proposal".into())
        }
        Turn::ToolCalls { calls } if calls.len() > limits.calls_per_turn => Some(format!(
            "the model asked for {} tool calls in one turn (at most {})",
            calls.len(),
            limits.calls_per_turn
        )),
        Turn::ToolCalls { calls } if calls.iter().any(|c| c.name.trim().is_empty()) => {
            Some("the model asked for a tool without a name".into())
        }
        Turn::Answer { answer } => rules.unusable(answer),
        _ => None,
    }
}

/// The events one model call records. `step` is the run's step count including this
/// call: tool call ids become `s{step}c{i}:{the model's id}`, unique per run whatever the
/// model repeats. `latency_ms` is how long the call took on the caller's clock.
pub fn record_turn<A: Answer>(
    step: i64,
    reply: anyhow::Result<Reply<A>>,
    latency_ms: u64,
    model: &str,
    (limits, rules, offered): (&Limits, &dyn Rules<A>, &[ToolDeclaration]),
) -> Turned {
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            let payload =
                json!({ "error": format!("{e:#}"), "latency_ms": latency_ms, "model": model });
            return Turned {
                kind: TurnKind::ModelError,
                events: vec![NewEvent::new("model_error", None, payload)],
            };
        }
    };
    let mut output = serde_json::to_value(&reply.turn).unwrap_or_default();
    output["usage"] = serde_json::to_value(reply.usage).unwrap_or_default();
    output["latency_ms"] = json!(latency_ms);
    output["model"] = json!(model);
    let mut events = vec![NewEvent::new("model_output", None, output)];

    if let Some(problem) = garbage(&reply.turn, limits, rules) {
        let payload = json!({ "error": problem, "latency_ms": latency_ms, "model": model });
        events.push(NewEvent::new("model_error", None, payload));
        return Turned {
            kind: TurnKind::Garbage,
            events,
        };
    }
    if let Some(violation) = rules.refuse(&reply.turn, offered) {
        // Refused whole: no intent of this turn is recorded, so nothing in it runs.
        events.push(NewEvent::new("policy_violation", None, violation));
        return Turned {
            kind: TurnKind::Refused,
            events,
        };
    }
    let kind = match reply.turn {
        Turn::ToolCalls { calls } => {
            for (i, call) in calls.into_iter().enumerate() {
                let call = ToolCall {
                    id: format!("s{step}c{i}:{}", call.id),
                    ..call
                };
                let mut payload = serde_json::to_value(&call).unwrap_or_default();
                payload["step"] = json!(step);
                events.push(NewEvent::new("tool_intent", Some(&call.id), payload));
            }
            TurnKind::ToolCalls
        }
        Turn::Answer { answer } => {
            let payload = serde_json::to_value(&answer).unwrap_or_default();
            events.push(NewEvent::new(A::EVENT, None, payload));
            TurnKind::Answer
        }
        // The `model_output` event is the record: folding it sets the hand-off.
        Turn::HandOff { .. } => TurnKind::HandOff,
    };
    Turned { kind, events }
}

/// The `tool_result` of a call that ran, taking `duration_ms` on the caller's clock.
pub fn tool_result(
    call: &ToolCall,
    outcome: &ToolOutcome,
    duration_ms: u64,
    limits: &Limits,
) -> NewEvent {
    let payload = result_payload(call, outcome, duration_ms, limits.tool_result_bytes);
    NewEvent::new("tool_result", Some(&call.id), payload)
}

/// The `tool_result` of an intent the tool-call budget did not run.
pub fn skipped_tool_result(call: &ToolCall, limits: &Limits) -> NewEvent {
    let outcome = ToolOutcome {
        ok: false,
        content: json!({ "error": "budget_exhausted", "hint": "the run's tool-call budget is spent; this call was not run" }),
    };
    let mut payload = result_payload(call, &outcome, 0, limits.tool_result_bytes);
    payload["skipped"] = json!(true);
    NewEvent::new("tool_result", Some(&call.id), payload)
}

/// A tool result as stored: the outcome whole (stored once, however large), the tool,
/// how long it took and how big it is.
fn result_payload(
    call: &ToolCall,
    outcome: &ToolOutcome,
    duration_ms: u64,
    max_bytes: usize,
) -> Value {
    let bytes = outcome.content.to_string().len();
    let mut payload = json!({
        "ok": outcome.ok,
        "content": outcome.content,
        "tool": call.name,
        "duration_ms": duration_ms,
        "bytes": bytes,
    });
    if bytes > max_bytes {
        payload["truncated_for_model"] = json!(true);
    }
    payload
}
