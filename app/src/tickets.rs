//! Tickets: a customer's conversation, its messages, and the case opened for it.
//!
//! A customer sees only their own tickets; an unknown id and someone else's id get the
//! same 404, so ids cannot be probed. A new customer message on a case waiting for a
//! decision voids its proposal and sends it back to investigation (SPEC invariant 2).

use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::auth::Principal;
use crate::cases::{self, CaseStatus};
use crate::clock::rfc3339;
use crate::error::{AppError, AppResult};
use crate::http::{ApiJson, AppState};
use crate::refunds;
use crate::store::{new_id, Tx};

/// Longest message a customer may send, in characters.
pub const MAX_MESSAGE_CHARS: usize = 4000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTicket {
    pub message: String,
    #[serde(default)]
    pub order_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct MessageView {
    pub seq: i64,
    pub author: String,
    pub body: String,
    pub at: String,
}

#[derive(Debug, Serialize)]
pub struct TicketView {
    pub id: String,
    pub customer_id: String,
    pub order_id: Option<String>,
    pub language: String,
    pub created_at: String,
    pub messages: Vec<MessageView>,
    pub case: Option<CustomerCaseView>,
}

/// What a customer may know about their case: status and refunds, nothing internal.
#[derive(Debug, Serialize)]
pub struct CustomerCaseView {
    pub id: String,
    pub status: String,
    pub status_text: String,
    pub refunds: Vec<refunds::CustomerRefundView>,
}

#[derive(Debug, Clone)]
pub struct Ticket {
    pub id: String,
    pub customer_id: String,
    pub order_id: Option<String>,
    pub language: String,
    pub created_at: i64,
}

pub fn validate_message(text: &str) -> AppResult<String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AppError::bad_request(
            "empty_message",
            "the message is empty",
        ));
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(AppError::PayloadTooLarge(format!(
            "messages are at most {MAX_MESSAGE_CHARS} characters"
        )));
    }
    Ok(text.replace('\u{0}', ""))
}

/// `zh` when the text has Han characters, else `en`: replies follow the customer.
pub fn detect_language(text: &str) -> &'static str {
    if text
        .chars()
        .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c))
    {
        "zh"
    } else {
        "en"
    }
}

/// Opens a ticket with its first message, its case and the case's first agent run.
pub async fn create_ticket(
    state: &AppState,
    customer_id: &str,
    input: NewTicket,
) -> AppResult<Ticket> {
    let message = validate_message(&input.message)?;
    let order_id = match input
        .order_id
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty())
    {
        Some(o) if o.len() > 64 => {
            return Err(AppError::bad_request(
                "invalid_order_id",
                "order ids are at most 64 characters",
            ))
        }
        other => other,
    };
    let now = state.clock.now_ms();
    let ticket = Ticket {
        id: new_id("tkt"),
        customer_id: customer_id.to_string(),
        order_id,
        language: detect_language(&message).to_string(),
        created_at: now,
    };
    let mut tx = state.db.begin().await?;
    let exists = sqlx::query("SELECT id FROM customers WHERE id = $1")
        .bind(customer_id)
        .fetch_optional(&mut *tx)
        .await?;
    if exists.is_none() {
        return Err(AppError::Forbidden("unknown customer".into()));
    }
    sqlx::query("INSERT INTO tickets (id, customer_id, order_id, language, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(&ticket.id)
        .bind(&ticket.customer_id)
        .bind(&ticket.order_id)
        .bind(&ticket.language)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    append_message(&mut tx, &ticket.id, "customer", &message, now).await?;
    cases::open_case(&mut tx, state, &ticket).await?;
    tx.commit().await?;
    tracing::info!(ticket_id = %ticket.id, customer_id, "ticket opened");
    state.wake.notify_one();
    Ok(ticket)
}

