//! A case to a human: the agent could not finish (escalate_to_human), or live shadow
//! mode holds the agent's decision back for a reviewer (hand_to_reviewer).

use policy_engine::Decision;
use serde_json::{json, Value};

use crate::agent::{Exchange, Proposal};
use crate::cases::{self, Case, CaseStatus};
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult};
use crate::replies;
use crate::runs::{self, Run};
use crate::tickets::{self, Ticket};
use store::{Db, Tx};

/// Hands a case to a human when the agent cannot finish: with what it verified, what is
/// open and what it did (docs/spec/invariants.md, budgets).
pub async fn escalate_to_human(
    db: &Db,
    clock: &dyn Clock,
    run: &mut Run,
    case: &Case,
    ticket: &Ticket,
    why: &str,
    exchanges: &[Exchange],
) -> DomainResult<()> {
    let now = clock.now_ms();
    let verified: Vec<Value> = exchanges
        .iter()
        .filter(|x| x.outcome.ok)
        .map(
            |x| json!({ "call_id": x.call.id, "tool": x.call.name, "arguments": x.call.arguments }),
        )
        .collect();
    let failed: Vec<Value> = exchanges
        .iter()
        .filter(|x| !x.outcome.ok)
        .map(|x| json!({ "call_id": x.call.id, "tool": x.call.name, "error": x.outcome.content }))
        .collect();
    let summary = json!({
        "reason": why,
        "verified_tool_calls": verified,
        "failed_tool_calls": failed,
        "open_questions": ["what the customer is owed has not been decided"],
        "actions_taken": "none: the agent has no write access",
    });
    let mut tx = db.begin().await?;
    let case = cases::load_case_tx(&mut tx, &case.id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if case.status == CaseStatus::Investigating && case.run_id.as_deref() == Some(run.id.as_str()) {
        // The versioned update comes first, as in `decide_case`: a lost race fails here as
        // `case_changed` (roll back; the next pass sees the new state), not on the run
        // event's sequence number.
        cases::escalate(&mut tx, &case, why, now).await?;
        let reply = crate::replies::escalation_reply(ticket.language);
        tickets::append_message(&mut tx, &ticket.id, "agent", &reply, now).await?;
        let kind = crate::channels::Notice::Reply;
        crate::channels::tell_customer(&mut tx, kind, &ticket.id, &reply, now).await?;
        cases::routing::escalated(&mut tx, &case.id, why, now).await?;
        crate::audit::record(&mut tx, "agent", "escalated", &case.id, why, now).await?;
    }
    runs::append_event(
        &mut tx,
        &run.id,
        runs::EventKind::Escalated,
        None,
        &summary,
        now,
    )
    .await?;
    runs::set_status(&mut tx, run, runs::RunStatus::Failed, now).await?;
    tx.commit().await?;
    tracing::warn!(case_id = %case.id, why, "case escalated to a human");
    Ok(())
}

pub const SHADOW_NOTE: &str = "shadow mode: decide by hand";

/// Records the agent's decision privately and hands the case to a human.
pub async fn hand_to_reviewer(
    tx: &mut Tx<'_>,
    case: &Case,
    ticket: &Ticket,
    proposal: &Proposal,
    facts: &policy_engine::Facts,
    decision: &Decision,
    now: i64,
) -> DomainResult<()> {
    // The case keeps the facts (billing records, not conclusions) and nothing else of
    // the agent's: no proposal, decision, reason or fingerprint a reviewer could anchor on.
    // The versioned update is the first write: a lost race fails here as `case_changed`.
    cases::hold_for_review(tx, case, facts, SHADOW_NOTE, now).await?;
    crate::shadow_pairs::record_agent_side(tx, &case.id, decision, proposal, now).await?;
    let reply = replies::shadow_review_reply(ticket.language);
    tickets::append_message(tx, &ticket.id, "agent", &reply, now).await?;
    let kind = crate::channels::Notice::Reply;
    crate::channels::tell_customer(tx, kind, &ticket.id, &reply, now).await?;
    crate::audit::record(
        tx,
        "agent",
        "shadow_recorded",
        &case.id,
        "agent decision recorded; awaiting a human decision",
        now,
    )
    .await?;
    Ok(())
}
