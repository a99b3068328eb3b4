//! The live investigation: [`harness::run_loop`] on the run's SQL event log, then the
//! workflow — the proposal to the policy engine, or the case to a human.
//!
//! Every step the harness takes is a versioned update of the `runs` row plus the events
//! it produced, in one transaction (`runs::record_step`): a worker that lost its lease
//! (another worker claimed the run, or the case cancelled it) writes nothing at its next
//! step and stops. Run states follow docs/spec/lifecycle.md: `ready → model_running → tool_pending →
//! tool_running → ready` inside the loop, then `awaiting_approval`, `completed`,
//! `failed` or `cancelled` (the workflow), or `awaiting_dependency`: the payment
//! provider was down when the facts were gathered, so the run rests without a lease and
//! is retried, at most [`crate::agent::MAX_DEPENDENCY_WAITS`] times.

pub mod children;
pub mod sql_log;

use harness::{LogError, Outcome};
use serde_json::json;

use crate::agent::rules::RefundRules;
use crate::agent::tools::{self, ToolEnv};
use crate::agent::Model;
use crate::clock::HarnessClock;
use crate::error::{DomainError, DomainResult};
use crate::runs::{self, status, EventKind, Run};
use crate::workflow::Decider;
use children::{Briefed, Briefing};
use sql_log::{rest, working_status, SqlLog};
use store::Db;

/// What an investigation runs with: the workflow's decider (store, time, rules, policy
/// index) and the model the agent's turns come from.
#[derive(Clone, Copy)]
pub struct Investigator<'a> {
    pub decider: Decider<'a>,
    pub model: &'a dyn Model,
    /// Where the run's steps are committed (in batches with other runs' steps).
    pub steps: &'a runs::StepWriter,
}

impl Investigator<'_> {
    /// The case to a human, with what the run verified (`workflow::escalate_to_human`).
    async fn escalate(
        &self,
        run: &mut Run,
        case: &crate::cases::Case,
        ticket: &crate::tickets::Ticket,
        why: &str,
        evidence: &[harness::Exchange],
    ) -> DomainResult<()> {
        let (db, clock) = (self.decider.db, self.decider.clock);
        crate::workflow::escalate_to_human(db, clock, run, case, ticket, why, evidence).await
    }
}

/// Advances a claimed run until it waits, finishes or fails. Safe to call again on the
/// same run after a crash at any point. A worker whose lease was lost stops at its next
/// versioned update, writes nothing, and returns `Ok`: the run is in other hands.
pub async fn advance(inv: Investigator<'_>, run: &mut Run) -> DomainResult<()> {
    match advance_claimed(inv, run).await {
        Err(e) if runs::is_run_changed(&e) => {
            tracing::warn!(run_id = %run.id, "the run changed under this worker (lease lost or run ended); stopping");
            Ok(())
        }
        other => other,
    }
}

async fn advance_claimed(inv: Investigator<'_>, run: &mut Run) -> DomainResult<()> {
    let case = crate::cases::load_case(inv.decider.db, &run.case_id).await?;
    let ticket = match &case {
        Some(case) => crate::tickets::load_ticket(inv.decider.db, &case.ticket_id).await?,
        None => None,
    };
    let (Some(case), Some(ticket)) = (case, ticket) else {
        // Nothing to investigate; end the run so no worker claims it again.
        tracing::error!(run_id = %run.id, "run without a case or ticket; failing it");
        return rest(
            inv.decider.db,
            run,
            status::FAILED,
            inv.decider.clock.now_ms(),
            vec![],
        )
        .await;
    };
    let events = runs::events(inv.decider.db, &run.id).await?;
    if events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Decision | EventKind::Escalated))
    {
        // Only reachable if a decision was recorded without its state change.
        if !run.status.holds_no_worker() {
            rest(
                inv.decider.db,
                run,
                status::COMPLETED,
                inv.decider.clock.now_ms(),
                vec![],
            )
            .await?;
        }
        return Ok(());
    }
    let span = tracing::info_span!("investigation", case_id = %case.id, run_id = %run.id);
    let read = (run.version, events);
    tracing::Instrument::instrument(investigate(inv, run, (&case, &ticket), read), span).await
}

