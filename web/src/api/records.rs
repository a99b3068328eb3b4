//! A shop backend keeping customers and orders current (`PUT /api/v1/customers/{id}`,
//! `PUT /api/v1/orders/{id}`: an `integration` token, or an admin by hand), and provider
//! charges that name no order of ours, for staff to link (docs/spec/history.md). The
//! rules are `onboarding`'s; who may call each is `web::access`'s table.

use crate::extract::Authed;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use desk::error::ErrorCode;
use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};
use crate::extract::ApiJson;
use crate::state::AppState;
use desk::auth::Principal;
use desk::onboarding::charges::{self, SyncReport, UnlinkedCharge};
use desk::onboarding::records::{self, CustomerRow, OrderRow, Upserted};

/// What an upsert did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UpsertedRecord {
    pub id: String,
    pub result: Upserted,
}

/// `PUT /api/v1/customers/{id}`: creates or updates one customer (idempotent).
#[utoipa::path(put, path = "/api/v1/customers/{id}", tag = "integration", security(("bearer" = [])), params(("id" = String, Path, description = "the shop's customer id")), request_body = CustomerRow, responses((status = 200, description = "created or updated", body = UpsertedRecord), crate::error::ApiErrors))]
pub async fn put_customer(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(row): ApiJson<CustomerRow>,
) -> AppResult<Json<UpsertedRecord>> {
    let result = records::put_customer(&state.db, &id, row).await?;
    Ok(Json(UpsertedRecord { id, result }))
}

/// `PUT /api/v1/orders/{id}`: creates or updates one order (idempotent; an order never
/// moves to another customer).
#[utoipa::path(put, path = "/api/v1/orders/{id}", tag = "integration", security(("bearer" = [])), params(("id" = String, Path, description = "the shop's order id")), request_body = OrderRow, responses((status = 200, description = "created or updated", body = UpsertedRecord), crate::error::ApiErrors))]
pub async fn put_order(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(row): ApiJson<OrderRow>,
) -> AppResult<Json<UpsertedRecord>> {
    let result = records::put_order(&state.db, &id, row).await?;
    Ok(Json(UpsertedRecord { id, result }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UnlinkedQuery {
    /// The cursor the previous page ended at: `created_at_ms:charge_id`.
    pub after: Option<String>,
    /// Charges in one answer, 1 to 500 (default 100).
    pub limit: Option<i64>,
}

/// `GET /api/v1/charges/unlinked`: provider charges naming no order of ours, newest first.
#[utoipa::path(get, path = "/api/v1/charges/unlinked", tag = "staff", security(("bearer" = [])), params(UnlinkedQuery), responses((status = 200, description = "the unlinked charges, one page", body = Vec<UnlinkedCharge>), crate::error::ApiErrors))]
pub async fn get_unlinked(
    State(state): State<AppState>,
    query: Result<Query<UnlinkedQuery>, QueryRejection>,
) -> AppResult<Json<Vec<UnlinkedCharge>>> {
    let Query(q) =
        query.map_err(|e| AppError::bad_request(ErrorCode::InvalidQuery, e.body_text()))?;
    let after = match q.after.as_deref().filter(|a| !a.is_empty()) {
        None => None,
        Some(cursor) => Some(desk::cases::parse_cursor(cursor).ok_or_else(|| {
            AppError::bad_request(
                ErrorCode::InvalidCursor,
                "after is `created_at_ms:charge_id`",
            )
        })?),
    };
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(AppError::bad_request(
            ErrorCode::InvalidLimit,
            "limit is 1 to 500",
        ));
    }
    Ok(Json(charges::list_unlinked(&state.db, after, limit).await?))
}

/// `POST /api/v1/charges/unlinked/sync` (admin): reads every provider charge again.
#[utoipa::path(post, path = "/api/v1/charges/unlinked/sync", tag = "admin", security(("bearer" = [])), responses((status = 200, description = "what the sync saw", body = Object), crate::error::ApiErrors))]
pub async fn post_sync(State(state): State<AppState>) -> AppResult<Json<SyncReport>> {
    let now = state.clock.now_ms();
    let report = charges::sync_unlinked(&state.db, &state.payments, now, &mut |_| {}).await?;
    Ok(Json(report))
}

/// `POST /api/v1/charges/{id}/link` `{order_id}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkCharge {
    pub order_id: String,
}

/// What a link did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LinkedCharge {
    pub charge_id: String,
    pub order_id: String,
}

/// `POST /api/v1/charges/{id}/link` (supervisor or admin, audited): the charge is one of
/// that order's from now on.
#[utoipa::path(post, path = "/api/v1/charges/{id}/link", tag = "staff", security(("bearer" = [])), params(("id" = String, Path, description = "the provider charge id")), request_body = LinkCharge, responses((status = 200, description = "linked", body = LinkedCharge), crate::error::ApiErrors))]
pub async fn post_link(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<LinkCharge>,
) -> AppResult<Json<LinkedCharge>> {
    let staff = principal.staff()?;
    let now = state.clock.now_ms();
    charges::link_charge(
        &state.db,
        &state.payments,
        &id,
        &input.order_id,
        &staff.id,
        now,
    )
    .await?;
    Ok(Json(LinkedCharge {
        charge_id: id,
        order_id: input.order_id,
    }))
}
