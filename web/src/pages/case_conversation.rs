//! The case page's conversation forms: a reply or an internal note, closing the case
//! (with an optional last reply), assigning it, and clearing a customer address a bounce
//! marked undeliverable. A refused form is shown again next to what was typed.
//!
//! It decides nothing itself: `desk::conversation` does, in one transaction each.

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use crate::state::AppState;
use desk::error::DomainError;

use super::case::{after_action, after_form, Refusal};
use super::common::{has_csrf, Verified};

#[derive(Deserialize)]
pub(super) struct MessageForm {
    csrf: String,
    text: String,
    /// The button pressed: `true` for an internal note, `false` for a reply.
    #[serde(default)]
    internal: Option<String>,
}

pub(super) async fn message_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<MessageForm>,
) -> Response {
    let internal = form.internal.as_deref() == Some("true");
    let message = desk::conversation::StaffMessage {
        text: form.text.replace("\r\n", "\n"),
        internal,
    };
    // A customer never receives a literal `{name}`.
    let result = match internal {
        true => Ok(()),
        false => desk::saved_replies::check_no_placeholder(&message.text),
    };
    let result = match result {
        Ok(()) => desk::conversation::post_message(state.desk(), &session.staff, &id, &message)
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    let done = if internal { "note" } else { "reply" };
    let kept = |_: &DomainError| Refusal {
        form: "write",
        kept: super::case_replies::Kept {
            reply: Some(message.text.clone()),
            ..super::case_replies::Kept::default()
        },
        ..Refusal::default()
    };
    after_form(&state, &session, &id, result, done, kept).await
}

#[derive(Deserialize)]
pub(super) struct CloseForm {
    csrf: String,
    reason: String,
    #[serde(default)]
    reply: Option<String>,
}

pub(super) async fn close_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<CloseForm>,
) -> Response {
    let reply = form
        .reply
        .as_deref()
        .map(|r| r.replace("\r\n", "\n"))
        .filter(|r| !r.trim().is_empty());
    let input = desk::conversation::CloseCase {
        reason: form.reason.clone(),
        reply: reply.clone(),
    };
    let checked = match &reply {
        Some(text) => desk::saved_replies::check_no_placeholder(text),
        None => Ok(()),
    };
    let result = match checked {
        Ok(()) => desk::conversation::close(state.desk(), &session.staff, &id, &input)
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    let kept = |_: &DomainError| Refusal {
        form: "close",
        kept: super::case_replies::Kept {
            close_reason: form.reason.clone(),
            close_reply: Some(reply.unwrap_or_default()),
            ..super::case_replies::Kept::default()
        },
        ..Refusal::default()
    };
    after_form(&state, &session, &id, result, "closed", kept).await
}

#[derive(Deserialize)]
pub(super) struct AssignForm {
    csrf: String,
    #[serde(default)]
    email: Option<String>,
}

pub(super) async fn assign_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<AssignForm>,
) -> Response {
    let input = desk::conversation::AssignCase { email: form.email };
    let result = desk::conversation::assign(state.desk(), &session.staff, &id, &input).await;
    after_action(&state, &session, &id, result, "assigned").await
}

/// `POST /console/cases/{id}/customer-mail`: the case's customer's address marked
/// undeliverable by a bounce is cleared, so mail goes to it again; audited
/// (docs/spec/email.md, "Bounces").
pub(super) async fn clear_undeliverable_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, _): Verified<super::common::CsrfForm>,
) -> Response {
    let now = desk::clock::Clock::now_ms(state.clock.as_ref());
    let result = match desk::cases::load_case(&state.db, &id).await {
        Ok(Some(case)) => {
            desk::mail::bounces::clear(&state.db, &session.staff.id, &case.customer_id, now).await
        }
        Ok(None) => Err(DomainError::NotFound("case")),
        Err(e) => Err(e),
    };
    after_action(&state, &session, &id, result, "mail_cleared").await
}

has_csrf!(MessageForm, CloseForm, AssignForm);
