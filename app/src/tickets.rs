//! Tickets and their messages: the one module that writes the `tickets` and `messages`
//! tables. What a customer does with a ticket (open it, write, withdraw) and what they
//! are shown of it is `customer`; the case opened for it is `cases`.

use policy_engine::Region;
use serde::Serialize;
use sqlx::Row;

use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult};
use crate::replies::{Language, MAX_MESSAGE_CHARS};
use crate::store::{Db, Tx};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MessageView {
    pub seq: i64,
    pub author: String,
    pub body: String,
    pub at: String,
}

#[derive(Debug, Clone)]
pub struct Ticket {
    pub id: String,
    pub customer_id: String,
    pub order_id: Option<String>,
    pub language: Language,
    pub created_at: i64,
}

pub fn validate_message(text: &str) -> DomainResult<String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DomainError::bad_request(
            "empty_message",
            "the message is empty",
        ));
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Err(DomainError::PayloadTooLarge(format!(
            "messages are at most {MAX_MESSAGE_CHARS} characters"
        )));
    }
    Ok(text.replace('\u{0}', ""))
}

/// The language a customer's pages are in when no ticket decides it (their ticket
/// list): that of their newest ticket, else their region's.
pub async fn customer_language(db: &Db, customer_id: &str) -> DomainResult<Language> {
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
pub async fn customer_region(db: &Db, customer_id: &str) -> DomainResult<Option<Region>> {
    let region: Option<String> = sqlx::query_scalar("SELECT region FROM customers WHERE id = $1")
        .bind(customer_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(region.and_then(|r| r.parse().ok()))
}

/// Stores a new ticket (its first message is `append_message`'s).
pub async fn insert_ticket(tx: &mut Tx<'_>, ticket: &Ticket) -> DomainResult<()> {
    sqlx::query("INSERT INTO tickets (id, customer_id, order_id, language, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(&ticket.id)
        .bind(&ticket.customer_id)
        .bind(&ticket.order_id)
        .bind(ticket.language.as_str())
        .bind(ticket.created_at)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn append_message(
    tx: &mut Tx<'_>,
    ticket_id: &str,
    author: &str,
    body: &str,
    now: i64,
) -> DomainResult<i64> {
    insert_message(tx, ticket_id, author, None, body, now).await
}

/// Appends a staff member's reply to the customer's conversation (issue 17): author
/// `staff`, the staff member recorded beside it (never shown to the customer).
pub async fn append_staff_reply(
    tx: &mut Tx<'_>,
    ticket_id: &str,
    staff_id: &str,
    body: &str,
    now: i64,
) -> DomainResult<i64> {
    insert_message(tx, ticket_id, "staff", Some(staff_id), body, now).await
}

async fn insert_message(
    tx: &mut Tx<'_>,
    ticket_id: &str,
    author: &str,
    staff_id: Option<&str>,
    body: &str,
    now: i64,
) -> DomainResult<i64> {
    let row =
        sqlx::query("SELECT COALESCE(MAX(seq), 0) AS last FROM messages WHERE ticket_id = $1")
            .bind(ticket_id)
            .fetch_one(&mut **tx)
            .await?;
    let seq: i64 = row.try_get::<i64, _>("last")? + 1;
    sqlx::query("INSERT INTO messages (ticket_id, seq, author, staff_id, body, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(ticket_id)
        .bind(seq)
        .bind(author)
        .bind(staff_id)
        .bind(body)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(seq)
}

/// The customer's messages on a ticket, oldest first, read inside a transaction.
pub async fn customer_messages_tx(tx: &mut Tx<'_>, ticket_id: &str) -> DomainResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT body FROM messages WHERE ticket_id = $1 AND author = 'customer' ORDER BY seq",
    )
    .bind(ticket_id)
    .fetch_all(&mut **tx)
    .await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<String, _>("body")?))
        .collect()
}

pub async fn load_ticket(db: &Db, ticket_id: &str) -> DomainResult<Option<Ticket>> {
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

pub async fn messages(db: &Db, ticket_id: &str) -> DomainResult<Vec<MessageView>> {
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
