//! The rules of the agent loop, as pure functions: what the loop does next, and what a
//! model's reply or a tool's result comes to. Both loops call them — the durable loop
//! (`agent::advance`, which commits each step to the run's event log) and the in-memory
//! loop of `replay` (shadow mode, evals of a model on history) — so shadow mode measures
//! the loop production runs (issue 9), and the rules cannot drift apart again.
//!
//! A run's state is the fold of its events ([`RunLog::apply`]) plus the two counters the
//! run keeps beside them ([`Counters`]: model steps taken, tool calls run). From that
//! state [`next`] names the one thing to do next, in a fixed order: hand the case to a
//! human, finish pending tool calls, send a proposal to the policy engine, record a
//! budget that ran out, or ask the model. [`record_turn`] turns the model's answer (or
//! its failure) into the events to record: a model error, a garbage turn, a refused
//! turn (SPEC invariant 7), tool intents, a proposal or an escalation.
//! [`tool_may_run`], [`tool_result`] and [`skipped_tool_result`] do the same for tool
//! calls, and [`handoff_summary`] writes what a human taking the case over is told.
//!
//! What this module deliberately does not do: I/O, clocks, leases, persistence or
//! logging. Callers measure latencies and durations (on their clock) and pass them in;
//! the durable loop commits the events this module returns with the run's state
//! change, replay appends them to a vector. Either way they are folded back with the
//! same [`RunLog::apply`].

use serde_json::{json, Value};

use super::{
    tools, Exchange, ModelReply, ModelTurn, Proposal, ToolCall, ToolOutcome, Usage,
    MAX_CALLS_PER_TURN, MAX_DEPENDENCY_WAITS, MAX_INVALID_TOOL_CALLS, MAX_MODEL_ERRORS, MAX_STEPS,
    MAX_TOKENS, MAX_TOOL_CALLS, MAX_TOOL_RESULT_BYTES, MAX_WALL_MS,
};

/// An event a step records: appended to the run's log in the step's transaction by the
/// durable loop, folded in memory by replay.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: &'static str,
    pub call_id: Option<String>,
    pub payload: Value,
}

impl NewEvent {
    pub fn new(kind: &'static str, call_id: Option<&str>, payload: Value) -> Self {
        NewEvent {
            kind,
            call_id: call_id.map(str::to_string),
            payload,
        }
    }
}

/// What a run counts beside its log (live: columns of the `runs` row, updated with each
/// step; replay: in memory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Model steps taken, counted before the model is asked (a crash during the call
    /// still spends the step).
    pub steps: i64,
    /// Tool calls run (a call the budget refused is not one).
    pub tool_calls: i64,
}

// ---------------------------------------------------------------------------------------
// The run's state, folded from its events.
// ---------------------------------------------------------------------------------------

/// The run's state rebuilt from its event log.
#[derive(Debug, Clone, Default)]
pub struct RunLog {
    /// Every finished tool call, with its result whole.
    pub(crate) exchanges: Vec<Exchange>,
    /// The event seq of each exchange's result (for truncation markers).
    result_seqs: Vec<i64>,
    /// Intents without a result, in order.
    pub(crate) pending: Vec<ToolCall>,
    pub(crate) proposal: Option<Proposal>,
    /// A decision or an escalation is recorded: the run's work is done.
    pub(crate) decided: bool,
    /// Why the run must go to a human: the first reason recorded.
    pub(crate) handoff: Option<String>,
    /// The summary for that human is recorded.
    pub(crate) handoff_summarised: bool,
    /// The first budget recorded as exhausted.
    pub(crate) budget_exhausted: Option<String>,
    pub(crate) model_errors: usize,
    pub(crate) invalid_tool_calls: usize,
    pub(crate) tokens: u64,
    pub(crate) dependency_waits: usize,
    /// Milliseconds spent in model and tool calls (see `MAX_WALL_MS`).
    pub(crate) active_ms: i64,
    /// Refused turns, as recorded in `policy_violation` events.
    pub(crate) violations: Vec<Value>,
}

