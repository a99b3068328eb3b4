//! The agent harness: a durable loop in which a model (the built-in investigator, or an
//! LLM) calls read-only tools until it proposes an outcome.
//!
//! Each step is recorded before it runs (model output, tool intents) and after (tool
//! results) in the run's event log, so a worker killed at any point resumes from the
//! log: completed tool calls are not repeated and a proposal is never asked for twice.
//! The model cannot act: it only ever sees read-only tools, and its proposal goes to
//! the policy engine and a human (SPEC invariant 7).

pub mod context;
pub mod investigator;
pub mod llm;
pub mod scripted;
pub mod tools;

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::error::AppResult;
use crate::http::AppState;
use crate::runs::{self, Run};
use crate::store::Tx;

/// Budgets per run; when one runs out the case goes to a human.
pub const MAX_STEPS: i64 = 24;
pub const MAX_TOOL_CALLS: i64 = 40;
pub const MAX_MODEL_ERRORS: usize = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// A tool's answer as the model sees it: a result, or a structured error with a hint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub ok: bool,
    pub content: serde_json::Value,
}

/// A tool call and its outcome, in the order they happened.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub call: ToolCall,
    pub outcome: ToolOutcome,
}

/// What a model may say in one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelTurn {
    ToolCalls {
        calls: Vec<ToolCall>,
    },
    Propose {
        proposal: Proposal,
    },
    /// The model gives up and hands the case to a human.
    Escalate {
        reason: String,
    },
}

/// The agent's proposal. Facts cite the tool call and record they came from; policy
/// claims cite `doc@version#section` (SPEC invariant 8). The policy engine, not this
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

/// Everything a model sees. Identity and approvals are never in here as claims: the
/// customer is the ticket's authenticated customer.
pub struct ModelContext<'a> {
    pub customer_messages: &'a [String],
    pub tools: &'a [tools::ToolDeclaration],
    pub history: &'a [Exchange],
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub trait Model: Send + Sync + 'static {
    fn name(&self) -> String;
    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>>;
}

/// The run's state rebuilt from its event log.
#[derive(Default)]
struct Replay {
    exchanges: Vec<Exchange>,
    pending: Vec<ToolCall>,
    proposal: Option<Proposal>,
    decided: bool,
    model_errors: usize,
}

fn replay(events: &[runs::Event]) -> Replay {
    let mut r = Replay::default();
    for e in events {
        match e.kind.as_str() {
            "tool_intent" => {
                if let Ok(call) = serde_json::from_value::<ToolCall>(e.payload.clone()) {
                    r.pending.push(call);
                }
            }
            "tool_result" => {
                if let Some(pos) = r
                    .pending
                    .iter()
                    .position(|c| Some(&c.id) == e.call_id.as_ref())
                {
                    let call = r.pending.remove(pos);
                    let outcome =
                        serde_json::from_value(e.payload.clone()).unwrap_or(ToolOutcome {
                            ok: false,
                            content: e.payload.clone(),
                        });
                    r.exchanges.push(Exchange { call, outcome });
                }
            }
            "proposal" => r.proposal = serde_json::from_value(e.payload.clone()).ok(),
            "decision" | "escalated" => r.decided = true,
            "model_error" => r.model_errors += 1,
            _ => {}
        }
    }
    r
}

