//! Tickets: a customer's conversation, its messages, and the case opened for it.
//!
//! A customer sees only their own tickets; an unknown id and someone else's id get the
//! same 404, so ids cannot be probed. A new customer message on a case waiting for a
//! decision voids its proposal and sends it back to investigation (SPEC invariant 2).

use axum::extract::{Path, State};
use axum::Json;
use policy_engine::Region;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::auth::Principal;
use crate::cases::{self, CaseStatus};
use crate::clock::rfc3339;
use crate::error::{AppError, AppResult};
use crate::http::ApiJson;
use crate::refunds;
use crate::replies::{self, Language, WithdrawalReply};
use crate::state::AppState;
use crate::store::{new_id, Tx};

/// Longest message a customer may send, in characters.
pub const MAX_MESSAGE_CHARS: usize = 4000;
/// Messages (tickets included) one customer may send per minute.
pub const MAX_MESSAGES_PER_MINUTE: i64 = 10;
/// Tickets one customer may open per hour.
pub const MAX_TICKETS_PER_HOUR: i64 = 5;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTicket {
    pub message: String,
    #[serde(default)]
    pub order_id: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    pub text: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MessageView {
    pub seq: i64,
    pub author: String,
    pub body: String,
    pub at: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TicketView {
    pub id: String,
    pub customer_id: String,
    pub order_id: Option<String>,
    pub language: Language,
    pub created_at: String,
    pub messages: Vec<CustomerMessageView>,
    pub case: Option<CustomerCaseView>,
}

/// A message on the customer's side, with its author named in the ticket's language.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerMessageView {
    #[serde(flatten)]
    pub message: MessageView,
    pub author_label: &'static str,
}

/// What a customer may know about their case: status and refunds, nothing internal.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerCaseView {
    pub id: String,
    pub status: String,
    pub status_text: String,
    pub refunds: Vec<CustomerRefundLine>,
}

/// A refund on the customer's side, with its status in the ticket's language.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerRefundLine {
    #[serde(flatten)]
    pub refund: refunds::CustomerRefundView,
    pub status_text: &'static str,
}

#[derive(Debug, Clone)]
pub struct Ticket {
    pub id: String,
    pub customer_id: String,
    pub order_id: Option<String>,
    pub language: Language,
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

/// The language replies to this text are written in (they follow the customer):
///
/// - any kana (Hiragana, Katakana, half-width Katakana) is Japanese: Chinese is never
///   written with kana, Japanese almost always is;
/// - Han without kana is Chinese, except from a customer of the JP region, for whom it
///   is Japanese: short Japanese complaints are often all kanji (`二重請求`, `返金希望`),
///   a JP customer is far more likely to write Japanese than Chinese, and a Chinese
///   reader still follows a kanji-heavy Japanese reply better than a Japanese reader
///   follows a Chinese one;
/// - anything else is English, the fallback for every other language (issue 15).
pub fn detect_language(text: &str, region: Option<Region>) -> Language {
    let han =
        |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c);
    // The Katakana block without U+30FB `・`, a middle dot Chinese text also uses
    // between the parts of foreign names.
    let kana = |c: char| {
        ('\u{3041}'..='\u{309f}').contains(&c)
            || (('\u{30a1}'..='\u{30ff}').contains(&c) && c != '\u{30fb}')
            || ('\u{31f0}'..='\u{31ff}').contains(&c)
            || ('\u{ff66}'..='\u{ff9f}').contains(&c)
    };
    if text.chars().any(kana) {
        Language::Ja
    } else if text.chars().any(han) {
        match region {
            Some(Region::JP) => Language::Ja,
            _ => Language::Zh,
        }
    } else {
        Language::En
    }
}