impl RunLog {
    /// Folds one event into the state. Events must come in log order; `seq` is the
    /// event's number in the log (named by truncation markers).
    pub fn apply(&mut self, seq: i64, kind: &str, call_id: Option<&str>, payload: &Value) {
        self.active_ms += payload["latency_ms"].as_i64().unwrap_or(0)
            + payload["duration_ms"].as_i64().unwrap_or(0);
        match kind {
            "model_output" => {
                if let Some(usage) = payload.get("usage") {
                    let usage: Usage = serde_json::from_value(usage.clone()).unwrap_or_default();
                    self.tokens += usage.total();
                }
                if let Ok(ModelTurn::Escalate { reason }) =
                    serde_json::from_value::<ModelTurn>(payload.clone())
                {
                    self.handoff
                        .get_or_insert(format!("the model escalated: {reason}"));
                }
            }
            "model_error" => {
                self.model_errors += 1;
                if let Some(tokens) = payload["usage"].as_object() {
                    self.tokens += tokens.values().filter_map(Value::as_u64).sum::<u64>();
                }
            }
            "tool_intent" => {
                if let Ok(call) = serde_json::from_value::<ToolCall>(payload.clone()) {
                    self.pending.push(call);
                }
            }
            "tool_result" => {
                if let Some(pos) = self
                    .pending
                    .iter()
                    .position(|c| Some(c.id.as_str()) == call_id)
                {
                    let call = self.pending.remove(pos);
                    let outcome = serde_json::from_value(payload.clone()).unwrap_or(ToolOutcome {
                        ok: false,
                        content: payload.clone(),
                    });
                    if is_invalid_call(&outcome) {
                        self.invalid_tool_calls += 1;
                    }
                    self.exchanges.push(Exchange { call, outcome });
                    self.result_seqs.push(seq);
                }
            }
            "proposal" => self.proposal = serde_json::from_value(payload.clone()).ok(),
            "policy_violation" => {
                self.violations.push(payload.clone());
                self.handoff.get_or_insert(format!(
                    "the model attempted something it may not do ({})",
                    payload["violation"].as_str().unwrap_or("violation")
                ));
            }
            "budget_exhausted" => {
                let budget = payload["budget"].as_str().unwrap_or("unknown");
                self.budget_exhausted.get_or_insert(budget.to_string());
                self.handoff.get_or_insert(format!(
                    "the run exhausted its {budget} budget ({} of {})",
                    payload["used"], payload["limit"]
                ));
            }
            "dependency_unavailable" => self.dependency_waits += 1,
            "handoff" => self.handoff_summarised = true,
            "decision" | "escalated" => self.decided = true,
            _ => {}
        }
    }

