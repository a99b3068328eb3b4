//! Replaying historical tickets (shadow mode, policy what-ifs) entirely in memory.
//!
//! A historical ticket (SPEC §7 "Files") carries its own billing world as it stood when
//! the ticket was opened. [`replay_ticket`] runs the agent loop on it over a
//! [`WorldBilling`] snapshot, then gathers the facts with
//! `workflow::gather_facts` and asks the policy engine, exactly as a live case does.
//!
//! The loop is the live one, not a copy: [`investigate`] calls `harness::run_loop` with
//! the same tools, rules and limits as `agent::live` — the same order of checks, the same
//! budgets (steps, tool calls, tokens as the model reports them, model errors, invalid
//! tool calls, wall time), the same refusal of a turn that tries to act or claims an
//! approval, the same call ids, the same truncated history shown to the model, the same
//! handoff reason and summary. Where live commits each step to the run's SQL log, replay
//! gives the loop a `harness::MemoryLog` ([`Investigation::events`]). Only the dependency-wait budget has no counterpart: the
//! snapshot is never unavailable.
//!
//! What this module deliberately does not have: a database, a payments client or an
//! `AppState`. No function here takes one, so a replay cannot write a record, move money
//! or send a reply by construction (SPEC invariant 7). The one clock it reads is a
//! stopwatch for the wall-time budget (the system clock unless a caller injects one,
//! [`investigate_with_clock`]); the ticket's date comes from the ticket. The built-in
//! investigator takes microseconds, so its replays come out the same on any machine, at
//! any later date (SPEC invariant 9).
//!
//! The order of the decision is resolved by `workflow::gather_facts_resolved`, exactly
//! as live: the ticket form's order first, then the conversation, then the records.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use policy_engine::{
    Currency, Decision, Facts, Money, Outcome, PolicyError, PolicySet, ReasonCode, Role,
};
use rag_index::PolicyIndex;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize, Serializer};
use time::OffsetDateTime;

use crate::agent::investigator::Investigator;
use crate::agent::rules::RefundRules;
use crate::agent::{tools, Exchange, Model, Proposal, ToolCall};
use crate::billing::WorldBilling;
use crate::clock::HarnessClock;
use crate::clock::{Clock, SystemClock};
use crate::replies::{detect_language, MAX_MESSAGE_CHARS};
use crate::tickets::Ticket;
use crate::world::World;
use harness::{MemoryLog, NewEvent};

// ---------------------------------------------------------------------------------------
// The historical-ticket file format (SPEC §7).
// ---------------------------------------------------------------------------------------

/// One line of a `HISTORY.jsonl` file. Real exports carry more fields than SPEC §7
/// names: they are kept in `extra` (ignored by replay, counted in the shadow report and
/// written back as read).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoricalTicket {
    pub id: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub customer_id: String,
    /// The order picked in the ticket form, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    pub messages: Vec<HistoricalMessage>,
    /// The billing world as it stood at `created_at`.
    pub world: World,
    pub human: HumanDecision,
    /// Fields beyond SPEC §7, by name.
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoricalMessage {
    /// `customer`, or whoever else wrote (`agent`, `supervisor`…); only the customer's
    /// messages reach the model, as in a live case.
    pub from: String,
    pub text: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Fields beyond SPEC §7 (message ids, channels…).
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// What the human who handled the ticket decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanDecision {
    pub outcome: CaseOutcome,
    pub reason: ReasonCode,
    #[serde(default)]
    pub refunds: Vec<RefundRecord>,
    pub decided_by: String,
    /// Fields beyond SPEC §7 (agent names, notes…).
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl HumanDecision {
    pub fn verdict(&self) -> CaseVerdict {
        CaseVerdict {
            outcome: self.outcome,
            reason: self.reason,
            refunds: self.refunds.clone(),
        }
    }
}

/// Outcomes in SPEC terms: a decision's `allow` is `refund`, `deny` is `no_refund`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseOutcome {
    Refund,
    NoRefund,
    RequestInfo,
    Escalate,
}

impl CaseOutcome {
    pub const ALL: [CaseOutcome; 4] = [
        CaseOutcome::Refund,
        CaseOutcome::NoRefund,
        CaseOutcome::RequestInfo,
        CaseOutcome::Escalate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CaseOutcome::Refund => "refund",
            CaseOutcome::NoRefund => "no_refund",
            CaseOutcome::RequestInfo => "request_info",
            CaseOutcome::Escalate => "escalate",
        }
    }
}

