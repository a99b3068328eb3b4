//! A domain-free agent harness: loop control, context management and a tool runtime,
//! offered as composable primitives. A workflow is ordinary code that calls
//! [`run_loop`] where it needs judgement and matches on what came back ([`Ended`]).
//!
//! - [`Model`]: one turn is tool calls, an answer `A`, or a hand-off to a human.
//! - [`Tool`] and [`Toolset`]: JSON-Schema-checked calls, structured errors with a hint
//!   and `retryable`, read-only marking.
//! - [`Limits`]: every budget as a value (steps, tool calls, tokens, wall time, invalid
//!   calls, model errors).
//! - [`EventLog`]: where a run's events live (SQL in a product, [`MemoryLog`] in
//!   replay); [`RunLog`] is their fold, the run's only state.
//! - [`context`]: chat messages within per-section budgets, with compaction that keeps
//!   facts, evidence ids, open questions and failures apart.
//! - [`sub`]: child runs on budgets drawn from their parent's, joined with required and
//!   optional children, cancelled together.
//! - [`Rules`]: what the domain adds — turns it refuses, answers it cannot use, what a
//!   human taking over is told.
//!
//! The crate does no I/O of its own beyond what its callers hand it.

mod budget;
pub mod context;
mod log;
mod model;
mod rules;
mod run;
pub mod sub;
mod tool;

pub use budget::{Exhausted, Limits};
pub use log::{
    Counters, Event, EventLog, Kind, LogError, MemoryLog, NewEvent, Phase, RunLog, Step,
};
pub use model::{Answer, BoxFuture, Model, ModelCall, ModelContext, Reply, Turn, Usage};
pub use rules::{record_turn, skipped_tool_result, tool_result, TurnKind, Turned};
pub use rules::{NoRules, Rules};
pub use run::{ask, run_loop, Clock, Ended, Observer, Outcome, Run, Unobserved, DEFER_TURN};
pub use tool::{
    schema_version, validate, Exchange, Tool, ToolCall, ToolDeclaration, ToolError, ToolOutcome,
    Toolset, Versions,
};
