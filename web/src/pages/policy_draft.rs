//! The draft console: `/console/policies/{doc}/draft` — the next version's
//! Markdown and rules in a form, a rendered preview, the validation problems by field,
//! the last what-if and the publish button. A stale save re-renders the form with the
//! author's own text, the diff to the saved draft, and the saved version to save over.
//! Admins and policy authors only. A draft with approval rules has a form for
//! its thresholds (`policy_thresholds`), so nobody types TOML for them.

use crate::access::{Capability, Routes, Rule};
use crate::extract::Authed;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use desk::error::ErrorCode;
use serde::Deserialize;

use super::common::{error_page, or_page, render, verified, with_status, Nav};
use crate::error::AppError;
use crate::state::AppState;
use authoring::drafts::{self, Draft, DraftText, ProblemView, Saved};
use authoring::publish;
use authoring::whatif::{self, WhatIf};
use desk::auth::Session;

use super::policy_thresholds::{self, Thresholds};

pub fn routes() -> Routes {
    let author = Rule::Staff(Capability::AuthorPolicies);
    Routes::new()
        .get("/console/policies/{doc}/draft", author, draft_page)
        .post("/console/policies/{doc}/draft", author, save_submit)
        .post("/console/policies/{doc}/whatif", author, whatif_submit)
        .post(
            "/console/policies/{doc}/thresholds",
            author,
            thresholds_submit,
        )
        .post(
            "/console/policies/{doc}/publish",
            Rule::Staff(Capability::PublishPolicies),
            publish_submit,
        )
}

#[derive(Template)]
#[template(path = "policy_draft.html")]
struct DraftPage {
    nav: Nav,
    doc_id: String,
    policy_version: u32,
    csrf: String,
    /// The version a save from this form expects.
    expected_version: i64,
    markdown: String,
    rules: String,
    authors: String,
    problems: Vec<ProblemView>,
    /// The Markdown body as HTML (raw HTML in it is shown as text).
    preview: String,
    /// A stale save: the diff from the author's text to the saved draft.
    conflict_diff: Option<String>,
    done: Option<String>,
    /// History files a what-if may run against.
    histories: Vec<String>,
    whatif: Option<WhatIfView>,
    /// A what-if ran on exactly the saved version: publishing may be offered.
    whatif_is_fresh: bool,
    /// The draft's own `effective_from` (`YYYY-MM-DD`) when it is later than today: what a
    /// publish puts in force unless the publisher picks another date; empty
    /// (today) otherwise.
    draft_effective_from: String,
    /// The approval thresholds form (a draft with `[approval]` rules), as read or typed.
    thresholds: Option<Thresholds>,
    /// Why the thresholds form was refused, shown beside it.
    thresholds_error: Option<String>,
    /// Why a what-if or a publish was refused (errors beside their form, not
    /// a page of their own).
    whatif_error: Option<String>,
    publish_error: Option<String>,
    roles: [&'static str; 3],
}

/// The last what-if, as the publisher reads it.
struct WhatIfView {
    against: String,
    /// `against RP-004 v2, the version this draft edits`.
    compared: String,
    ran_by: String,
    ran_at: String,
    total: usize,
    changed: usize,
    /// `CNY 198.00 → 0.00 (-198.00)` per currency.
    money: Vec<String>,
    /// `T-17: refund → refund, approver agent → supervisor, ¥19,800`.
    tickets: Vec<String>,
    /// `agent → supervisor for 3 tickets, ¥58,400`: who must approve, and how much.
    roles: Vec<String>,
    /// Whether the draft changed since it ran.
    stale: bool,
}

fn whatif_view(draft: &Draft) -> Option<WhatIfView> {
    let whatif: WhatIf = serde_json::from_value(draft.whatif.clone()?).ok()?;
    let money = |m: &serde_json::Value| -> Vec<String> {
        m.as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let field = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                format!(
                    "{} {} → {} ({})",
                    field("currency"),
                    field("from"),
                    field("to"),
                    field("delta")
                )
            })
            .collect()
    };
    Some(WhatIfView {
        stale: draft.whatif_version != Some(draft.version),
        money: money(&whatif.money),
        tickets: whatif
            .tickets
            .iter()
            .map(super::whatif_words::ticket_line)
            .collect(),
        roles: super::whatif_words::role_shifts(&whatif.tickets),
        compared: super::whatif_words::compared_with(whatif.base.as_deref()),
        against: whatif.against,
        ran_by: whatif.ran_by,
        ran_at: whatif.ran_at,
        total: whatif.total,
        changed: whatif.changed,
    })
}

