//! `POST /api/v1/reconcile`: a full reconciliation, for staff (the job is `reconcile`).

use crate::extract::Authed;
use axum::extract::State;
use axum::Json;

use crate::error::AppResult;
use crate::state::AppState;
use desk::auth::Principal;
use desk::reconcile::{self, ReconcileReport};

/// `POST /api/v1/reconcile` (staff): runs a full reconciliation and returns its report.
#[utoipa::path(post, path = "/api/v1/reconcile", tag = "staff", security(("bearer" = [])), responses((status = 200, description = "provider against internal, every charge", body = ReconcileReport), crate::error::ApiErrors))]
pub async fn post_reconcile(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
) -> AppResult<Json<ReconcileReport>> {
    principal.staff()?;
    Ok(Json(reconcile::run(state.reconciler()).await?))
}
