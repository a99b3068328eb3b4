//! A run's event log and its fold. The log is the run's only checkpoint: a worker that
//! dies at any point resumes from it, and replay folds the same events in memory.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::model::{Answer, BoxFuture, Turn, Usage};
use crate::tool::{is_invalid_call, Exchange, ToolCall, ToolOutcome};

/// What a run counts beside its log (a product keeps them on the run's row, updated
/// with each step; replay keeps them in memory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Model steps taken, counted before the model is asked (a crash during the call
    /// still spends the step).
    pub steps: i64,
    /// Tool calls run (a call the budget refused is not one).
    pub tool_calls: i64,
}

/// The kinds of event the harness writes and folds. A product stores them by name beside
/// its own (its answer's `Answer::EVENT`, what its workflow records), so a log reads as
/// one sequence; names are stable — they are the stored form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A model turn: tool calls, an answer or a hand-off, with its usage.
    ModelOutput,
    /// The model failed (transport, malformed turn); counted against `max_model_errors`.
    ModelError,
    /// A tool call about to run, logged before it runs (a crash re-runs only read-only calls).
    ToolIntent,
    /// What a tool call answered.
    ToolResult,
    /// A turn the rules refused whole.
    PolicyViolation,
    /// A budget ran out; folding it hands the run over.
    BudgetExhausted,
    /// The hand-off summary, written once.
    Handoff,
    /// A parent joined its children (their tokens count against it).
    ChildrenJoined,
    /// The run was cancelled by its parent.
    Cancelled,
    /// A run resumed after a crash (what it found in its log).
    Resumed,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::ModelOutput,
        Kind::ModelError,
        Kind::ToolIntent,
        Kind::ToolResult,
        Kind::PolicyViolation,
        Kind::BudgetExhausted,
        Kind::Handoff,
        Kind::ChildrenJoined,
        Kind::Cancelled,
        Kind::Resumed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::ModelOutput => "model_output",
            Kind::ModelError => "model_error",
            Kind::ToolIntent => "tool_intent",
            Kind::ToolResult => "tool_result",
            Kind::PolicyViolation => "policy_violation",
            Kind::BudgetExhausted => "budget_exhausted",
            Kind::Handoff => "handoff",
            Kind::ChildrenJoined => "children_joined",
            Kind::Cancelled => "cancelled",
            Kind::Resumed => "resumed",
        }
    }

    /// The kind a stored name is, if the harness writes it.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// An event a step records.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: &'static str,
    pub call_id: Option<String>,
    pub payload: Value,
}

impl NewEvent {
    /// An event of one of the harness's own kinds.
    pub fn of(kind: Kind, call_id: Option<&str>, payload: Value) -> Self {
        NewEvent::new(kind.as_str(), call_id, payload)
    }

    /// An event of a kind the product names (its answer, its workflow's records).
    pub fn new(kind: &'static str, call_id: Option<&str>, payload: Value) -> Self {
        NewEvent {
            kind,
            call_id: call_id.map(str::to_string),
            payload,
        }
    }
}

/// An event as stored, with its number in the log (named by truncation markers).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: i64,
    pub kind: String,
    pub call_id: Option<String>,
    pub payload: Value,
}

/// Where a working run is inside the loop (the run states a product stores).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Ready,
    ModelRunning,
    ToolPending,
    ToolRunning,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Ready => "ready",
            Phase::ModelRunning => "model_running",
            Phase::ToolPending => "tool_pending",
            Phase::ToolRunning => "tool_running",
        }
    }
}

/// One durable step: the run's phase (unchanged if `None`), counters to add, and the
/// events it produced — committed together or not at all.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub phase: Option<Phase>,
    pub add_steps: i64,
    pub add_tool_calls: i64,
    pub events: Vec<NewEvent>,
}

impl Step {
    pub fn to(phase: Phase) -> Self {
        Step {
            phase: Some(phase),
            add_steps: 0,
            add_tool_calls: 0,
            events: Vec::new(),
        }
    }

    /// Events that leave the phase as it is.
    pub fn events(events: Vec<NewEvent>) -> Self {
        Step {
            phase: None,
            add_steps: 0,
            add_tool_calls: 0,
            events,
        }
    }
}

/// The error a product's log returns: [`LogError::Lost`] when the run is in other hands.
/// (An in-memory log cannot fail: its error is `Infallible`.)
#[derive(Debug, thiserror::Error)]
pub enum LogError<E> {
    /// The run is in other hands (its lease was taken, or it was ended elsewhere):
    /// nothing of the step was written, and the caller must stop.
    #[error("the run changed elsewhere (lease lost or run ended)")]
    Lost,
    #[error(transparent)]
    Store(E),
}

