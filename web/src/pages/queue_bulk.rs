//! Bulk work on the queue: the cases ticked in the queue assigned at once
//! (to the caller, or by a supervisor to someone), or closed at once with one reason
//! and an optional reply — closes that move no money only: a case awaiting a refund's
//! approval is left for its own page (closing it would turn the refund down), and one
//! with money in flight cannot be closed. Each case goes through the same desk call as
//! its own page's form (`conversation::assign`, `conversation::close`), so each is
//! checked and audited on its own; the queue then says how many were done and skipped.
//!
//! A close's reply goes to each customer in their own language (docs/spec/interfaces.md,
//! "Bulk actions"): a saved reply is sent in the version of each ticket's language, its
//! variables filled per case; a typed reply only to the customers whose language it is
//! written in. A case it cannot be said to in its customer's language is left open.

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
/// `email` (assign to; empty: me), `reason` and `reply` or `saved` (a saved reply's name)
/// (close), `status` (the tab).
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
        "close" => {
            let reply = Reply::of(field("saved"), field("reply"));
            close_all(&state, &session, &ids, field("reason"), &reply).await
        }
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

/// What a bulk close says to the customers.
enum Reply {
    None,
    /// A saved reply's name: each customer gets the version in their language.
    Saved(String),
    /// Typed once, in one language.
    Typed(String),
}

impl Reply {
    fn of(saved: &str, typed: &str) -> Reply {
        let typed = typed.replace("\r\n", "\n");
        if !saved.trim().is_empty() {
            Reply::Saved(saved.to_string())
        } else if !typed.trim().is_empty() {
            Reply::Typed(typed)
        } else {
            Reply::None
        }
    }

    /// The words for `case`'s customer, `Ok(None)` for none; `Err(())` when they cannot
    /// be said in the customer's language (the case is left as it was).
    async fn for_case(&self, state: &AppState, case: &cases::Case) -> Result<Option<String>, ()> {
        match self {
            Reply::None => Ok(None),
            Reply::Saved(name) => {
                let public = &state.channels.mail.public_url;
                match desk::saved_replies::for_case(&state.db, name, case, public).await {
                    Ok(Some(text)) => Ok(Some(text)),
                    _ => Err(()),
                }
            }
            Reply::Typed(text) => {
                let ticket = desk::tickets::load_ticket(&state.db, &case.ticket_id).await;
                let Ok(Some(ticket)) = ticket else {
                    return Err(());
                };
                let written =
                    desk::replies::written_in(text, text, None).unwrap_or(state.default_language);
                (written == ticket.language)
                    .then(|| Some(text.clone()))
                    .ok_or(())
            }
        }
    }
}

/// Closes each case that moves no money; returns (closed, left open).
async fn close_all(
    state: &AppState,
    session: &Session,
    ids: &[&str],
    reason: &str,
    reply: &Reply,
) -> (usize, usize) {
    // A customer never receives a literal `{name}`; a refused reply closes none.
    if let Reply::Typed(text) = reply {
        if desk::saved_replies::check_no_placeholder(text).is_err() {
            return (0, ids.len());
        }
    }
    let mut done = 0;
    for id in ids {
        // No money: a refund awaiting approval is decided on its own page.
        let Ok(Some(case)) = cases::load_case(&state.db, id).await else {
            continue;
        };
        if case.status == CaseStatus::AwaitingApproval {
            continue;
        }
        let Ok(words) = reply.for_case(state, &case).await else {
            continue;
        };
        let input = desk::conversation::CloseCase {
            reason: reason.to_string(),
            reply: words,
        };
        if desk::conversation::close(state.desk(), &session.staff, id, &input)
            .await
            .is_ok()
        {
            done += 1;
        }
    }
    (done, ids.len() - done)
}
