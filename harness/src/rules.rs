//! The loop's rules as pure functions — what to do next, and what a model's reply or a
//! tool's result comes to — and [`Rules`], what the domain adds to them.

use serde_json::{json, Value};

use crate::budget::{Exhausted, Limits};
use crate::log::{Counters, Kind, NewEvent, RunLog};
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
                events: vec![NewEvent::of(Kind::ModelError, None, payload)],
            };
        }
    };
    let mut output = serde_json::to_value(&reply.turn).unwrap_or_default();
    output["usage"] = serde_json::to_value(reply.usage).unwrap_or_default();
    output["latency_ms"] = json!(latency_ms);
    output["model"] = json!(model);
    let mut events = vec![NewEvent::of(Kind::ModelOutput, None, output)];

    if let Some(problem) = garbage(&reply.turn, limits, rules) {
        let payload = json!({ "error": problem, "latency_ms": latency_ms, "model": model });
        events.push(NewEvent::of(Kind::ModelError, None, payload));
        return Turned {
            kind: TurnKind::Garbage,
            events,
        };
    }
    if let Some(violation) = rules.refuse(&reply.turn, offered) {
        // Refused whole: no intent of this turn is recorded, so nothing in it runs.
        events.push(NewEvent::of(Kind::PolicyViolation, None, violation));
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
                events.push(NewEvent::of(Kind::ToolIntent, Some(&call.id), payload));
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
    outcome: ToolOutcome,
    duration_ms: u64,
    limits: &Limits,
) -> NewEvent {
    let payload = result_payload(call, outcome, duration_ms, limits.tool_result_bytes);
    NewEvent::of(Kind::ToolResult, Some(&call.id), payload)
}

/// The `tool_result` of an intent the tool-call budget did not run.
pub fn skipped_tool_result(call: &ToolCall, limits: &Limits) -> NewEvent {
    let outcome = ToolOutcome {
        ok: false,
        content: json!({ "error": "budget_exhausted", "hint": "the run's tool-call budget is spent; this call was not run" }),
    };
    let mut payload = result_payload(call, outcome, 0, limits.tool_result_bytes);
    payload["skipped"] = json!(true);
    NewEvent::of(Kind::ToolResult, Some(&call.id), payload)
}

