//! Administration pages: staff accounts (unlocking a locked one) and the audit log.

use crate::extract::Authed;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use crate::error::AppError;
use crate::state::AppState;
use desk::audit::AuditFilter;
use desk::auth::{self, Session};

use super::common::{or_page, render, verified, with_status, Nav, SignedIn};
use crate::links::query_string;

/// The admin's session, or the page to answer with (login). Who is an admin is the access
/// layer's rule (`web::access`).
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response: built once per request, never carried"
)]
pub(super) fn admin(session: Result<Session, AppError>) -> Result<Session, Response> {
    session.map_err(|_| Redirect::to("/console/login").into_response())
}

/// What the unlock form's redirect carries back to the staff page.
#[derive(Deserialize)]
pub(super) struct StaffQuery {
    unlocked: Option<String>,
    forgotten: Option<u64>,
}

/// `GET /console/staff` (admin): staff and their recent failed logins; after an unlock,
/// what it did (a redirect after every POST, so a reload repeats nothing).
pub(super) async fn staff_page(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Query(q): Query<StaffQuery>,
) -> Response {
    let notice = q.unlocked.map(|email| {
        let n = q.forgotten.unwrap_or(0);
        format!("Unlocked {email}: {n} failed logins forgotten.")
    });
    match admin(session) {
        Ok(session) => {
            let shown = super::accounts::Shown {
                notice,
                ..Default::default()
            };
            super::accounts::staff_page_response(&state, &session, shown).await
        }
        Err(page) => page,
    }
}

#[derive(Deserialize)]
pub(super) struct UnlockForm {
    csrf: String,
    email: String,
}

/// `POST /console/staff/unlock` (admin): forgets an account's failed logins, as
/// `refund-agent staff unlock --email E` does.
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response: built once per request, never carried"
)]
pub(super) async fn unlock_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Form(form): Form<UnlockForm>,
) -> Response {
    let session = or_page!(verified(session, &form.csrf).and_then(|s| admin(Ok(s))));
    match unlock_and_audit(&state, &session.staff, &form.email).await {
        Ok(n) => {
            let query = query_string(&[
                ("unlocked", Some(form.email.as_str())),
                ("forgotten", Some(n.to_string().as_str())),
            ]);
            Redirect::to(&format!("/console/staff?{query}")).into_response()
        }
        Err(e) => e.into_response(),
    }
}

pub(super) async fn unlock_and_audit(
    state: &AppState,
    admin: &auth::Staff,
    email: &str,
) -> Result<u64, AppError> {
    let n = auth::unlock_staff(&state.db, email).await?;
    let detail = format!("{n} failed logins forgotten");
    desk::audit::record_alone(
        &state.db,
        &admin.id,
        "staff_unlocked",
        email,
        &detail,
        state.clock.now_ms(),
    )
    .await?;
    tracing::info!(actor = %admin.email, email, failures = n, "staff login unlocked");
    Ok(n)
}
struct AuditRow {
    at: String,
    actor: String,
    action: String,
    subject: String,
    detail: String,
}

#[derive(Template)]
#[template(path = "audit.html")]
pub(super) struct AuditPage {
    nav: Nav,
    rows: Vec<AuditRow>,
    filter: AuditFilter,
    actions: Vec<String>,
    /// The filter as a query string, for the CSV link.
    query: String,
    error: Option<String>,
    full: bool,
}

/// The audit filter as the page's form (and the CSV link) sends it.
#[derive(Deserialize, Default, Clone)]
pub(super) struct AuditQuery {
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

impl AuditQuery {
    fn filter(&self) -> AuditFilter {
        AuditFilter {
            actor: self.actor.clone(),
            action: self.action.clone(),
            subject: self.subject.clone(),
            from: self.from.clone(),
            to: self.to.clone(),
        }
    }

    fn query_string(&self) -> String {
        query_string(&[
            ("actor", self.actor.as_deref()),
            ("action", self.action.as_deref()),
            ("subject", self.subject.as_deref()),
            ("from", self.from.as_deref()),
            ("to", self.to.as_deref()),
        ])
    }
}

/// `GET /console/audit`: who did what, and when, filtered (staff only).
pub(super) async fn audit_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<AuditQuery>,
) -> Response {
    let filter = query.filter();
    let (lines, error) = match desk::audit::search(&state.db, &filter).await {
        Ok(lines) => (lines, None),
        Err(e @ desk::error::DomainError::BadRequest { .. }) => (Vec::new(), Some(e.to_string())),
        Err(e) => return AppError::from(e).into_response(),
    };
    let actions = match desk::audit::actions(&state.db).await {
        Ok(a) => a,
        Err(e) => return AppError::from(e).into_response(),
    };
    let page = AuditPage {
        nav: Nav::of(&session, "/console/audit"),
        full: lines.len() as i64 >= desk::audit::MAX_LINES,
        rows: lines.into_iter().map(audit_row).collect(),
        query: query.query_string(),
        filter,
        actions,
        error,
    };
    let status = match page.error {
        Some(_) => StatusCode::BAD_REQUEST,
        None => StatusCode::OK,
    };
    with_status(status, render(&page))
}

fn audit_row(l: desk::audit::AuditLine) -> AuditRow {
    AuditRow {
        at: desk::clock::rfc3339(l.at),
        actor: l.actor,
        action: l.action,
        subject: l.subject,
        detail: l.detail,
    }
}

/// `GET /console/audit.csv`: the same filtered lines as CSV (staff only).
pub(super) async fn audit_csv(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Query(query): Query<AuditQuery>,
) -> Response {
    if session.is_err() {
        return Redirect::to("/console/login").into_response();
    }
    match desk::audit::search(&state.db, &query.filter()).await {
        Ok(lines) => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"audit.csv\"",
                ),
            ],
            desk::audit::csv(&lines),
        )
            .into_response(),
        Err(e) => AppError::from(e).into_response(),
    }
}