    /// The history as the model sees it: large results truncated, with a marker.
    pub fn model_history(&self) -> Vec<Exchange> {
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

fn is_invalid_call(outcome: &ToolOutcome) -> bool {
    !outcome.ok
        && matches!(
            outcome.content["error"].as_str(),
            Some("unknown_tool" | "invalid_arguments")
        )
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
// What the loop does next.
// ---------------------------------------------------------------------------------------

/// The one thing the loop does next, decided from the run's state alone.
#[derive(Debug, Clone, PartialEq)]
pub enum Next<'a> {
    /// A decision or an escalation is recorded: the run's work is done.
    Finished,
    /// The case goes to a human for `reason`, with a summary unless one is recorded.
    HandOff { reason: &'a str, summarised: bool },
    /// Run these intents, in order, each to exactly one result.
    RunTools(&'a [ToolCall]),
    /// The proposal goes to the policy engine, never back to the model.
    Decide(&'a Proposal),
    /// Record that this budget ran out; the next pass hands the case over.
    Exhaust(Exhausted),
    /// Ask the model for its next turn (the step is counted before it is asked).
    AskModel,
}

/// The order of these checks is the loop's contract: a recorded reason to stop wins over
/// everything; intents recorded before a crash (or in the last turn) are finished before
/// anything else; a proposal is decided even if a budget ran out meanwhile (the work is
/// done, and the policy engine, not the model, decides); only then are budgets checked,
/// and the model asked.
pub fn next(log: &RunLog, counters: Counters) -> Next<'_> {
    if log.decided {
        return Next::Finished;
    }
    if let Some(reason) = &log.handoff {
        return Next::HandOff {
            reason,
            summarised: log.handoff_summarised,
        };
    }
    if !log.pending.is_empty() {
        return Next::RunTools(&log.pending);
    }
    if let Some(proposal) = &log.proposal {
        return Next::Decide(proposal);
    }
    if let Some(exhausted) = exhausted_budget(log, counters) {
        return Next::Exhaust(exhausted);
    }
    Next::AskModel
}

/// A budget the run has used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// `model_errors`, `invalid_tool_calls`, `steps`, `tool_calls`, `tokens`,
    /// `wall_time_ms` or `dependency_waits`.
    pub budget: &'static str,
    pub used: i64,
    pub limit: i64,
}

impl Exhausted {
    /// The `budget_exhausted` event that records it.
    pub fn event(&self) -> NewEvent {
        NewEvent::new(
            "budget_exhausted",
            None,
            json!({ "budget": self.budget, "used": self.used, "limit": self.limit }),
        )
    }

    /// The dependency-wait budget, once the run has rested `MAX_DEPENDENCY_WAITS` times
    /// for an unavailable provider (checked only when the provider fails again).
    pub fn dependency_waits(log: &RunLog) -> Option<Exhausted> {
        (log.dependency_waits >= MAX_DEPENDENCY_WAITS).then_some(Exhausted {
            budget: "dependency_waits",
            used: log.dependency_waits as i64,
            limit: MAX_DEPENDENCY_WAITS as i64,
        })
    }
}

/// The first budget the run has used up, if any, in a fixed order.
pub fn exhausted_budget(log: &RunLog, counters: Counters) -> Option<Exhausted> {
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
        ("steps", counters.steps, MAX_STEPS),
        ("tool_calls", counters.tool_calls, MAX_TOOL_CALLS),
        ("tokens", log.tokens as i64, MAX_TOKENS as i64),
        ("wall_time_ms", log.active_ms, MAX_WALL_MS),
    ]
    .into_iter()
    .find(|(_, used, limit)| used >= limit)
    .map(|(budget, used, limit)| Exhausted {
        budget,
        used,
        limit,
    })
}

// ---------------------------------------------------------------------------------------
// What a model's reply comes to.
// ---------------------------------------------------------------------------------------

/// How a model call ended, as far as the loop is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// The call failed or timed out: a model error.
    ModelError,
    /// Well-formed but unusable (no calls, too many, a nameless tool, an empty
    /// proposal): recorded as said, and counted as a model error.
    Garbage,
    /// The turn tries to act or claims an approval: recorded as said and refused whole
    /// (nothing in it runs); the case goes to a human.
    Refused,
    /// Tool intents to run next.
    ToolCalls,
    /// A proposal for the policy engine.
    Proposal,
    /// The model handed the case to a human.
    Escalation,
}

/// One model call, classified, with the events that record it.
#[derive(Debug, Clone)]
pub struct Turn {
    pub kind: TurnKind,
    pub events: Vec<NewEvent>,
}

impl Turn {
    /// Whether the turn leaves tool intents to run (live: the run goes to
    /// `tool_pending`, else back to `ready`).
    pub fn tools_pending(&self) -> bool {
        self.kind == TurnKind::ToolCalls
    }
}

/// The events one model call records. `step` is the run's step count including this
/// call: tool call ids become `s{step}c{i}:{the model's id}`, unique per run whatever the
/// model repeats. `latency_ms` is how long the call took on the caller's clock.
pub fn record_turn(
    step: i64,
    reply: anyhow::Result<ModelReply>,
    latency_ms: u64,
    model: &str,
) -> Turn {
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            let payload =
                json!({ "error": format!("{e:#}"), "latency_ms": latency_ms, "model": model });
            return Turn {
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

    if let Some(problem) = garbage(&reply.turn) {
        events.push(NewEvent::new(
            "model_error",
            None,
            json!({ "error": problem, "latency_ms": latency_ms, "model": model }),
        ));
        return Turn {
            kind: TurnKind::Garbage,
            events,
        };
    }
    if let Some(violation) = violation(&reply.turn) {
        // Refused whole: no intent of this turn is recorded, so nothing in it runs.
        events.push(NewEvent::new("policy_violation", None, violation));
        return Turn {
            kind: TurnKind::Refused,
            events,
        };
    }
    let kind = match reply.turn {
        ModelTurn::ToolCalls { calls } => {
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
        ModelTurn::Propose { proposal } => {
            events.push(NewEvent::new(
                "proposal",
                None,
                serde_json::to_value(&proposal).unwrap_or_default(),
            ));
            TurnKind::Proposal
        }
        // The `model_output` event is the record: folding it sets the handoff.
        ModelTurn::Escalate { .. } => TurnKind::Escalation,
    };
    Turn { kind, events }
}

// ---------------------------------------------------------------------------------------
// Tool calls.
// ---------------------------------------------------------------------------------------

/// Whether the next pending call may run. Once the tool-call budget is spent, the
/// remaining intents of the turn still get a result each ([`skipped_tool_result`]),
/// without running.
pub fn tool_may_run(counters: Counters) -> bool {
    counters.tool_calls < MAX_TOOL_CALLS
}

/// The `tool_result` of a call that ran, taking `duration_ms` on the caller's clock.
pub fn tool_result(call: &ToolCall, outcome: &ToolOutcome, duration_ms: u64) -> NewEvent {
    NewEvent::new(
        "tool_result",
        Some(&call.id),
        result_payload(call, outcome, duration_ms, false),
    )
}

/// The `tool_result` of an intent the tool-call budget did not run.
pub fn skipped_tool_result(call: &ToolCall) -> NewEvent {
    let outcome = ToolOutcome {
        ok: false,
        content: json!({ "error": "budget_exhausted", "hint": "the run's tool-call budget is spent; this call was not run" }),
    };
    NewEvent::new(
        "tool_result",
        Some(&call.id),
        result_payload(call, &outcome, 0, true),
    )
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

// ---------------------------------------------------------------------------------------
// Turns that are no usable step, and turns that are refused.
// ---------------------------------------------------------------------------------------

/// A turn that is well-formed JSON but no usable step: counted as a model error.
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
/// as recorded in a `policy_violation` event.
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

// ---------------------------------------------------------------------------------------
// What a human taking the case over is told.
// ---------------------------------------------------------------------------------------

/// What a human taking the case over needs: the facts the tools verified (with the call
/// that verified each), what is still open, and what the agent did.
pub fn handoff_summary(reason: &str, log: &RunLog, counters: Counters) -> Value {
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
        counters.steps, counters.tool_calls
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool call with the model's own id (as the scripted models of `refund-evals`
    /// write them; those live outside this library, issue 18).
    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: name.to_string(),
            name: name.to_string(),
            arguments,
        }
    }

    fn calls(calls: Vec<ToolCall>) -> ModelTurn {
        ModelTurn::ToolCalls { calls }
    }

    fn fold(events: &[NewEvent]) -> RunLog {
        let mut log = RunLog::default();
        for (i, e) in events.iter().enumerate() {
            log.apply(i as i64 + 1, e.kind, e.call_id.as_deref(), &e.payload);
        }
        log
    }

    fn reply(turn: ModelTurn) -> anyhow::Result<ModelReply> {
        Ok(ModelReply {
            turn,
            usage: Usage::default(),
        })
    }

    fn kinds(turn: &Turn) -> Vec<&'static str> {
        turn.events.iter().map(|e| e.kind).collect()
    }

    fn escalate() -> ModelTurn {
        ModelTurn::Escalate {
            reason: "cannot tell".into(),
        }
    }

    #[test]
    fn a_reply_is_classified_and_recorded_as_the_live_loop_records_it() {
        let read = || calls(vec![call("list_orders", json!({}))]);
        let write = calls(vec![
            call("list_orders", json!({})),
            call("create_refund", json!({ "charge": "ch_1" })),
        ]);
        let approve = calls(vec![call("approve_refund", json!({ "charge_id": "ch_1" }))]);
        let cases: Vec<(anyhow::Result<ModelReply>, TurnKind, Vec<&str>)> = vec![
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
                reply(calls(vec![call("list_orders", json!({})); 9])),
                TurnKind::Garbage,
                vec!["model_output", "model_error"],
            ),
            (
                reply(write),
                TurnKind::Refused,
                vec!["model_output", "policy_violation"],
            ),
            (
                reply(approve),
                TurnKind::Refused,
                vec!["model_output", "policy_violation"],
            ),
            (
                reply(read()),
                TurnKind::ToolCalls,
                vec!["model_output", "tool_intent"],
            ),
            (
                reply(escalate()),
                TurnKind::Escalation,
                vec!["model_output"],
            ),
        ];
        for (reply, kind, expected) in cases {
            let turn = record_turn(3, reply, 0, "m");
            assert_eq!(turn.kind, kind, "{:?}", turn.events);
            assert_eq!(kinds(&turn), expected);
            assert_eq!(turn.tools_pending(), kind == TurnKind::ToolCalls);
        }
        // Call ids are unique per run: the step and position prefix the model's id.
        let turn = record_turn(3, reply(read()), 0, "m");
        assert_eq!(turn.events[1].call_id.as_deref(), Some("s3c0:list_orders"));
    }