/// A tool result as stored: the outcome whole (stored once, however large, and moved in,
/// not copied), the tool, how long it took and how big its JSON text is (counted, not
/// written out).
fn result_payload(
    call: &ToolCall,
    outcome: ToolOutcome,
    duration_ms: u64,
    max_bytes: usize,
) -> Value {
    let bytes = crate::tool::json_len(&outcome.content);
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

#[cfg(test)]
mod tests {
    //! The loop's rules on a toy answer: the order of `next`, budgets, turns.
    use super::*;
    use crate::model::Usage;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Verdict {
        summary: String,
    }

    impl Answer for Verdict {
        const EVENT: &'static str = "verdict";
    }

    /// Refuses any tool that is not offered and whose name starts with `approve`.
    struct Strict;

    impl Rules<Verdict> for Strict {
        fn unusable(&self, answer: &Verdict) -> Option<String> {
            answer.summary.is_empty().then(|| "no summary".into())
        }
        fn refuse(&self, turn: &Turn<Verdict>, offered: &[ToolDeclaration]) -> Option<Value> {
            let Turn::ToolCalls { calls } = turn else {
                return None;
            };
            calls
                .iter()
                .find(|c| {
                    !offered.iter().any(|d| d.name == c.name) && c.name.starts_with("approve")
                })
                .map(|c| json!({ "violation": "approval_attempt", "tool": c.name }))
        }
    }

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: name.into(),
            name: name.into(),
            arguments: json!({}),
        }
    }

    fn calls(calls: Vec<ToolCall>) -> Turn<Verdict> {
        Turn::ToolCalls { calls }
    }

    fn reply(turn: Turn<Verdict>) -> anyhow::Result<Reply<Verdict>> {
        Ok(Reply {
            turn,
            usage: Usage::default(),
        })
    }

    fn record(step: i64, reply: anyhow::Result<Reply<Verdict>>, ms: u64) -> Turned {
        record_turn(step, reply, ms, "m", (&Limits::default(), &Strict, &[]))
    }

    fn fold(events: &[NewEvent]) -> RunLog<Verdict> {
        let mut log = RunLog::default();
        for (i, e) in events.iter().enumerate() {
            log.apply(i as i64 + 1, e.kind, e.call_id.as_deref(), &e.payload);
        }
        log
    }

    fn hand_off() -> Turn<Verdict> {
        Turn::HandOff {
            reason: "cannot tell".into(),
        }
    }

    #[test]
    fn a_reply_is_classified_and_recorded_as_the_loop_records_it() {
        let read = || calls(vec![call("list_orders")]);
        let answer = |summary: &str| Turn::Answer {
            answer: Verdict {
                summary: summary.into(),
            },
        };
        type Case<'a> = (anyhow::Result<Reply<Verdict>>, TurnKind, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            (
                Err(anyhow::anyhow!("connection reset")),
                TurnKind::ModelError,
                vec!["model_error"],
            ),
            (
                reply(calls(vec![])),
                TurnKind::Garbage,
                vec!["model_output", "model_error"],
            ),
            (
                reply(calls(vec![call("list_orders"); 9])),
                TurnKind::Garbage,
                vec!["model_output", "model_error"],
            ),
            (
                reply(answer("")),
                TurnKind::Garbage,
                vec!["model_output", "model_error"],
            ),
            (
                reply(calls(vec![call("approve_payout")])),
                TurnKind::Refused,
                vec!["model_output", "policy_violation"],
            ),
            (
                reply(read()),
                TurnKind::ToolCalls,
                vec!["model_output", "tool_intent"],
            ),
            (
                reply(answer("done")),
                TurnKind::Answer,
                vec!["model_output", "verdict"],
            ),
            (reply(hand_off()), TurnKind::HandOff, vec!["model_output"]),
        ];
        for (reply, kind, expected) in cases {
            let turn = record(3, reply, 0);
            assert_eq!(turn.kind, kind, "{:?}", turn.events);
            let kinds: Vec<_> = turn.events.iter().map(|e| e.kind).collect();
            assert_eq!(kinds, expected);
        }
        // Call ids are unique per run: the step and position prefix the model's id.
        let turn = record(3, reply(read()), 0);
        assert_eq!(turn.events[1].call_id.as_deref(), Some("s3c0:list_orders"));
    }

    #[test]
    fn the_loop_checks_handoff_then_pending_calls_then_answer_then_budgets() {
        let limits = Limits::default();
        let intents = record(1, reply(calls(vec![call("list_orders")])), 0).events;
        let spent = Counters {
            steps: limits.steps,
            tool_calls: 0,
        };
        // Pending intents are finished even when a budget ran out meanwhile.
        let log = fold(&intents);
        assert!(matches!(next(&log, spent, &limits), Next::RunTools(c) if c.len() == 1));
        // A refused turn hands the run over before anything else.
        let mut events = intents.clone();
        events.extend(record(2, reply(calls(vec![call("approve_payout")])), 0).events);
        assert_eq!(
            next(&fold(&events), spent, &limits),
            Next::HandOff {
                reason: "the model attempted something it may not do (approval_attempt)",
                summarised: false,
            }
        );
        // A budget is checked only when nothing is pending, and recorded once it runs out.
        let steps = Exhausted::new("steps", limits.steps, limits.steps);
        assert_eq!(
            next(&RunLog::<Verdict>::default(), spent, &limits),
            Next::Exhaust(steps.clone())
        );
        assert_eq!(
            next(&fold(&[steps.event()]), spent, &limits),
            Next::HandOff {
                reason: "the run exhausted its steps budget (24 of 24)",
                summarised: false,
            }
        );
        assert_eq!(
            next(&RunLog::<Verdict>::default(), Counters::default(), &limits),
            Next::AskModel
        );
        // The model's own hand-off is a hand-off too.
        let log = fold(&record(1, reply(hand_off()), 0).events);
        assert_eq!(
            next(&log, Counters::default(), &limits),
            Next::HandOff {
                reason: "the model escalated: cannot tell",
                summarised: false,
            }
        );
    }

    #[test]
    fn budgets_trip_at_their_limit_in_a_fixed_order() {
        let limits = Limits::default();
        let usage = |tokens: u64| {
            let reply = Ok(Reply {
                turn: hand_off(),
                usage: Usage {
                    prompt_tokens: tokens,
                    completion_tokens: 0,
                },
            });
            record(1, reply, 0).events
        };
        let error = || record(1, Err(anyhow::anyhow!("down")), 0).events;
        let unknown_tool = || {
            let outcome = ToolOutcome {
                ok: false,
                content: json!({ "error": "unknown_tool" }),
            };
            let mut events = record(1, reply(calls(vec![call("fetch_everything")])), 0).events;
            let intent = ToolCall {
                id: events[1].call_id.clone().unwrap_or_default(),
                ..call("fetch_everything")
            };
            events.push(tool_result(&intent, outcome, 0, &limits));
            events
        };
        let slow = |ms: u64| record(1, Err(anyhow::anyhow!("slow")), ms).events;
        let times = |n: usize, f: &dyn Fn() -> Vec<NewEvent>| -> Vec<NewEvent> {
            (0..n).flat_map(|_| f()).collect()
        };
        let none = Counters::default();
        let steps_spent = Counters {
            steps: limits.steps,
            tool_calls: 0,
        };
        let cases: Vec<(Vec<NewEvent>, Counters, Option<&str>)> = vec![
            (usage(limits.tokens - 1), none, None),
            (usage(limits.tokens), none, Some("tokens")),
            (times(limits.model_errors - 1, &error), none, None),
            (
                times(limits.model_errors, &error),
                none,
                Some("model_errors"),
            ),
            (
                times(limits.invalid_tool_calls, &unknown_tool),
                none,
                Some("invalid_tool_calls"),
            ),
            (slow(limits.wall_ms as u64), none, Some("wall_time_ms")),
            (
                vec![],
                Counters {
                    steps: 0,
                    tool_calls: limits.tool_calls,
                },
                Some("tool_calls"),
            ),
            // Model errors are checked before steps, steps before tokens.
            (
                times(limits.model_errors, &error),
                steps_spent,
                Some("model_errors"),
            ),
            (usage(limits.tokens), steps_spent, Some("steps")),
        ];
        for (events, counters, expected) in cases {
            let log = fold(&events);
            let tripped = limits.exhausted(&log, counters).map(|x| x.budget);
            assert_eq!(tripped.as_deref(), expected, "{events:?}");
        }
    }

    #[test]
    fn past_the_tool_call_budget_an_intent_gets_a_result_without_running() {
        let limits = Limits::default();
        let counters = |tool_calls| Counters {
            steps: 1,
            tool_calls,
        };
        assert!(limits.tool_may_run(counters(limits.tool_calls - 1)));
        assert!(!limits.tool_may_run(counters(limits.tool_calls)));
        let intent = call("list_orders");
        let skipped = skipped_tool_result(&intent, &limits);
        assert_eq!(skipped.payload["skipped"], true);
        assert_eq!(skipped.payload["content"]["error"], "budget_exhausted");
        // A skipped call is neither an invalid call nor a tool call that ran.
        let mut log = fold(&record(1, reply(calls(vec![intent])), 0).events);
        log.apply(3, skipped.kind, Some("s1c0:list_orders"), &skipped.payload);
        assert!(log.pending.is_empty());
        assert_eq!(log.invalid_tool_calls, 0);
    }
}
