//! `/console/data` (admin, docs/spec/roles.md "retention, erasure"): the retention
//! windows in force and when the job last ran, intents a restore still holds, a
//! customer's export (streamed JSON) and their erasure (CSRF, the id typed twice).
//! The rules are in `customer_data`; this page only asks.

use crate::extract::Authed;
use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use desk::error::ErrorCode;
use serde::Deserialize;

use crate::error::AppError;
use crate::state::AppState;
use ::customer_data::{retention, retention::Windows};
use desk::auth::Session;

use super::admin::admin;
use super::common::{or_page, render, verified, Nav};

#[derive(Template)]
#[template(path = "customer_data.html")]
pub(super) struct DataPage {
    nav: Nav,
    csrf: String,
    windows: Windows,
    last_run: String,
    restore_waiting: i64,
    notice: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct DataQuery {
    erased: Option<String>,
}

pub(super) async fn data_page(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Query(query): Query<DataQuery>,
) -> Response {
    let session = or_page!(admin(session));
    let notice = query
        .erased
        .map(|pseudonym| format!("Erased; their money records are kept as {pseudonym}."));
    match page(&state, &session, notice).await {
        Ok(page) => render(&page),
        Err(e) => e.into_response(),
    }
}

async fn page(
    state: &AppState,
    session: &Session,
    notice: Option<String>,
) -> Result<DataPage, AppError> {
    let last_run = retention::last_run(&state.db)
        .await?
        .map_or("not yet".to_string(), desk::clock::rfc3339);
    let waiting = ::customer_data::restore::waiting(&state.db).await?;
    Ok(DataPage {
        nav: Nav::of(session, "/console/data"),
        csrf: session.csrf_token.clone(),
        windows: state.retention,
        last_run,
        restore_waiting: waiting,
        notice,
    })
}

#[derive(Debug, Deserialize)]
pub(super) struct ExportQuery {
    customer: String,
}

/// `GET /console/data/export?customer=ID`: the customer's JSON document, streamed.
pub(super) async fn export_download(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Query(query): Query<ExportQuery>,
) -> Response {
    if let Err(page) = admin(session) {
        return page;
    }
    let id = query.customer.trim().to_string();
    match crate::api::customer_data::stream_export(state, id).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct EraseForm {
    csrf: String,
    customer: String,
    confirm: String,
}

/// `POST /console/data/erase` (CSRF): erases when the id was typed twice alike.
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response: built once per request, never carried"
)]
pub(super) async fn erase_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Form(form): Form<EraseForm>,
) -> Response {
    let session = or_page!(verified(session, &form.csrf).and_then(|s| admin(Ok(s))));
    let id = form.customer.trim();
    if id.is_empty() || id != form.confirm.trim() {
        return AppError::bad_request(
            ErrorCode::ConfirmMismatch,
            "type the customer's id twice, alike",
        )
        .into_response();
    }
    let now = state.clock.now_ms();
    match ::customer_data::erase::erase(&state.db, &session.staff.id, id, now).await {
        Ok(erased) => {
            Redirect::to(&format!("/console/data?erased={}", erased.pseudonym)).into_response()
        }
        Err(e) => AppError::from(e).into_response(),
    }
}