/// What [`EventLog::fold_after`] hands each event to: seq, kind, call id, payload.
pub type FoldEvent<'f> = dyn FnMut(i64, &str, Option<&str>, &Value) + Send + 'f;

/// Where a run's events live. A product's log commits each step atomically against a
/// version: a worker whose lease is gone gets an error (e.g. [`LogError::Lost`]) and
/// writes nothing; the loop stops at the first error.
pub trait EventLog: Send {
    type Error: Send;

    /// The run's events so far, in order.
    fn load(&mut self) -> BoxFuture<'_, Result<Vec<Event>, Self::Error>>;

    /// The events after `after` (every one for `None`), in order: the loop reads only
    /// what it has not folded yet (a turn no longer copies the whole log). The
    /// default loads them all and keeps the new ones; a log that can do better does.
    fn load_after(&mut self, after: Option<i64>) -> BoxFuture<'_, Result<Vec<Event>, Self::Error>> {
        Box::pin(async move {
            let mut events = self.load().await?;
            events.retain(|e| after.is_none_or(|seq| e.seq > seq));
            Ok(events)
        })
    }

    /// Hands each event after `after` to `fold`, in order (seq, kind, call id, payload):
    /// how the loop folds what is new. The default loads them ([`EventLog::load_after`]);
    /// a log that holds its events lends them instead of copying them.
    fn fold_after<'a>(
        &'a mut self,
        after: Option<i64>,
        fold: &'a mut FoldEvent<'_>,
    ) -> BoxFuture<'a, Result<(), Self::Error>> {
        Box::pin(async move {
            for e in self.load_after(after).await? {
                fold(e.seq, &e.kind, e.call_id.as_deref(), &e.payload);
            }
            Ok(())
        })
    }

    /// Commits one step atomically.
    fn commit(&mut self, step: Step) -> BoxFuture<'_, Result<(), Self::Error>>;

    /// Commits several steps, in order, as one: each is what [`EventLog::commit`] makes
    /// of it, and either all are written or none. The loop calls it only where nothing
    /// happens outside the log between the steps (no model or tool call), so a crash
    /// leaves the log where it would have been before the first or after the last. The
    /// default commits them one by one (a log without transactions; an in-memory log).
    fn commit_steps(&mut self, steps: Vec<Step>) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async move {
            for step in steps {
                self.commit(step).await?;
            }
            Ok(())
        })
    }

    fn counters(&self) -> Counters;

    /// How many events the log stores for `step` besides the step's own, after them,
    /// when the run is in phase `from`: 1 for a log that records each change of phase
    /// as an event of its own. The loop numbers the events of steps it has not committed
    /// yet as the log will (a tool result's number is shown to the model).
    fn added_events(&self, from: Option<Phase>, step: &Step) -> usize {
        let _ = (from, step);
        0
    }

    /// The phase the run is in; `None` when it is resting (waiting for the world) and
    /// was picked up again.
    fn phase(&self) -> Option<Phase>;

    /// Who holds the run (recorded when a run is resumed after a crash).
    fn holder(&self) -> Option<String> {
        None
    }

    /// Whether the loop should carry a step to commit it with the next one (a log whose
    /// every commit costs a round trip or a flush). An in-memory log's commits cost
    /// nothing, and carrying a step costs the loop a copy of the folded run.
    fn carries_steps(&self) -> bool {
        true
    }

    /// How often [`EventLog::keep_alive`] must be called while a model or tool works
    /// (a lease's renewal period); `None` when nobody else could take the run.
    fn keep_alive_every(&self) -> Option<Duration> {
        None
    }

    fn keep_alive(&mut self) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async { Ok(()) })
    }
}

/// A log in memory (replay, shadow, tests): every event kept in order.
#[derive(Debug, Default)]
pub struct MemoryLog {
    pub events: Vec<NewEvent>,
    counters: Counters,
    phase: Option<Phase>,
}

impl MemoryLog {
    pub fn new() -> Self {
        MemoryLog {
            phase: Some(Phase::Ready),
            ..MemoryLog::default()
        }
    }
}

impl EventLog for MemoryLog {
    type Error = std::convert::Infallible;

