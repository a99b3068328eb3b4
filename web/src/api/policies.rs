//! `/api/v1/policies/{doc}/…`: a document's draft — read it, save it with
//! an expected version. Admins and policy authors only.

use crate::extract::Authed;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use desk::error::ErrorCode;
use serde::Deserialize;
use serde_json::json;

use crate::error::AppResult;
use crate::extract::ApiJson;
use crate::state::AppState;
use authoring::drafts::{self, Draft, DraftText, Saved};
use authoring::publish::{self, Published};
use authoring::whatif::{self, WhatIf};
use desk::auth::Principal;

/// A save: the text and the draft version it was edited from (0 for the first save).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct DraftInput {
    pub expected_version: i64,
    #[serde(flatten)]
    pub text: DraftText,
}

/// `GET /api/v1/policies/{doc}/draft`.
#[utoipa::path(get, path = "/api/v1/policies/{doc}/draft", tag = "staff", security(("bearer" = [])), params(("doc" = String, Path, description = "policy document id, e.g. RP-001")), responses((status = 200, description = "the draft with its validation problems (a fresh draft from the latest version if none is saved)", body = Draft), crate::error::ApiErrors))]
pub async fn get_draft(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(doc): Path<String>,
) -> AppResult<Json<Draft>> {
    drafts::check_author(principal.staff()?)?;
    Ok(Json(
        drafts::load_draft(&state.db, state.clock.as_ref(), &doc).await?,
    ))
}

/// `PUT /api/v1/policies/{doc}/draft`: 409 `draft_changed` when someone saved since
/// `expected_version`; its body adds `conflict` (the saved draft, your text, the diff).
#[utoipa::path(put, path = "/api/v1/policies/{doc}/draft", tag = "staff", security(("bearer" = [])), params(("doc" = String, Path, description = "policy document id, e.g. RP-001")), request_body = DraftInput, responses((status = 200, description = "saved", body = Draft), crate::error::ApiErrors))]
pub async fn put_draft(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(doc): Path<String>,
    ApiJson(input): ApiJson<DraftInput>,
) -> AppResult<Response> {
    let staff = principal.staff()?;
    let saved = drafts::save_draft(
        &state.db,
        state.clock.as_ref(),
        staff,
        &doc,
        input.expected_version,
        input.text,
    )
    .await?;
    Ok(match saved {
        Saved::Saved(draft) => Json(draft).into_response(),
        Saved::Conflict(conflict) => (
            StatusCode::CONFLICT,
            Json(json!({
                "error": {
                    "code": ErrorCode::DraftChanged,
                    "message": format!(
                        "the draft was saved meanwhile (now version {}): your text is returned with a diff to the saved one",
                        conflict.current.version
                    ),
                },
                "conflict": conflict,
            })),
        )
            .into_response(),
    })
}

/// A what-if: against a history file (by name, from the history directory) or against
/// the live cases decided in the last `live_days` days — exactly one of the two.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct WhatIfInput {
    pub history: Option<String>,
    /// 1 to 366.
    pub live_days: Option<u32>,
}

/// `POST /api/v1/policies/{doc}/whatif`: the saved draft against a history file or the
/// recent live decisions; the result is stored with the draft.
#[utoipa::path(post, path = "/api/v1/policies/{doc}/whatif", tag = "staff", security(("bearer" = [])), params(("doc" = String, Path, description = "policy document id, e.g. RP-001")), request_body = WhatIfInput, responses((status = 200, description = "the changed tickets (or cases) and the money per currency", body = Object), crate::error::ApiErrors))]
pub async fn post_whatif(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(doc): Path<String>,
    ApiJson(input): ApiJson<WhatIfInput>,
) -> AppResult<Json<WhatIf>> {
    let staff = principal.staff()?;
    drafts::check_author(staff)?;
    let (db, clock) = (&state.db, state.clock.as_ref());
    let whatif = match (input.history, input.live_days) {
        (Some(history), None) => {
            let tickets = whatif::read_history(&state.history_dir, &history)?;
            let against = (history.as_str(), tickets.as_slice());
            whatif::run_against_history(db, clock, &state.index, staff, &doc, against).await?
        }
        (None, Some(days)) => whatif::run_against_live(db, clock, staff, &doc, days).await?,
        _ => {
            return Err(desk::error::DomainError::bad_request(
                ErrorCode::InvalidWhatif,
                "give either history (a file name) or live_days, not both",
            )
            .into())
        }
    };
    Ok(Json(whatif))
}

/// A publish: the draft version the publisher reviewed, and when it takes effect.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct PublishInput {
    pub draft_version: i64,
    /// The draft version the what-if the publisher reviewed ran on: it must be
    /// `draft_version` (nobody publishes effects they have not seen).
    pub whatif_version: i64,
    /// `YYYY-MM-DD`, today or later; today when absent.
    pub effective_from: Option<String>,
}

/// `POST /api/v1/policies/{doc}/publish`.
#[utoipa::path(post, path = "/api/v1/policies/{doc}/publish", tag = "staff", security(("bearer" = [])), params(("doc" = String, Path, description = "policy document id, e.g. RP-001")), request_body = PublishInput, responses((status = 200, description = "published", body = Published), crate::error::ApiErrors))]
pub async fn post_publish(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(doc): Path<String>,
    ApiJson(input): ApiJson<PublishInput>,
) -> AppResult<Json<Published>> {
    let staff = principal.staff()?;
    let at = publish::parse_effective(input.effective_from.as_deref())?;
    Ok(Json(
        publish::publish(
            state.publisher(),
            staff,
            &doc,
            publish::Reviewed {
                draft_version: input.draft_version,
                whatif_version: Some(input.whatif_version),
            },
            at,
        )
        .await?,
    ))
}
