//! Customer satisfaction over the API: the ticket's customer answers once their case is
//! resolved; staff read the results per person and per reason. The rules are
//! `desk::csat`'s.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;

use crate::error::AppResult;
use crate::extract::{ApiJson, Authed};
use crate::state::AppState;
use desk::auth::Principal;
use desk::csat::{self, Report};

/// A customer's answer to "How did we do?".
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CsatAnswer {
    /// 1 (very unhappy) to 5 (very happy).
    pub rating: i64,
    #[serde(default)]
    pub comment: Option<String>,
}

/// What was recorded.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct CsatRecorded {
    pub ticket_id: String,
    pub rating: i64,
}

/// `POST /api/v1/tickets/{id}/csat` (the ticket's customer, once, after resolution).
/// 201 when recorded; 400 `invalid_rating`; 409 `not_resolved` or `already_rated`.
#[utoipa::path(post, path = "/api/v1/tickets/{id}/csat", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), request_body = CsatAnswer, responses((status = 201, description = "recorded", body = CsatRecorded), crate::error::ApiErrors))]
pub async fn post_csat(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<CsatAnswer>,
) -> AppResult<(StatusCode, Json<CsatRecorded>)> {
    let answer = csat::Answer::new(input.rating, input.comment.as_deref())?;
    let now = state.clock.now_ms();
    csat::answer(&state.db, &principal, &id, &answer, now).await?;
    let recorded = CsatRecorded {
        ticket_id: id,
        rating: answer.rating,
    };
    Ok((StatusCode::CREATED, Json(recorded)))
}

/// `GET /api/v1/reports/csat` (staff): every answer so far, per person and per reason.
#[utoipa::path(get, path = "/api/v1/reports/csat", tag = "staff", security(("bearer" = [])), responses((status = 200, description = "the CSAT report", body = Report), crate::error::ApiErrors))]
pub async fn get_csat_report(State(state): State<AppState>) -> AppResult<Json<Report>> {
    Ok(Json(csat::report(&state.db).await?))
}
