//! Administration pages: staff accounts (unlocking a locked one) and the audit log.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use crate::auth::{self, Session};
use crate::state::AppState;
use crate::web::error::AppError;

use super::common::{error_page, render, verified, Nav};

pub(super) struct StaffRow {
    email: String,
    role: String,
    failures: i64,
}

#[derive(Template)]
#[template(path = "staff.html")]
pub(super) struct StaffPage {
    nav: Nav,
    csrf: String,
    rows: Vec<StaffRow>,
    notice: Option<String>,
}

/// The admin's session, or the page to answer with (login, or 403 for other roles).
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response: built once per request, never carried"
)]
pub(super) fn admin(session: Result<Session, AppError>) -> Result<Session, Response> {
    let session = session.map_err(|_| Redirect::to("/console/login").into_response())?;
    if session.staff.role < auth::StaffRole::Admin {
        return Err(error_page(StatusCode::FORBIDDEN, "Admins only."));
    }
    Ok(session)
}

pub(super) async fn staff_page_response(
    state: &AppState,
    session: &Session,
    notice: Option<String>,
) -> Response {
    let now = state.clock.now_ms();
    let staff = match auth::list_staff(&state.db).await {
        Ok(s) => s,
        Err(e) => return AppError::from(e).into_response(),
    };
    let mut rows = Vec::with_capacity(staff.len());
    for member in staff {
        let failures = match auth::recent_failures(&state.db, &member.email, now).await {
            Ok(n) => n,
            Err(e) => return AppError::from(e).into_response(),
        };
        rows.push(StaffRow {
            role: member.role.as_str().into(),
            email: member.email,
            failures,
        });
    }
    render(&StaffPage {
        nav: Nav::of(session, "/console/staff"),
        csrf: session.csrf_token.clone(),
        rows,
        notice,
    })
}

/// `GET /console/staff` (admin): staff and their recent failed logins.
pub(super) async fn staff_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
) -> Response {
    match admin(session) {
        Ok(session) => staff_page_response(&state, &session, None).await,
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
    session: Result<Session, AppError>,
    Form(form): Form<UnlockForm>,
) -> Response {
    let session = match verified(session, &form.csrf).and_then(|s| admin(Ok(s))) {
        Ok(s) => s,
        Err(page) => return page,
    };
    match unlock_and_audit(&state, &session.staff, &form.email).await {
        Ok(n) => {
            let notice = format!("Unlocked {}: {n} failed logins forgotten.", form.email);
            staff_page_response(&state, &session, Some(notice)).await
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
    let mut tx = state.db.begin().await?;
    let detail = format!("{n} failed logins forgotten");
    crate::audit::record(
        &mut tx,
        &admin.id,
        "staff_unlocked",
        email,
        &detail,
        state.clock.now_ms(),
    )
    .await?;
    tx.commit().await?;
    tracing::info!(actor = %admin.email, email, failures = n, "staff login unlocked");
    Ok(n)
}

pub(super) struct AuditRow {
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
}

/// `GET /console/audit`: who did what, and when (staff only).
pub(super) async fn audit_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
) -> Response {
    use sqlx::Row;
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    let rows = sqlx::query(
        "SELECT a.created_at, COALESCE(s.email, a.actor) AS actor, a.action, a.subject, a.detail
         FROM audit_log a LEFT JOIN staff s ON s.id = a.actor ORDER BY a.created_at DESC, a.id LIMIT 500",
    )
    .fetch_all(state.db.pool())
    .await;
    let rows = match rows {
        Ok(r) => r,
        Err(e) => return AppError::from(e).into_response(),
    };
    let rows = rows
        .iter()
        .map(|r| AuditRow {
            at: crate::clock::rfc3339(r.try_get("created_at").unwrap_or_default()),
            actor: r.try_get("actor").unwrap_or_default(),
            action: r.try_get("action").unwrap_or_default(),
            subject: r.try_get("subject").unwrap_or_default(),
            detail: r.try_get("detail").unwrap_or_default(),
        })
        .collect();
    render(&AuditPage {
        nav: Nav::of(&session, "/console/audit"),
        rows,
    })
}
