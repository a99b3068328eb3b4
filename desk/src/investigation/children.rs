//! The LLM path's sub-agents as child runs (seed §11–12): before a live run's
//! own loop, its two readers ([`Reader`]) run side by side, each a child run with its
//! own `runs` row and event log ([`SqlLog`]), its own context window and tool subset,
//! on a [`Shared`] budget drawn from what the parent has left, and are joined
//! ([`harness::sub::join`]).
//!
//! Durability: the join is recorded on the parent as one `children_joined` step (its
//! tokens and the children's tool calls count against the parent) in the same
//! transaction that ends the children's rows. A parent resumed after a crash before that
//! joins again: a child whose answer is in its log answers again without asking its
//! model, one killed mid-call resumes from its log. A parent resumed after it reads
//! the recorded join and the children's logs and runs nothing. Either way the parent's
//! context is built from the same stored logs ([`Briefing`]).
//!
//! Children hold no lease: they run inside their parent's step, whose lease is kept
//! meanwhile, and the worker's claim and the watchdog skip them (`runs`). A withdrawal
//! cancels them (`runs::cancel_children`, a versioned change of their rows), so a
//! child stops at the commit it makes before its next model or tool call.

use std::future::Future;

use harness::sub::{self, Child, Joined, Shared};
use harness::{Exchange, LogError, Model, ModelContext, Observer, RunLog, ToolCall, Toolset};
use harness::{Reply, ToolOutcome, Turn};
use serde_json::{json, Value};

use super::sql_log::{self, SqlLog};
use crate::agent::findings::{Findings, Reader};
use crate::agent::llm::reader::LlmReader;
use crate::agent::llm::SUBMIT_FINDINGS;
use crate::agent::tools::{self, ToolEnv};
use crate::agent::{ModelTurn, Proposal};
use crate::clock::{Clock, HarnessClock};
use crate::error::DomainResult;
use crate::runs::{self, Run, RunStatus};
use crate::tickets::Ticket;
use store::Db;

/// Model steps one reader may take: reading a customer's records is a handful of calls.
const READER_STEPS: i64 = 8;

/// What the parent takes from its joined children.
#[derive(Debug, Clone)]
pub struct Briefing {
    /// What the parent's model sees before its own exchanges: each child's tool calls
    /// (call ids prefixed with the child's name, large results truncated) and then one
    /// `submit_findings` exchange per child — its findings, or the gap it left.
    pub prelude: Vec<Exchange>,
    /// The children's tool exchanges whole, under the same prefixed call ids: evidence
    /// a proposal may cite (docs/spec/invariants.md #8 is checked against them too).
    pub evidence: Vec<Exchange>,
    /// Set when the required child did not answer: why the case goes to a human.
    pub incomplete: Option<String>,
}

/// Where the runs are stored and the clock their steps are stamped with.
#[derive(Clone, Copy)]
pub struct Storage<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
}

/// One reader with the model it runs on.
pub type ReaderModel<'a> = (Reader, &'a dyn Model<Findings>);

