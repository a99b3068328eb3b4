//! Bulk work on the queue (issue 38): the cases ticked in the queue assigned at once
//! (to the caller, or by a supervisor to someone), or closed at once with one reason
//! and an optional reply — closes that move no money only: a case awaiting a refund's
//! approval is left for its own page (closing it would turn the refund down), and one
//! with money in flight cannot be closed. Each case goes through the same desk call as
//! its own page's form (`conversation::assign`, `conversation::close`), so each is
//! checked and audited on its own; the queue then says how many were done and skipped.

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;

use crate::error::AppError;
use crate::extract::Authed;
use crate::state::AppState;
use desk::auth::Session;
use desk::cases::{self, CaseStatus};

use super::common::{or_page, verified};

/// The most cases one bulk action touches (the queue shows at most 100 a page).
const MAX_CASES: usize = 100;

/// `POST /console/bulk`: `case` once per ticked case, `action` (`assign` or `close`),
/// `email` (assign to; empty: me), `reason` and `reply` (close), `status` (the tab).
pub(super) async fn bulk_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    };
    let session = or_page!(verified(session, field("csrf")));
    let ids: Vec<&str> = fields
        .iter()
        .filter(|(k, _)| k == "case")
        .map(|(_, v)| v.as_str())
        .take(MAX_CASES)
        .collect();
    let tab = Some(field("status"))
        .filter(|t| super::queue::known_filter(t))
        .unwrap_or("needs_person");
    let (done, skipped) = match field("action") {
        "assign" => assign_all(&state, &session, &ids, field("email")).await,
        "close" => close_all(&state, &session, &ids, field("reason"), field("reply")).await,
        _ => (0, ids.len()),
    };
    let action = match field("action") {
        "close" => "closed",
        _ => "assigned",
    };
    Redirect::to(&format!(
        "/console?status={tab}&bulk={action}&n={done}&skipped={skipped}"
    ))
    .into_response()
}

/// Assigns each case; returns (assigned, refused).
async fn assign_all(
    state: &AppState,
    session: &Session,
    ids: &[&str],
    email: &str,
) -> (usize, usize) {
    let input = desk::conversation::AssignCase {
        email: Some(email.to_string()).filter(|e| !e.trim().is_empty()),
    };
    let mut done = 0;
    for id in ids {
        if desk::conversation::assign(state.desk(), &session.staff, id, &input)
            .await
            .is_ok()
        {
            done += 1;
        }
    }
    (done, ids.len() - done)
}

/// Closes each case that moves no money; returns (closed, left open).
async fn close_all(
    state: &AppState,
    session: &Session,
    ids: &[&str],
    reason: &str,
    reply: &str,
) -> (usize, usize) {
    let reply = Some(reply.replace("\r\n", "\n")).filter(|r| !r.trim().is_empty());
    // Issue 38: a customer never receives a literal `{name}`; a refused reply closes none.
    if reply
        .as_deref()
        .is_some_and(|r| desk::saved_replies::check_no_placeholder(r).is_err())
    {
        return (0, ids.len());
    }
    let input = desk::conversation::CloseCase {
        reason: reason.to_string(),
        reply,
    };
    let mut done = 0;
    for id in ids {
        // No money: a refund awaiting approval is decided on its own page.
        let Ok(Some(case)) = cases::load_case(&state.db, id).await else {
            continue;
        };
        if case.status == CaseStatus::AwaitingApproval {
            continue;
        }
        if desk::conversation::close(state.desk(), &session.staff, id, &input)
            .await
            .is_ok()
        {
            done += 1;
        }
    }
    (done, ids.len() - done)
}
