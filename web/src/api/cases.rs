//! The staff's case endpoints (`/api/v1/cases…`): list and read cases, approve or
//! reject a refund bound to its fingerprint, take an escalated case over, and decide a
//! shadow-mode case by hand. The rules are in `approvals` and `shadow::live`.

use crate::extract::Authed;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use desk::error::ErrorCode;
use serde::Deserialize;

use crate::error::{AppError, AppResult};
use crate::extract::ApiJson;
use crate::state::AppState;
use desk::approvals::{self, Verdict};
use desk::auth::Principal;
use desk::cases::{self, CaseStatus};
use desk::conversation::{self, AssignCase, CloseCase, StaffMessage};
use desk::views::{CaseThread, CaseView};
use shadow::live::ManualDecision;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CaseFilter {
    /// A case status (docs/spec/lifecycle.md), or `all` (the default).
    pub status: Option<String>,
    /// Search: a case, ticket, customer, order or charge id (whole, any case), or part of
    /// the customer's name or email.
    pub q: Option<String>,
    /// `true`: only the cases assigned to the caller.
    pub mine: Option<bool>,
    /// `newest` (the default across every status) or `oldest` (the default within one).
    pub sort: Option<String>,
    /// Cases in one answer, 1 to 500 (default 100). When there are more, the answer's
    /// `Link` header names the next page (`rel="next"`).
    pub limit: Option<i64>,
    /// The next page's cursor, as the `Link` header gives it (`created_at:case_id`).
    pub after: Option<String>,
}

/// Cases in one answer when the caller names no limit.
const DEFAULT_LIMIT: i64 = 100;

/// A status filter's value: a case status, or `all` (or nothing) for every status.
pub fn status_filter(status: Option<&str>) -> Result<Option<CaseStatus>, AppError> {
    match status.map(str::trim) {
        None | Some("") | Some("all") => Ok(None),
        Some(s) => Ok(Some(
            CaseStatus::parse(s).map_err(desk::error::DomainError::from)?,
        )),
    }
}

/// `GET /api/v1/cases?status=…&q=…&mine=…&sort=…&limit=…&after=…` (staff): one page of
/// cases; the next page's address is in the `Link` header (RFC 8288, `rel="next"`),
/// keyset-paged so a case opened meanwhile never shifts a page.
#[utoipa::path(get, path = "/api/v1/cases", tag = "staff", security(("bearer" = [])), params(CaseFilter), responses((status = 200, description = "cases, by status and search, one page", body = Vec<CaseView>, headers(("link" = String, description = "the next page, `<…>; rel=\"next\"`, when there is one"))), crate::error::ApiErrors))]
pub async fn get_cases(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    filter: Result<Query<CaseFilter>, QueryRejection>,
) -> AppResult<Response> {
    let staff = principal.staff()?;
    // A malformed query string answers in the API's error shape, not axum's plain text.
    let Query(filter) =
        filter.map_err(|e| AppError::bad_request(ErrorCode::InvalidQuery, e.body_text()))?;
    let status = status_filter(filter.status.as_deref())?;
    let page = ListPage::of(&filter)?;
    let query = cases::CaseQuery {
        statuses: status.as_slice(),
        assignee_id: filter.mine.unwrap_or(false).then_some(staff.id.as_str()),
        search: filter.q.as_deref(),
        newest_first: page.newest_first,
        after: page.after,
        // One more than a page says whether there is a next one.
        limit: Some(page.limit + 1),
        ..Default::default()
    };
    let mut list = cases::list_cases(&state.db, &query).await?;
    let more = list.len() as i64 > page.limit;
    list.truncate(page.limit as usize);
    let mut views = Vec::with_capacity(list.len());
    for case in &list {
        views.push(desk::views::case_view(&state.db, case).await?);
    }
    let mut response = Json(views).into_response();
    if let Some(last) = list.last().filter(|_| more) {
        let link = next_link(
            &filter,
            page.limit,
            &format!("{}:{}", last.created_at, last.id),
        );
        if let Ok(value) = HeaderValue::from_str(&link) {
            response.headers_mut().insert(header::LINK, value);
        }
    }
    Ok(response)
}

