//! `/console/charges`: provider charges that name no order of ours (a till
//! payment, a charge whose metadata names an order the shop never sent us), for staff to
//! see and — a supervisor or an admin — link to the order they belong to (audited; the
//! rules are `onboarding::charges`'). An admin reads every provider charge again with
//! "Sync". The same list and actions are in the API (`web::api::records`).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::common::{has_csrf, render, with_status, CsrfForm, Nav, SignedIn, Verified};
use crate::access::{Capability, Routes, Rule};
use crate::error::AppError;
use crate::state::AppState;
use desk::auth::Session;
use desk::onboarding::charges::{self, UnlinkedCharge};

/// Charges shown on one page, newest first.
const PAGE_SIZE: i64 = 100;

pub fn routes() -> Routes {
    Routes::new()
        .get(
            "/console/charges",
            Rule::Staff(Capability::ReadCases),
            charges_page,
        )
        .post(
            "/console/charges/{id}/link",
            Rule::Staff(Capability::CorrectRecords),
            link_submit,
        )
        .post(
            "/console/charges/sync",
            Rule::Staff(Capability::Administer),
            sync_submit,
        )
}

#[derive(Template)]
#[template(path = "charges.html")]
struct ChargesPage {
    nav: Nav,
    csrf: String,
    charges: Vec<UnlinkedCharge>,
    /// The cursor of the next page, when this one is full.
    next: Option<String>,
    may_link: bool,
    may_sync: bool,
    notice: Option<String>,
    error: Option<String>,
    /// The charge and order of a refused link, kept as typed.
    failed_charge: String,
    failed_order: String,
}

#[derive(Deserialize)]
struct PageQuery {
    after: Option<String>,
    done: Option<String>,
    /// After a sync: how many charges were read and how many are listed.
    read: Option<u64>,
    listed: Option<u64>,
}

/// What the page says after an action, from the redirect's query.
fn notice_of(q: &PageQuery) -> Option<String> {
    match q.done.as_deref() {
        Some("linked") => Some("Charge linked to the order.".into()),
        Some("synced") => Some(format!(
            "Read {} provider charges; {} name no order of ours.",
            q.read.unwrap_or(0),
            q.listed.unwrap_or(0)
        )),
        _ => None,
    }
}

struct Refused<'a> {
    error: String,
    charge: &'a str,
    order: &'a str,
}

async fn page(
    state: &AppState,
    session: &Session,
    after: Option<&str>,
    notice: Option<String>,
    refused: Option<Refused<'_>>,
) -> Response {
    let cursor = match after.filter(|a| !a.is_empty()) {
        None => None,
        Some(text) => match desk::cases::parse_cursor(text) {
            Some(c) => Some(c),
            None => return Redirect::to("/console/charges").into_response(),
        },
    };
    let charges = match charges::list_unlinked(&state.db, cursor, PAGE_SIZE).await {
        Ok(c) => c,
        Err(e) => return AppError::from(e).into_response(),
    };
    let next = next_cursor(&charges);
    let role = session.staff.role;
    render(&ChargesPage {
        nav: Nav::of(session, "/console/charges"),
        csrf: session.csrf_token.clone(),
        next,
        may_link: Capability::CorrectRecords.allows(role),
        may_sync: Capability::Administer.allows(role),
        notice,
        error: refused.as_ref().map(|r| r.error.clone()),
        failed_charge: refused
            .as_ref()
            .map(|r| r.charge.to_string())
            .unwrap_or_default(),
        failed_order: refused
            .as_ref()
            .map(|r| r.order.to_string())
            .unwrap_or_default(),
        charges,
    })
}

/// `created_at_ms:charge_id` of the last charge of a full page.
fn next_cursor(page: &[UnlinkedCharge]) -> Option<String> {
    if (page.len() as i64) < PAGE_SIZE {
        return None;
    }
    let last = page.last()?;
    let at = time::OffsetDateTime::parse(
        &last.created_at,
        &time::format_description::well_known::Rfc3339,
    )
    .ok()?;
    let ms = (at.unix_timestamp_nanos() / 1_000_000) as i64;
    Some(format!("{ms}:{}", last.charge_id))
}

async fn charges_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(query): Query<PageQuery>,
) -> Response {
    let notice = notice_of(&query);
    page(&state, &session, query.after.as_deref(), notice, None).await
}

#[derive(Deserialize)]
struct LinkForm {
    csrf: String,
    order_id: String,
}

has_csrf!(LinkForm);

async fn link_submit(
    State(state): State<AppState>,
    Path(charge_id): Path<String>,
    Verified(session, form): Verified<LinkForm>,
) -> Response {
    let order_id = form.order_id.trim();
    let now = state.clock.now_ms();
    let linked = charges::link_charge(
        &state.db,
        &state.payments,
        &charge_id,
        order_id,
        &session.staff.id,
        now,
    )
    .await;
    match linked {
        Ok(()) => Redirect::to("/console/charges?done=linked").into_response(),
        Err(e) => {
            let error = AppError::from(e);
            let refused = Refused {
                error: error.to_string(),
                charge: &charge_id,
                order: order_id,
            };
            with_status(
                error.status(),
                page(&state, &session, None, None, Some(refused)).await,
            )
        }
    }
}

async fn sync_submit(
    State(state): State<AppState>,
    Verified(session, _): Verified<CsrfForm>,
) -> Response {
    let now = state.clock.now_ms();
    match charges::sync_unlinked(&state.db, &state.payments, now, &mut |_| {}).await {
        Ok(report) => Redirect::to(&format!(
            "/console/charges?done=synced&read={}&listed={}",
            report.charges, report.unlinked
        ))
        .into_response(),
        Err(e) => {
            let error = AppError::from(e);
            let refused = Refused {
                error: error.to_string(),
                charge: "",
                order: "",
            };
            with_status(
                error.status(),
                page(&state, &session, None, None, Some(refused)).await,
            )
        }
    }
}
