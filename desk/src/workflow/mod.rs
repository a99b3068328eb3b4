//! The workflow: from the agent's proposal to a policy decision, an approval-queue entry
//! bound to a fingerprint, and an honest reply.
//!
//! Facts are gathered here by code — the customer and orders from our store, charges and
//! refunds fresh from the provider — never taken from the model's words. The policy
//! engine decides; the proposal only says what the customer asks about and which order.
//! The same `gather_facts` runs again at the payment boundary (docs/spec/invariants.md #3).

mod facts;
pub use facts::{
    evidence_hash, gather_facts, gather_facts_resolved, invalid_evidence, repeat_as_claimed,
    Resolved,
};
mod handoff;
mod join;
mod readings;
pub use handoff::{escalate_to_human, hand_to_reviewer, SHADOW_NOTE};
pub use readings::smallest_reading;

use std::collections::BTreeSet;
use std::sync::Arc;

use policy_engine::{Decision, Facts, Outcome, PolicySet, RequestKind};
use rag_index::PolicyIndex;
use serde_json::{json, Value};

use crate::agent::{Exchange, Proposal};
use crate::billing::BillingSource;
use crate::cases::{self, Case, CaseStatus};
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult};
use crate::runs::{self, EventKind, Run};
use crate::tickets::{self, Ticket};
use crate::world::serde_plain;
use store::{Db, Tx};

/// What the policy engine decides with: the policies in force, and where the billing
/// records behind the facts are read (live: store + provider; replay: a world snapshot).
#[derive(Clone, Copy)]
pub struct Rules<'a> {
    pub policies: &'a PolicySet,
    pub billing: &'a dyn BillingSource,
}

/// What the workflow decides a case with: the store it records in, the time, the rules,
/// the policy index (its version is recorded with each decision), and whether live shadow
/// mode holds the agent's decisions back for a reviewer.
#[derive(Clone, Copy)]
pub struct Decider<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub rules: Rules<'a>,
    pub index: &'a Arc<PolicyIndex>,
    pub shadow_mode: bool,
    /// What a run is made with, for a case a joined ticket sends back to investigation.
    pub versions: &'a harness::Versions,
}

/// The index a decision's citations came from: `schema_version:policy_hash`.
pub fn policy_index_version(index: &PolicyIndex) -> String {
    format!("{}:{}", rag_index::SCHEMA_VERSION, index.policy_hash())
}

/// The `decision` event: the decision plus the policy index it was made with.
fn decision_event(decision: &Decision, policy_index: &str) -> Value {
    let mut value = serde_json::to_value(decision).unwrap_or_default();
    if let Value::Object(map) = &mut value {
        map.insert(
            "policy_index".into(),
            Value::String(policy_index.to_string()),
        );
    }
    value
}

/// The decision for a case as the facts stand now; `target` is the order and the earlier
/// order it repeats, as the proposal recorded them (`Proposal::target`).
pub async fn decide_now(
    rules: Rules<'_>,
    ticket: &Ticket,
    request: RequestKind,
    target: (Option<&str>, Option<&str>),
) -> DomainResult<(Facts, Decision)> {
    let facts = gather_facts(rules.billing, ticket, request, target).await?;
    let decision = policy_engine::decide(&facts, rules.policies);
    Ok((facts, decision))
}