/// The paging part of a list request, checked: bad values are typed 400s.
struct ListPage<'a> {
    newest_first: Option<bool>,
    limit: i64,
    after: Option<(i64, &'a str)>,
}

impl<'a> ListPage<'a> {
    fn of(filter: &'a CaseFilter) -> AppResult<ListPage<'a>> {
        let newest_first = match filter.sort.as_deref().map(str::trim) {
            None | Some("") => None,
            Some("newest") => Some(true),
            Some("oldest") => Some(false),
            Some(_) => {
                return Err(AppError::bad_request(
                    ErrorCode::InvalidSort,
                    "sort is `newest` or `oldest`",
                ))
            }
        };
        let limit = filter.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=500).contains(&limit) {
            return Err(AppError::bad_request(
                ErrorCode::InvalidLimit,
                "limit is a whole number from 1 to 500",
            ));
        }
        let after = match filter.after.as_deref().filter(|a| !a.is_empty()) {
            None => None,
            Some(after) => Some(cases::parse_cursor(after).ok_or_else(|| {
                AppError::bad_request(
                    ErrorCode::InvalidCursor,
                    "after is the cursor a Link header gave (`created_at:case_id`)",
                )
            })?),
        };
        Ok(ListPage {
            newest_first,
            limit,
            after,
        })
    }
}

/// The same list's next page: every filter kept, the cursor moved on.
fn next_link(filter: &CaseFilter, limit: i64, cursor: &str) -> String {
    let mine = filter.mine.map(|m| m.to_string());
    let limit = limit.to_string();
    let query = crate::links::query_string(&[
        ("status", filter.status.as_deref()),
        ("q", filter.q.as_deref()),
        ("mine", mine.as_deref()),
        ("sort", filter.sort.as_deref()),
        ("limit", Some(limit.as_str())),
        ("after", Some(cursor)),
    ]);
    format!("</api/v1/cases?{query}>; rel=\"next\"")
}

