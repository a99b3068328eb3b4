//! Budgets as values: a run that does not converge ends, naming the budget it used up.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::log::{Counters, Kind, NewEvent, RunLog};

/// The limits of one run. Every field is a value the caller chooses (a sub-agent gets
/// a share of its parent's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model steps (each counted before the model is asked).
    pub steps: i64,
    /// Tool calls run.
    pub tool_calls: i64,
    /// Tokens (prompt + completion, as the model reports them) summed over the run.
    pub tokens: u64,
    /// Time the run spent working: the sum of its model calls' latencies and its tool
    /// calls' durations, on the injected clock. Time nobody worked on it (queued,
    /// resting, a dead worker's lease running out) does not count.
    pub wall_ms: i64,
    /// Failed or unusable model calls.
    pub model_errors: usize,
    /// Calls to tools that do not exist or with arguments that do not fit the schema: a
    /// model may slip and correct itself from the hint; not forever.
    pub invalid_tool_calls: usize,
    /// Tool calls one turn may ask for; more is garbage, not work.
    pub calls_per_turn: usize,
    /// Tool results larger than this (serialized) are stored whole once; the model sees
    /// a truncated copy with a marker naming the event that holds them.
    pub tool_result_bytes: usize,
    /// A model call that does not answer within this (real time) is a model error.
    pub model_call_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            steps: 24,
            tool_calls: 40,
            tokens: 200_000,
            wall_ms: 15 * 60_000,
            model_errors: 3,
            invalid_tool_calls: 3,
            calls_per_turn: 8,
            tool_result_bytes: 16 * 1024,
            model_call_timeout: Duration::from_secs(120),
        }
    }
}

/// A budget the run has used up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhausted {
    /// `model_errors`, `invalid_tool_calls`, `steps`, `tool_calls`, `tokens`,
    /// `wall_time_ms`, or a budget the domain keeps (e.g. `dependency_waits`).
    pub budget: String,
    pub used: i64,
    pub limit: i64,
}

impl Exhausted {
    pub fn new(budget: &str, used: i64, limit: i64) -> Self {
        Exhausted {
            budget: budget.to_string(),
            used,
            limit,
        }
    }

    /// The `budget_exhausted` event that records it; folding it hands the run over.
    pub fn event(&self) -> NewEvent {
        NewEvent::of(
            Kind::BudgetExhausted,
            None,
            json!({ "budget": self.budget, "used": self.used, "limit": self.limit }),
        )
    }
}

impl Limits {
    /// The first budget the run has used up, if any, in a fixed order.
    pub fn exhausted<A>(&self, log: &RunLog<A>, counters: Counters) -> Option<Exhausted> {
        [
            (
                "model_errors",
                log.model_errors as i64,
                self.model_errors as i64,
            ),
            (
                "invalid_tool_calls",
                log.invalid_tool_calls as i64,
                self.invalid_tool_calls as i64,
            ),
            ("steps", counters.steps, self.steps),
            ("tool_calls", counters.tool_calls, self.tool_calls),
            ("tokens", log.tokens as i64, self.tokens as i64),
            ("wall_time_ms", log.active_ms, self.wall_ms),
        ]
        .into_iter()
        .find(|(_, used, limit)| used >= limit)
        .map(|(budget, used, limit)| Exhausted::new(budget, used, limit))
    }

    /// Whether the next pending call may run. Once the tool-call budget is spent, the
    /// remaining intents of the turn still get a result each, without running.
    pub fn tool_may_run(&self, counters: Counters) -> bool {
        counters.tool_calls < self.tool_calls
    }
}

/// A budget a parent shares with its children, and the switch that cancels them.
#[derive(Debug)]
pub struct Shared {
    tokens: AtomicI64,
    tool_calls: AtomicI64,
    limits: (i64, i64),
    cancelled: AtomicBool,
}

impl Shared {
    /// What the parent has left to give: tokens and tool calls.
    pub fn new(tokens: u64, tool_calls: i64) -> Self {
        let tokens = i64::try_from(tokens).unwrap_or(i64::MAX);
        Shared {
            tokens: AtomicI64::new(tokens),
            tool_calls: AtomicI64::new(tool_calls),
            limits: (tokens, tool_calls),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Stops every run on this budget before its next model or tool call.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Takes one tool call, if any is left.
    pub fn take_tool_call(&self) -> bool {
        let taken = self
            .tool_calls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                (left > 0).then_some(left - 1)
            });
        taken.is_ok()
    }

    /// Counts tokens a model call consumed (a call may overrun what was left: the model
    /// had answered before its usage was known; the next call is refused).
    pub fn spend_tokens(&self, tokens: u64) {
        let tokens = i64::try_from(tokens).unwrap_or(i64::MAX);
        self.tokens.fetch_sub(tokens, Ordering::SeqCst);
    }

    /// What has been spent from the budget so far: tokens and tool calls.
    pub fn spent(&self) -> (u64, i64) {
        let tokens = self.limits.0 - self.tokens.load(Ordering::SeqCst);
        let calls = self.limits.1 - self.tool_calls.load(Ordering::SeqCst);
        (tokens.max(0) as u64, calls.max(0))
    }

    /// The shared budget that ran out, if one did (checked before each model call).
    pub fn exhausted(&self) -> Option<Exhausted> {
        let (tokens, calls) = self.spent();
        if self.tokens.load(Ordering::SeqCst) <= 0 {
            return Some(Exhausted::new(
                "shared_tokens",
                tokens as i64,
                self.limits.0,
            ));
        }
        (self.tool_calls.load(Ordering::SeqCst) <= 0)
            .then(|| Exhausted::new("shared_tool_calls", calls, self.limits.1))
    }
}
