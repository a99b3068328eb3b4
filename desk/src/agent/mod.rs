//! The refund investigation on the [`harness`]: a model (the built-in investigator, or
//! an LLM) calls read-only tools until it proposes an outcome; the workflow sends the
//! proposal to the policy engine or hands the case to a human.
//!
//! What lives here is the domain: the [`Proposal`] (the harness's answer type), the
//! tools ([`tools`]), the rules the harness applies to turns ([`rules`]: refused turns,
//! unusable proposals, the handoff summary), the prompt ([`context`]), the models
//! ([`investigator`], [`llm`]) and the budgets ([`limits`]). The loop itself —
//! durable steps, resumption after a crash, budgets, truncation — is
//! [`harness::run_loop`]; [`live`] runs it on the run's SQL event log and `replay` on
//! an in-memory one, so shadow mode measures the loop production runs.
//!
//! The model cannot act (docs/spec/invariants.md #7): it only ever sees read-only tools. A turn
//! that asks for a write action or claims an approval is refused whole — nothing in it
//! runs — recorded as a `policy_violation`, and the case goes to a human. Its proposal
//! goes to the policy engine, which decides on facts gathered by code.
//!
//! Event kinds the harness writes: `resumed`, `model_output`, `model_error`,
//! `tool_intent`, `tool_result`, `proposal`, `policy_violation`, `budget_exhausted`,
//! `handoff`, `cancelled` and (a sub-agent's answer) `findings`; [`live`] writes
//! `dependency_unavailable`; [`children`] writes `children_joined` on the parent; `runs`
//! writes `run_created` and `state`; `workflow` writes `decision`,
//! `proposal_overridden`, `evidence_rejected` and `escalated`.
//!
//! On the LLM path ([`llm`]) a live run first joins two read-only sub-agents as child
//! runs — [`findings`] names them, [`children`] runs them — and proposes with their
//! findings in its context; the built-in investigator runs a single loop.

pub mod findings;
pub mod investigator;
pub mod llm;
pub mod prompt;
pub mod rules;
pub mod tools;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use harness::{context, BoxFuture, Exchange, ModelContext, ToolCall, ToolOutcome, Usage};
pub use rules::violation;

/// A model of the refund investigation: a harness model whose answer is a [`Proposal`],
/// and what the product asks of it beyond the harness (`impl Model for X {}` takes the
/// defaults).
pub trait Model: harness::Model<Proposal> {
    /// The LLM whose server also runs the investigation's sub-agent readers
    /// (`investigation::children`); `None` for a model that investigates alone, as the
    /// built-in investigator does, live and in replay alike.
    fn sub_agent_server(&self) -> Option<&llm::LlmModel> {
        None
    }
}

/// What a model may say in one turn.
pub type ModelTurn = harness::Turn<Proposal>;

/// A turn with what it cost.
pub type ModelReply = harness::Reply<Proposal>;

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

/// What a run of `model` is made with: the model, the prompt's version and the tool
/// schemas' version, recorded on every run.
pub fn versions(model: &dyn Model) -> harness::Versions {
    harness::Versions {
        model: model.name(),
        prompt: prompt::PROMPT_VERSION.to_string(),
        tools: harness::schema_version(&tools::declarations()),
    }
}

/// The investigation's budgets as the harness takes them.
pub fn limits() -> harness::Limits {
    harness::Limits {
        steps: MAX_STEPS,
        tool_calls: MAX_TOOL_CALLS,
        tokens: MAX_TOKENS,
        wall_ms: MAX_WALL_MS,
        model_errors: MAX_MODEL_ERRORS,
        invalid_tool_calls: MAX_INVALID_TOOL_CALLS,
        calls_per_turn: MAX_CALLS_PER_TURN,
        tool_result_bytes: MAX_TOOL_RESULT_BYTES,
        model_call_timeout: MODEL_CALL_TIMEOUT,
    }
}

/// The agent's proposal. Facts cite the tool call and record they came from; policy
/// claims cite `doc@version#section` (docs/spec/invariants.md #8). The policy engine, not this
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
    pub order_source: Option<domain::resolve::OrderSource>,
    /// Where `request` came from (`text`, `records`): set by the built-in investigator;
    /// absent for a model that does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_source: Option<domain::resolve::RequestSource>,
    /// The customer's earlier order `order_id` repeats when they bought one thing twice
    /// (`Facts::repeat_of`): set by the workflow with the order, never taken from the
    /// model, so every later re-decision weighs the same claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<String>,
    /// Other kinds the customer's words can be read as, where they disagree on money
    /// ("cancel it … charged twice": a cancellation refunds the plan, a duplicate one
    /// charge). The workflow decides each and never proposes more than the smallest
    /// refund any of them allows (docs/spec/domain.md, "Never more than the text
    /// supports").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_readings: Vec<policy_engine::RequestKind>,
    /// What the investigator read in the customer's words, for the reviewer
    /// (`domain::reading`); absent for a model that does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<domain::reading::Reading>,
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

impl Proposal {
    /// The order a re-decision is about and the earlier order it repeats, as recorded.
    pub fn target(&self) -> (Option<&str>, Option<&str>) {
        (self.order_id.as_deref(), self.repeat_of.as_deref())
    }
}

impl harness::Answer for Proposal {
    const EVENT: &'static str = crate::runs::EventKind::Proposal.as_str();
}
