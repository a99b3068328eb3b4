//! The case page's verdict forms: approve, and reject with the reviewer's own
//! message to the customer in the same submit; each with "& next", which goes on to the
//! next case of the queue tab the reviewer works in. A verdict that came too late —
//! someone else decided first, or the refund changed — is told in words next to the
//! buttons, with who did what, instead of the raw state. Beside them: handing a refund
//! above the caller's limit up to those who may approve it, and taking an escalated case
//! over.
//!
//! It decides nothing itself: `desk::approvals` checks the fingerprint, RP-004 and the
//! case's state, in one transaction.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use crate::error::{status_of, AppError};
use crate::extract::Authed;
use crate::state::AppState;
use desk::approvals::{self, Verdict};
use desk::auth::Session;
use desk::error::{DomainError, ErrorCode};

use super::case::{after_action, case_page_response};
use super::case::{case_page_with, Refusal, Shown};
use super::case_replies::Kept;
use super::common::{has_csrf, or_page, verified, with_status, CsrfForm, Verified};

#[derive(Deserialize)]
pub(super) struct DecideForm {
    csrf: String,
    fingerprint: String,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    /// The message to the customer, in the reviewer's words: a rejection's, or an
    /// approval's when the customer asked for a person.
    #[serde(default)]
    reply: Option<String>,
    /// The queue tab the reviewer works in.
    #[serde(default)]
    tab: Option<String>,
    /// `next`: go on to the tab's next case after the verdict.
    #[serde(default)]
    then: Option<String>,
}

pub(super) async fn approve_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    decide_submit(state, session, id, form, Verdict::Approved).await
}

pub(super) async fn reject_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    decide_submit(state, session, id, form, Verdict::Rejected).await
}

async fn decide_submit(
    state: AppState,
    session: Result<Session, AppError>,
    id: String,
    form: DecideForm,
    verdict: Verdict,
) -> Response {
    let session = or_page!(verified(session, &form.csrf));
    let text = |t: &Option<String>| {
        t.as_deref()
            .map(|t| t.replace("\r\n", "\n"))
            .filter(|t| !t.trim().is_empty())
    };
    let (note, reply) = match verdict {
        Verdict::Approved => (text(&form.note), text(&form.reply)),
        Verdict::Rejected => (text(&form.reason), text(&form.reply)),
    };
    let result = match (verdict, &note) {
        (Verdict::Rejected, None) => Err(DomainError::bad_request(
            ErrorCode::MissingReason,
            "a rejection needs a reason (kept with staff; the customer gets the message)",
        )),
        _ => {
            let (fingerprint, note, reply) = (&form.fingerprint, note.as_deref(), reply.as_deref());
            let (desk, staff) = (state.desk(), &session.staff);
            approvals::decide(desk, staff, &id, fingerprint, verdict, note, reply).await
        }
    };
    match result {
        Ok(_) => after_verdict(&state, &session, &id, &form, verdict).await,
        Err(e) => refused(&state, &session, &id, &form, e).await,
    }
}

/// Where a verdict sends the reviewer: the case again, or with "& next" the tab's next
/// case (the queue itself when the tab is empty).
async fn after_verdict(
    state: &AppState,
    session: &Session,
    id: &str,
    form: &DecideForm,
    verdict: Verdict,
) -> Response {
    let tab = form
        .tab
        .as_deref()
        .filter(|t| super::queue::known_filter(t))
        .unwrap_or("needs_person");
    let done = match verdict {
        Verdict::Approved => "approved",
        Verdict::Rejected => "rejected",
    };
    if form.then.as_deref() != Some("next") {
        return Redirect::to(&format!("/console/cases/{id}?tab={tab}&done={done}")).into_response();
    }
    let next = match desk::cases::load_case(&state.db, id).await {
        Ok(Some(case)) => super::queue::neighbours(state, session, tab, &case)
            .await
            .map(|(_, _, then)| then),
        Ok(None) => Ok(None),
        Err(e) => Err(AppError::from(e)),
    };
    match next {
        Ok(Some(next)) => {
            Redirect::to(&format!("/console/cases/{next}?tab={tab}&done={done}_next"))
                .into_response()
        }
        // The run's last verdict: the queue says so (it would otherwise look as if
        // nothing had happened).
        Ok(None) => Redirect::to(&format!("/console?status={tab}&done={done}")).into_response(),
        Err(e) => e.into_response(),
    }
}

/// A refused verdict: the case page, the reason next to the buttons — for a verdict that
/// came too late, in words — and what was typed kept.
async fn refused(
    state: &AppState,
    session: &Session,
    id: &str,
    form: &DecideForm,
    error: DomainError,
) -> Response {
    let message = match error.code() {
        ErrorCode::InvalidState | ErrorCode::StaleFingerprint | ErrorCode::CaseChanged => {
            too_late(state, id).await
        }
        _ => None,
    };
    let refusal = Refusal {
        form: "decide",
        message: Some(message.unwrap_or_else(|| error.public_message())),
        kept: Kept {
            note: form.note.clone().unwrap_or_default(),
            reason: form.reason.clone().unwrap_or_default(),
            reject_reply: form.reply.clone(),
            ..Kept::default()
        },
    };
    let shown = Shown {
        tab: form.tab.as_deref(),
        ..Shown::refused(refusal)
    };
    with_status(
        status_of(&error),
        case_page_with(state, session, id, shown).await,
    )
}

/// The moment `at_ms` (milliseconds since the epoch) names; the epoch for one out of range.
fn moment_of(at_ms: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at_ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// Why a verdict came too late, in words: who decided first and when, or what changed.
async fn too_late(state: &AppState, id: &str) -> Option<String> {
    let case = desk::cases::load_case(&state.db, id).await.ok()??;
    let timeline = desk::audit::case_timeline(&state.db, id).await.ok()?;
    let last = timeline
        .iter()
        .rev()
        .find(|e| matches!(e.action.as_str(), "approved" | "rejected" | "closed"));
    let now = case.status.label();
    let why = match last {
        Some(entry) => format!(
            "{} {} this case at {} — before you did. It is now: {now}.",
            entry.who,
            entry.action,
            super::common::utc_words(moment_of(entry.at))
        ),
        None if case.status == desk::cases::CaseStatus::AwaitingApproval => format!(
            "The refund changed since you opened the page ({}); review it below and decide again.",
            case.void_reason.as_deref().unwrap_or("new facts")
        ),
        None => format!("The case moved on while you looked at it. It is now: {now}."),
    };
    Some(format!("Nothing was done: {why}"))
}

#[derive(Deserialize)]
pub(super) struct HandUpForm {
    csrf: String,
    fingerprint: String,
    note: String,
}

/// `POST /console/cases/{id}/handup`: a refund above the caller's limit, handed up to
/// those who may approve it, with a note.
pub(super) async fn handup_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<HandUpForm>,
) -> Response {
    let input = approvals::HandUp {
        fingerprint: form.fingerprint,
        note: form.note,
    };
    let result = approvals::hand_up(state.desk(), &session.staff, &id, &input).await;
    after_action(&state, &session, &id, result, "handed_up").await
}

pub(super) async fn takeover_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, _form): Verified<CsrfForm>,
) -> Response {
    match approvals::take_over(state.desk(), &session.staff, &id).await {
        Ok(_) => Redirect::to(&format!("/console/cases/{id}")).into_response(),
        Err(e) => with_status(
            status_of(&e),
            case_page_response(&state, &session, &id, Some(e.public_message())).await,
        ),
    }
}

has_csrf!(HandUpForm);
