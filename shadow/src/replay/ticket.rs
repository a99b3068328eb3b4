//! Replaying one ticket: the agent's investigation on the live loop over a snapshot of
//! the ticket's world, then the facts and the policy engine's decision as live (`replay`'s
//! header says how, and what it deliberately lacks: a database, a payments client).

use std::sync::Arc;

use policy_engine::{Decision, Facts, PolicyError, PolicySet};
use rag_index::PolicyIndex;
use serde::{Serialize, Serializer};

use desk::agent::rules::RefundRules;
use desk::agent::{tools, Exchange, Model, Proposal, ToolCall};
use desk::billing::WorldBilling;
use desk::clock::HarnessClock;
use desk::clock::{Clock, SystemClock};
use harness::{EventLog, MemoryLog, NewEvent};

use super::history::{self, live_ticket, HistoricalTicket};
use desk::investigation::children::{self, Briefed};
use domain::verdict::{CaseOutcome, CaseVerdict};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The ticket's world cannot answer what a decision needs (e.g. inconsistent records).
    #[error("ticket {ticket}: {message}")]
    Facts { ticket: String, message: String },
    /// A pinned version is unknown or malformed (`RP-001@9`, `RP-001`).
    #[error("policy pins: {0}")]
    Policy(#[from] PolicyError),
}

/// The agent's work on one ticket, before any policy is applied: what it called, what
/// it proposed (or why it gave up) and the facts gathered for its proposal.
#[derive(Debug, Clone, Serialize)]
pub struct Investigation {
    pub ticket_id: String,
    pub model: String,
    /// The trace: every tool call and its outcome, in order.
    #[serde(serialize_with = "serialize_exchanges")]
    pub exchanges: Vec<Exchange>,
    pub proposal: Option<Proposal>,
    /// Why the run went to a human without a proposal, in the live loop's words (the
    /// `reason` of its `handoff` event): the model escalated, a budget ran out, a turn
    /// was refused.
    pub escalation: Option<String>,
    /// What the human taking the case over would be told (the live `handoff` summary).
    pub handoff: Option<serde_json::Value>,
    /// The budget that ran out, if one did (`steps`, `tokens`, `wall_time_ms`…).
    pub budget_exhausted: Option<String>,
    /// Turns refused because they tried to act or claimed an approval.
    pub violations: Vec<serde_json::Value>,
    /// Evidence the proposal cites that no tool returned (docs/spec/invariants.md #8).
    pub evidence_rejected: Vec<String>,
    /// The customer's messages try to instruct the agent (`workflow::instructed`): a
    /// question to them becomes an escalation, as live.
    pub instructed: bool,
    /// The request could not be read at all, in a language we do not answer in
    /// (`workflow::unreadable`): a question to them becomes an escalation, as live.
    pub unreadable: bool,
    /// The order the decision is about, as the workflow resolved it.
    pub order_id: Option<String>,
    /// Where that order came from (`form`, `message`, `records`, `agent`).
    pub order_source: Option<domain::resolve::OrderSource>,
    pub facts: Option<Facts>,
    pub steps: i64,
    pub tool_calls: i64,
    pub model_errors: usize,
    pub invalid_tool_calls: usize,
    /// Tokens the model reported, summed.
    pub tokens: u64,
    /// Milliseconds spent in model and tool calls (the wall-time budget's measure).
    pub active_ms: i64,
    /// The events the run would have logged, in order (kinds and payloads as live). Not
    /// serialized: the trace above is what a reviewer reads.
    #[serde(skip)]
    pub events: Vec<NewEvent>,
}

/// The outcome of replaying one ticket.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    #[serde(flatten)]
    pub investigation: Investigation,
    /// The policy engine's decision (`None` when the agent gave up first).
    pub decision: Option<Decision>,
    /// What the agent's case would have come to, in the terms of docs/spec/interfaces.md (history).
    pub agent: CaseVerdict,
}

impl ReplayResult {
    pub fn exchanges(&self) -> &[Exchange] {
        &self.investigation.exchanges
    }
}

fn serialize_exchanges<S: Serializer>(exchanges: &[Exchange], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Step<'a> {
        call: &'a ToolCall,
        outcome: &'a desk::agent::ToolOutcome,
    }
    s.collect_seq(exchanges.iter().map(|x| Step {
        call: &x.call,
        outcome: &x.outcome,
    }))
}

