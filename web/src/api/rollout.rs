//! `GET /api/v1/rollout` (staff) and `POST /api/v1/rollout` (admin): the agent's rollout
//! per scope and its guards. The rules are in `rollout`.

use crate::extract::Authed;
use axum::extract::State;
use axum::Json;
use serde::Deserialize;

use crate::error::AppResult;
use crate::extract::ApiJson;
use crate::state::AppState;
use desk::auth::Principal;
use desk::rollout::{self, modes, Mode, RolloutStatus, Scope};

/// `POST /api/v1/rollout`: a scope's new mode.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetRollout {
    /// `all`, `region:CN|US|EU|JP`, `product:annual_plan|monthly_plan|addon` or
    /// `request:duplicate_charge|overcharge|cancellation|authorization_hold|unclear`.
    pub scope: String,
    /// `shadow`, `canary` or `assist`.
    pub mode: String,
    /// Canary only: the share of new cases that get the agent's proposal, 1 to 99.
    #[serde(default)]
    pub percent: Option<i64>,
    /// Why, for the audit log.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `GET /api/v1/rollout` (staff): each scope's mode and each guard's value, threshold,
/// sample and whether it tripped.
#[utoipa::path(get, path = "/api/v1/rollout", tag = "staff", security(("bearer" = [])), responses((status = 200, description = "the rollout per scope, with its guards", body = RolloutStatus), crate::error::ApiErrors))]
pub async fn get_rollout(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
) -> AppResult<Json<RolloutStatus>> {
    principal.staff()?;
    let default = Mode::default_for(state.shadow_mode);
    let now = state.clock.now_ms();
    Ok(Json(
        rollout::status(&state.db, &state.rollout_guards, default, now).await?,
    ))
}

/// `POST /api/v1/rollout` (admin; others 403): sets a scope's mode, audited. Bad input
/// is a 400 naming the problem and changes nothing.
#[utoipa::path(post, path = "/api/v1/rollout", tag = "admin", security(("bearer" = [])), request_body = SetRollout, responses((status = 200, description = "the change, as audited", body = modes::Change), crate::error::ApiErrors))]
pub async fn post_rollout(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    ApiJson(input): ApiJson<SetRollout>,
) -> AppResult<Json<modes::Change>> {
    let staff = principal.staff()?;
    let scope = Scope::parse(&input.scope)?;
    let mode = Mode::parse(&input.mode, input.percent)?;
    let reason = input.reason.as_deref().unwrap_or("");
    let now = state.clock.now_ms();
    Ok(Json(
        modes::set_mode(&state.db, &staff.id, scope, mode, reason, now).await?,
    ))
}