    fn load(&mut self) -> BoxFuture<'_, Result<Vec<Event>, Self::Error>> {
        self.load_after(None)
    }

    /// The events are numbered by their place (seq `n` is the `n`-th), so the new ones
    /// are a tail of the list: only they are copied.
    fn load_after(&mut self, after: Option<i64>) -> BoxFuture<'_, Result<Vec<Event>, Self::Error>> {
        let skip = after.map_or(0, |seq| usize::try_from(seq).unwrap_or(0));
        let events = self
            .events
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(i, e)| Event {
                seq: i as i64 + 1,
                kind: e.kind.to_string(),
                call_id: e.call_id.clone(),
                payload: e.payload.clone(),
            })
            .collect();
        Box::pin(async move { Ok(events) })
    }

    /// Lent, not copied: the folded state copies only what it keeps.
    fn fold_after<'a>(
        &'a mut self,
        after: Option<i64>,
        fold: &'a mut FoldEvent<'_>,
    ) -> BoxFuture<'a, Result<(), Self::Error>> {
        let skip = after.map_or(0, |seq| usize::try_from(seq).unwrap_or(0));
        for (i, e) in self.events.iter().enumerate().skip(skip) {
            fold(i as i64 + 1, e.kind, e.call_id.as_deref(), &e.payload);
        }
        Box::pin(async { Ok(()) })
    }

    fn commit(&mut self, step: Step) -> BoxFuture<'_, Result<(), Self::Error>> {
        self.counters.steps += step.add_steps;
        self.counters.tool_calls += step.add_tool_calls;
        if step.phase.is_some() {
            self.phase = step.phase;
        }
        self.events.extend(step.events);
        Box::pin(async { Ok(()) })
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn carries_steps(&self) -> bool {
        false
    }

    fn phase(&self) -> Option<Phase> {
        self.phase
    }
}

/// The run's state rebuilt from its event log.
#[derive(Debug, Clone)]
pub struct RunLog<A> {
    /// Every finished tool call, with its result whole.
    pub exchanges: Vec<Exchange>,
    /// The event seq of each exchange's result (for truncation markers).
    result_seqs: Vec<i64>,
    /// Intents without a result, in order.
    pub pending: Vec<ToolCall>,
    pub answer: Option<A>,
    /// Why the run must go to a human: the first reason recorded.
    pub handoff: Option<String>,
    /// The summary for that human is recorded.
    pub handoff_summarised: bool,
    /// The first budget recorded as exhausted.
    pub budget_exhausted: Option<String>,
    pub model_errors: usize,
    pub invalid_tool_calls: usize,
    pub tokens: u64,
    /// Milliseconds spent in model and tool calls (see [`crate::Limits::wall_ms`]).
    pub active_ms: i64,
    /// Refused turns, as recorded in `policy_violation` events.
    pub violations: Vec<Value>,
    /// How many events of each kind the harness does not fold itself (the domain's own,
    /// e.g. `dependency_unavailable`).
    pub other: BTreeMap<String, usize>,
}

impl<A> Default for RunLog<A> {
    fn default() -> Self {
        RunLog {
            exchanges: Vec::new(),
            result_seqs: Vec::new(),
            pending: Vec::new(),
            answer: None,
            handoff: None,
            handoff_summarised: false,
            budget_exhausted: None,
            model_errors: 0,
            invalid_tool_calls: 0,
            tokens: 0,
            active_ms: 0,
            violations: Vec::new(),
            other: BTreeMap::new(),
        }
    }
}

/// A [`RunLog`] kept current as the log grows: each event is folded once. The log is
/// append-only and ordered by seq, so folding what is new since the last look gives the
/// state a fold of every event gives (the loop no longer re-parses the whole
/// log on each turn).
#[derive(Debug)]
pub(crate) struct Folded<A> {
    pub(crate) log: RunLog<A>,
    last_seq: Option<i64>,
}

impl<A: Answer> Folded<A> {
    pub(crate) fn new() -> Self {
        Folded {
            log: RunLog::default(),
            last_seq: None,
        }
    }

    /// The seq of the last event folded, if any (what [`EventLog::load_after`] is asked).
    pub(crate) fn last_seq(&self) -> Option<i64> {
        self.last_seq
    }

    fn is_new(&self, e: &Event) -> bool {
        self.last_seq.is_none_or(|last| e.seq > last)
    }

    /// Folds the events after the last one folded (the loop folds through
    /// [`EventLog::fold_after`], one event at a time).
    #[cfg(test)]
    pub(crate) fn catch_up(&mut self, events: &[Event]) {
        for e in events {
            self.fold_one(e.seq, &e.kind, e.call_id.as_deref(), &e.payload);
        }
    }

    /// Folds one event, unless it was folded already.
    pub(crate) fn fold_one(
        &mut self,
        seq: i64,
        kind: &str,
        call_id: Option<&str>,
        payload: &Value,
    ) {
        if self.last_seq.is_none_or(|last| seq > last) {
            self.log.apply(seq, kind, call_id, payload);
            self.last_seq = Some(seq);
        }
    }