pub async fn append_message(
    tx: &mut Tx<'_>,
    ticket_id: &str,
    author: &str,
    body: &str,
    now: i64,
) -> AppResult<i64> {
    let row =
        sqlx::query("SELECT COALESCE(MAX(seq), 0) AS last FROM messages WHERE ticket_id = $1")
            .bind(ticket_id)
            .fetch_one(&mut **tx)
            .await?;
    let seq: i64 = row.try_get::<i64, _>("last")? + 1;
    sqlx::query("INSERT INTO messages (ticket_id, seq, author, body, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(ticket_id)
        .bind(seq)
        .bind(author)
        .bind(body)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(seq)
}

pub async fn load_ticket(db: &crate::store::Db, ticket_id: &str) -> AppResult<Option<Ticket>> {
    let row = sqlx::query(
        "SELECT id, customer_id, order_id, language, created_at FROM tickets WHERE id = $1",
    )
    .bind(ticket_id)
    .fetch_optional(db.pool())
    .await?;
    row.map(|r| {
        Ok(Ticket {
            id: r.try_get("id")?,
            customer_id: r.try_get("customer_id")?,
            order_id: r.try_get("order_id")?,
            language: r.try_get("language")?,
            created_at: r.try_get("created_at")?,
        })
    })
    .transpose()
}

pub async fn messages(db: &crate::store::Db, ticket_id: &str) -> AppResult<Vec<MessageView>> {
    let rows = sqlx::query(
        "SELECT seq, author, body, created_at FROM messages WHERE ticket_id = $1 ORDER BY seq",
    )
    .bind(ticket_id)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(MessageView {
                seq: r.try_get("seq")?,
                author: r.try_get("author")?,
                body: r.try_get("body")?,
                at: rfc3339(r.try_get("created_at")?),
            })
        })
        .collect()
}

/// Loads a ticket the principal may see: its customer, or any staff member.
pub async fn visible_ticket(
    state: &AppState,
    principal: &Principal,
    ticket_id: &str,
) -> AppResult<Ticket> {
    let ticket = load_ticket(&state.db, ticket_id)
        .await?
        .ok_or(AppError::NotFound("ticket"))?;
    match principal {
        Principal::Staff(_) => Ok(ticket),
        Principal::Customer { customer_id } if *customer_id == ticket.customer_id => Ok(ticket),
        // Same answer as an unknown id (RP-007: never confirm another customer's records).
        Principal::Customer { .. } => Err(AppError::NotFound("ticket")),
    }
}

pub async fn ticket_view(state: &AppState, ticket: &Ticket) -> AppResult<TicketView> {
    let case = match cases::case_for_ticket(&state.db, &ticket.id).await? {
        Some(c) => {
            let refunds = refunds::customer_refunds(&state.db, &c.id).await?;
            Some(CustomerCaseView {
                status_text: crate::replies::status_text(&ticket.language, c.status, &refunds),
                id: c.id,
                status: c.status.as_str().to_string(),
                refunds,
            })
        }
        None => None,
    };
    Ok(TicketView {
        id: ticket.id.clone(),
        customer_id: ticket.customer_id.clone(),
        order_id: ticket.order_id.clone(),
        language: ticket.language.clone(),
        created_at: rfc3339(ticket.created_at),
        messages: messages(&state.db, &ticket.id).await?,
        case,
    })
}

/// `POST /api/v1/tickets` (customer).
pub async fn post_ticket(
    State(state): State<AppState>,
    principal: Principal,
    ApiJson(input): ApiJson<NewTicket>,
) -> AppResult<(axum::http::StatusCode, Json<TicketView>)> {
    let customer_id = principal.customer_id()?.to_string();
    let ticket = create_ticket(&state, &customer_id, input).await?;
    Ok((
        axum::http::StatusCode::CREATED,
        Json(ticket_view(&state, &ticket).await?),
    ))
}

/// `GET /api/v1/tickets/{id}`.
pub async fn get_ticket(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> AppResult<Json<TicketView>> {
    let ticket = visible_ticket(&state, &principal, &id).await?;
    Ok(Json(ticket_view(&state, &ticket).await?))
}

/// `POST /api/v1/tickets/{id}/messages` (the ticket's customer).
pub async fn post_message(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<NewMessage>,
) -> AppResult<Json<TicketView>> {
    principal.customer_id()?;
    let ticket = visible_ticket(&state, &principal, &id).await?;
    add_customer_message(&state, &ticket, &input.text).await?;
    Ok(Json(ticket_view(&state, &ticket).await?))
}

/// Records a customer message. A case waiting on a decision built from the old
/// conversation goes back to investigation: its proposal (and any approval bound to its
/// fingerprint) is void.
pub async fn add_customer_message(state: &AppState, ticket: &Ticket, text: &str) -> AppResult<()> {
    let text = validate_message(text)?;
    let now = state.clock.now_ms();
    let mut tx = state.db.begin().await?;
    append_message(&mut tx, &ticket.id, "customer", &text, now).await?;
    if let Some(case) = cases::case_for_ticket_tx(&mut tx, &ticket.id).await? {
        if matches!(
            case.status,
            CaseStatus::AwaitingApproval
                | CaseStatus::AwaitingCustomer
                | CaseStatus::Denied
                | CaseStatus::Escalated
        ) {
            cases::reinvestigate(&mut tx, state, &case, "new customer message").await?;
        }
    }
    tx.commit().await?;
    state.wake.notify_one();
    Ok(())
}