/// The LLM path's readers, when `model` is an LLM: the billing and policy readers on the
/// same model server. `None` for any other model: the built-in investigator runs a
/// single loop, live and in replay alike.
pub fn llm_readers(model: &dyn crate::agent::Model) -> Option<[(Reader, LlmReader<'_>); 2]> {
    let llm = model.sub_agent_server()?;
    Some(Reader::ALL.map(|reader| (reader, llm.reader(reader))))
}

/// The readers as the join takes them.
pub fn reader_models<'a>(readers: &'a [(Reader, LlmReader<'_>)]) -> Vec<ReaderModel<'a>> {
    readers
        .iter()
        .map(|(reader, model)| (*reader, model as &dyn Model<Findings>))
        .collect()
}

/// Spawns (or finds) the parent's child runs, joins them unless the join is recorded,
/// and returns the briefing built from their logs.
pub async fn gather(
    storage: Storage<'_>,
    parent: &mut Run,
    (ticket, env, inputs): (&Ticket, &ToolEnv<'_>, &[String]),
    readers: &[ReaderModel<'_>],
    observer: &dyn Observer,
) -> DomainResult<Briefing> {
    let toolsets: Vec<Toolset<'_>> = readers
        .iter()
        .map(|(reader, _)| toolset(*reader, env, ticket))
        .collect();
    let now = storage.clock.now_ms();
    let mut rows = Vec::with_capacity(readers.len());
    for ((reader, model), tools) in readers.iter().zip(&toolsets) {
        let versions = harness::Versions {
            model: model.name(),
            prompt: reader.prompt_version().to_string(),
            tools: tools.schema_version(),
        };
        let row = runs::child_run(storage.db, parent, reader.name(), &versions, now).await?;
        rows.push(row);
    }
    let parent_events = runs::events(storage.db, &parent.id).await?;
    let recorded = parent_events
        .iter()
        .rev()
        .find(|e| e.kind == runs::EventKind::Harness(harness::Kind::ChildrenJoined))
        .map(|e| e.payload.clone());
    let joined = match recorded {
        Some(payload) => payload,
        None => {
            let spent = RunLog::<Proposal>::fold(&sql_log::harness_events(parent_events)).tokens;
            let children = Children {
                readers,
                toolsets: &toolsets,
                inputs,
                observer,
            };
            join(storage, parent, &mut rows, children, spent).await?
        }
    };
    briefing(storage, readers, &rows, &joined).await
}

/// The readers' tool subsets (`tools`): records for billing, policy search for policy.
fn toolset<'a>(reader: Reader, env: &'a ToolEnv<'a>, ticket: &'a Ticket) -> Toolset<'a> {
    match reader {
        Reader::Billing => tools::billing_toolset(env, ticket),
        Reader::Policy => tools::policy_toolset(env, ticket),
    }
}

/// What the children run with, besides their logs.
struct Children<'a, 'b> {
    readers: &'a [ReaderModel<'b>],
    toolsets: &'a [Toolset<'a>],
    inputs: &'a [String],
    observer: &'a dyn Observer,
}

impl<'a> Children<'a, '_> {
    /// One reader's loop: its model and tools, the task's inputs, a reader's step budget
    /// and rules, on the budget shared with its sibling.
    fn run(
        &self,
        model: &'a dyn Model<Findings>,
        tools: &'a Toolset<'a>,
        clock: &'a dyn harness::Clock,
        shared: &'a Shared,
    ) -> harness::Run<'a, Findings> {
        let mut run = harness::Run::new(model, tools, clock);
        run.inputs = self.inputs;
        run.limits = harness::Limits {
            steps: READER_STEPS,
            ..crate::agent::limits()
        };
        run.rules = &ReaderRules;
        run.observer = self.observer;
        run.shared = Some(shared);
        run
    }
}

/// The parent's budgets count what the children spend (`Joined::step`), so the
/// children may spend only what the parent has left.
fn shared_budget(parent_tokens: u64, parent_tool_calls: i64) -> Shared {
    let limits = crate::agent::limits();
    Shared::new(
        limits.tokens.saturating_sub(parent_tokens),
        (limits.tool_calls - parent_tool_calls).max(0),
    )
}

/// Runs the children on a budget shared out of what the parent has left, joins them
/// while keeping the parent's lease, and records the join. Returns its event's payload.
async fn join(
    storage: Storage<'_>,
    parent: &mut Run,
    rows: &mut [Run],
    with: Children<'_, '_>,
    parent_tokens: u64,
) -> DomainResult<Value> {
    let shared = shared_budget(parent_tokens, parent.tool_calls);
    let clock = HarnessClock(storage.clock);
    let children = with
        .readers
        .iter()
        .zip(with.toolsets)
        .zip(rows.iter_mut())
        .map(|(((reader, model), tools), row)| Child {
            name: reader.name(),
            required: reader.required(),
            run: with.run(*model, tools, &clock, &shared),
            log: SqlLog::new(storage.db, storage.clock, row),
        })
        .collect();
    let joined = keeping_lease(storage, parent, sub::join(children, &shared)).await?;
    let joined = joined.map_err(|e| match e {
        LogError::Lost => runs::run_changed(),
        LogError::Store(e) => e,
    })?;
    record(storage, parent, rows, &joined).await?;
    Ok(joined.event().payload)
}