/// Advances a claimed run until it waits, finishes or fails. Safe to call again on the
/// same run after a crash at any point.
pub async fn advance(state: &AppState, run: &mut Run) -> AppResult<()> {
    let case = crate::cases::load_case(&state.db, &run.case_id).await?;
    let Some(case) = case else { return Ok(()) };
    let ticket = crate::tickets::load_ticket(&state.db, &case.ticket_id).await?;
    let Some(ticket) = ticket else { return Ok(()) };
    let declarations = tools::declarations();
    let env = tools::ToolEnv {
        billing: state.billing.as_ref(),
        index: &state.index,
    };
    loop {
        let events = runs::events(&state.db, &run.id).await?;
        let log = replay(&events);
        let now = state.clock.now_ms();

        if log.decided {
            return Ok(());
        }
        if let Some(reason) = escalation_reason(&events) {
            crate::workflow::escalate_to_human(state, run, &case, &ticket, &reason, &log.exchanges)
                .await?;
            return Ok(());
        }
        // 1. Finish tool intents recorded before a crash or in the last turn.
        if !log.pending.is_empty() {
            for call in &log.pending {
                let outcome = tools::execute(&env, &ticket, call).await;
                let mut tx = state.db.begin().await?;
                runs::set_status(&mut tx, run, "tool_running", 0, 1, now).await?;
                runs::append_event(
                    &mut tx,
                    &run.id,
                    "tool_result",
                    Some(&call.id),
                    &serde_json::to_value(&outcome).unwrap_or_default(),
                    now,
                )
                .await?;
                runs::set_status(&mut tx, run, "ready", 0, 0, now).await?;
                tx.commit().await?;
            }
            continue;
        }
        // 2. A recorded proposal goes to the policy engine (never back to the model).
        if let Some(proposal) = log.proposal {
            crate::workflow::decide_case(state, run, &case, &ticket, &proposal, &log.exchanges)
                .await?;
            return Ok(());
        }
        // 3. Budgets.
        if run.steps >= MAX_STEPS
            || run.tool_calls >= MAX_TOOL_CALLS
            || log.model_errors >= MAX_MODEL_ERRORS
        {
            let why = if log.model_errors >= MAX_MODEL_ERRORS {
                "the model failed repeatedly"
            } else {
                "the run exhausted its step budget"
            };
            crate::workflow::escalate_to_human(state, run, &case, &ticket, why, &log.exchanges)
                .await?;
            return Ok(());
        }
        // 4. Ask the model for the next step.
        let messages = crate::tickets::messages(&state.db, &ticket.id).await?;
        let customer_messages: Vec<String> = messages
            .into_iter()
            .filter(|m| m.author == "customer")
            .map(|m| m.body)
            .collect();
        let ctx = ModelContext {
            customer_messages: &customer_messages,
            tools: &declarations,
            history: &log.exchanges,
        };
        let turn = state.model.next_turn(&ctx).await;
        let mut tx = state.db.begin().await?;
        runs::set_status(&mut tx, run, "model_running", 1, 0, now).await?;
        match turn {
            Err(e) => {
                tracing::warn!(run_id = %run.id, error = %e, "model error");
                runs::append_event(
                    &mut tx,
                    &run.id,
                    "model_error",
                    None,
                    &serde_json::json!({ "error": e.to_string() }),
                    now,
                )
                .await?;
                runs::set_status(&mut tx, run, "ready", 0, 0, now).await?;
            }
            Ok(turn) => record_turn(&mut tx, run, &turn, now).await?,
        }
        tx.commit().await?;
    }
}

fn escalation_reason(events: &[runs::Event]) -> Option<String> {
    let last = events.iter().rev().find(|e| e.kind == "model_output")?;
    let turn: ModelTurn = serde_json::from_value(last.payload.clone()).ok()?;
    match turn {
        ModelTurn::Escalate { reason } => Some(reason),
        _ => None,
    }
}

/// Records a model turn: its output, then one intent per tool call (in one transaction,
/// so a crash leaves either the whole turn or none of it).
async fn record_turn(tx: &mut Tx<'_>, run: &mut Run, turn: &ModelTurn, now: i64) -> AppResult<()> {
    runs::append_event(
        tx,
        &run.id,
        "model_output",
        None,
        &serde_json::to_value(turn).unwrap_or_default(),
        now,
    )
    .await?;
    match turn {
        ModelTurn::ToolCalls { calls } => {
            for (i, call) in calls.iter().enumerate() {
                // Call ids are made unique per run; a model repeating an id must not
                // collide with an earlier result.
                let call = ToolCall {
                    id: format!("s{}c{}:{}", run.steps, i, call.id),
                    ..call.clone()
                };
                runs::append_event(
                    tx,
                    &run.id,
                    "tool_intent",
                    Some(&call.id),
                    &serde_json::to_value(&call).unwrap_or_default(),
                    now,
                )
                .await?;
            }
            runs::set_status(tx, run, "tool_pending", 0, 0, now).await?;
        }
        ModelTurn::Propose { proposal } => {
            runs::append_event(
                tx,
                &run.id,
                "proposal",
                None,
                &serde_json::to_value(proposal).unwrap_or_default(),
                now,
            )
            .await?;
            runs::set_status(tx, run, "ready", 0, 0, now).await?;
        }
        ModelTurn::Escalate { .. } => {
            runs::set_status(tx, run, "ready", 0, 0, now).await?;
        }
    }
    Ok(())
}