fn page(
    state: &AppState,
    session: &Session,
    draft: &Draft,
    text: &DraftText,
    done: Option<String>,
) -> DraftPage {
    DraftPage {
        histories: whatif::history_files(&state.history_dir),
        whatif: whatif_view(draft),
        whatif_is_fresh: draft.version > 0 && draft.whatif_version == Some(draft.version),
        draft_effective_from: policy_engine::PolicyDocument::parse(&draft.text.markdown)
            .ok()
            .map(|d| d.meta.effective_from)
            .filter(|from| *from > state.clock.now().date())
            .map(|from| from.to_string())
            .unwrap_or_default(),
        doc_id: draft.doc_id.clone(),
        policy_version: draft.policy_version,
        nav: Nav::of(session, "/console/policies"),
        csrf: session.csrf_token.clone(),
        expected_version: draft.version,
        markdown: text.markdown.clone(),
        rules: text.rules.clone().unwrap_or_default(),
        authors: draft.authors.join(", "),
        problems: draft.problems.clone(),
        preview: preview(&text.markdown),
        conflict_diff: None,
        done,
        thresholds: policy_thresholds::read(&text.markdown, text.rules.as_deref().unwrap_or("")),
        thresholds_error: None,
        whatif_error: None,
        publish_error: None,
        roles: ["agent", "supervisor", "admin"],
    }
}

/// The body after the front matter, rendered as the policy pages render it.
fn preview(markdown: &str) -> String {
    let body = markdown
        .strip_prefix("+++")
        .and_then(|rest| rest.find("\n+++").map(|end| &rest[end + 4..]))
        .unwrap_or(markdown);
    super::markdown::render(body)
}

/// The session, else the page to answer with. Who may author is the access layer's rule
/// (`web::access`).
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response"
)]
fn author(session: Result<Session, AppError>) -> Result<Session, Response> {
    session.map_err(|_| Redirect::to("/console/login").into_response())
}

/// A form's session: CSRF checked, then the role.
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response"
)]
fn verified_author(session: Result<Session, AppError>, csrf: &str) -> Result<Session, Response> {
    author(Ok(verified(session, csrf)?))
}

#[derive(Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

async fn draft_page(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(doc): Path<String>,
    query: axum::extract::Query<DoneQuery>,
) -> Response {
    let session = or_page!(author(session));
    match drafts::load_draft(&state.db, state.clock.as_ref(), &doc).await {
        Ok(draft) => render(&page(&state, &session, &draft, &draft.text, query.0.done)),
        Err(e) => failure(e),
    }
}

fn failure(e: desk::error::DomainError) -> Response {
    let error = AppError::from(e);
    error_page(error.status(), &error.to_string())
}

#[derive(Deserialize)]
struct SaveForm {
    csrf: String,
    expected_version: i64,
    markdown: String,
    #[serde(default)]
    rules: String,
}

async fn save_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(doc): Path<String>,
    Form(form): Form<SaveForm>,
) -> Response {
    let session = or_page!(verified_author(session, &form.csrf));
    // Browsers send textareas with CRLF line ends; the stored text keeps the files' LF.
    let text = DraftText {
        markdown: form.markdown.replace("\r\n", "\n"),
        rules: Some(form.rules.replace("\r\n", "\n")).filter(|r| !r.trim().is_empty()),
    };
    let saved = drafts::save_draft(
        &state.db,
        state.clock.as_ref(),
        &session.staff,
        &doc,
        form.expected_version,
        text,
    )
    .await;
    match saved {
        Ok(Saved::Saved(_)) => {
            Redirect::to(&format!("/console/policies/{doc}/draft?done=saved")).into_response()
        }
        Ok(Saved::Conflict(conflict)) => {
            let mut page = page(&state, &session, &conflict.current, &conflict.yours, None);
            page.conflict_diff = Some(conflict.diff.clone());
            with_status(StatusCode::CONFLICT, render(&page))
        }
        Err(e) => failure(e),
    }
}

#[derive(Deserialize)]
struct ThresholdsForm {
    csrf: String,
    /// Text: a flattened form reads every value as a string.
    expected_version: String,
    #[serde(flatten)]
    thresholds: Thresholds,
}

/// `POST /console/policies/{doc}/thresholds`: the form's values written into the
/// draft's rules and saved as the author's draft; a refusal shows the draft page again
/// with the reason beside the form and what was typed.
async fn thresholds_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(doc): Path<String>,
    Form(form): Form<ThresholdsForm>,
) -> Response {
    let session = or_page!(verified_author(session, &form.csrf));
    let (db, clock) = (&state.db, state.clock.as_ref());
    let draft = match drafts::load_draft(db, clock, &doc).await {
        Ok(draft) => draft,
        Err(e) => return failure(e),
    };
    let rules = draft.text.rules.clone().unwrap_or_default();
    let written = policy_thresholds::apply(&draft.text.markdown, &rules, &form.thresholds);
    let written = match written {
        Ok(written) => written,
        Err(why) => {
            let mut page = page(&state, &session, &draft, &draft.text, None);
            page.thresholds = Some(form.thresholds);
            page.thresholds_error = Some(why);
            return with_status(StatusCode::BAD_REQUEST, render(&page));
        }
    };
    // The rules and the text's tables together: docs/spec/policies.md, "One source of
    // truth".
    let text = DraftText {
        markdown: written.markdown,
        rules: Some(written.rules),
    };
    let staff = &session.staff;
    let expected = form.expected_version.trim().parse().unwrap_or(-1);
    match drafts::save_draft(db, clock, staff, &doc, expected, text).await {
        Ok(Saved::Saved(_)) => {
            let to = format!("/console/policies/{doc}/draft?done=thresholds+saved");
            Redirect::to(&to).into_response()
        }
        Ok(Saved::Conflict(conflict)) => {
            let mut page = page(
                &state,
                &session,
                &conflict.current,
                &conflict.current.text,
                None,
            );
            page.thresholds = Some(form.thresholds);
            page.thresholds_error = Some(format!(
                "someone saved this draft meanwhile; your thresholds are kept: save them again\n{}",
                conflict.diff
            ));
            with_status(StatusCode::CONFLICT, render(&page))
        }
        Err(e) => failure(e),
    }
}