/// Runs `work` (the join) while renewing the parent's lease, so slow children do not
/// let another worker take the parent. A lost lease abandons the join.
async fn keeping_lease<T>(
    storage: Storage<'_>,
    parent: &mut Run,
    work: impl Future<Output = T>,
) -> DomainResult<T> {
    let mut work = std::pin::pin!(work);
    let every = crate::lease::keep_alive_every();
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            out = &mut work => return Ok(out),
            _ = renew.tick() => runs::renew_lease(storage.db, parent, storage.clock.now_ms()).await?,
        }
    }
}

/// The join as one transaction: the parent's `children_joined` step (the children's
/// tool calls added to its count, their tokens in the event) and each child's end.
async fn record(
    storage: Storage<'_>,
    parent: &mut Run,
    rows: &mut [Run],
    joined: &Joined<Findings>,
) -> DomainResult<()> {
    let now = storage.clock.now_ms();
    let step = joined.step();
    let events = sql_log::run_events(&step.events)?;
    let to = sql_log::working_status(parent);
    let mut tx = storage.db.begin().await?;
    runs::record_step(&mut tx, parent, to, 0, step.add_tool_calls, now, &events).await?;
    // `sub::join` returns the children in the order they were given: the rows' order.
    for (row, end) in rows.iter_mut().zip(&joined.children) {
        let to = match end.outcome {
            harness::Outcome::Answered(_) => RunStatus::Completed,
            harness::Outcome::HandedOff { .. } => RunStatus::Failed,
            harness::Outcome::Cancelled => RunStatus::Cancelled,
        };
        runs::set_status(&mut tx, row, to, now).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The parent's briefing, from the recorded join and the children's stored logs.
async fn briefing(
    storage: Storage<'_>,
    readers: &[ReaderModel<'_>],
    rows: &[Run],
    joined: &Value,
) -> DomainResult<Briefing> {
    let mut logs = Vec::with_capacity(rows.len());
    for row in rows {
        let events = sql_log::harness_events(runs::events(storage.db, &row.id).await?);
        logs.push(RunLog::<Findings>::fold(&events));
    }
    let readers: Vec<Reader> = readers.iter().map(|(reader, _)| *reader).collect();
    Ok(brief(&readers, &logs, joined))
}

/// The briefing from each reader's log (in `readers`' order) and the join's event.
fn brief(readers: &[Reader], logs: &[RunLog<Findings>], joined: &Value) -> Briefing {
    let (mut prelude, mut evidence, mut findings) = (Vec::new(), Vec::new(), Vec::new());
    for (reader, log) in readers.iter().zip(logs) {
        let name = reader.name();
        evidence.extend(prefixed(name, log.exchanges.clone()));
        prelude.extend(prefixed(
            name,
            log.model_history(crate::agent::MAX_TOOL_RESULT_BYTES),
        ));
        findings.push(findings_exchange(*reader, log));
    }
    prelude.extend(findings);
    let outcome = &joined["outcome"];
    let incomplete = outcome["evidence_incomplete"].as_str().map(|missing| {
        let why = outcome["reason"].as_str().unwrap_or("no reason recorded");
        format!("evidence incomplete: the {missing} reader did not answer ({why})")
    });
    Briefing {
        prelude,
        evidence,
        incomplete,
    }
}

/// The same readers in memory, for a replay (shadow report, eval): each on a
/// `MemoryLog`, joined on the budget a fresh run has, and the briefing built as live
/// builds it. Returns the briefing and the join's step, for the parent's own log.
pub async fn gather_in_memory(
    clock: &dyn harness::Clock,
    (ticket, env, inputs): (&Ticket, &ToolEnv<'_>, &[String]),
    readers: &[ReaderModel<'_>],
    observer: &dyn Observer,
) -> (Briefing, harness::Step) {
    let toolsets: Vec<Toolset<'_>> = readers
        .iter()
        .map(|(reader, _)| toolset(*reader, env, ticket))
        .collect();
    let with = Children {
        readers,
        toolsets: &toolsets,
        inputs,
        observer,
    };
    let shared = shared_budget(0, 0);
    let children = readers
        .iter()
        .zip(&toolsets)
        .map(|((reader, model), tools)| Child {
            name: reader.name(),
            required: reader.required(),
            run: with.run(*model, tools, clock, &shared),
            log: harness::MemoryLog::new(),
        })
        .collect();
    // An in-memory log cannot fail (its error type is uninhabited).
    let Ok(joined) = sub::join(children, &shared).await;
    let logs: Vec<RunLog<Findings>> = joined.children.iter().map(|c| c.log.clone()).collect();
    let readers: Vec<Reader> = readers.iter().map(|(reader, _)| *reader).collect();
    let briefing = brief(&readers, &logs, &joined.event().payload);
    (briefing, joined.step())
}

/// A child's exchanges under call ids that cannot collide with the parent's or a
/// sibling's (`billing:call_a`).
fn prefixed(name: &str, exchanges: Vec<Exchange>) -> Vec<Exchange> {
    exchanges
        .into_iter()
        .map(|mut x| {
            x.call.id = format!("{name}:{}", x.call.id);
            x
        })
        .collect()
}

/// What the parent is told a child came to: its findings, or the gap it left.
fn findings_exchange(reader: Reader, log: &RunLog<Findings>) -> Exchange {
    let name = reader.name();
    let content = match &log.answer {
        Some(findings) => json!({ "reader": name, "findings": findings }),
        None => {
            let why = log
                .handoff
                .as_deref()
                .unwrap_or("cancelled before it answered");
            json!({ "reader": name, "required": reader.required(), "gap": why,
                    "note": "this reader did not answer; read the records yourself if you need them" })
        }
    };
    Exchange {
        call: ToolCall {
            id: format!("{name}:findings"),
            name: SUBMIT_FINDINGS.to_string(),
            arguments: json!({ "reader": name }),
        },
        outcome: ToolOutcome {
            ok: log.answer.is_some(),
            content,
        },
    }
}

/// What the harness refuses of a reader: a turn that tries to act or claims an approval
/// (docs/spec/invariants.md #7, the investigator's rule), and findings without a summary.
struct ReaderRules;

impl harness::Rules<Findings> for ReaderRules {
    fn unusable(&self, findings: &Findings) -> Option<String> {
        findings
            .summary
            .trim()
            .is_empty()
            .then(|| "the findings have no summary".to_string())
    }

    fn refuse(&self, turn: &Turn<Findings>, offered: &[harness::ToolDeclaration]) -> Option<Value> {
        let Turn::ToolCalls { calls } = turn else {
            return None;
        };
        let turn = ModelTurn::ToolCalls {
            calls: calls.clone(),
        };
        crate::agent::rules::violation(&turn, offered)
    }
}

/// The parent's model with the children's briefing in its context: the prelude comes
/// before the parent's own exchanges on every call.
pub struct Briefed<'a> {
    pub model: &'a dyn Model<Proposal>,
    pub prelude: &'a [Exchange],
}

impl Briefed<'_> {
    async fn reply(&self, ctx: &ModelContext<'_>) -> anyhow::Result<Reply<Proposal>> {
        let history: Vec<Exchange> = self.prelude.iter().chain(ctx.history).cloned().collect();
        let briefed = ModelContext {
            inputs: ctx.inputs,
            tools: ctx.tools,
            history: &history,
        };
        self.model.next_reply(&briefed).await
    }
}

impl crate::agent::Model for Briefed<'_> {}

impl Model<Proposal> for Briefed<'_> {
    fn name(&self) -> String {
        self.model.name()
    }

    fn next_turn<'a>(&'a self, ctx: &'a ModelContext<'a>) -> harness::ModelCall<'a, ModelTurn> {
        Box::pin(async move { self.reply(ctx).await.map(|r| r.turn) })
    }

    fn next_reply<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> harness::ModelCall<'a, Reply<Proposal>> {
        Box::pin(self.reply(ctx))
    }
}
