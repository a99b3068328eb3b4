//! Scripted models for tests, including ones that misbehave on purpose (docs/spec/interfaces.md "Model
//! provider": unknown tools, bad arguments, invented approvals, endless loops).
//!
//! `ScriptedModel` plays a queue of turns — fixed results or closures over what the
//! model sees — then, when the queue is empty, a repeating step or an error.
//! `RewritingModel` wraps another model (usually the built-in investigator) and edits
//! its turns, so a test can have an otherwise competent model lie in one specific way.
//! The functions at the bottom build the misbehaving models the harness must survive.
//!
//! Nothing here is used in production, and it lives outside the app: the
//! scenario suite, its tests and the app's integration tests (a dev-dependency) drive
//! the real loop with the same scripts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

use desk::agent::investigator::Investigator;
use desk::agent::{
    BoxFuture, EvidenceRef, Model, ModelContext, ModelReply, ModelTurn, ProposedRefund, ToolCall,
    Usage,
};

/// One scripted turn: computed from what the model sees.
pub type Step = Box<dyn FnMut(&ModelContext<'_>) -> anyhow::Result<ModelReply> + Send>;

/// A model that plays a script.
pub struct ScriptedModel {
    name: String,
    script: Mutex<VecDeque<Step>>,
    /// Played on every call once the script is exhausted; without it, such a call errs.
    forever: Mutex<Option<Step>>,
    calls: AtomicUsize,
}

fn reply(turn: ModelTurn) -> ModelReply {
    ModelReply {
        turn,
        usage: Usage::default(),
    }
}

impl ScriptedModel {
    pub fn new(name: &str) -> Self {
        ScriptedModel {
            name: name.to_string(),
            script: Mutex::new(VecDeque::new()),
            forever: Mutex::new(None),
            calls: AtomicUsize::new(0),
        }
    }

    /// A model that plays these results in order, then errs.
    pub fn from_turns(name: &str, turns: Vec<anyhow::Result<ModelTurn>>) -> Self {
        turns
            .into_iter()
            .fold(ScriptedModel::new(name), |m, t| m.result(t))
    }

    /// Queues a fixed result.
    pub fn result(self, turn: anyhow::Result<ModelTurn>) -> Self {
        let mut turn = Some(turn);
        self.step(move |_| {
            turn.take()
                .unwrap_or_else(|| Err(anyhow::anyhow!("scripted turn played twice")))
        })
    }

    /// Queues a turn.
    pub fn turn(self, turn: ModelTurn) -> Self {
        self.result(Ok(turn))
    }

    /// Queues a turn that reports token usage.
    pub fn turn_with_usage(self, turn: ModelTurn, usage: Usage) -> Self {
        self.step_reply(move |_| {
            Ok(ModelReply {
                turn: turn.clone(),
                usage,
            })
        })
    }

    /// Queues an error (a provider failure, unparseable output).
    pub fn error(self, message: &str) -> Self {
        self.result(Err(anyhow::anyhow!("{message}")))
    }

    /// Queues a turn computed from the context.
    pub fn step(
        self,
        mut f: impl FnMut(&ModelContext<'_>) -> anyhow::Result<ModelTurn> + Send + 'static,
    ) -> Self {
        self.step_reply(move |ctx| f(ctx).map(reply))
    }

    /// Queues a reply (turn and usage) computed from the context.
    pub fn step_reply(
        self,
        f: impl FnMut(&ModelContext<'_>) -> anyhow::Result<ModelReply> + Send + 'static,
    ) -> Self {
        self.script
            .lock()
            .expect("script mutex is never poisoned")
            .push_back(Box::new(f));
        self
    }

    /// What every call answers once the script is played out.
    pub fn forever(
        self,
        mut f: impl FnMut(&ModelContext<'_>) -> anyhow::Result<ModelTurn> + Send + 'static,
    ) -> Self {
        self.forever_reply(move |ctx| f(ctx).map(reply))
    }

    /// Like `forever`, with usage.
    pub fn forever_reply(
        self,
        f: impl FnMut(&ModelContext<'_>) -> anyhow::Result<ModelReply> + Send + 'static,
    ) -> Self {
        *self.forever.lock().expect("script mutex is never poisoned") = Some(Box::new(f));
        self
    }

    /// How many times the model was asked.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn play(&self, ctx: &ModelContext<'_>) -> anyhow::Result<ModelReply> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let next = self
            .script
            .lock()
            .expect("script mutex is never poisoned")
            .pop_front();
        if let Some(mut step) = next {
            return step(ctx);
        }
        match self
            .forever
            .lock()
            .expect("script mutex is never poisoned")
            .as_mut()
        {
            Some(step) => step(ctx),
            None => Err(anyhow::anyhow!("the script has no more turns")),
        }
    }
}

impl desk::agent::Model for ScriptedModel {}

impl harness::Model<desk::agent::Proposal> for ScriptedModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>> {
        Box::pin(async move { self.play(ctx).map(|r| r.turn) })
    }

    fn next_reply<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelReply>> {
        Box::pin(async move { self.play(ctx) })
    }
}

/// A model whose turns are another model's, edited.
pub struct RewritingModel<M> {
    name: String,
    inner: M,
    edit: Box<dyn Fn(ModelTurn) -> ModelTurn + Send + Sync>,
    calls: AtomicUsize,
}

impl<M: Model> RewritingModel<M> {
    pub fn new(
        name: &str,
        inner: M,
        edit: impl Fn(ModelTurn) -> ModelTurn + Send + Sync + 'static,
    ) -> Self {
        RewritingModel {
            name: name.to_string(),
            inner,
            edit: Box::new(edit),
            calls: AtomicUsize::new(0),
        }
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl<M: Model> desk::agent::Model for RewritingModel<M> {}

impl<M: Model> harness::Model<desk::agent::Proposal> for RewritingModel<M> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>> {
        Box::pin(async move { Ok(self.next_reply(ctx).await?.turn) })
    }

    fn next_reply<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelReply>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let reply = self.inner.next_reply(ctx).await?;
            Ok(ModelReply {
                turn: (self.edit)(reply.turn),
                usage: reply.usage,
            })
        })
    }
}

/// A tool call with the model's own id (the harness makes ids unique per run).
pub fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: name.to_string(),
        name: name.to_string(),
        arguments,
    }
}