/// The what-if form: a history file, or (`source=live`) the last `live_days` days of
/// live decisions.
#[derive(Deserialize)]
struct WhatIfForm {
    csrf: String,
    #[serde(default)]
    history: String,
    #[serde(default)]
    live_days: String,
}

async fn whatif_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(doc): Path<String>,
    Form(form): Form<WhatIfForm>,
) -> Response {
    let session = or_page!(verified_author(session, &form.csrf));
    match run_whatif(&state, &session, &doc, &form).await {
        Ok(_) => {
            Redirect::to(&format!("/console/policies/{doc}/draft?done=checked")).into_response()
        }
        Err(e) => refused_beside(&state, &session, &doc, "whatif", e, None).await,
    }
}

async fn run_whatif(
    state: &AppState,
    session: &Session,
    doc: &str,
    form: &WhatIfForm,
) -> desk::error::DomainResult<WhatIf> {
    let (db, clock, staff) = (&state.db, state.clock.as_ref(), &session.staff);
    let days = form.live_days.trim();
    if !days.is_empty() {
        let days = days.parse().map_err(|_| {
            desk::error::DomainError::bad_request(
                ErrorCode::InvalidDays,
                format!("'{days}' is not a number of days"),
            )
        })?;
        return whatif::run_against_live(db, clock, staff, doc, days).await;
    }
    let tickets = whatif::read_history(&state.history_dir, &form.history)?;
    let against = (form.history.as_str(), tickets.as_slice());
    whatif::run_against_history(db, clock, &state.index, staff, doc, against).await
}

#[derive(Deserialize)]
struct PublishForm {
    csrf: String,
    draft_version: i64,
    whatif_version: i64,
    #[serde(default)]
    effective_from: String,
    /// The author's tick beside the date the policy goes in force (publishing
    /// asks to confirm; the API, a deliberate call, does not).
    #[serde(default)]
    confirm: String,
}

async fn publish_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Path(doc): Path<String>,
    Form(form): Form<PublishForm>,
) -> Response {
    let session = or_page!(verified_author(session, &form.csrf));
    let confirmed = match form.confirm.as_str() {
        "yes" => publish::parse_effective(Some(&form.effective_from)),
        _ => Err(desk::error::DomainError::bad_request(
            ErrorCode::ConfirmationRequired,
            "Tick the box to confirm the date it goes in force, then publish.",
        )),
    };
    let published = match confirmed {
        Ok(at) => {
            publish::publish(
                state.publisher(),
                &session.staff,
                &doc,
                publish::Reviewed {
                    draft_version: form.draft_version,
                    whatif_version: Some(form.whatif_version),
                },
                at,
            )
            .await
        }
        Err(e) => Err(e),
    };
    match published {
        Ok(p) => {
            let version = p.version.rsplit('@').next().unwrap_or_default().to_string();
            Redirect::to(&format!("/console/policies/{doc}/{version}")).into_response()
        }
        Err(e) => {
            let typed = Some(form.effective_from.clone());
            refused_beside(&state, &session, &doc, "publish", e, typed).await
        }
    }
}

/// A refused what-if or publish: the draft page again, the reason beside the form that
/// was sent, a typed date kept; a draft that cannot be read, a page of its own.
async fn refused_beside(
    state: &AppState,
    session: &Session,
    doc: &str,
    form: &'static str,
    error: desk::error::DomainError,
    effective_from: Option<String>,
) -> Response {
    let draft = match drafts::load_draft(&state.db, state.clock.as_ref(), doc).await {
        Ok(draft) => draft,
        Err(_) => return failure(error),
    };
    let status = crate::error::status_of(&error);
    let mut page = page(state, session, &draft, &draft.text, None);
    match form {
        "whatif" => page.whatif_error = Some(error.public_message()),
        _ => page.publish_error = Some(error.public_message()),
    }
    if let Some(date) = effective_from.filter(|d| !d.trim().is_empty()) {
        page.draft_effective_from = date;
    }
    with_status(status, render(&page))
}