/// Replays one ticket under the policy versions in force on its date.
pub async fn replay_ticket(
    model: &dyn Model,
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    ticket: &HistoricalTicket,
) -> Result<ReplayResult, ReplayError> {
    replay_ticket_pinned(model, policies, index, ticket, &[]).await
}

/// Replays one ticket with some policy versions pinned (`["RP-001@3"]`, drafts allowed);
/// with no pins this is [`replay_ticket`].
pub async fn replay_ticket_pinned(
    model: &dyn Model,
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    ticket: &HistoricalTicket,
    pins: &[String],
) -> Result<ReplayResult, ReplayError> {
    let investigation = investigate(model, index, ticket).await?;
    let decision = decide(&investigation, policies, pins)?;
    let agent = verdict(&investigation, decision.as_ref());
    Ok(ReplayResult {
        investigation,
        decision,
        agent,
    })
}

/// Runs the agent loop on the ticket's world and gathers the facts for its proposal,
/// timing model and tool calls on the system clock.
pub async fn investigate(
    model: &dyn Model,
    index: &Arc<PolicyIndex>,
    historical: &HistoricalTicket,
) -> Result<Investigation, ReplayError> {
    investigate_with_clock(model, index, historical, &SystemClock).await
}

/// [`investigate`] with the wall-time budget measured on `clock` (tests inject a
/// `ManualClock`, as they do for the live loop).
///
/// The loop is `investigation::advance` with an in-memory log: `machine::next` says what to do,
/// the events it would commit are folded into the same `RunLog`. It ends where live
/// hands the case to a human (with the same reason and summary) or sends a proposal to
/// the policy engine.
// Long because it mirrors the live loop step for step (readers, briefing, loop, handoff,
// facts, decision) so replay and live can be compared line by line; split, the two
// would stop reading alike.
pub async fn investigate_with_clock(
    model: &dyn Model,
    index: &Arc<PolicyIndex>,
    historical: &HistoricalTicket,
    clock: &dyn Clock,
) -> Result<Investigation, ReplayError> {
    let ticket = live_ticket(historical).map_err(|e| ReplayError::Facts {
        ticket: historical.id.clone(),
        message: e.to_string(),
    })?;
    let billing = WorldBilling::new(Arc::new(historical.world.clone()));
    let env = tools::ToolEnv {
        billing: &billing,
        index,
    };
    let toolset = tools::toolset(&env, &ticket);
    let customer_messages = history::customer_messages(historical);
    let model_name = model.name();
    let clock = HarnessClock(clock);
    let mut log = MemoryLog::new();
    // The LLM path's readers first, in memory, as the live loop runs them.
    let readers = children::llm_readers(model);
    let briefing = match &readers {
        Some(readers) => {
            let models = children::reader_models(readers);
            let task = (&ticket, &env, &customer_messages[..]);
            let (briefing, joined) =
                children::gather_in_memory(&clock, task, &models, &harness::Unobserved).await;
            let Ok(()) = log.commit(joined).await;
            Some(briefing)
        }
        None => None,
    };
    let briefed = briefing.as_ref().map(|b| Briefed {
        model,
        prelude: &b.prelude,
    });
    let parent: &dyn Model = match &briefed {
        Some(briefed) => briefed,
        None => model,
    };
    let mut spec = harness::Run::new(parent, &toolset, &clock);
    spec.inputs = &customer_messages;
    spec.limits = desk::agent::limits();
    spec.rules = &RefundRules;

    let incomplete = briefing.as_ref().and_then(|b| b.incomplete.clone());
    let (outcome, state, counters) = match incomplete {
        // The required billing reader did not answer: live sends the case to a human.
        Some(why) => {
            let Ok(events) = log.load().await;
            let outcome = harness::Outcome::HandedOff {
                reason: why,
                summary: serde_json::Value::Null,
            };
            (outcome, harness::RunLog::fold(&events), log.counters())
        }
        None => {
            // An in-memory log cannot fail (its error type is uninhabited).
            let Ok(ended) = harness::run_loop(&spec, &mut log).await;
            (ended.outcome, ended.log, ended.counters)
        }
    };
    let (escalation, handoff, proposal) = match outcome {
        harness::Outcome::HandedOff { reason, summary } => {
            (Some(reason), Some(summary).filter(|s| !s.is_null()), None)
        }
        harness::Outcome::Answered(proposal) => (None, None, Some(proposal)),
        // Nothing cancels a replayed run (it has no parent).
        harness::Outcome::Cancelled => (Some("cancelled".to_string()), None, None),
    };
    let events = log.events;
    // The readers' exchanges are evidence the proposal may cite, as live.
    let evidence = briefing.map(|b| b.evidence).unwrap_or_default();
    let exchanges = [evidence, state.exchanges].concat();
    let mut investigation = Investigation {
        ticket_id: historical.id.clone(),
        model: model_name,
        exchanges,
        proposal: None,
        escalation,
        handoff,
        budget_exhausted: state.budget_exhausted,
        violations: state.violations,
        evidence_rejected: Vec::new(),
        instructed: desk::workflow::instructed(&customer_messages),
        unreadable: false,
        order_id: None,
        order_source: None,
        facts: None,
        steps: counters.steps,
        tool_calls: counters.tool_calls,
        model_errors: state.model_errors,
        invalid_tool_calls: state.invalid_tool_calls,
        tokens: state.tokens,
        active_ms: state.active_ms,
        events,
    };
    if let Some(mut proposal) = proposal {
        // Facts come from the records through code, never from the model's words; the
        // order is resolved by the workflow, as live.
        let desk::workflow::Resolved {
            facts,
            order_source,
            ..
        } = desk::workflow::gather_facts_resolved(
            &billing,
            &ticket,
            &customer_messages,
            proposal.request,
            proposal.order_id.as_deref(),
        )
        .await
        .map_err(|e| ReplayError::Facts {
            ticket: historical.id.clone(),
            message: e.to_string(),
        })?;
        let facts = desk::workflow::repeat_as_claimed(facts, &proposal, order_source);
        investigation.evidence_rejected =
            desk::workflow::invalid_evidence(&proposal, &investigation.exchanges);
        investigation.unreadable = desk::workflow::unreadable(&customer_messages, proposal.request);
        investigation.order_id = facts.order_id.clone();
        investigation.order_source = order_source;
        proposal.order_source = order_source;
        proposal.repeat_of = facts.repeat_of.clone();
        investigation.facts = Some(facts);
        investigation.proposal = Some(proposal);
    }
    Ok(investigation)
}

