//! `/console/replies`: the saved replies by language; supervisors and admins
//! add, edit (`?edit=ID` fills the form, which then saves that reply) and
//! remove them. Every staff member sees them here and uses them on the case page's
//! reply, reject and close forms, filled for the case. A text with an unknown variable
//! or a lone brace is refused next to the form, what was typed kept.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};

use crate::access::{Capability, Routes, Rule};
use serde::Deserialize;

use super::common::{error_page, has_csrf, render, with_status, CsrfForm, Nav, SignedIn, Verified};
use crate::error::AppError;
use crate::state::AppState;
use desk::auth::{Session, StaffRole};
use desk::replies::Language;
use desk::saved_replies::{self, NewSavedReply, SavedReply};

pub fn routes() -> Routes {
    let manage = Rule::Staff(Capability::ManageSavedReplies);
    Routes::new()
        .get(
            "/console/replies",
            Rule::Staff(Capability::ReadCases),
            replies_page,
        )
        .post("/console/replies", manage, add_submit)
        .post("/console/replies/{id}", manage, edit_submit)
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
    /// The form's values, kept when it is refused.
    name: String,
    language: String,
    text: String,
    /// The saved reply the form edits; `None` adds one.
    editing: Option<String>,
    /// The variables a text may hold, for the form's help.
    variables: Vec<&'static str>,
}

#[derive(Deserialize)]
struct DoneQuery {
    done: Option<String>,
    /// A saved reply to edit in the form.
    #[serde(default)]
    edit: Option<String>,
}

/// What the form shows: a refused submit's values and error, or a reply being edited.
struct FormState<'a> {
    error: Option<String>,
    values: Option<&'a AddForm>,
    editing: Option<String>,
}

async fn page(
    state: &AppState,
    session: &Session,
    notice: Option<&'static str>,
    form: FormState<'_>,
) -> Response {
    let replies = match saved_replies::list(&state.db, None).await {
        Ok(r) => r,
        Err(e) => return AppError::from(e).into_response(),
    };
    // Editing without a refused submit: the form starts from the stored reply.
    let stored = form
        .editing
        .as_deref()
        .filter(|_| form.values.is_none())
        .and_then(|id| replies.iter().find(|r| r.id == id));
    let field = |f: fn(&AddForm) -> &String| form.values.map(f).cloned().unwrap_or_default();
    let (name, language, text) = match stored {
        Some(r) => (
            r.name.clone(),
            r.language.as_str().to_string(),
            r.text.clone(),
        ),
        None => (
            field(|f| &f.name),
            field(|f| &f.language),
            field(|f| &f.text),
        ),
    };
    let editing = form
        .editing
        .filter(|id| replies.iter().any(|r| &r.id == id));
    render(&RepliesPage {
        nav: Nav::of(session, "/console/replies"),
        csrf: session.csrf_token.clone(),
        languages: Language::ALL.iter().map(|l| l.as_str()).collect(),
        may_manage: session.staff.role >= StaffRole::Supervisor,
        notice,
        error: form.error,
        name,
        language,
        text,
        editing,
        variables: domain::reply_template::Variable::ALL
            .iter()
            .map(|v| v.name())
            .collect(),
        replies,
    })
}

async fn replies_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    query: axum::extract::Query<DoneQuery>,
) -> Response {
    let notice = match query.0.done.as_deref() {
        Some("added") => Some("Saved reply added."),
        Some("changed") => Some("Saved reply changed."),
        Some("removed") => Some("Saved reply removed."),
        _ => None,
    };
    let form = FormState {
        error: None,
        values: None,
        editing: query.0.edit.clone(),
    };
    page(&state, &session, notice, form).await
}

#[derive(Deserialize)]
struct AddForm {
    csrf: String,
    name: String,
    language: String,
    text: String,
}

has_csrf!(AddForm);

impl AddForm {
    /// The reply as typed, with the browser's line ends made plain.
    fn reply(&self) -> NewSavedReply {
        NewSavedReply {
            name: self.name.clone(),
            language: self.language.clone(),
            text: self.text.replace("\r\n", "\n"),
        }
    }
}

async fn add_submit(
    State(state): State<AppState>,
    Verified(session, form): Verified<AddForm>,
) -> Response {
    let (input, now) = (form.reply(), state.clock.now_ms());
    let result = saved_replies::create(&state.db, &session.staff, &input, now).await;
    after_save(&state, &session, result, &form, None).await
}

/// `POST /console/replies/{id}`: the edited reply replaces the stored one.
async fn edit_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<AddForm>,
) -> Response {
    let (input, now) = (form.reply(), state.clock.now_ms());
    let result = saved_replies::update(&state.db, &session.staff, &id, &input, now).await;
    after_save(&state, &session, result, &form, Some(id)).await
}

/// A saved add or edit goes back to the list; a refused one shows the form again with
/// the error beside it and what was typed.
async fn after_save(
    state: &AppState,
    session: &Session,
    result: desk::error::DomainResult<SavedReply>,
    form: &AddForm,
    editing: Option<String>,
) -> Response {
    let done = if editing.is_some() {
        "changed"
    } else {
        "added"
    };
    match result {
        Ok(_) => Redirect::to(&format!("/console/replies?done={done}")).into_response(),
        Err(e) => {
            let error = AppError::from(e);
            let refused = FormState {
                error: Some(error.to_string()),
                values: Some(form),
                editing,
            };
            with_status(error.status(), page(state, session, None, refused).await)
        }
    }
}

async fn delete_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, _form): Verified<CsrfForm>,
) -> Response {
    let now = state.clock.now_ms();
    match saved_replies::delete(&state.db, &session.staff, &id, now).await {
        Ok(()) => Redirect::to("/console/replies?done=removed").into_response(),
        Err(e) => {
            let error = AppError::from(e);
            error_page(error.status(), &error.to_string())
        }
    }
}
