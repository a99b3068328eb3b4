//! Staff work on a case's conversation: a reply to the customer, an internal
//! note, closing a case by hand (optionally with a reply), and who works on a case.
//!
//! The rules live here; the rows are written by their owners — replies by `tickets`
//! (`messages`), notes, closing and assignment by `cases` (`case_notes`, `cases`),
//! unsent intents voided by `refunds` — each action in one transaction with its audit
//! line, so bad input or a refusal writes nothing. An internal note is stored apart from
//! the customer's messages and no customer surface reads it.

use serde::Deserialize;

use crate::approvals::Desk;
use crate::auth::{Staff, StaffRole};
use crate::cases::{self, Case};
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::tickets::validate_message;
use crate::views::{CaseThread, CaseView};

/// The longest close reason kept (the same bound as an approval's note).
const MAX_REASON_CHARS: usize = 2000;

/// `POST /api/v1/cases/{id}/messages`: a reply to the customer, or an internal note.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StaffMessage {
    pub text: String,
    /// `true`: an internal note, seen by staff only; `false`: a reply the customer sees.
    pub internal: bool,
}

/// `POST /api/v1/cases/{id}/close` (supervisor).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseCase {
    /// Why the case is closed (kept on the case and in the audit log).
    pub reason: String,
    /// A last reply to the customer, if any.
    #[serde(default)]
    pub reply: Option<String>,
}

/// `POST /api/v1/cases/{id}/assign`: no email takes the case yourself.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignCase {
    #[serde(default)]
    pub email: Option<String>,
}

async fn existing_case(desk: Desk<'_>, case_id: &str) -> DomainResult<Case> {
    cases::load_case(desk.db, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))
}

/// Writes a staff reply or an internal note on a case; returns the case's thread.
pub async fn post_message(
    desk: Desk<'_>,
    staff: &Staff,
    case_id: &str,
    message: &StaffMessage,
) -> DomainResult<CaseThread> {
    let text = validate_message(&message.text)?;
    let case = existing_case(desk, case_id).await?;
    let now = desk.clock.now_ms();
    let mut tx = desk.db.begin().await?;
    if message.internal {
        let note_id = cases::add_note(&mut tx, &case.id, &staff.id, &text, now).await?;
        crate::audit::record(&mut tx, &staff.id, "internal_note", &case.id, &note_id, now).await?;
    } else {
        reply(&mut tx, &case, staff, &text, now).await?;
        // The customer is told of the reply on every channel (docs/spec/email.md).
        let kind = crate::channels::Notice::Reply;
        crate::channels::tell_customer(&mut tx, kind, &case.ticket_id, &text, now).await?;
    }
    tx.commit().await?;
    tracing::info!(case_id = %case.id, staff_id = %staff.id, internal = message.internal, "staff message recorded");
    crate::views::thread(desk.db, &case).await
}

/// A reply to the customer on the case's ticket, with its audit line.
async fn reply(
    tx: &mut store::Tx<'_>,
    case: &Case,
    staff: &Staff,
    text: &str,
    now: i64,
) -> DomainResult<()> {
    let seq = crate::tickets::append_staff_reply(tx, &case.ticket_id, &staff.id, text, now).await?;
    let detail = format!("ticket {} message {seq}", case.ticket_id);
    crate::audit::record(tx, &staff.id, "staff_reply", &case.id, &detail, now).await
}

/// Staff close a case, optionally with a last reply to the customer. A closed case can
/// never be approved or executed afterwards (`cases::close`); a case with a refund in
/// flight cannot be closed, and one awaiting approval only by someone who could approve
/// its refund.
pub async fn close(
    desk: Desk<'_>,
    staff: &Staff,
    case_id: &str,
    input: &CloseCase,
) -> DomainResult<CaseView> {
    let reason = input.reason.trim();
    if reason.is_empty() {
        return Err(DomainError::bad_request(
            ErrorCode::MissingReason,
            "closing a case needs a reason",
        ));
    }
    if reason.chars().count() > MAX_REASON_CHARS {
        return Err(DomainError::bad_request(
            ErrorCode::ReasonTooLong,
            format!("reasons are at most {MAX_REASON_CHARS} characters"),
        ));
    }
    let reply_text = input.reply.as_deref().map(validate_message).transpose()?;
    let now = desk.clock.now_ms();
    let mut tx = desk.db.begin().await?;
    // Read inside the transaction: `cases::close` is versioned against this read, so a
    // case the executor or a reviewer moved meanwhile is `case_changed`, nothing written.
    let case = cases::load_case_tx(&mut tx, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    // docs/spec/roles.md: closing a case that awaits a refund's approval turns the refund
    // down, which needs the authority to approve it (RP-004), like a rejection.
    if case.status == cases::CaseStatus::AwaitingApproval {
        crate::approvals::may_turn_down(staff, &case)?;
    }
    cases::close(&mut tx, &case, reason, now).await?;
    crate::refunds::void_unsent(&mut tx, &case.id, now).await?;
    crate::audit::record(&mut tx, &staff.id, "closed", &case.id, reason, now).await?;
    if let Some(text) = &reply_text {
        reply(&mut tx, &case, staff, text, now).await?;
    }
    // One notice says the case is closed, with the last reply when there is one.
    let body = reply_text.as_deref().unwrap_or("");
    let kind = crate::channels::Notice::Closed;
    crate::channels::tell_customer(&mut tx, kind, &case.ticket_id, body, now).await?;
    tx.commit().await?;
    crate::views::current_view(desk.db, case_id).await
}

/// Assigns a case: to the caller when `email` is absent (or their own), else to that
/// staff member — which only a supervisor or admin may do.
pub async fn assign(
    desk: Desk<'_>,
    staff: &Staff,
    case_id: &str,
    input: &AssignCase,
) -> DomainResult<CaseView> {
    let email = input
        .email
        .as_deref()
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty());
    let assignee = match email {
        None => staff.clone(),
        Some(email) if email == staff.email => staff.clone(),
        Some(email) => {
            if staff.role < StaffRole::Supervisor {
                return Err(DomainError::Forbidden(
                    "agents may only take a case themselves".into(),
                ));
            }
            crate::auth::staff_by_email(desk.db, &email)
                .await?
                .ok_or_else(|| {
                    DomainError::bad_request(
                        ErrorCode::UnknownStaff,
                        "no staff member has that email",
                    )
                })?
        }
    };
    // docs/spec/roles.md: a case goes only to someone who may work on it.
    if assignee.role < StaffRole::Agent {
        return Err(DomainError::bad_request(
            ErrorCode::AssigneeCannotWorkCases,
            format!("a {} does not work on cases", assignee.role.as_str()),
        ));
    }
    let case = existing_case(desk, case_id).await?;
    let now = desk.clock.now_ms();
    let mut tx = desk.db.begin().await?;
    cases::assign(&mut tx, &case.id, Some(&assignee.id)).await?;
    // Staff hear by mail of a case someone else assigned to them.
    if assignee.id != staff.id {
        let why = format!("{} assigned this case to you", staff.email);
        let kind = crate::channels::Notice::StaffAssigned;
        crate::channels::tell_staff(&mut tx, kind, &assignee.id, &case.id, &why, now).await?;
    }
    crate::audit::record(
        &mut tx,
        &staff.id,
        "assigned",
        &case.id,
        &assignee.email,
        now,
    )
    .await?;
    tx.commit().await?;
    crate::views::current_view(desk.db, case_id).await
}
