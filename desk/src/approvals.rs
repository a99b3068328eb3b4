//! Approvals: a human's yes or no on the exact refund shown, bound to its fingerprint.
//!
//! An approval is accepted only for a case awaiting approval, with the fingerprint the
//! case holds now (else 409), from a role RP-004 allows for the amount (else 403). One
//! proposal takes one verdict: concurrent reviewers race on a unique row and a versioned
//! update, and exactly one wins (docs/spec/invariants.md #1, 2 and 12).

use crate::auth::{constant_time_eq, Staff};
use crate::cases::{self, CaseStatus};
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::replies::{self, Language};
use crate::views::CaseView;
use crate::workflow::Rules;
use store::{Db, Tx};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approved,
    Rejected,
}

/// What a staff member's action on a case works with: the store, the time, the rules a
/// takeover or a hand decision is checked against on fresh facts, and the worker's
/// wake-up, rung once an approval is committed.
#[derive(Clone, Copy)]
pub struct Desk<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub rules: Rules<'a>,
    pub wake: &'a tokio::sync::Notify,
}

/// Records a verdict. Returns the case as it stands afterwards. A rejection sends the
/// customer `reply` when there is one (the reviewer's own words in the same
/// submit), else the standard rejection in their language; either is the reviewer's
/// message, labelled with their name, never the AI agent's.
pub async fn decide(
    desk: Desk<'_>,
    staff: &Staff,
    case_id: &str,
    fingerprint: &str,
    verdict: Verdict,
    note: Option<&str>,
    reply: Option<&str>,
) -> DomainResult<CaseView> {
    if note.is_some_and(|n| n.chars().count() > 2000) {
        return Err(DomainError::bad_request(
            ErrorCode::NoteTooLong,
            "notes are at most 2000 characters",
        ));
    }
    let reply = reply
        .filter(|r| !r.trim().is_empty())
        .map(crate::tickets::validate_message)
        .transpose()?;
    if let Some(text) = &reply {
        crate::saved_replies::check_no_placeholder(text)?;
    }
    let now = desk.clock.now_ms();
    let mut tx = desk.db.begin().await?;
    let case = awaiting_with_fingerprint(&mut tx, case_id, fingerprint).await?;
    let current = case.fingerprint.clone().unwrap_or_default();
    let decision = case
        .decision()
        .ok_or_else(|| anyhow::anyhow!("case {} awaits approval without a decision", case.id))?;
    may_decide(&mut tx, staff, &case).await?;
    let person_awaited = cases::person_awaited(&mut tx, &case).await?;
    if verdict == Verdict::Approved && person_awaited && reply.is_none() {
        return Err(person_requested(&case));
    }
    let approval_id = cases::record_approval(
        &mut tx,
        &case,
        &current,
        &staff.id,
        verdict == Verdict::Approved,
        note,
        now,
    )
    .await?;
    record_check(&mut tx, desk, staff, &case, &decision, verdict, now).await?;
    match verdict {
        Verdict::Approved => {
            crate::refunds::create_intents(&mut tx, &case, &approval_id, &decision, now).await?;
            cases::transition(&mut tx, &case, CaseStatus::Approved, now).await?;
            // "Approved", in its own words (not sent yet, RP-005); with the reviewer's
            // reply when the customer asked for a person, or when one was written.
            let words = reply.as_deref().unwrap_or("");
            if !words.is_empty() {
                let ticket = &case.ticket_id;
                crate::tickets::append_staff_reply(&mut tx, ticket, &staff.id, words, now).await?;
            }
            let kind = crate::channels::Notice::Approved;
            crate::channels::tell_customer(&mut tx, kind, &case.ticket_id, words, now).await?;
            crate::audit::record(
                &mut tx,
                &staff.id,
                "approved",
                &case.id,
                &format!("fingerprint {current}"),
                now,
            )
            .await?;
        }
        Verdict::Rejected => {
            cases::transition(&mut tx, &case, CaseStatus::Rejected, now).await?;
            let language: String = sqlx::query_scalar("SELECT language FROM tickets WHERE id = $1")
                .bind(case.ticket_id.as_str())
                .fetch_one(&mut *tx)
                .await?;
            let reply =
                reply.unwrap_or_else(|| replies::rejection_reply(Language::from_stored(&language)));
            let ticket = &case.ticket_id;
            crate::tickets::append_staff_reply(&mut tx, ticket, &staff.id, &reply, now).await?;
            let kind = crate::channels::Notice::Rejected;
            crate::channels::tell_customer(&mut tx, kind, &case.ticket_id, &reply, now).await?;
            crate::audit::record(
                &mut tx,
                &staff.id,
                "rejected",
                &case.id,
                note.unwrap_or(""),
                now,
            )
            .await?;
        }
    }
    tx.commit().await?;
    tracing::info!(case_id = %case.id, staff_id = %staff.id, ?verdict, "verdict recorded");
    desk.wake.notify_one();
    crate::views::current_view(desk.db, case_id).await
}

