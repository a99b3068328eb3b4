//! What a model is to the harness: something that, given the context, answers with one
//! turn — tool calls, an answer, or a hand-off.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use crate::tool::BoxFuture;
use crate::tool::{Exchange, ToolCall, ToolDeclaration};

/// One call to a model: its turn (or why there is none), later.
pub type ModelCall<'a, T> = BoxFuture<'a, anyhow::Result<T>>;

/// The domain's answer type: what a run produces when the model is done.
pub trait Answer: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// The event kind that records an answer in the run's log (a product names it in
    /// its own words, e.g. `proposal`).
    const EVENT: &'static str;
}

/// What a model may say in one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Turn<A> {
    ToolCalls {
        calls: Vec<ToolCall>,
    },
    /// The model is done. `propose`/`proposal` are the names logs written before the
    /// harness existed used.
    #[serde(alias = "propose")]
    Answer {
        #[serde(alias = "proposal")]
        answer: A,
    },
    /// The model gives up and hands the task to a human.
    #[serde(alias = "escalate")]
    HandOff {
        reason: String,
    },
}

/// Tokens one model call consumed, as the provider reports them (zero for a model that
/// does not meter). Summed over a run against [`crate::Limits::tokens`].
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
pub struct Reply<A> {
    pub turn: Turn<A>,
    pub usage: Usage,
}

/// Everything a model sees: the task's inputs (untrusted text, e.g. a customer's
/// messages), the tools it may call and the exchanges so far (large results already
/// truncated, with a marker naming the event that holds them whole).
pub struct ModelContext<'a> {
    pub inputs: &'a [String],
    pub tools: &'a [ToolDeclaration],
    pub history: &'a [Exchange],
}

pub trait Model<A: Send + 'static>: Send + Sync {
    fn name(&self) -> String;

    /// The next turn. Models that do not meter tokens implement only this.
    fn next_turn<'a>(&'a self, ctx: &'a ModelContext<'a>) -> ModelCall<'a, Turn<A>>;

    /// The next turn with its token usage; the harness calls only this. Models that
    /// meter tokens (an LLM) override it, and may implement `next_turn` by calling it.
    fn next_reply<'a>(&'a self, ctx: &'a ModelContext<'a>) -> ModelCall<'a, Reply<A>> {
        Box::pin(async move {
            let turn = self.next_turn(ctx).await?;
            Ok(Reply {
                turn,
                usage: Usage::default(),
            })
        })
    }
}