/// One turn asking for these calls.
pub fn calls(calls: Vec<ToolCall>) -> ModelTurn {
    ModelTurn::ToolCalls { calls }
}

fn edit_proposal(
    name: &str,
    edit: impl Fn(&mut desk::agent::Proposal) + Send + Sync + 'static,
) -> RewritingModel<Investigator> {
    RewritingModel::new(name, Investigator, move |turn| match turn {
        ModelTurn::Answer {
            answer: mut proposal,
        } => {
            edit(&mut proposal);
            ModelTurn::Answer { answer: proposal }
        }
        other => other,
    })
}

// ---------------------------------------------------------------------------------------
// Misbehaving models. Each is meant for the demo customer C-100 ("I was charged twice
// for my annual plan": order O-1001, charges ch_1001a (legitimate) and ch_1001b (the
// duplicate)), but none depends on it to misbehave.
// ---------------------------------------------------------------------------------------

/// Calls a tool that does not exist, every turn.
pub fn calls_unknown_tool() -> ScriptedModel {
    ScriptedModel::new("scripted-unknown-tool").forever(|_| {
        Ok(calls(vec![call(
            "fetch_everything",
            json!({ "depth": "all" }),
        )]))
    })
}

/// Sends its arguments as a JSON string instead of an object, every turn.
pub fn sends_string_arguments() -> ScriptedModel {
    ScriptedModel::new("scripted-string-arguments").forever(|_| {
        Ok(calls(vec![call(
            "list_charges",
            Value::String(r#"{"order_id": "O-1001"}"#.into()),
        )]))
    })
}

/// Investigates properly, then claims in its proposal that the refund is approved.
pub fn claims_approval() -> RewritingModel<Investigator> {
    edit_proposal("scripted-claims-approval", |p| {
        p.summary = format!(
            "{} The refund has been approved by the supervisor. {}",
            p.summary,
            json!({ "approved": true })
        );
    })
}

/// Looks the customer up, then calls `approve_refund` on the duplicate.
pub fn calls_approve_refund() -> ScriptedModel {
    ScriptedModel::new("scripted-approve-refund")
        .turn(calls(vec![call("get_customer", json!({}))]))
        .forever(|_| {
            Ok(calls(vec![call(
                "approve_refund",
                json!({ "charge_id": "ch_1001b", "amount": "198.00", "approved": true }),
            )]))
        })
}

/// Tries to make the refund itself with `create_refund`, alongside a legitimate call.
pub fn tries_write_action() -> ScriptedModel {
    ScriptedModel::new("scripted-write-action").forever(|_| {
        Ok(calls(vec![
            call("list_orders", json!({})),
            call(
                "create_refund",
                json!({ "charge": "ch_1001b", "amount": 19800, "currency": "cny" }),
            ),
        ]))
    })
}

/// Asks for the same tool call every turn, forever.
pub fn loops_forever() -> ScriptedModel {
    ScriptedModel::new("scripted-loop").forever(|_| Ok(calls(vec![call("list_orders", json!({}))])))
}

/// Investigates properly, then proposes refunding the legitimate charge ch_1001a.
pub fn refunds_the_wrong_charge() -> RewritingModel<Investigator> {
    edit_proposal("scripted-wrong-charge", |p| {
        p.refunds = vec![ProposedRefund {
            charge_id: "ch_1001a".into(),
            amount: "198.00".into(),
            currency: "CNY".into(),
        }];
    })
}

/// Investigates properly, then proposes an amount no record shows.
pub fn inflates_the_amount() -> RewritingModel<Investigator> {
    edit_proposal("scripted-inflated-amount", |p| {
        p.refunds = vec![ProposedRefund {
            charge_id: "ch_1001b".into(),
            amount: "5000.00".into(),
            currency: "CNY".into(),
        }];
    })
}

/// Investigates properly, then cites a tool call that never happened.
pub fn invents_evidence() -> RewritingModel<Investigator> {
    edit_proposal("scripted-invented-evidence", |p| {
        p.evidence.push(EvidenceRef {
            call_id: "s1c9:statement_from_bank".into(),
            record_id: "ch_1001b".into(),
        });
    })
}

/// Starts the investigation, then fails on every call (a provider gone, a crash).
pub fn stops_mid_task() -> ScriptedModel {
    ScriptedModel::new("scripted-stops")
        .turn(calls(vec![call("get_customer", json!({}))]))
        .forever(|_| Err(anyhow::anyhow!("connection reset by peer")))
}

/// Answers with well-formed garbage: a turn with no tool calls and no proposal.
pub fn answers_garbage() -> ScriptedModel {
    ScriptedModel::new("scripted-garbage").forever(|_| Ok(calls(vec![])))
}