/// The harness's loop on the run, then the workflow on how it ended. `read` is the
/// run's events as read before, at the run's version then: the loop's first log starts
/// from them when nothing was committed on the run since (a step bumps the version).
async fn investigate(
    inv: Investigator<'_>,
    run: &mut Run,
    (case, ticket): (&crate::cases::Case, &crate::tickets::Ticket),
    read: (i64, Vec<runs::Event>),
) -> DomainResult<()> {
    let inputs = customer_messages(inv.decider.db, &ticket.id).await?;
    // The tools of this pass (the readers' too) read the customer's row and orders once.
    let billing =
        crate::billing::TicketBilling::new(inv.decider.rules.billing, &ticket.customer_id);
    let env = ToolEnv {
        billing: &billing,
        index: inv.decider.index,
    };
    let tools = tools::toolset(&env, ticket);
    let clock = HarnessClock(inv.decider.clock);
    let briefing = children(inv, run, (ticket, &env, &inputs)).await?;
    if let Some(why) = briefing.as_ref().and_then(|b| b.incomplete.as_deref()) {
        // The required billing reader did not answer: a human decides.
        let evidence = briefing.as_ref().map_or(&[][..], |b| &b.evidence[..]);
        let w = inv.escalate(run, case, ticket, why, evidence);
        return w.await;
    }
    let briefed = briefing.as_ref().map(|b| Briefed {
        model: inv.model,
        prelude: &b.prelude,
    });
    let model: &dyn crate::agent::Model = match &briefed {
        Some(briefed) => briefed,
        None => inv.model,
    };
    let mut spec = harness::Run::new(model, &tools, &clock);
    spec.inputs = &inputs;
    spec.limits = crate::agent::limits();
    spec.rules = &RefundRules;
    spec.observer = &Metered;
    let mut read = Some(read);
    loop {
        // A fresh log each time round: a rest (`provider_down`) commits outside it.
        let known = read.take().filter(|(v, _)| *v == run.version).map(|r| r.1);
        let log = SqlLog::new(inv.decider.db, inv.decider.clock, run).batched(inv.steps);
        let mut log = log.knowing(known);
        let ended = match harness::run_loop(&spec, &mut log).await {
            Ok(ended) => ended,
            Err(LogError::Lost) => return Err(runs::run_changed()),
            Err(LogError::Store(e)) => return Err(e),
        };
        // The children's exchanges are evidence the proposal may cite, as the parent's are.
        let evidence = briefing.as_ref().map_or(&[][..], |b| &b.evidence[..]);
        let exchanges = &[evidence, &ended.log.exchanges[..]].concat();
        let proposal = match &ended.outcome {
            Outcome::HandedOff { reason, .. } => {
                let w = inv.escalate(run, case, ticket, reason, exchanges);
                return w.await;
            }
            Outcome::Answered(proposal) => proposal,
            // Only a sub-agent's run is cancelled by its parent; a case's run is
            // cancelled by the case (its lease goes), which ends the loop above.
            Outcome::Cancelled => return Ok(()),
        };
        // The proposal goes to the policy engine (never back to the model).
        let decided =
            crate::workflow::decide_case(inv.decider, run, case, ticket, proposal, exchanges).await;
        let Err(DomainError::Provider(message)) = decided else {
            return decided;
        };
        let waits = ended.log.count("dependency_unavailable");
        if !provider_down(inv, run, waits, &message).await? {
            return Ok(());
        }
    }
}

/// The provider was down when the facts were gathered: the run rests without a lease
/// and is tried again later rather than hold a worker or burn the budget (returns
/// `false`) — unless it waited [`crate::agent::MAX_DEPENDENCY_WAITS`] times already: that is
/// recorded, and the loop goes on to hand the case over (returns `true`).
async fn provider_down(
    inv: Investigator<'_>,
    run: &mut Run,
    waits: usize,
    message: &str,
) -> DomainResult<bool> {
    let now = inv.decider.clock.now_ms();
    if waits >= crate::agent::MAX_DEPENDENCY_WAITS {
        let limit = crate::agent::MAX_DEPENDENCY_WAITS as i64;
        let exhausted = harness::Exhausted::new("dependency_waits", waits as i64, limit);
        let to = working_status(run);
        rest(inv.decider.db, run, to, now, vec![exhausted.event()]).await?;
        return Ok(true);
    }
    tracing::warn!(run_id = %run.id, error = %message, "provider unavailable; run waits");
    let payload = json!({
        "dependency": "payment_provider",
        "error": message,
        "attempt": waits + 1,
        "retry_after_ms": runs::DEPENDENCY_RETRY_MS,
    });
    let event = harness::NewEvent::new(EventKind::DependencyUnavailable.as_str(), None, payload);
    rest(
        inv.decider.db,
        run,
        status::AWAITING_DEPENDENCY,
        now,
        vec![event],
    )
    .await?;
    Ok(false)
}

/// The LLM path's sub-agents (`children`): the billing and policy readers on
/// the same model server, joined before the parent's own loop. `None` for any other
/// model: the built-in investigator runs a single loop.
async fn children(
    inv: Investigator<'_>,
    run: &mut Run,
    task: (&crate::tickets::Ticket, &ToolEnv<'_>, &[String]),
) -> DomainResult<Option<Briefing>> {
    let Some(readers) = children::llm_readers(inv.model) else {
        return Ok(None);
    };
    let models = children::reader_models(&readers);
    let storage = children::Storage {
        db: inv.decider.db,
        clock: inv.decider.clock,
    };
    children::gather(storage, run, task, &models, &Metered)
        .await
        .map(Some)
}

/// What the customer wrote, oldest first: the task's inputs.
async fn customer_messages(db: &Db, ticket_id: &str) -> DomainResult<Vec<String>> {
    let messages = crate::tickets::messages(db, ticket_id).await?;
    Ok(messages
        .into_iter()
        .filter(|m| m.author == "customer")
        .map(|m| m.body)
        .collect())
}

/// The loop's measurements, as `/metrics` shows them.
pub struct Metered;

impl harness::Observer for Metered {
    fn model_call(&self, model: &str, ok: bool, latency_ms: u64, usage: harness::Usage) {
        let (prompt, completion) = (usage.prompt_tokens, usage.completion_tokens);
        crate::metrics::record_model_call(model, ok, latency_ms, prompt, completion);
    }

    fn tool_call(&self, tool: &str, ok: bool, duration_ms: u64) {
        // A label comes only from the declared toolset: a model that obeys text in a
        // ticket could name a "tool" after a customer's email (docs/spec/data.md).
        let label = crate::agent::tools::declared_name(tool).unwrap_or("unknown");
        crate::metrics::record_tool_call(label, ok, duration_ms);
    }

    fn step(&self, ms: u64) {
        crate::metrics::record_step(ms);
    }
}