/// The verdict checked against the policy in force now (`qa`), in the verdict's
/// transaction.
async fn record_check(
    tx: &mut Tx<'_>,
    desk: Desk<'_>,
    staff: &Staff,
    case: &cases::Case,
    decision: &policy_engine::Decision,
    verdict: Verdict,
    now: i64,
) -> DomainResult<()> {
    let approved = verdict == Verdict::Approved;
    let (within, policy_outcome, why) = crate::qa::check_verdict(
        desk.rules.policies,
        case.facts.as_deref(),
        decision,
        approved,
    );
    let language = crate::qa::ticket_language(tx, case.ticket_id.as_str()).await?;
    let (action, outcome) = if approved {
        (crate::qa::Action::Approve, "refund")
    } else {
        (crate::qa::Action::Reject, "no_refund")
    };
    let reason = crate::world::serde_plain(&decision.reason_code);
    let check = crate::qa::Check {
        case_id: case.id.as_str(),
        actor: &staff.id,
        action,
        outcome,
        reason: &reason,
        language: &language,
        within_policy: within,
        policy_outcome,
        why: &why,
        now,
    };
    crate::qa::record(tx, &check).await
}

/// The refusal of an approval without a word to a customer who asked for a person.
fn person_requested(case: &cases::Case) -> DomainError {
    DomainError::conflict(
        ErrorCode::PersonRequested,
        format!(
            "the customer asked for a person on case {}: write them a reply with the approval",
            case.id
        ),
    )
}

/// Whether `staff` may give a verdict (RP-004): approving and rejecting both need the
/// role the decision requires (a supervisor when none is recorded), and nobody decides
/// on a refund they proposed.
async fn may_decide(
    tx: &mut store::Tx<'_>,
    staff: &Staff,
    case: &crate::cases::Case,
) -> DomainResult<()> {
    // docs/spec/roles.md: rejecting needs the authority approving needs (RP-004); an
    // agent hands a refund above its limit up instead (`hand_up`).
    may_turn_down(staff, case)?;
    // docs/spec/roles.md / RP-004: nobody approves a refund they proposed. Proposals come from the
    // agent; a staff member who authored one (manual takeover) is recorded as `proposer`.
    let proposed = sqlx::query(
        "SELECT COUNT(*) AS n FROM audit_log WHERE subject = $1 AND action = 'proposed_by_staff' AND actor = $2",
    )
    .bind(case.id.as_str())
    .bind(&staff.id)
    .fetch_one(&mut **tx)
    .await?;
    if sqlx::Row::try_get::<i64, _>(&proposed, "n")? > 0 {
        return Err(DomainError::Forbidden(
            "nobody approves a refund they proposed or took over".into(),
        ));
    }
    Ok(())
}

/// The role a case's refund needs to be approved (a supervisor when none is recorded).
fn required_role(case: &cases::Case) -> DomainResult<policy_engine::Role> {
    Ok(case
        .required_role
        .unwrap_or(policy_engine::Role::Supervisor))
}

/// Whether `staff` has the authority RP-004 asks to approve this case's refund — which
/// approving it, rejecting it and closing it while it awaits approval all need.
pub fn may_turn_down(staff: &Staff, case: &cases::Case) -> DomainResult<()> {
    let required = required_role(case)?;
    if staff.role.may_approve(required) {
        Ok(())
    } else {
        Err(DomainError::Forbidden(format!(
            "this refund needs a {} to approve or reject it; hand it up instead",
            crate::world::serde_plain(&required)
        )))
    }
}

/// `POST /api/v1/cases/{id}/handup`: an agent hands a refund above its RP-004 limit up
/// to the supervisors, with a note (an internal note on the case). The case stays
/// awaiting approval, unassigned, in the supervisors' "Needs me".
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HandUp {
    /// The fingerprint of the refund as it was shown (a stale one is 409).
    pub fingerprint: String,
    /// Why, for the supervisor (required).
    pub note: String,
}

/// Hands a refund the caller may not approve up to those who may. Returns the case.
pub async fn hand_up(
    desk: Desk<'_>,
    staff: &Staff,
    case_id: &str,
    input: &HandUp,
) -> DomainResult<CaseView> {
    let note = input.note.trim();
    if note.is_empty() || note.chars().count() > 2000 {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidNote,
            "handing a refund up needs a note of 1 to 2000 characters",
        ));
    }
    let now = desk.clock.now_ms();
    let mut tx = desk.db.begin().await?;
    let case = awaiting_with_fingerprint(&mut tx, case_id, &input.fingerprint).await?;
    if staff.role.may_approve(required_role(&case)?) {
        return Err(DomainError::conflict(
            ErrorCode::WithinYourAuthority,
            "you may approve or reject this refund yourself",
        ));
    }
    let text = format!("Handed up: {note}");
    let note_id = cases::add_note(&mut tx, &case.id, &staff.id, &text, now).await?;
    cases::assign(&mut tx, &case.id, None).await?;
    crate::audit::record(&mut tx, &staff.id, "handed_up", &case.id, &note_id, now).await?;
    // A refund handed up waits for a supervisor: they are told of it.
    crate::channels::tell_supervisors(&mut tx, &case.id, note, now).await?;
    tx.commit().await?;
    tracing::info!(case_id = %case.id, staff_id = %staff.id, "refund handed up");
    crate::views::current_view(desk.db, case_id).await
}