/// The language a customer's pages are in when no ticket decides it (their ticket
/// list): that of their newest ticket, else their region's.
pub async fn customer_language(db: &crate::store::Db, customer_id: &str) -> AppResult<Language> {
    let newest: Option<String> = sqlx::query_scalar(
        "SELECT language FROM tickets WHERE customer_id = $1 ORDER BY created_at DESC LIMIT 1",
    )
    .bind(customer_id)
    .fetch_optional(db.reader())
    .await?;
    if let Some(code) = newest {
        return Ok(Language::from_stored(&code));
    }
    Ok(customer_region(db, customer_id)
        .await?
        .map_or(Language::En, Language::of_region))
}

/// A customer's region, `None` for an unknown customer or a region this build does not
/// know.
async fn customer_region(db: &crate::store::Db, customer_id: &str) -> AppResult<Option<Region>> {
    let region: Option<String> = sqlx::query_scalar("SELECT region FROM customers WHERE id = $1")
        .bind(customer_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(region.and_then(|r| r.parse().ok()))
}

/// Refuses a customer who is flooding us (429), counting across all their tickets.
async fn check_rate(state: &AppState, customer_id: &str, new_ticket: bool) -> AppResult<()> {
    let now = state.clock.now_ms();
    let messages = sqlx::query(
        "SELECT COUNT(*) AS n FROM messages m JOIN tickets t ON t.id = m.ticket_id
         WHERE t.customer_id = $1 AND m.author = 'customer' AND m.created_at > $2",
    )
    .bind(customer_id)
    .bind(now - 60_000)
    .fetch_one(state.db.pool())
    .await?;
    if messages.try_get::<i64, _>("n")? >= MAX_MESSAGES_PER_MINUTE {
        return Err(AppError::TooManyRequests);
    }
    if new_ticket {
        let tickets = sqlx::query(
            "SELECT COUNT(*) AS n FROM tickets WHERE customer_id = $1 AND created_at > $2",
        )
        .bind(customer_id)
        .bind(now - 3_600_000)
        .fetch_one(state.db.pool())
        .await?;
        if tickets.try_get::<i64, _>("n")? >= MAX_TICKETS_PER_HOUR {
            return Err(AppError::TooManyRequests);
        }
    }
    Ok(())
}

/// Opens a ticket with its first message, its case and the case's first agent run.
pub async fn create_ticket(
    state: &AppState,
    customer_id: &str,
    input: NewTicket,
) -> AppResult<Ticket> {
    let message = validate_message(&input.message)?;
    check_rate(state, customer_id, true).await?;
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
    // Read before the transaction: on SQLite the pool has one writer connection.
    let region = customer_region(&state.db, customer_id).await?;
    let ticket = Ticket {
        id: new_id("tkt"),
        customer_id: customer_id.to_string(),
        order_id,
        language: detect_language(&message, region),
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
        .bind(ticket.language.as_str())
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
    .fetch_optional(db.reader())
    .await?;
    row.map(|r| {
        Ok(Ticket {
            id: r.try_get("id")?,
            customer_id: r.try_get("customer_id")?,
            order_id: r.try_get("order_id")?,
            language: Language::from_stored(&r.try_get::<String, _>("language")?),
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
    .fetch_all(db.reader())
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
            let status = crate::replies::customer_status(c.status, c.reason_code.as_deref());
            Some(CustomerCaseView {
                status_text: replies::status_text(ticket.language, status, &refunds),
                id: c.id,
                status: status.as_str().to_string(),
                refunds: refunds
                    .into_iter()
                    .map(|refund| CustomerRefundLine {
                        status_text: replies::refund_status_text(ticket.language, &refund.status),
                        refund,
                    })
                    .collect(),
            })
        }
        None => None,
    };
    Ok(TicketView {
        id: ticket.id.clone(),
        customer_id: ticket.customer_id.clone(),
        order_id: ticket.order_id.clone(),
        language: ticket.language,
        created_at: rfc3339(ticket.created_at),
        messages: messages(&state.db, &ticket.id)
            .await?
            .into_iter()
            .map(|message| CustomerMessageView {
                author_label: replies::page_text(ticket.language).author(&message.author),
                message,
            })
            .collect(),
        case,
    })
}

/// `POST /api/v1/tickets` (customer).
#[utoipa::path(post, path = "/api/v1/tickets", tag = "customer", security(("bearer" = [])), request_body = NewTicket, responses((status = 201, description = "the ticket, its case opened", body = TicketView), crate::error::ApiErrors))]
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
#[utoipa::path(get, path = "/api/v1/tickets/{id}", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), responses((status = 200, description = "the ticket as its customer (or staff) may see it", body = TicketView), crate::error::ApiErrors))]
pub async fn get_ticket(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> AppResult<Json<TicketView>> {
    let ticket = visible_ticket(&state, &principal, &id).await?;
    Ok(Json(ticket_view(&state, &ticket).await?))
}

/// `POST /api/v1/tickets/{id}/messages` (the ticket's customer).
#[utoipa::path(post, path = "/api/v1/tickets/{id}/messages", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), request_body = NewMessage, responses((status = 200, description = "the ticket with the message added", body = TicketView), crate::error::ApiErrors))]
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
    check_rate(state, &ticket.customer_id, false).await?;
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

/// What a withdrawal did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Withdrawal {
    pub withdrawn: bool,
    pub message: String,
    pub ticket: TicketView,
}

/// The customer withdraws their request. Work that has not reached the provider is
/// cancelled (runs stopped, approvals and unsent intents voided); a refund already
/// submitted cannot be withdrawn, and the customer is told so truthfully (RP-005).
pub async fn withdraw(state: &AppState, ticket: &Ticket) -> AppResult<Withdrawal> {
    let now = state.clock.now_ms();
    let lang = ticket.language;
    // Read everything the reply may need before the transaction: on SQLite the pool
    // has one connection, and the transaction holds it.
    let current = cases::case_for_ticket(&state.db, &ticket.id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    let refunds = crate::refunds::customer_refunds(&state.db, &current.id).await?;
    let mut tx = state.db.begin().await?;
    let case = cases::case_for_ticket_tx(&mut tx, &ticket.id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    let (withdrawn, message) = match case.status {
        CaseStatus::Cancelled => (
            true,
            replies::withdrawal_reply(lang, WithdrawalReply::AlreadyWithdrawn),
        ),
        CaseStatus::Open
        | CaseStatus::Investigating
        | CaseStatus::Proposed
        | CaseStatus::Decided
        | CaseStatus::AwaitingCustomer
        | CaseStatus::AwaitingApproval
        | CaseStatus::Approved
        | CaseStatus::Escalated
        | CaseStatus::Denied
        | CaseStatus::Rejected => {
            // A versioned update: if the executor moved an approved case on meanwhile,
            // this fails and nothing is cancelled behind its back.
            cases::transition(&mut tx, &case, CaseStatus::Cancelled, now).await?;
            refunds::void_unsent(&mut tx, &case.id, now).await?;
            cases::void_approvals(&mut tx, &case.id).await?;
            if let Some(run_id) = &case.run_id {
                crate::runs::finish_run(&mut tx, run_id, crate::runs::RunStatus::Cancelled, now)
                    .await?;
            }
            crate::audit::record(
                &mut tx,
                &ticket.customer_id,
                "withdrawn",
                &case.id,
                case.status.as_str(),
                now,
            )
            .await?;
            let text = replies::withdrawal_reply(lang, WithdrawalReply::Withdrawn);
            append_message(&mut tx, &ticket.id, "agent", &text, now).await?;
            (true, text)
        }
        CaseStatus::Executing
        | CaseStatus::PendingVerification
        | CaseStatus::RefundPending
        | CaseStatus::RefundSucceeded
        | CaseStatus::RefundFailed
        | CaseStatus::Replied
        | CaseStatus::Closed => {
            let status = replies::status_text(lang, case.status, &refunds);
            let text =
                replies::withdrawal_reply(lang, WithdrawalReply::TooLate { status: &status });
            append_message(&mut tx, &ticket.id, "agent", &text, now).await?;
            (false, text)
        }
    };
    tx.commit().await?;
    Ok(Withdrawal {
        withdrawn,
        message,
        ticket: ticket_view(state, ticket).await?,
    })
}

/// `POST /api/v1/tickets/{id}/withdraw` (the ticket's customer). 200 when withdrawn,
/// 409 `refund_already_submitted` when it is too late.
#[utoipa::path(post, path = "/api/v1/tickets/{id}/withdraw", tag = "customer", security(("bearer" = [])), params(("id" = String, Path, description = "ticket id")), responses((status = 200, description = "withdrawn", body = Withdrawal), crate::error::ApiErrors))]
pub async fn post_withdraw(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> AppResult<(axum::http::StatusCode, Json<Withdrawal>)> {
    principal.customer_id()?;
    let ticket = visible_ticket(&state, &principal, &id).await?;
    let result = withdraw(&state, &ticket).await?;
    let status = if result.withdrawn {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::CONFLICT
    };
    Ok((status, Json(result)))
}

/// `GET /api/v1/tickets` (customer): their own tickets, newest first.
#[utoipa::path(get, path = "/api/v1/tickets", tag = "customer", security(("bearer" = [])), responses((status = 200, description = "the customer's tickets, newest first", body = Vec<TicketView>), crate::error::ApiErrors))]
pub async fn list_tickets(
    State(state): State<AppState>,
    principal: Principal,
) -> AppResult<Json<Vec<TicketView>>> {
    let customer_id = principal.customer_id()?.to_string();
    Ok(Json(customer_tickets(&state, &customer_id).await?))
}

pub async fn customer_tickets(state: &AppState, customer_id: &str) -> AppResult<Vec<TicketView>> {
    let rows = sqlx::query(
        "SELECT id FROM tickets WHERE customer_id = $1 ORDER BY created_at DESC LIMIT 50",
    )
    .bind(customer_id)
    .fetch_all(state.db.reader())
    .await?;
    let mut views = Vec::new();
    for r in rows {
        let id: String = r.try_get("id")?;
        if let Some(t) = load_ticket(&state.db, &id).await? {
            views.push(ticket_view(state, &t).await?);
        }
    }
    Ok(views)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_detection_follows_the_script_and_for_kanji_only_the_region() {
        use Language::{En, Ja, Zh};
        let jp = Some(Region::JP);
        let cn = Some(Region::CN);
        let us = Some(Region::US);
        let cases: &[(&str, Option<Region>, Language)] = &[
            // Kana: Japanese, whoever writes it.
            ("年間プランの料金が二重に請求されました", None, Ja),
            ("年間プランの料金が二重に請求されました", cn, Ja),
            ("にじゅうせいきゅう", us, Ja),
            ("ｷｬﾝｾﾙしたい", None, Ja),
            // Kanji only: Japanese from a JP customer, Chinese from anyone else.
            ("二重請求", jp, Ja),
            ("二重請求", None, Zh),
            ("二重請求", cn, Zh),
            ("二重請求", us, Zh),
            // Mixed scripts: any kana decides.
            ("月額プラン cancel please, I no longer want it.", jp, Ja),
            ("O-4001 charged twice です", us, Ja),
            ("我的订单 O-1001 was charged twice", cn, Zh),
            // Chinese stays Chinese (the katakana middle dot is punctuation here).
            ("我的年度会员被扣了两次款", cn, Zh),
            ("我的年度会员被扣了两次款", None, Zh),
            ("列夫・托尔斯泰的书被扣了两次款", cn, Zh),
            // English, and the fallback for everything without Han or kana.
            ("I was charged twice for my annual plan", jp, En),
            ("Me cobraron dos veces", None, En),
            ("😡😡 refund now!!", None, En),
            ("🙏", jp, En),
            ("１２３４５", jp, En),
            ("", None, En),
        ];
        for (text, region, expected) in cases {
            assert_eq!(
                detect_language(text, *region),
                *expected,
                "{text:?} from {region:?}"
            );
        }
    }
}