impl From<Outcome> for CaseOutcome {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Allow => CaseOutcome::Refund,
            Outcome::Deny => CaseOutcome::NoRefund,
            Outcome::RequestInfo => CaseOutcome::RequestInfo,
            Outcome::Escalate => CaseOutcome::Escalate,
        }
    }
}

/// One refund as the history file and the reports write it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundRecord {
    pub charge_id: String,
    /// Decimal string in the currency's scale (`"198.00"`, `"1980"`).
    pub amount: String,
    pub currency: Currency,
}

impl RefundRecord {
    pub fn money(&self) -> Result<Money, PolicyError> {
        Money::parse(&self.amount, self.currency)
    }
}

/// An outcome, its reason code and the money it sends: what shadow mode compares.
/// `refunds` lists money actually decided to go out, so it is empty for everything but
/// `refund` (an escalation's candidate refunds wait for a supervisor; see
/// `ReplayResult::decision` for them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseVerdict {
    pub outcome: CaseOutcome,
    pub reason: ReasonCode,
    pub refunds: Vec<RefundRecord>,
}

impl CaseVerdict {
    /// The verdict a decision amounts to.
    pub fn from_decision(decision: &Decision) -> Self {
        let outcome = CaseOutcome::from(decision.outcome);
        let refunds = if outcome == CaseOutcome::Refund {
            decision
                .refunds
                .iter()
                .map(|r| RefundRecord {
                    charge_id: r.charge_id.clone(),
                    amount: r.amount.amount_string(),
                    currency: r.amount.currency(),
                })
                .collect()
        } else {
            Vec::new()
        };
        CaseVerdict {
            outcome,
            reason: decision.reason_code,
            refunds,
        }
    }

    /// The agent handed the case to a person before any decision.
    fn escalated() -> Self {
        CaseVerdict {
            outcome: CaseOutcome::Escalate,
            reason: ReasonCode::Other,
            refunds: Vec::new(),
        }
    }

    /// Same refunds: the same charges and amounts, in any order, amounts compared as
    /// money (`"198"` equals `"198.00"`).
    pub fn same_refunds(&self, other: &[RefundRecord]) -> bool {
        refund_set(&self.refunds) == refund_set(other)
    }

    /// Outcome, charges and amounts all equal (SPEC §7 "exact agreement").
    pub fn agrees_exactly(&self, other: &CaseVerdict) -> bool {
        self.outcome == other.outcome && self.same_refunds(&other.refunds)
    }

    /// The money this verdict sends, per currency.
    pub fn totals(&self) -> BTreeMap<Currency, Decimal> {
        let mut totals = BTreeMap::new();
        for r in &self.refunds {
            if let Ok(m) = r.money() {
                *totals.entry(m.currency()).or_insert(Decimal::ZERO) += m.amount();
            }
        }
        totals
    }
}

fn refund_set(refunds: &[RefundRecord]) -> BTreeSet<(String, Result<(Decimal, Currency), String>)> {
    refunds
        .iter()
        .map(|r| {
            let money = r
                .money()
                .map(|m| (m.amount(), m.currency()))
                .map_err(|_| r.amount.clone());
            (r.charge_id.clone(), money)
        })
        .collect()
}

/// A line of a history file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

/// Parses a history file: one ticket per non-blank line. Fields beyond SPEC §7 are
/// kept aside (see [`extra_field_counts`]). Bad lines (malformed JSON, required fields
/// missing, bad amounts, a customer absent from the ticket's world,
/// a repeated ticket id) are reported by line number and skipped; the rest is returned.
pub fn parse_history(jsonl: &str) -> (Vec<HistoricalTicket>, Vec<LineError>) {
    let mut tickets = Vec::new();
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, text) in jsonl.lines().enumerate() {
        let line = i + 1;
        if text.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<HistoricalTicket>(text)
            .map_err(|e| e.to_string())
            .and_then(|t| validate(&t).map(|()| t));
        match parsed {
            Ok(t) if !seen.insert(t.id.clone()) => errors.push(LineError {
                line,
                message: format!("ticket id {} appears on an earlier line", t.id),
            }),
            Ok(t) => tickets.push(t),
            Err(message) => errors.push(LineError { line, message }),
        }
    }
    (tickets, errors)
}

/// How many tickets carry each field beyond SPEC §7 (`messages[].x` and `human.x` for
/// nested ones), for the shadow report.
pub fn extra_field_counts(tickets: &[HistoricalTicket]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in tickets {
        let mut names: BTreeSet<String> = t.extra.keys().cloned().collect();
        names.extend(t.human.extra.keys().map(|k| format!("human.{k}")));
        for m in &t.messages {
            names.extend(m.extra.keys().map(|k| format!("messages[].{k}")));
        }
        for name in names {
            *counts.entry(name).or_default() += 1;
        }
    }
    counts
}