    #[test]
    fn the_loop_checks_handoff_then_pending_calls_then_proposal_then_budgets() {
        let intents = record_turn(
            1,
            reply(calls(vec![call("list_orders", json!({}))])),
            0,
            "m",
        )
        .events;
        let spent = Counters {
            steps: MAX_STEPS,
            tool_calls: 0,
        };
        // Pending intents are finished even when a budget ran out meanwhile.
        let log = fold(&intents);
        assert!(matches!(next(&log, spent), Next::RunTools(calls) if calls.len() == 1));
        // A refused turn hands the case over before anything else.
        let mut events = intents.clone();
        events.extend(
            record_turn(
                2,
                reply(calls(vec![call("approve_refund", json!({}))])),
                0,
                "m",
            )
            .events,
        );
        let log = fold(&events);
        assert_eq!(
            next(&log, spent),
            Next::HandOff {
                reason: "the model attempted something it may not do (approval_attempt)",
                summarised: false,
            }
        );
        // A budget is checked only when nothing is pending, and recorded once it runs out.
        assert_eq!(
            next(&RunLog::default(), spent),
            Next::Exhaust(Exhausted {
                budget: "steps",
                used: MAX_STEPS,
                limit: MAX_STEPS
            })
        );
        let exhausted = fold(&[Exhausted {
            budget: "steps",
            used: MAX_STEPS,
            limit: MAX_STEPS,
        }
        .event()]);
        assert_eq!(
            next(&exhausted, spent),
            Next::HandOff {
                reason: "the run exhausted its steps budget (24 of 24)",
                summarised: false,
            }
        );
        assert_eq!(
            next(&RunLog::default(), Counters::default()),
            Next::AskModel
        );
        // The model's own escalation is a handoff too.
        let log = fold(&record_turn(1, reply(escalate()), 0, "m").events);
        assert_eq!(
            next(&log, Counters::default()),
            Next::HandOff {
                reason: "the model escalated: cannot tell",
                summarised: false,
            }
        );
    }