/// Turns a recorded proposal into a decision and the case's next state.
// Long because it is one transaction whose order of writes is the race detection (the
// versioned case update first, then run events, reply, mail): split, that order would
// be spread over functions that each could be called alone.
pub async fn decide_case(
    d: Decider<'_>,
    run: &mut Run,
    case: &Case,
    ticket: &Ticket,
    proposal: &Proposal,
    exchanges: &[Exchange],
) -> DomainResult<()> {
    let (db, clock, shadow_mode, d_versions) = (d.db, d.clock, d.shadow_mode, d.versions);
    let d = decide_on_fresh_facts(d, ticket, proposal, exchanges).await?;
    let (proposal, facts, decision) = (&d.proposal, &d.facts, &d.decision);
    let (evidence_hash, invalid, policy_index) = (&d.evidence_hash, &d.invalid, &d.policy_index);
    let now = clock.now_ms();

    let mut tx = db.begin().await?;
    let case = cases::load_case_tx(&mut tx, &case.id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if case.status != CaseStatus::Investigating || case.run_id.as_deref() != Some(run.id.as_str()) {
        // The case moved on (withdrawn, re-investigated by a newer run, decided by another
        // holder of this run): stop quietly. The run is ended with a versioned update, so a
        // worker whose run was advanced elsewhere (its lease lost to the one that decided)
        // writes nothing and stops with `run_changed`, instead of cancelling the run it no
        // longer holds.
        runs::set_status(&mut tx, run, runs::RunStatus::Cancelled, now).await?;
        tx.commit().await?;
        return Ok(());
    }
    // One case per order. The order's claim is written first; a second holder of
    // this run waits on it (PostgreSQL) or runs after it (SQLite) and then fails at the
    // versioned case update below, as before.
    let order = facts.order_id.as_deref();
    if let Some(into) = join::claim_or_join(&mut tx, d_versions, &case, ticket, order, now).await? {
        runs::set_status(&mut tx, run, runs::RunStatus::Completed, now).await?;
        tx.commit().await?;
        tracing::info!(case_id = %case.id, into = %into.id, "second ticket on an order joined its open case");
        return Ok(());
    }
    // From here on, the versioned case update is the transaction's first write: it is what
    // detects a race (two holders of this run, a customer message re-opening the case), so
    // a lost race fails there as `case_changed`, before any run event is appended (on
    // PostgreSQL an event appended first would instead collide on its sequence number).
    // The case's rollout says whether the reviewer works from the agent's
    // proposal or decides blind (read only: the case update below stays the first write).
    // Either way a human approves every refund (RP-004).
    let default = crate::rollout::Mode::default_for(shadow_mode);
    let subject = crate::rollout::Subject::of_facts(facts);
    let rollout = crate::rollout::modes::at_decision(&mut tx, &case.id, &subject, default).await?;
    if !rollout.gets_proposal && invalid.is_empty() {
        hand_to_reviewer(&mut tx, &case, ticket, proposal, facts, decision, now).await?;
        let lang = ticket.language.as_str();
        crate::qa::record_proposal(&mut tx, &case.id, lang, proposal, decision, invalid, now)
            .await?;
        crate::rollout::modes::record_decision(&mut tx, &case.id, &rollout, now).await?;
        append_decision_events(&mut tx, &run.id, &d, now).await?;
        runs::set_status(&mut tx, run, runs::RunStatus::Completed, now).await?;
        tx.commit().await?;
        tracing::info!(case_id = %case.id, "shadow mode: agent decision recorded, case handed to a reviewer");
        return Ok(());
    }
    let to_a_person = if instructed(&d.customer_messages) {
        Some(INSTRUCTED_NOTE)
    } else if unreadable(&d.customer_messages, proposal.request) {
        Some(UNREADABLE_NOTE)
    } else {
        None
    };
    let (status, note) = case_status_for(decision, invalid, to_a_person);
    let answer = next_answer(&mut tx, ticket, status, decision).await?;
    let (status, note) = match answer {
        Answer::HandOver(_) => (CaseStatus::Escalated, Some(REPEAT_NOTE.to_string())),
        _ => (status, note),
    };
    cases::record_decision(
        &mut tx,
        &case,
        &cases::DecisionRecord {
            status,
            proposal: cases::ProposalChange::Decides(proposal),
            facts,
            decision,
            evidence_hash,
            required_role: decision.approver_role,
            reason_code: decision.reason_code,
            void_reason: match note.as_deref() {
                Some(why) => cases::VoidReason::Set(why),
                None => cases::VoidReason::Keep,
            },
            policy_index: Some(policy_index),
            now,
        },
    )
    .await?;
    let lang = ticket.language.as_str();
    crate::qa::record_proposal(&mut tx, &case.id, lang, proposal, decision, invalid, now).await?;
    crate::rollout::modes::record_decision(&mut tx, &case.id, &rollout, now).await?;
    append_decision_events(&mut tx, &run.id, &d, now).await?;
    let run_status = if status == CaseStatus::AwaitingApproval {
        runs::RunStatus::AwaitingApproval
    } else {
        runs::RunStatus::Completed
    };
    runs::set_status(&mut tx, run, run_status, now).await?;
    if matches!(answer, Answer::HandOver(_)) {
        // From now on the case stays with people, whatever the customer says.
        let decided = cases::load_case_tx(&mut tx, &case.id)
            .await?
            .ok_or(DomainError::NotFound("case"))?;
        cases::escalate_to_person(&mut tx, &decided, REPEAT_NOTE, now).await?;
    }
    if let Some(reply) = answer.words() {
        tickets::append_message(&mut tx, &ticket.id, "agent", reply, now).await?;
        // The decision's words go out with it; an escalation waits for a supervisor, who
        // is told of it. The notice is what the customer's page shows of the case: RP-007,
        // another customer's order reads exactly like one that does not exist (a
        // question), never as a decision.
        let shown = crate::replies::customer_status(status, Some(decision.reason_code.as_str()));
        let kind = crate::channels::of_decided(shown);
        crate::channels::tell_customer(&mut tx, kind, &ticket.id, reply, now).await?;
    }
    if status == CaseStatus::Escalated {
        let why = note.as_deref().unwrap_or("escalated by policy");
        cases::routing::escalated(&mut tx, &case.id, why, now).await?;
    }
    let what = format!(
        "{} ({})",
        status.as_str(),
        serde_plain(&decision.reason_code)
    );
    crate::audit::record(&mut tx, "agent", "decided", &case.id, &what, now).await?;
    // RP-007: the security team hears of another customer's order named; the customer
    // is told nothing of it.
    let flag = match (&d.others_order, d.facts.order_ownership) {
        (Some(other), _) => Some(format!("the customer named order {other}, which is another customer's, beside their own order the case is about")),
        (None, policy_engine::Ownership::OtherCustomer) => Some(format!(
            "the customer named order {}, which is another customer's: escalated, nothing disclosed",
            d.facts.order_id.as_deref().unwrap_or("?")
        )),
        _ => None,
    };
    if let Some(why) = flag {
        crate::audit::record(&mut tx, "agent", "security_flag", &case.id, &why, now).await?;
    }
    tx.commit().await?;
    tracing::info!(case_id = %case.id, status = status.as_str(), "case decided");
    Ok(())
}

/// What `decide_case` records: the proposal with its order resolved, the facts gathered
/// by code, the engine's decision, and what the proposal cited that no tool returned.
struct Decided {
    proposal: Proposal,
    customer_messages: Vec<String>,
    /// Another customer's order the customer named (RP-007), flagged for security.
    others_order: Option<String>,
    facts: Facts,
    decision: Decision,
    evidence_hash: String,
    invalid: Vec<String>,
    policy_index: String,
    /// The proposal's refunds and the engine's, as `(charge, amount)`.
    proposed: BTreeSet<(String, String)>,
    decided: BTreeSet<(String, String)>,
}

/// Gathers the facts afresh and asks the engine; reads only, writes nothing.
async fn decide_on_fresh_facts(
    decider: Decider<'_>,
    ticket: &Ticket,
    proposal: &Proposal,
    exchanges: &[Exchange],
) -> DomainResult<Decided> {
    // The order is resolved here, not taken from the model, and stored in the
    // proposal with where it came from, so every later re-decision (payment boundary,
    // takeover) starts from the same inputs and a reviewer sees why this order.
    let messages: Vec<String> = tickets::messages(decider.db, &ticket.id)
        .await?
        .into_iter()
        .filter(|m| m.author == "customer")
        .map(|m| m.body)
        .collect();
    let Resolved {
        facts,
        order_source,
        others_order,
    } = gather_facts_resolved(
        decider.rules.billing,
        ticket,
        &messages,
        proposal.request,
        proposal.order_id.as_deref(),
    )
    .await?;
    let facts = repeat_as_claimed(facts, proposal, order_source);
    let mut proposal = proposal.clone();
    proposal.order_id = facts.order_id.clone();
    proposal.order_source = order_source;
    proposal.repeat_of = facts.repeat_of.clone();
    let policies = decider.rules.policies;
    let decide = |f: &Facts| Ok::<_, std::convert::Infallible>(policy_engine::decide(f, policies));
    let Ok((facts, decision)) = smallest_reading(facts, &proposal.other_readings, decide);
    proposal.request = facts.request;
    let evidence_hash = evidence_hash(&facts);
    let invalid = invalid_evidence(&proposal, exchanges);
    let policy_index = policy_index_version(decider.index);

    // The engine's refunds, not the model's, are what a human is asked to approve.
    let proposed: BTreeSet<(String, String)> = proposal
        .refunds
        .iter()
        .map(|r| (r.charge_id.clone(), r.amount.clone()))
        .collect();
    let decided: BTreeSet<(String, String)> = decision
        .refunds
        .iter()
        .map(|r| (r.charge_id.clone(), r.amount.amount_string()))
        .collect();
    Ok(Decided {
        proposal,
        customer_messages: messages,
        others_order,
        facts,
        decision,
        evidence_hash,
        invalid,
        policy_index,
        proposed,
        decided,
    })
}

/// Why a case that would ask the customer goes to a person instead.
pub const INSTRUCTED_NOTE: &str =
    "the customer's message tries to instruct the agent (RP-007) and the records do not decide the case";

/// Whether the customer's messages carry sentences that try to instruct the agent
/// ("ignore the rules", "the manager approved", 【システム通知】…; `structure`). Nothing
/// they say is read as evidence; when the records then decide nothing, the case goes
/// to a person rather than asking the customer (injection is a reason to
/// decline or escalate, not to ask).
pub fn instructed(customer_messages: &[String]) -> bool {
    // The tiers the investigator and `resolve` read (split once per conversation).
    domain::resolve::Tiers::of(customer_messages).instructed
}

/// Why a case that would ask the customer goes to a person instead: the customer writes
/// in a language we do not answer in and their words name nothing we could read, not even
/// money (docs/spec/domain.md, "Languages").
pub const UNREADABLE_NOTE: &str =
    "the customer writes in a language we do not answer in and their request could not be read";

/// Whether the customer's request could not be read at all: no kind (`Unclear`), in a
/// language we do not answer in, without a word about money. Asking them in the default
/// language what they mean would likely not be read either; a person looks.
pub fn unreadable(customer_messages: &[String], request: RequestKind) -> bool {
    if request != RequestKind::Unclear {
        return false;
    }
    let words = domain::resolve::Tiers::of(customer_messages)
        .decisive
        .join("\n");
    crate::replies::written_in(&words, &words, None).is_none()
        && !crate::agent::investigator::speaks_of_money(&words)
}

/// The case status a decision puts the case in, and the note it keeps: a proposal citing
/// evidence no tool returned goes to a human whatever the engine said, and so does a
/// question to a customer whose messages try to instruct the agent.
/// Why a case went to a person when the agent's answer would have repeated itself.
pub const REPEAT_NOTE: &str =
    "the agent's answer would have repeated one it already sent: a person answers now";

/// What the agent says after a decision (it never sends the same answer twice).
enum Answer {
    /// The decision's reply, new on this ticket.
    Reply(String),
    /// The reply would repeat an earlier one and the agent was answering on its own: the
    /// case goes to a person, and the customer is told so in these words.
    HandOver(String),
    /// The reply would repeat an earlier one and a person already has the case (an
    /// approval, an escalation): the customer is told a person has it, once; `None` when
    /// they were told already.
    PersonHasIt(Option<String>),
}

impl Answer {
    fn words(&self) -> Option<&str> {
        match self {
            Answer::Reply(text) | Answer::HandOver(text) => Some(text),
            Answer::PersonHasIt(text) => text.as_deref(),
        }
    }
}

/// The decision's reply, unless it repeats what the agent already said on the ticket
/// (the same text or the same policy paragraph): then a short honest line in the
/// customer's language that a person takes over. Reads inside `tx`, writes nothing.
async fn next_answer(
    tx: &mut Tx<'_>,
    ticket: &Ticket,
    status: CaseStatus,
    decision: &Decision,
) -> DomainResult<Answer> {
    let reply = crate::replies::decision_reply(ticket.language, status, decision);
    let earlier = tickets::agent_replies_tx(tx, &ticket.id).await?;
    if !crate::replies::repeats_an_earlier_answer(&earlier, &reply) {
        return Ok(Answer::Reply(reply));
    }
    let person = crate::replies::person_reply(ticket.language);
    if status.may_go_to_a_person() {
        return Ok(Answer::HandOver(person));
    }
    let told = crate::replies::repeats_an_earlier_answer(&earlier, &person);
    Ok(Answer::PersonHasIt((!told).then_some(person)))
}

fn case_status_for(
    decision: &Decision,
    invalid: &[String],
    to_a_person: Option<&str>,
) -> (CaseStatus, Option<String>) {
    if !invalid.is_empty() {
        return (
            CaseStatus::Escalated,
            Some("the proposal cites evidence no tool returned".into()),
        );
    }
    if let Some(why) = to_a_person.filter(|_| decision.outcome == Outcome::RequestInfo) {
        return (CaseStatus::Escalated, Some(why.into()));
    }
    match decision.outcome {
        Outcome::Allow => (CaseStatus::AwaitingApproval, None),
        Outcome::Deny => (CaseStatus::Denied, None),
        Outcome::RequestInfo => (CaseStatus::AwaitingCustomer, None),
        Outcome::Escalate => (
            CaseStatus::Escalated,
            decision.escalation.as_ref().map(|e| e.reason.clone()),
        ),
    }
}

/// The `decision` event, and `proposal_overridden` when the engine's refunds differ from
/// the model's. Appended after the case's versioned update (see `decide_case`).
/// The run's record of a decision, in this order: `decision`, `proposal_overridden` when
/// the engine's refunds differ from the proposal's, `evidence_rejected` when it cited
/// what no tool returned.
async fn append_decision_events(
    tx: &mut store::Tx<'_>,
    run_id: &str,
    d: &Decided,
    now: i64,
) -> DomainResult<()> {
    let Decided {
        decision,
        policy_index,
        proposed,
        decided,
        invalid,
        ..
    } = d;
    runs::append_event(
        tx,
        run_id,
        EventKind::Decision,
        None,
        &decision_event(decision, policy_index),
        now,
    )
    .await?;
    if proposed != decided {
        runs::append_event(
            tx,
            run_id,
            EventKind::ProposalOverridden,
            None,
            &json!({ "proposed": proposed, "decided": decided }),
            now,
        )
        .await?;
    }
    if !invalid.is_empty() {
        let invalid = json!({ "invalid": invalid });
        runs::append_event(tx, run_id, EventKind::EvidenceRejected, None, &invalid, now).await?;
    }
    Ok(())
}
