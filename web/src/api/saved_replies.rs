//! `GET /api/v1/saved-replies` (staff) and `POST /api/v1/saved-replies` (supervisor or
//! admin): the team's saved replies. The rules are in `saved_replies`.

use crate::extract::Authed;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use desk::error::ErrorCode;
use serde::Deserialize;

use crate::error::{AppError, AppResult};
use crate::extract::ApiJson;
use crate::state::AppState;
use desk::auth::Principal;
use desk::replies::Language;
use desk::saved_replies::{self, NewSavedReply, SavedReply};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SavedReplyFilter {
    /// Only the replies in this language: `en`, `zh` or `ja`.
    pub language: Option<String>,
}

/// `GET /api/v1/saved-replies?language=…` (staff): by language, then name.
#[utoipa::path(get, path = "/api/v1/saved-replies", tag = "staff", security(("bearer" = [])), params(SavedReplyFilter), responses((status = 200, description = "the saved replies", body = Vec<SavedReply>), crate::error::ApiErrors))]
pub async fn get_saved_replies(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    filter: Result<Query<SavedReplyFilter>, QueryRejection>,
) -> AppResult<Json<Vec<SavedReply>>> {
    principal.staff()?;
    let Query(filter) =
        filter.map_err(|e| AppError::bad_request(ErrorCode::InvalidQuery, e.body_text()))?;
    let language = match filter.language.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(code) => Some(
            code.parse::<Language>()
                .map_err(|e| AppError::bad_request(ErrorCode::InvalidLanguage, e.to_string()))?,
        ),
    };
    Ok(Json(saved_replies::list(&state.db, language).await?))
}

/// `POST /api/v1/saved-replies` (supervisor or admin; others 403): 201 with the reply,
/// 409 `saved_reply_exists` when its name is taken in its language.
#[utoipa::path(post, path = "/api/v1/saved-replies", tag = "staff", security(("bearer" = [])), request_body = NewSavedReply, responses((status = 201, description = "saved", body = SavedReply), crate::error::ApiErrors))]
pub async fn post_saved_reply(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    ApiJson(input): ApiJson<NewSavedReply>,
) -> AppResult<(StatusCode, Json<SavedReply>)> {
    let staff = principal.staff()?;
    let now = state.clock.now_ms();
    let reply = saved_replies::create(&state.db, staff, &input, now).await?;
    Ok((StatusCode::CREATED, Json(reply)))
}