    #[test]
    fn budgets_trip_at_their_limit_in_a_fixed_order() {
        let usage = |tokens: u64| {
            record_turn(
                1,
                Ok(ModelReply {
                    turn: escalate(),
                    usage: Usage {
                        prompt_tokens: tokens,
                        completion_tokens: 0,
                    },
                }),
                0,
                "m",
            )
            .events
        };
        let error = || record_turn(1, Err(anyhow::anyhow!("down")), 0, "m").events;
        let unknown_tool = || {
            let call = call("fetch_everything", json!({}));
            let outcome = ToolOutcome {
                ok: false,
                content: json!({ "error": "unknown_tool" }),
            };
            let mut events = record_turn(1, reply(calls(vec![call.clone()])), 0, "m").events;
            let intent = ToolCall {
                id: events[1].call_id.clone().unwrap(),
                ..call
            };
            events.push(tool_result(&intent, &outcome, 0));
            events
        };
        let slow = |ms: u64| record_turn(1, Err(anyhow::anyhow!("slow")), ms, "m").events;
        let times = |n: usize, f: &dyn Fn() -> Vec<NewEvent>| -> Vec<NewEvent> {
            (0..n).flat_map(|_| f()).collect()
        };
        let none = Counters::default();
        let cases: Vec<(Vec<NewEvent>, Counters, Option<&str>)> = vec![
            (usage(MAX_TOKENS - 1), none, None),
            (usage(MAX_TOKENS), none, Some("tokens")),
            (times(MAX_MODEL_ERRORS - 1, &error), none, None),
            (times(MAX_MODEL_ERRORS, &error), none, Some("model_errors")),
            (
                times(MAX_INVALID_TOOL_CALLS, &unknown_tool),
                none,
                Some("invalid_tool_calls"),
            ),
            (slow(MAX_WALL_MS as u64), none, Some("wall_time_ms")),
            (
                vec![],
                Counters {
                    steps: 0,
                    tool_calls: MAX_TOOL_CALLS,
                },
                Some("tool_calls"),
            ),
            // Model errors are checked before steps, steps before tokens.
            (
                times(MAX_MODEL_ERRORS, &error),
                Counters {
                    steps: MAX_STEPS,
                    tool_calls: 0,
                },
                Some("model_errors"),
            ),
            (
                usage(MAX_TOKENS),
                Counters {
                    steps: MAX_STEPS,
                    tool_calls: 0,
                },
                Some("steps"),
            ),
        ];
        for (events, counters, expected) in cases {
            let log = fold(&events);
            assert_eq!(
                exhausted_budget(&log, counters).map(|x| x.budget),
                expected,
                "{events:?}"
            );
        }
    }

    #[test]
    fn past_the_tool_call_budget_an_intent_gets_a_result_without_running() {
        let counters = |tool_calls| Counters {
            steps: 1,
            tool_calls,
        };
        assert!(tool_may_run(counters(MAX_TOOL_CALLS - 1)));
        assert!(!tool_may_run(counters(MAX_TOOL_CALLS)));
        let intent = call("list_orders", json!({}));
        let skipped = skipped_tool_result(&intent);
        assert_eq!(skipped.payload["skipped"], true);
        assert_eq!(skipped.payload["content"]["error"], "budget_exhausted");
        // A skipped call is neither an invalid call nor a tool call that ran.
        let mut log = fold(&record_turn(1, reply(calls(vec![intent])), 0, "m").events);
        log.apply(3, skipped.kind, Some("s1c0:list_orders"), &skipped.payload);
        assert!(log.pending.is_empty());
        assert_eq!(log.invalid_tool_calls, 0);
    }
}
