//! Budgets as values: a run that does not converge ends, naming the budget it used up.

use std::time::Duration;

use serde_json::json;

use crate::log::{NewEvent, RunLog};

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
        NewEvent::new(
            "budget_exhausted",
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