/// Checks what serde cannot: the ticket is self-consistent and its amounts are money.
fn validate(t: &HistoricalTicket) -> Result<(), String> {
    if t.id.trim().is_empty() {
        return Err("ticket id is empty".into());
    }
    if !t.world.customers.iter().any(|c| c.id == t.customer_id) {
        return Err(format!(
            "ticket {}: customer {} is not in the ticket's world",
            t.id, t.customer_id
        ));
    }
    if t.messages.is_empty() {
        return Err(format!("ticket {}: no messages", t.id));
    }
    if let Some(m) = t
        .messages
        .iter()
        .find(|m| m.text.chars().count() > MAX_MESSAGE_CHARS)
    {
        return Err(format!(
            "ticket {}: a message from {} is longer than {MAX_MESSAGE_CHARS} characters",
            t.id, m.from
        ));
    }
    for order in &t.world.orders {
        Money::parse(&order.amount, order.currency)
            .map_err(|e| format!("ticket {}: order {}: {e}", t.id, order.id))?;
        if !t.world.customers.iter().any(|c| c.id == order.customer_id) {
            return Err(format!(
                "ticket {}: order {} names unknown customer {}",
                t.id, order.id, order.customer_id
            ));
        }
    }
    t.world
        .charges()
        .map_err(|e| format!("ticket {}: charges: {e}", t.id))?;
    for r in &t.human.refunds {
        r.money()
            .map_err(|e| format!("ticket {}: human refund on {}: {e}", t.id, r.charge_id))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Replaying one ticket.
// ---------------------------------------------------------------------------------------

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
    /// Evidence the proposal cites that no tool returned (SPEC invariant 8).
    pub evidence_rejected: Vec<String>,
    /// The order the decision is about, as the workflow resolved it.
    pub order_id: Option<String>,
    /// Where that order came from (`form`, `message`, `records`, `agent`).
    pub order_source: Option<crate::resolve::OrderSource>,
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
    /// What the agent's case would have come to, in SPEC terms.
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
        outcome: &'a crate::agent::ToolOutcome,
    }
    s.collect_seq(exchanges.iter().map(|x| Step {
        call: &x.call,
        outcome: &x.outcome,
    }))
}

