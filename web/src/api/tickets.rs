//! The customer's ticket endpoints (`/api/v1/tickets…`): the principal, the body, the
//! status code; what they do is `customer`.

use crate::extract::Authed;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::response::Response;
use axum::routing::{post, MethodRouter};
use axum::Json;
use desk::customer_files::MAX_FILE_BYTES;
use mailbox::attachments::AttachmentLine;

use crate::error::AppResult;
use crate::extract::ApiJson;
use crate::state::AppState;
use desk::auth::Principal;
use desk::customer::{self, NewMessage, NewTicket, TicketView, Withdrawal};

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
/// a person already has it or it is done.
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

/// The upload route, with a body limit of one file (the app's default is 64 KiB): one
/// byte over the limit still arrives, so a file too large gets our typed error.
pub fn attachment_upload_route() -> MethodRouter<AppState> {
    post(post_attachment).layer(DefaultBodyLimit::max(MAX_FILE_BYTES + 1))
}

/// The file's name, as the customer's device calls it.
#[derive(serde::Deserialize, utoipa::IntoParams)]
pub struct FileName {
    /// Shown to staff and offered as the download's name (made safe first).
    name: String,
}

/// `POST /api/v1/tickets/{id}/attachments?name=FILE` (the ticket's customer):
/// the file's bytes as the body. Images (PNG, JPEG, GIF, WebP) and PDF, at most 5 MiB,
/// the type read from the bytes; anything else is refused and nothing is written.
#[utoipa::path(post, path = "/api/v1/tickets/{id}/attachments", tag = "customer", security(("bearer" = [])),
    params(("id" = String, Path, description = "ticket id"), FileName),
    request_body(content = Vec<u8>, description = "the file's bytes", content_type = "application/octet-stream"),
    responses((status = 201, description = "attached, with a message naming it", body = AttachmentLine), crate::error::ApiErrors))]
pub async fn post_attachment(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    file: Result<Query<FileName>, axum::extract::rejection::QueryRejection>,
    body: Bytes,
) -> AppResult<(axum::http::StatusCode, Json<AttachmentLine>)> {
    // A missing or malformed `name` answers in the API's error shape, not axum's text.
    let Query(file) = file.map_err(|e| {
        crate::error::AppError::bad_request(desk::error::ErrorCode::InvalidQuery, e.body_text())
    })?;
    let ticket = customer::visible_ticket(&state.db, &principal, &id).await?;
    let clock = state.clock.as_ref();
    let line =
        desk::customer_files::attach(&state.db, clock, state.queue(), &ticket, &file.name, &body)
            .await?;
    Ok((axum::http::StatusCode::CREATED, Json(line)))
}

/// `GET /api/v1/tickets/{id}/attachments/{file}` (the ticket's customer): one of the
/// ticket's files, as a download (`nosniff`, `Content-Disposition: attachment`).
#[utoipa::path(get, path = "/api/v1/tickets/{id}/attachments/{file}", tag = "customer", security(("bearer" = [])),
    params(("id" = String, Path, description = "ticket id"), ("file" = String, Path, description = "attachment id")),
    responses((status = 200, description = "the file, as a download", content_type = "application/octet-stream", body = Vec<u8>), crate::error::ApiErrors))]
pub async fn get_attachment(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path((id, file)): Path<(String, String)>,
) -> AppResult<Response> {
    let ticket = customer::visible_ticket(&state.db, &principal, &id).await?;
    let (line, bytes) = desk::customer_files::file_of_ticket(&state.db, &ticket, &file).await?;
    crate::api::mail::download(&line, bytes)
}
