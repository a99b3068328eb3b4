//! The customer's ticket endpoints (`/api/v1/tickets…`): the principal, the body, the
//! status code; what they do is `customer`.

use crate::extract::Authed;
use axum::extract::{Path, State};
use axum::Json;

use crate::error::AppResult;
use crate::extract::ApiJson;
use desk::auth::Principal;
use desk::customer::{self, NewMessage, NewTicket, TicketView, Withdrawal};
use desk::state::AppState;

/// `POST /api/v1/tickets` (customer).
#[utoipa::path(post, path = "/api/v1/tickets", tag = "customer", security(("bearer" = [])), request_body = NewTicket, responses((status = 201, description = "the ticket, its case opened", body = TicketView), crate::error::ApiErrors))]
pub async fn post_ticket(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    ApiJson(input): ApiJson<NewTicket>,
) -> AppResult<(axum::http::StatusCode, Json<TicketView>)> {
    let customer_id = principal.customer_id()?.to_string();
    let ticket = customer::create_ticket(
        &state.db,
        state.clock.as_ref(),
        state.queue(),
        &customer_id,
        input,
    )
    .await?;
    Ok((
        axum::http::StatusCode::CREATED,
        Json(customer::ticket_view(&state.db, &ticket).await?),
    ))
}

/// `GET /api/v1/tickets/{id}`.
#[utoipa::path(get, path = "/api/v1/tickets/{id}", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), responses((status = 200, description = "the ticket as its customer (or staff) may see it", body = TicketView), crate::error::ApiErrors))]
pub async fn get_ticket(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<Json<TicketView>> {
    let view = customer::visible_ticket_view(&state.db, &principal, &id).await?;
    Ok(Json(view.with_reply_time(state.reply_targets)))
}

/// `POST /api/v1/tickets/{id}/messages` (the ticket's customer).
#[utoipa::path(post, path = "/api/v1/tickets/{id}/messages", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), request_body = NewMessage, responses((status = 200, description = "the ticket with the message added", body = TicketView), crate::error::ApiErrors))]
pub async fn post_message(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<NewMessage>,
) -> AppResult<Json<TicketView>> {
    principal.customer_id()?;
    let ticket = customer::visible_ticket(&state.db, &principal, &id).await?;
    customer::add_customer_message(
        &state.db,
        state.clock.as_ref(),
        state.queue(),
        &ticket,
        &input.text,
    )
    .await?;
    Ok(Json(customer::ticket_view(&state.db, &ticket).await?))
}

/// `POST /api/v1/tickets/{id}/person` (the ticket's customer): talk to a person. The
/// case the agent answered itself goes to the staff queue; 409 `not_with_the_agent` when
/// a person already has it or it is done (issue 17).
#[utoipa::path(post, path = "/api/v1/tickets/{id}/person", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), responses((status = 200, description = "the ticket, its case escalated to a person", body = TicketView), crate::error::ApiErrors))]
pub async fn post_person(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<Json<TicketView>> {
    principal.customer_id()?;
    let ticket = customer::visible_ticket(&state.db, &principal, &id).await?;
    customer::ask_for_person(&state.db, state.clock.as_ref(), &ticket).await?;
    Ok(Json(customer::ticket_view(&state.db, &ticket).await?))
}

/// `POST /api/v1/tickets/{id}/withdraw` (the ticket's customer). 200 when withdrawn,
/// 409 `refund_already_submitted` when it is too late, `nothing_to_withdraw` when the case
/// is already at its end (closed, or joined into another ticket).
#[utoipa::path(post, path = "/api/v1/tickets/{id}/withdraw", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), responses((status = 200, description = "withdrawn", body = Withdrawal), crate::error::ApiErrors))]
pub async fn post_withdraw(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<(axum::http::StatusCode, Json<Withdrawal>)> {
    principal.customer_id()?;
    let ticket = customer::visible_ticket(&state.db, &principal, &id).await?;
    let result = customer::withdraw(&state.db, state.clock.as_ref(), &ticket).await?;
    // Too late or nothing to withdraw: the documented error shape, the customer's words
    // (also posted on the ticket) as its message.
    if let Some(code) = result.refused {
        return Err(desk::error::DomainError::conflict(code, result.message).into());
    }
    Ok((axum::http::StatusCode::OK, Json(result)))
}

/// `GET /api/v1/tickets` (customer): their own tickets, newest first.
#[utoipa::path(get, path = "/api/v1/tickets", tag = "customer", security(("bearer" = [])), responses((status = 200, description = "the customer's tickets, newest first", body = Vec<TicketView>), crate::error::ApiErrors))]
pub async fn list_tickets(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
) -> AppResult<Json<Vec<TicketView>>> {
    let customer_id = principal.customer_id()?.to_string();
    Ok(Json(
        customer::customer_tickets(&state.db, &customer_id).await?,
    ))
}
