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

use super::common::{render, Nav};

pub(super) struct QueueRow {
    id: String,
    status: String,
    /// The status in words (`CaseStatus::label`).
    status_label: &'static str,
    customer: String,
    subject: String,
    assignee: Option<String>,
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
    nav: Nav,
    rows: Vec<QueueRow>,
    /// The filter's choices: (value, words).
    statuses: Vec<(String, String)>,
    filter: String,
    search: String,
    mine: bool,
}

#[derive(Deserialize)]
pub(super) struct QueueQuery {
    status: Option<String>,
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    mine: Option<String>,
}

/// The queue's default view: every case waiting for a person — an approval or an
/// escalation (issue 17: escalated cases are not hidden by default).
const NEEDS_PERSON: &str = "needs_person";

/// The statuses a filter value selects; `all` and `stuck` select every status (`stuck`
/// then keeps the flagged cases).
fn filter_statuses(filter: &str) -> Result<Vec<CaseStatus>, AppError> {
    match filter {
        NEEDS_PERSON => Ok(vec![CaseStatus::AwaitingApproval, CaseStatus::Escalated]),
        "stuck" => Ok(vec![]),
        other => Ok(crate::web::api::cases::status_filter(Some(other))?
            .into_iter()
            .collect()),
    }
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
    let filter = q.status.unwrap_or_else(|| NEEDS_PERSON.into());
    let mine = q.mine.is_some_and(|m| !m.is_empty());
    let search = q.q.unwrap_or_default();
    let flags = match crate::watchdog::open_flags(&state.db).await {
        Ok(flags) => flags,
        Err(e) => return AppError::from(e).into_response(),
    };
    let statuses = match filter_statuses(&filter) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let query = cases::CaseQuery {
        statuses: &statuses,
        assignee_id: mine.then_some(session.staff.id.as_str()),
        search: Some(search.as_str()),
    };
    let list = match cases::list_cases(&state.db, &query).await {
        Ok(l) => l,
        Err(e) => return AppError::from(e).into_response(),
    };
    let now = state.clock.now_ms();
    let stuck: std::collections::HashMap<&str, &str> = flags
        .iter()
        .map(|f| (f.case_id.as_str(), f.summary.as_str()))
        .collect();
    let mut rows = Vec::new();
    for c in list
        .iter()
        .filter(|c| filter != "stuck" || stuck.contains_key(c.id.as_str()))
    {
        let view = match crate::views::case_view(&state.db, c).await {
            Ok(v) => v,
            Err(e) => return AppError::from(e).into_response(),
        };
        rows.push(queue_row(&session, c, view, now, &stuck));
    }
    render(&QueuePage {
        nav: Nav::of(&session, "/console"),
        rows,
        statuses: filter_choices(),
        filter,
        search,
        mine,
    })
}

fn queue_row(
    session: &Session,
    c: &cases::Case,
    view: crate::views::CaseView,
    now: i64,
    stuck: &std::collections::HashMap<&str, &str>,
) -> QueueRow {
    let required = c.required_role.clone().unwrap_or_default();
    let may_approve = parse_plain::<policy_engine::Role>(&required)
        .map(|r| session.staff.role.may_approve(r))
        .unwrap_or(false);
    let amount = match (view.refund_total, view.currency) {
        (Some(total), Some(currency)) => format!("{total} {currency}"),
        _ => String::new(),
    };
    QueueRow {
        id: c.id.clone(),
        status: c.status.as_str().to_string(),
        status_label: c.status.label(),
        customer: view.customer_name.unwrap_or_else(|| c.customer_id.clone()),
        subject: view.subject,
        assignee: view.assignee,
        amount,
        reason: c.reason_code.clone().unwrap_or_default(),
        required_role: required,
        may_approve,
        age: age(now, c.created_at),
        stuck: stuck.get(c.id.as_str()).map(|s| s.to_string()),
    }
}

/// The queue filter's choices, in words.
fn filter_choices() -> Vec<(String, String)> {
    let mut choices = vec![(NEEDS_PERSON.to_string(), "Needs a person".to_string())];
    for status in [
        CaseStatus::AwaitingApproval,
        CaseStatus::Escalated,
        CaseStatus::PendingVerification,
        CaseStatus::RefundPending,
        CaseStatus::RefundSucceeded,
        CaseStatus::RefundFailed,
        CaseStatus::Denied,
        CaseStatus::AwaitingCustomer,
        CaseStatus::Investigating,
        CaseStatus::Closed,
    ] {
        choices.push((status.as_str().to_string(), status.label().to_string()));
    }
    choices.push(("stuck".into(), "Stuck".into()));
    choices.push(("all".into(), "All".into()));
    choices
}
