//! `POST /api/v1/reconcile`: a full reconciliation, for staff (the job is `reconcile`).

use axum::extract::State;
use axum::Json;

use crate::auth::Principal;
use crate::reconcile::{self, ReconcileReport};
use crate::state::AppState;
use crate::web::error::AppResult;

/// `POST /api/v1/reconcile` (staff): runs a full reconciliation and returns its report.
#[utoipa::path(post, path = "/api/v1/reconcile", tag = "staff", security(("bearer" = [])), responses((status = 200, description = "provider against internal, every charge", body = ReconcileReport), crate::web::error::ApiErrors))]
pub async fn post_reconcile(
    State(state): State<AppState>,
    principal: Principal,
) -> AppResult<Json<ReconcileReport>> {
    principal.staff()?;
    Ok(Json(reconcile::run(state.reconciler()).await?))
}
