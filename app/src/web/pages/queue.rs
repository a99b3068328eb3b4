//! The console's queue: cases by status, oldest first.

use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::auth::Session;
use crate::cases::{self, CaseStatus};
use crate::state::AppState;
use crate::web::error::AppError;
use crate::world::parse_plain;

use super::common::render;

pub(super) struct QueueRow {
    id: String,
    status: String,
    amount: String,
    reason: String,
    required_role: String,
    may_approve: bool,
    age: String,
    /// The stuck-run watchdog's diagnosis, while its flag stands (issue 18).
    stuck: Option<String>,
}

#[derive(Template)]
#[template(path = "console_queue.html")]
pub(super) struct QueuePage {
    staff_email: String,
    staff_role: String,
    csrf: String,
    rows: Vec<QueueRow>,
    statuses: Vec<String>,
    filter: String,
}

#[derive(Deserialize)]
pub(super) struct QueueQuery {
    status: Option<String>,
}

pub(super) fn age(now_ms: i64, then_ms: i64) -> String {
    let minutes = (now_ms - then_ms).max(0) / 60_000;
    match minutes {
        m if m < 60 => format!("{m} min"),
        m if m < 48 * 60 => format!("{} h", m / 60),
        m => format!("{} d", m / (24 * 60)),
    }
}

pub(super) async fn queue_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Query(q): Query<QueueQuery>,
) -> Response {
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    let filter = q.status.unwrap_or_else(|| "awaiting_approval".into());
    let flags = match crate::watchdog::open_flags(&state.db).await {
        Ok(flags) => flags,
        Err(e) => return AppError::from(e).into_response(),
    };
    // "stuck" is a view over every status: the cases whose run the watchdog flagged.
    let status = if filter == "all" || filter == "stuck" {
        None
    } else {
        match CaseStatus::parse(&filter) {
            Ok(s) => Some(s),
            Err(e) => return AppError::from(e).into_response(),
        }
    };
    let list = match cases::list_cases(&state.db, status).await {
        Ok(l) => l,
        Err(e) => return AppError::from(e).into_response(),
    };
    let now = state.clock.now_ms();
    let stuck: std::collections::HashMap<&str, &str> = flags
        .iter()
        .map(|f| (f.case_id.as_str(), f.summary.as_str()))
        .collect();
    let rows = list
        .iter()
        .filter(|c| filter != "stuck" || stuck.contains_key(c.id.as_str()))
        .map(|c| {
            let required = c.required_role.clone().unwrap_or_default();
            let may_approve = parse_plain::<policy_engine::Role>(&required)
                .map(|r| session.staff.role.may_approve(r))
                .unwrap_or(false);
            let amount = match (c.refund_total_minor, c.currency.as_deref()) {
                (Some(minor), Some(cur)) => cur
                    .parse::<policy_engine::Currency>()
                    .ok()
                    .and_then(|cur| policy_engine::Money::from_minor(minor, cur).ok())
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
                _ => String::new(),
            };
            QueueRow {
                id: c.id.clone(),
                status: c.status.as_str().to_string(),
                amount,
                reason: c.reason_code.clone().unwrap_or_default(),
                required_role: required,
                may_approve,
                age: age(now, c.created_at),
                stuck: stuck.get(c.id.as_str()).map(|s| s.to_string()),
            }
        })
        .collect();
    render(&QueuePage {
        staff_email: session.staff.email.clone(),
        staff_role: session.staff.role.as_str().into(),
        csrf: session.csrf_token.clone(),
        rows,
        statuses: [
            "awaiting_approval",
            "escalated",
            "pending_verification",
            "refund_pending",
            "refund_succeeded",
            "refund_failed",
            "denied",
            "awaiting_customer",
            "investigating",
            "stuck",
            "all",
        ]
        .map(String::from)
        .to_vec(),
        filter,
    })
}