/// `GET /api/v1/cases/{id}` (staff).
#[utoipa::path(get, path = "/api/v1/cases/{id}", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), responses((status = 200, description = "the case: status, proposal, decision with its rules, evidence, fingerprint, refunds", body = CaseView), crate::error::ApiErrors))]
pub async fn get_case(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<Json<CaseView>> {
    principal.staff()?;
    Ok(Json(desk::views::current_view(&state.db, &id).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveInput {
    pub fingerprint: String,
    #[serde(default)]
    pub note: Option<String>,
    /// A message to the customer, sent with the approval as written, signed with the
    /// reviewer's name. Required when the customer asked for a person and no person has
    /// written to them since (`person_requested` on the case; else 409 `person_requested`).
    #[serde(default)]
    pub reply: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectInput {
    pub fingerprint: String,
    /// Why (kept with staff, never sent).
    pub reason: String,
    /// The customer's message, in the reviewer's words; without it the
    /// standard rejection in the ticket's language.
    #[serde(default)]
    pub reply: Option<String>,
}

/// `POST /api/v1/cases/{id}/approve`.
#[utoipa::path(post, path = "/api/v1/cases/{id}/approve", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = ApproveInput, responses((status = 200, description = "approved; the refund is queued", body = desk::views::CaseView), crate::error::ApiErrors))]
pub async fn post_approve(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ApproveInput>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    let view = approvals::decide(
        state.desk(),
        staff,
        &id,
        &input.fingerprint,
        Verdict::Approved,
        input.note.as_deref(),
        input.reply.as_deref(),
    )
    .await?;
    Ok(Json(view))
}

/// `POST /api/v1/cases/{id}/reject`.
#[utoipa::path(post, path = "/api/v1/cases/{id}/reject", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = RejectInput, responses((status = 200, description = "rejected", body = desk::views::CaseView), crate::error::ApiErrors))]
pub async fn post_reject(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<RejectInput>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    if input.reason.trim().is_empty() {
        return Err(AppError::bad_request(
            ErrorCode::MissingReason,
            "a rejection needs a reason",
        ));
    }
    let view = approvals::decide(
        state.desk(),
        staff,
        &id,
        &input.fingerprint,
        Verdict::Rejected,
        Some(&input.reason),
        input.reply.as_deref(),
    )
    .await?;
    Ok(Json(view))
}

/// `POST /api/v1/cases/{id}/handup` (staff): a refund above the caller's RP-004 limit
/// handed up, with a note, to those who may approve or reject it.
#[utoipa::path(post, path = "/api/v1/cases/{id}/handup", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = approvals::HandUp, responses((status = 200, description = "handed up: unassigned, in the supervisors' queue", body = desk::views::CaseView), crate::error::ApiErrors))]
pub async fn post_handup(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<approvals::HandUp>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    let view = approvals::hand_up(state.desk(), staff, &id, &input).await?;
    Ok(Json(view))
}

/// `POST /api/v1/cases/{id}/takeover` (supervisor).
#[utoipa::path(post, path = "/api/v1/cases/{id}/takeover", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), responses((status = 200, description = "the supervisor's decision proposed for approval", body = desk::views::CaseView), crate::error::ApiErrors))]
pub async fn post_takeover(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    Ok(Json(approvals::take_over(state.desk(), staff, &id).await?))
}

/// `POST /api/v1/cases/{id}/decide` (staff): a hand decision on a shadow-mode case.
#[utoipa::path(post, path = "/api/v1/cases/{id}/decide", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = ManualDecision, responses((status = 200, description = "the hand decision recorded", body = desk::views::CaseView), crate::error::ApiErrors))]
pub async fn post_decide(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ManualDecision>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    let view = shadow::live::decide_by_hand(state.desk(), staff, &id, input).await?;
    Ok(Json(view))
}

/// `POST /api/v1/cases/{id}/messages` (staff): a reply to the customer or an internal note.
#[utoipa::path(post, path = "/api/v1/cases/{id}/messages", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = StaffMessage, responses((status = 200, description = "the case's thread: the customer's messages and the internal notes, apart", body = CaseThread), crate::error::ApiErrors))]
pub async fn post_message(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<StaffMessage>,
) -> AppResult<Json<CaseThread>> {
    let staff = principal.staff()?;
    // A customer never receives a literal `{name}` (a saved reply's variable
    // left unfilled, or one typed by hand); an internal note may hold anything.
    if !input.internal {
        desk::saved_replies::check_no_placeholder(&input.text)?;
    }
    let thread = conversation::post_message(state.desk(), staff, &id, &input).await?;
    Ok(Json(thread))
}

/// `POST /api/v1/cases/{id}/close` (supervisor): close a case, optionally with a reply.
#[utoipa::path(post, path = "/api/v1/cases/{id}/close", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = CloseCase, responses((status = 200, description = "closed; any pending approval is void", body = CaseView), crate::error::ApiErrors))]
pub async fn post_close(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<CloseCase>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    if let Some(reply) = &input.reply {
        desk::saved_replies::check_no_placeholder(reply)?;
    }
    let view = conversation::close(state.desk(), staff, &id, &input).await?;
    Ok(Json(view))
}

/// `POST /api/v1/cases/{id}/assign` (staff): take a case, or (supervisor) assign it.
#[utoipa::path(post, path = "/api/v1/cases/{id}/assign", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = AssignCase, responses((status = 200, description = "the case with its assignee", body = CaseView), crate::error::ApiErrors))]
pub async fn post_assign(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<AssignCase>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    let view = conversation::assign(state.desk(), staff, &id, &input).await?;
    Ok(Json(view))
}

/// What the caller is doing on the case.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PresenceMark {
    pub activity: desk::presence::Activity,
}

/// Who else is on the case now.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct PresenceView {
    pub others: Vec<desk::presence::Present>,
}

/// `POST /api/v1/cases/{id}/presence` (staff): "I am viewing / replying"; answers who else
/// is on the case (a hint for people, never a lock: `desk::presence`).
#[utoipa::path(post, path = "/api/v1/cases/{id}/presence", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "case id")), request_body = PresenceMark, responses((status = 200, description = "the others on the case", body = PresenceView), crate::error::ApiErrors))]
pub async fn post_presence(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<PresenceMark>,
) -> AppResult<Json<PresenceView>> {
    let staff = principal.staff()?;
    let now = state.clock.now_ms();
    let others = desk::presence::mark(&state.db, staff, &id, input.activity, now).await?;
    Ok(Json(PresenceView { others }))
}