/// The case, read in `tx`, if it awaits approval under exactly `fingerprint`.
async fn awaiting_with_fingerprint(
    tx: &mut Tx<'_>,
    case_id: &str,
    fingerprint: &str,
) -> DomainResult<cases::Case> {
    let case = cases::load_case_tx(tx, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if case.status != CaseStatus::AwaitingApproval {
        return Err(DomainError::conflict(
            ErrorCode::InvalidState,
            format!(
                "the case is {}, not awaiting approval",
                case.status.as_str()
            ),
        ));
    }
    let current = case.fingerprint.clone().unwrap_or_default();
    if current.is_empty() || !constant_time_eq(fingerprint.trim(), &current) {
        return Err(DomainError::conflict(
            ErrorCode::StaleFingerprint,
            "the refund changed since it was shown; review the current proposal",
        ));
    }
    Ok(case)
}

/// A supervisor takes over an escalated case and proposes, by hand, what the policy
/// allows on fresh facts. The same policy check and approval rules apply: the result
/// waits for approval by somebody else (nobody approves a case they took over).
pub async fn take_over(desk: Desk<'_>, staff: &Staff, case_id: &str) -> DomainResult<CaseView> {
    if staff.role < crate::auth::StaffRole::Supervisor {
        return Err(DomainError::Forbidden(
            "only supervisors take over escalated cases".into(),
        ));
    }
    let case = cases::load_case(desk.db, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if case.status != CaseStatus::Escalated {
        return Err(DomainError::conflict(
            ErrorCode::InvalidState,
            format!("the case is {}, not escalated", case.status.as_str()),
        ));
    }
    // Live shadow mode: a case whose blind hand decision is still awaited keeps the agent's
    // side hidden; a takeover would show what the agent decided (docs/spec/roles.md).
    if crate::shadow_pairs::pending(desk.db, case_id).await? {
        return Err(DomainError::conflict(
            ErrorCode::ShadowDecisionPending,
            "this case waits for a blind hand decision; decide it by hand first",
        ));
    }
    let ticket = crate::tickets::load_ticket(desk.db, &case.ticket_id)
        .await?
        .ok_or(DomainError::NotFound("ticket"))?;
    let proposal: Option<crate::agent::Proposal> = case
        .proposal
        .as_deref()
        .and_then(|p| serde_json::from_str(p).ok());
    let (request, order_id, repeat_of) = match &proposal {
        Some(p) => (p.request, p.order_id.clone(), p.repeat_of.clone()),
        None => (
            policy_engine::RequestKind::Unclear,
            ticket.order_id.as_ref().map(|o| o.to_string()),
            None,
        ),
    };
    let target = (order_id.as_deref(), repeat_of.as_deref());
    let (facts, decision) =
        crate::workflow::decide_now(desk.rules, &ticket, request, target).await?;
    if decision.refunds.is_empty() {
        return Err(DomainError::conflict(
            ErrorCode::PolicyAllowsNoRefund,
            "the policy allows no refund on these facts; answer the customer, or close the case with a reply",
        ));
    }
    let now = desk.clock.now_ms();
    let evidence_hash = crate::workflow::evidence_hash(&facts);
    let required = decision
        .approver_role
        .unwrap_or(policy_engine::Role::Supervisor)
        .max(policy_engine::Role::Supervisor);
    let void_reason = format!("taken over by {}", staff.email);
    let mut tx = desk.db.begin().await?;
    // Versioned against the escalated case checked above: a case that moved on meanwhile
    // fails with `case_changed` and nothing is written.
    let record = cases::DecisionRecord {
        status: CaseStatus::AwaitingApproval,
        proposal: cases::ProposalChange::Renews,
        facts: &facts,
        decision: &decision,
        evidence_hash: &evidence_hash,
        required_role: Some(required),
        reason_code: decision.reason_code,
        void_reason: cases::VoidReason::Set(&void_reason),
        policy_index: None,
        now,
    };
    record_staff_proposal(&mut tx, &case, &record, staff, "takeover").await?;
    tx.commit().await?;
    crate::views::current_view(desk.db, case_id).await
}

/// Records a decision a staff member proposed (a takeover, a reviewer's hand decision):
/// it awaits somebody else's approval, bound to its fingerprint, and the audit log names
/// who proposed it and how.
pub async fn record_staff_proposal(
    tx: &mut Tx<'_>,
    case: &cases::Case,
    record: &cases::DecisionRecord<'_>,
    staff: &Staff,
    how: &str,
) -> DomainResult<()> {
    let recorded = cases::record_decision(tx, case, record).await?;
    let fingerprint = recorded
        .fingerprint
        .expect("a decision that awaits approval always has a fingerprint");
    let what = format!("{how}, fingerprint {fingerprint}");
    crate::audit::record(
        tx,
        &staff.id,
        "proposed_by_staff",
        &case.id,
        &what,
        record.now,
    )
    .await
}