/// The `Ticket` a live case would have for this historical one.
pub fn live_ticket(h: &HistoricalTicket) -> Ticket {
    let first = h
        .messages
        .iter()
        .find(|m| m.from == "customer")
        .map(|m| m.text.as_str())
        .unwrap_or_default();
    let region = h
        .world
        .customers
        .iter()
        .find(|c| c.id == h.customer_id)
        .map(|c| c.region);
    Ticket {
        id: h.id.clone(),
        customer_id: h.customer_id.clone(),
        order_id: h.order_id.clone(),
        language: detect_language(first, region),
        created_at: crate::clock::to_ms(h.created_at),
    }
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
/// The loop is `agent::advance` with an in-memory log: `machine::next` says what to do,
/// the events it would commit are folded into the same `RunLog`. It ends where live
/// hands the case to a human (with the same reason and summary) or sends a proposal to
/// the policy engine.
pub async fn investigate_with_clock(
    model: &dyn Model,
    index: &Arc<PolicyIndex>,
    historical: &HistoricalTicket,
    clock: &dyn Clock,
) -> Result<Investigation, ReplayError> {
    let ticket = live_ticket(historical);
    let billing = WorldBilling::new(Arc::new(historical.world.clone()));
    let env = tools::ToolEnv {
        billing: &billing,
        index,
    };
    let toolset = tools::toolset(&env, &ticket);
    let customer_messages: Vec<String> = historical
        .messages
        .iter()
        .filter(|m| m.from == "customer")
        .map(|m| m.text.clone())
        .collect();
    let model_name = model.name();
    let clock = HarnessClock(clock);
    let mut spec = harness::Run::new(model, &toolset, &clock);
    spec.inputs = &customer_messages;
    spec.limits = crate::agent::limits();
    spec.rules = &RefundRules;

    let mut log = MemoryLog::new();
    // An in-memory log cannot fail (its error type is uninhabited).
    let Ok(ended) = harness::run_loop(&spec, &mut log).await;
    let (escalation, handoff, proposal) = match ended.outcome {
        harness::Outcome::HandedOff { reason, summary } => (Some(reason), Some(summary), None),
        harness::Outcome::Answered(proposal) => (None, None, Some(proposal)),
        // Nothing cancels a replayed run (it has no parent).
        harness::Outcome::Cancelled => (Some("cancelled".to_string()), None, None),
    };
    let (state, counters, events) = (ended.log, ended.counters, log.events);
    let mut investigation = Investigation {
        ticket_id: historical.id.clone(),
        model: model_name,
        exchanges: state.exchanges,
        proposal: None,
        escalation,
        handoff,
        budget_exhausted: state.budget_exhausted,
        violations: state.violations,
        evidence_rejected: Vec::new(),
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
        // order is resolved by the workflow, as live (issue 15).
        let (facts, order_source) = crate::workflow::gather_facts_resolved(
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
        investigation.evidence_rejected =
            crate::workflow::invalid_evidence(&proposal, &investigation.exchanges);
        investigation.order_id = facts.order_id.clone();
        investigation.order_source = order_source;
        proposal.order_source = order_source;
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
    Ok(Some(if pins.is_empty() {
        policy_engine::decide(facts, policies)
    } else {
        policy_engine::decide_with(facts, policies, pins)?
    }))
}

/// What the case would have come to: the decision's verdict, unless the agent gave up
/// (escalate, `other`) or cited evidence no tool returned (the live workflow escalates
/// such a case, keeping the decision's reason).
pub fn verdict(investigation: &Investigation, decision: Option<&Decision>) -> CaseVerdict {
    match decision {
        None => CaseVerdict::escalated(),
        Some(d) if !investigation.evidence_rejected.is_empty() => CaseVerdict {
            outcome: CaseOutcome::Escalate,
            reason: d.reason_code,
            refunds: Vec::new(),
        },
        Some(d) => CaseVerdict::from_decision(d),
    }
}

// ---------------------------------------------------------------------------------------
// Policy what-if: which historical decisions a version change would alter.
// ---------------------------------------------------------------------------------------

/// One side of a diff: the verdict and what else a reviewer needs to see.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffSide {
    #[serde(flatten)]
    pub verdict: CaseVerdict,
    pub approver_role: Option<Role>,
    pub policy_versions: Vec<String>,
}

/// Money per currency, as decimal strings in the currency's scale. `delta` is `to - from`
/// and may be negative.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoneyChange {
    pub currency: Currency,
    pub from: String,
    pub to: String,
    pub delta: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffEntry {
    pub id: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub human: CaseVerdict,
    pub from: DiffSide,
    pub to: DiffSide,
    /// What differs: `outcome`, `reason`, `refunds`, `approver_role`.
    pub changes: Vec<String>,
    /// Money refunded under each side, per currency (only currencies involved).
    pub money: Vec<MoneyChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TicketError {
    pub id: String,
    pub message: String,
}

/// `refund-agent policy diff --from … --to … HISTORY.jsonl`, as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    pub from: Vec<String>,
    pub to: Vec<String>,
    /// Tickets replayed (errors included).
    pub total: usize,
    /// Tickets whose decision differs.
    pub changed: usize,
    /// How many changed tickets differ in each field (`outcome`, `refunds`…).
    pub changes: BTreeMap<String, usize>,
    /// Outcome transitions among changed tickets: `"escalate -> refund": 3`.
    pub transitions: BTreeMap<String, usize>,
    /// Money refunded over all changed tickets under each side, per currency.
    pub money: Vec<MoneyChange>,
    pub tickets: Vec<DiffEntry>,
    pub errors: Vec<TicketError>,
}

/// What the decisions on `tickets` would have been under `from` and under `to` (each a
/// list of pins such as `["RP-001@2"]`; documents not pinned use the version in force
/// on each ticket's date), listing every ticket whose decision differs. The built-in
/// investigator reads each ticket once; both sides decide on the same facts, so every
/// difference comes from the policy change alone.
pub async fn policy_diff(
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    tickets: &[HistoricalTicket],
    from: &[String],
    to: &[String],
) -> Result<DiffReport, ReplayError> {
    policy_diff_with_model(&Investigator, policies, index, tickets, from, to).await
}

/// [`policy_diff`] with another model doing the investigation.
pub async fn policy_diff_with_model(
    model: &dyn Model,
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    tickets: &[HistoricalTicket],
    from: &[String],
    to: &[String],
) -> Result<DiffReport, ReplayError> {
    // Bad pins fail the whole run up front, not once per ticket.
    for pin in from.iter().chain(to) {
        policies.resolve_ref(pin)?;
    }
    let mut report = DiffReport {
        from: from.to_vec(),
        to: to.to_vec(),
        total: tickets.len(),
        changed: 0,
        changes: BTreeMap::new(),
        transitions: BTreeMap::new(),
        money: Vec::new(),
        tickets: Vec::new(),
        errors: Vec::new(),
    };
    let mut money_from: BTreeMap<Currency, Decimal> = BTreeMap::new();
    let mut money_to: BTreeMap<Currency, Decimal> = BTreeMap::new();
    for ticket in tickets {
        let investigation = match investigate(model, index, ticket).await {
            Ok(i) => i,
            Err(e) => {
                report.errors.push(TicketError {
                    id: ticket.id.clone(),
                    message: e.to_string(),
                });
                continue;
            }
        };
        let (Some(a), Some(b)) = (
            decide(&investigation, policies, from)?,
            decide(&investigation, policies, to)?,
        ) else {
            continue; // the agent gave up: no decision on either side
        };
        let side = |d: &Decision| DiffSide {
            verdict: verdict(&investigation, Some(d)),
            approver_role: d.approver_role,
            policy_versions: d.policy_versions.clone(),
        };
        let (from_side, to_side) = (side(&a), side(&b));
        let mut changes = Vec::new();
        if from_side.verdict.outcome != to_side.verdict.outcome {
            changes.push("outcome".to_string());
        }
        if from_side.verdict.reason != to_side.verdict.reason {
            changes.push("reason".to_string());
        }
        if !from_side.verdict.same_refunds(&to_side.verdict.refunds) {
            changes.push("refunds".to_string());
        }
        if from_side.approver_role != to_side.approver_role {
            changes.push("approver_role".to_string());
        }
        if changes.is_empty() {
            continue;
        }
        let (ta, tb) = (from_side.verdict.totals(), to_side.verdict.totals());
        for (c, v) in &ta {
            *money_from.entry(*c).or_insert(Decimal::ZERO) += v;
        }
        for (c, v) in &tb {
            *money_to.entry(*c).or_insert(Decimal::ZERO) += v;
        }
        report.changed += 1;
        for c in &changes {
            *report.changes.entry(c.clone()).or_insert(0) += 1;
        }
        *report
            .transitions
            .entry(format!(
                "{} -> {}",
                from_side.verdict.outcome.as_str(),
                to_side.verdict.outcome.as_str()
            ))
            .or_insert(0) += 1;
        report.tickets.push(DiffEntry {
            id: ticket.id.clone(),
            created_at: ticket.created_at,
            human: ticket.human.verdict(),
            money: money_changes(&ta, &tb),
            from: from_side,
            to: to_side,
            changes,
        });
    }
    report.money = money_changes(&money_from, &money_to);
    Ok(report)
}

fn money_changes(
    from: &BTreeMap<Currency, Decimal>,
    to: &BTreeMap<Currency, Decimal>,
) -> Vec<MoneyChange> {
    let currencies: BTreeSet<Currency> = from.keys().chain(to.keys()).copied().collect();
    currencies
        .into_iter()
        .map(|c| {
            let a = from.get(&c).copied().unwrap_or(Decimal::ZERO);
            let b = to.get(&c).copied().unwrap_or(Decimal::ZERO);
            MoneyChange {
                currency: c,
                from: in_scale(a, c),
                to: in_scale(b, c),
                delta: in_scale(b - a, c),
            }
        })
        .collect()
}

/// A decimal in the currency's scale (`"-30.00"`, `"9800"`); may be negative.
fn in_scale(mut amount: Decimal, currency: Currency) -> String {
    amount.rescale(currency.decimals());
    amount.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"id":"H-1","created_at":"2026-08-01T00:00:00Z","customer_id":"C-1","messages":[{"from":"customer","text":"hi","at":"2026-08-01T00:00:00Z"}],"world":{"customers":[{"id":"C-1","name":"A","email":"a@example.com","region":"US"}],"orders":[]},"human":{"outcome":"request_info","reason":"insufficient_info","refunds":[],"decided_by":"agent:x"}}"#;

    #[test]
    fn parse_history_reports_bad_lines_by_number_and_keeps_the_rest() {
        let bad_customer = LINE.replace(r#""customer_id":"C-1""#, r#""customer_id":"C-2""#);
        let text = format!("{LINE}\n\n{{not json\n{bad_customer}\n{LINE}\n");
        let (tickets, errors) = parse_history(&text);
        assert_eq!(tickets.len(), 1);
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 4, 5]);
        assert!(errors[1].message.contains("C-2"), "{}", errors[1].message);
        assert!(errors[2].message.contains("earlier line"));
    }

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

    #[test]
    fn negative_deltas_keep_the_currency_scale() {
        assert_eq!(in_scale(Decimal::new(-30, 0), Currency::EUR), "-30.00");
        assert_eq!(in_scale(Decimal::new(9800, 0), Currency::JPY), "9800");
    }
}
