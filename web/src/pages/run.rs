//! A run's trace: its event log, step by step (hidden in shadow mode until a reviewer
//! decided the case).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use harness::Kind;

use crate::error::AppError;
use crate::state::AppState;
use desk::runs::EventKind;

use super::common::{error_page, render, Nav, SignedIn};

pub(super) struct EventRow {
    seq: i64,
    at: String,
    kind: String,
    call_id: Option<String>,
    summary: String,
    payload: String,
}

#[derive(Template)]
#[template(path = "run_trace.html")]
pub(super) struct RunPage {
    nav: Nav,
    run_id: String,
    case_id: String,
    status: String,
    steps: i64,
    tool_calls: i64,
    events: Vec<EventRow>,
    /// The run that spawned this one, if it is a child run.
    parent_run_id: Option<String>,
    /// The child runs this run spawned.
    children: Vec<desk::runs::ChildRun>,
}

/// `GET /console/runs/{id}`: the run's event log, each tool result anchored by call id
/// so evidence on the case page links to the record it came from (staff only).
pub(super) async fn run_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Response {
    let run = match desk::runs::load_run(&state.db, &id).await {
        Ok(Some(r)) => r,
        Ok(None) => return error_page(StatusCode::NOT_FOUND, "No such run."),
        Err(e) => return AppError::from(e).into_response(),
    };
    if desk::shadow_pairs::pending(&state.db, &run.case_id)
        .await
        .unwrap_or(true)
    {
        return error_page(
            StatusCode::FORBIDDEN,
            "Shadow mode: the agent's trace is hidden until a reviewer decides this case.",
        );
    }
    let events = match desk::runs::events(&state.db, &id).await {
        Ok(e) => e,
        Err(e) => return AppError::from(e).into_response(),
    };
    let family = tokio::try_join!(
        desk::runs::parent_of(&state.db, &id),
        desk::runs::children(&state.db, &id)
    );
    let (parent_run_id, children) = match family {
        Ok(family) => family,
        Err(e) => return AppError::from(e).into_response(),
    };
    let events = events
        .into_iter()
        .map(|e| {
            let summary = match e.kind {
                EventKind::Harness(Kind::ToolIntent) => format!(
                    "{} {}",
                    e.payload["name"].as_str().unwrap_or(""),
                    e.payload["arguments"]
                ),
                EventKind::Harness(Kind::ToolResult) => {
                    if e.payload["ok"] == serde_json::Value::Bool(true) {
                        "ok".to_string()
                    } else {
                        format!("error: {}", e.payload["content"]["error"])
                    }
                }
                EventKind::State => format!(
                    "{} → {}",
                    e.payload["from"].as_str().unwrap_or("?"),
                    e.payload["to"].as_str().unwrap_or("?")
                ),
                EventKind::Decision => format!(
                    "{} ({})",
                    e.payload["outcome"].as_str().unwrap_or(""),
                    e.payload["reason_code"].as_str().unwrap_or("")
                ),
                _ => String::new(),
            };
            let summary: String = summary.chars().take(160).collect();
            EventRow {
                seq: e.seq,
                at: e.at,
                kind: e.kind.to_string(),
                call_id: e.call_id,
                summary,
                payload: serde_json::to_string_pretty(&e.payload).unwrap_or_default(),
            }
        })
        .collect();
    render(&RunPage {
        nav: Nav::of(&session, "/console"),
        run_id: run.id.into_string(),
        case_id: run.case_id.into_string(),
        status: run.status.to_string(),
        steps: run.steps,
        tool_calls: run.tool_calls,
        events,
        parent_run_id,
        children,
    })
}
