//! `GET /api/v1/runs/{id}/events`: a run's event log, for staff.

use crate::extract::Authed;
use axum::extract::{Path, State};
use axum::Json;

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use desk::auth::Principal;
use desk::runs::{self, Event};

/// `GET /api/v1/runs/{id}/events` (staff).
#[utoipa::path(get, path = "/api/v1/runs/{id}/events", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "run id")), responses((status = 200, description = "the run's event log, in order", body = Vec<Event>), crate::error::ApiErrors))]
pub async fn get_events(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<Json<Vec<Event>>> {
    principal.staff()?;
    let run = runs::load_run(&state.db, &id)
        .await?
        .ok_or(AppError::not_found("run"))?;
    // Live shadow mode: the log holds the agent's decision, which must not anchor a
    // reviewer who has not decided yet; the API refuses exactly as the trace page does.
    if desk::shadow_pairs::pending(&state.db, &run.case_id).await? {
        return Err(AppError::forbidden(
            "shadow mode: the agent's trace is hidden until a reviewer decides this case".into(),
        ));
    }
    Ok(Json(runs::events(&state.db, &id).await?))
}