/// The policy decision on an investigation's facts: live versions, or `pins` (what-if).
pub fn decide(
    investigation: &Investigation,
    policies: &PolicySet,
    pins: &[String],
) -> Result<Option<Decision>, PolicyError> {
    let Some(facts) = &investigation.facts else {
        return Ok(None);
    };
    let others = investigation
        .proposal
        .as_ref()
        .map_or(&[][..], |p| p.other_readings.as_slice());
    let (_, decision) = desk::workflow::smallest_reading(facts.clone(), others, |f| {
        if pins.is_empty() {
            Ok(policy_engine::decide(f, policies))
        } else {
            policy_engine::decide_with(f, policies, pins)
        }
    })?;
    Ok(Some(decision))
}

/// What the case would have come to: the decision's verdict, unless the agent gave up
/// (escalate, `other`), cited evidence no tool returned, or would ask a customer whose
/// messages try to instruct the agent (the live workflow escalates both, keeping the
/// decision's reason).
pub fn verdict(investigation: &Investigation, decision: Option<&Decision>) -> CaseVerdict {
    match decision {
        None => CaseVerdict::escalated(),
        Some(d) if !investigation.evidence_rejected.is_empty() => CaseVerdict {
            outcome: CaseOutcome::Escalate,
            reason: d.reason_code,
            refunds: Vec::new(),
        },
        // As live (`workflow::case_status_for`): never ask a customer whose
        // messages try to instruct the agent; a person looks.
        Some(d)
            if (investigation.instructed || investigation.unreadable)
                && d.outcome == policy_engine::Outcome::RequestInfo =>
        {
            CaseVerdict {
                outcome: CaseOutcome::Escalate,
                reason: d.reason_code,
                refunds: Vec::new(),
            }
        }
        Some(d) => CaseVerdict::from_decision(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::verdict::RefundRecord;
    use policy_engine::{Currency, ReasonCode};

    #[test]
    fn refunds_compare_as_money() {
        let v = |amount: &str| CaseVerdict {
            outcome: CaseOutcome::Refund,
            reason: ReasonCode::DuplicateCharge,
            refunds: vec![RefundRecord {
                charge_id: "ch_1".into(),
                amount: amount.into(),
                currency: Currency::USD,
            }],
        };
        assert!(v("12").agrees_exactly(&v("12.00")));
        assert!(!v("12.01").agrees_exactly(&v("12.00")));
    }
}
