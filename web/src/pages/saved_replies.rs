//! `/console/replies` (issue 17): the saved replies by language; supervisors and admins
//! add and remove them. Every staff member sees them here and uses them on the case
//! page's reply form.

use crate::extract::Authed;
use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;

use crate::access::{Capability, Routes, Rule};
use serde::Deserialize;

use super::common::{error_page, or_page, render, verified, with_status, CsrfForm, Nav};
use crate::error::AppError;
use desk::auth::{Session, StaffRole};
use desk::replies::Language;
use desk::saved_replies::{self, NewSavedReply, SavedReply};
use desk::state::AppState;

pub fn routes() -> Routes {
    let manage = Rule::Staff(Capability::ManageSavedReplies);
    Routes::new()
        .get(
            "/console/replies",
            Rule::Staff(Capability::ReadCases),
            replies_page,
        )
        .post("/console/replies", manage, add_submit)
        .post("/console/replies/{id}/delete", manage, delete_submit)
}

#[derive(Template)]
#[template(path = "saved_replies.html")]
struct RepliesPage {
    nav: Nav,
    csrf: String,
    replies: Vec<SavedReply>,
    languages: Vec<&'static str>,
    may_manage: bool,
    notice: Option<&'static str>,
    error: Option<String>,
    /// The add form's values, kept when it is refused.
    name: String,
    language: String,
    text: String,
}

#[derive(Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

async fn page(
    state: &AppState,
    session: &Session,
    notice: Option<&'static str>,
    refused: Option<(String, &AddForm)>,
) -> Response {
    let replies = match saved_replies::list(&state.db, None).await {
        Ok(r) => r,
        Err(e) => return AppError::from(e).into_response(),
    };
    let (error, form) = match refused {
        Some((e, form)) => (Some(e), Some(form)),
        None => (None, None),
    };
    let field = |f: fn(&AddForm) -> &String| form.map(f).cloned().unwrap_or_default();
    render(&RepliesPage {
        nav: Nav::of(session, "/console/replies"),
        csrf: session.csrf_token.clone(),
        replies,
        languages: Language::ALL.iter().map(|l| l.as_str()).collect(),
        may_manage: session.staff.role >= StaffRole::Supervisor,
        notice,
        error,
        name: field(|f| &f.name),
        language: field(|f| &f.language),
        text: field(|f| &f.text),
    })
}

async fn replies_page(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    query: axum::extract::Query<DoneQuery>,
) -> Response {
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    let notice = match query.0.done.as_deref() {
        Some("added") => Some("Saved reply added."),
        Some("removed") => Some("Saved reply removed."),
        _ => None,
    };
    page(&state, &session, notice, None).await
}

#[derive(Deserialize)]
struct AddForm {
    csrf: String,
    name: String,
    language: String,
    text: String,
}

async fn add_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Form(form): Form<AddForm>,
) -> Response {
    let session = or_page!(verified(session, &form.csrf));
    let input = NewSavedReply {
        name: form.name.clone(),
        language: form.language.clone(),
        text: form.text.replace("\r\n", "\n"),
    };
    let now = state.clock.now_ms();
    match saved_replies::create(&state.db, &session.staff, &input, now).await {
        Ok(_) => Redirect::to("/console/replies?done=added").into_response(),
        Err(e) => {
            let error = AppError::from(e);
            let refused = Some((error.to_string(), &form));
            with_status(error.status(), page(&state, &session, None, refused).await)
        }
    }
}

async fn delete_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = or_page!(verified(session, &form.csrf));
    let now = state.clock.now_ms();
    match saved_replies::delete(&state.db, &session.staff, &id, now).await {
        Ok(()) => Redirect::to("/console/replies?done=removed").into_response(),
        Err(e) => {
            let error = AppError::from(e);
            error_page(error.status(), &error.to_string())
        }
    }
}