    /// The state with `events`' new ones folded in too, leaving this one as it is (a step
    /// not committed yet is looked at, not kept).
    pub(crate) fn with(&self, events: &[Event]) -> RunLog<A> {
        let mut log = self.log.clone();
        for e in events.iter().filter(|e| self.is_new(e)) {
            log.apply(e.seq, &e.kind, e.call_id.as_deref(), &e.payload);
        }
        log
    }
}

impl<A: Answer> RunLog<A> {
    pub fn fold(events: &[Event]) -> Self {
        let mut log = RunLog::default();
        for e in events {
            log.apply(e.seq, &e.kind, e.call_id.as_deref(), &e.payload);
        }
        log
    }

    /// Folds one event into the state. Events must come in log order.
    pub fn apply(&mut self, seq: i64, kind: &str, call_id: Option<&str>, payload: &Value) {
        self.active_ms += payload["latency_ms"].as_i64().unwrap_or(0)
            + payload["duration_ms"].as_i64().unwrap_or(0);
        match Kind::parse(kind) {
            Some(Kind::ModelOutput) => self.model_output(payload),
            Some(Kind::ModelError) => {
                self.model_errors += 1;
                if let Some(tokens) = payload["usage"].as_object() {
                    self.tokens += tokens.values().filter_map(Value::as_u64).sum::<u64>();
                }
            }
            Some(Kind::ToolIntent) => {
                if let Ok(call) = ToolCall::deserialize(payload) {
                    self.pending.push(call);
                }
            }
            Some(Kind::ToolResult) => self.tool_result(seq, call_id, payload),
            Some(Kind::PolicyViolation) => {
                self.violations.push(payload.clone());
                self.handoff.get_or_insert(format!(
                    "the model attempted something it may not do ({})",
                    payload["violation"].as_str().unwrap_or("violation")
                ));
            }
            Some(Kind::BudgetExhausted) => {
                let budget = payload["budget"].as_str().unwrap_or("unknown");
                self.budget_exhausted.get_or_insert(budget.to_string());
                self.handoff.get_or_insert(format!(
                    "the run exhausted its {budget} budget ({} of {})",
                    payload["used"], payload["limit"]
                ));
            }
            Some(Kind::Handoff) => self.handoff_summarised = true,
            // A child's tokens count against its parent (`sub::join`).
            Some(Kind::ChildrenJoined) => self.tokens += payload["tokens"].as_u64().unwrap_or(0),
            None if kind == A::EVENT => self.answer = A::deserialize(payload).ok(),
            _ => *self.other.entry(kind.to_string()).or_default() += 1,
        }
    }

    fn model_output(&mut self, payload: &Value) {
        if let Some(usage) = payload.get("usage") {
            let usage = Usage::deserialize(usage).unwrap_or_default();
            self.tokens += usage.total();
        }
        // Read in place: only a hand-off's reason is kept, so the answer is skipped.
        if let Ok(Turn::<serde::de::IgnoredAny>::HandOff { reason }) = Turn::deserialize(payload) {
            self.handoff
                .get_or_insert(format!("the model escalated: {reason}"));
        }
    }

    fn tool_result(&mut self, seq: i64, call_id: Option<&str>, payload: &Value) {
        let Some(pos) = self
            .pending
            .iter()
            .position(|c| Some(c.id.as_str()) == call_id)
        else {
            return;
        };
        let call = self.pending.remove(pos);
        let outcome = ToolOutcome::deserialize(payload).unwrap_or_else(|_| ToolOutcome {
            ok: false,
            content: payload.clone(),
        });
        if is_invalid_call(&outcome) {
            self.invalid_tool_calls += 1;
        }
        self.exchanges.push(Exchange { call, outcome });
        self.result_seqs.push(seq);
    }

    /// How many events of a kind the harness does not fold itself were recorded.
    pub fn count(&self, kind: &str) -> usize {
        self.other.get(kind).copied().unwrap_or(0)
    }

    /// The history as the model sees it: results over `max_bytes` truncated, with a
    /// marker naming the event that holds them whole.
    pub fn model_history(&self, max_bytes: usize) -> Vec<Exchange> {
        self.exchanges
            .iter()
            .zip(&self.result_seqs)
            .map(|(x, seq)| Exchange {
                call: x.call.clone(),
                outcome: for_model(&x.outcome, *seq, max_bytes),
            })
            .collect()
    }
}

/// A tool outcome as the model sees it: whole when small, else a truncated copy of its
/// JSON text with a marker naming the event that holds it whole.
fn for_model(outcome: &ToolOutcome, seq: i64, max_bytes: usize) -> ToolOutcome {
    // Counted first: the text is written out only for a result that is cut.
    if crate::tool::json_len(&outcome.content) <= max_bytes {
        return outcome.clone();
    }
    let text = outcome.content.to_string();
    let mut cut = max_bytes;
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

#[cfg(test)]
mod tests;
