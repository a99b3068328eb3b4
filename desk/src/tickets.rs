//! Tickets and their messages: the one module that writes the `tickets` and `messages`
//! tables. What a customer does with a ticket (open it, write, withdraw) and what they
//! are shown of it is `customer`; the case opened for it is `cases`.

use crate::columns::{stored_id, stored_opt_id};
use domain::ids::{CustomerId, OrderId, TicketId};
use policy_engine::Region;
use serde::Serialize;
use sqlx::Row;

use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::replies::{Language, MAX_MESSAGE_CHARS};
use crate::states::CaseStatus;
use store::{Db, Tx};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MessageView {
    pub seq: i64,
    pub author: String,
    pub body: String,
    pub at: String,
    /// How it came or went: `web` (the page or the API) or `email` (one
    /// conversation, each message's channel shown).
    pub channel: String,
    /// Of a customer's mail, what is not its new words — the quoted thread and the
    /// signature — which staff see collapsed; never shown on a customer surface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quoted: Option<String>,
    /// Of a staff member's message (labelled with the person, not "agent",
    /// which is the AI's label): their name as the reader may see it — on staff
    /// surfaces the display name, else the email; on a customer's, the display name
    /// only (never a staff email).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staff_name: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Ticket {
    pub id: TicketId,
    pub customer_id: CustomerId,
    pub order_id: Option<OrderId>,
    pub language: Language,
    pub created_at: i64,
}

pub fn validate_message(text: &str) -> DomainResult<String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DomainError::bad_request(
            ErrorCode::EmptyMessage,
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

/// The language a customer is written to when no ticket decides it (mail about no
/// ticket): that of their newest ticket, else their region's.
pub async fn customer_language(db: &Db, customer_id: &str) -> DomainResult<Language> {
    if let Some(lang) = tickets_language(db, customer_id).await? {
        return Ok(lang);
    }
    Ok(customer_region(db, customer_id)
        .await?
        .map_or(Language::En, Language::of_region))
}

/// The language of the customer's newest ticket, `None` before their first.
pub async fn tickets_language(db: &Db, customer_id: &str) -> DomainResult<Option<Language>> {
    let newest: Option<String> = sqlx::query_scalar(
        "SELECT language FROM tickets WHERE customer_id = $1 ORDER BY created_at DESC LIMIT 1",
    )
    .bind(customer_id)
    .fetch_optional(db.reader())
    .await?;
    Ok(newest.as_deref().map(Language::from_stored))
}

/// What a customer page's language is chosen from, first known first
/// ([`Language::for_customer`]): the link's `?lang=`, the customer (when the link or
/// session names one), the browser's `Accept-Language`, the team's default.
pub struct PageLanguage<'a> {
    pub link: Option<Language>,
    pub customer_id: Option<&'a str>,
    pub browser: Option<Language>,
    pub default: Language,
}

/// The language of a customer page, mail or error (docs/spec/interfaces.md, "Pages"):
/// a customer's region stands in for the default when it names a language of its own
/// (CN, JP; US and EU say nothing of one) — after the browser's choice, which is the
/// person's own.
pub async fn page_language(db: &Db, asked: PageLanguage<'_>) -> DomainResult<Language> {
    let (tickets, region) = match asked.customer_id {
        Some(id) if asked.link.is_none() => (
            tickets_language(db, id).await?,
            customer_region(db, id).await?,
        ),
        _ => (None, None),
    };
    let fallback = region
        .map(Language::of_region)
        .filter(|lang| *lang != Language::En)
        .unwrap_or(asked.default);
    Ok(Language::for_customer(
        asked.link,
        tickets,
        asked.browser,
        fallback,
    ))
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
        .bind(ticket.id.as_str())
        .bind(ticket.customer_id.as_str())
        .bind(ticket.order_id.as_deref())
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

/// Appends a customer's mail: its new words as the message, the quoted thread
/// and signature beside them for staff, the channel `email`.
pub async fn append_email_message(
    tx: &mut Tx<'_>,
    ticket_id: &str,
    body: &str,
    quoted: Option<&str>,
    now: i64,
) -> DomainResult<i64> {
    let seq = insert_message(tx, ticket_id, "customer", None, body, now).await?;
    sqlx::query(
        "UPDATE messages SET channel = 'email', quoted = $1 WHERE ticket_id = $2 AND seq = $3",
    )
    .bind(quoted.filter(|q| !q.trim().is_empty()))
    .bind(ticket_id)
    .bind(seq)
    .execute(&mut **tx)
    .await?;
    Ok(seq)
}

/// Appends a staff member's reply to the customer's conversation: author
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
    // The next number and the insert in one statement (an aggregate without GROUP BY
    // always yields its one row): one round trip per message, not two.
    let row = sqlx::query(
        "INSERT INTO messages (ticket_id, seq, author, staff_id, body, created_at)
         SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5 FROM messages WHERE ticket_id = $1
         RETURNING seq",
    )
    .bind(ticket_id)
    .bind(author)
    .bind(staff_id)
    .bind(body)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Ok(row.try_get::<i64, _>("seq")?)
}

/// The customer's messages on a ticket, oldest first, read inside a transaction.
pub async fn customer_messages_tx(tx: &mut Tx<'_>, ticket_id: &str) -> DomainResult<Vec<String>> {
    bodies_by(tx, ticket_id, "customer").await
}

/// The bodies `author` wrote on a ticket, oldest first, read inside `tx`.
async fn bodies_by(tx: &mut Tx<'_>, ticket_id: &str, author: &str) -> DomainResult<Vec<String>> {
    let rows =
        sqlx::query("SELECT body FROM messages WHERE ticket_id = $1 AND author = $2 ORDER BY seq")
            .bind(ticket_id)
            .bind(author)
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
            id: stored_id(&r, "id", TicketId::parse)?,
            customer_id: stored_id(&r, "customer_id", CustomerId::parse)?,
            order_id: stored_opt_id(&r, "order_id", OrderId::parse)?,
            language: Language::from_stored(&r.try_get::<String, _>("language")?),
            created_at: r.try_get("created_at")?,
        })
    })
    .transpose()
}

/// The agent's replies on a ticket, oldest first, read inside `tx` (the
/// workflow checks its next reply against them in the transaction that would send it).
pub async fn agent_replies_tx(tx: &mut Tx<'_>, ticket_id: &str) -> DomainResult<Vec<String>> {
    bodies_by(tx, ticket_id, "agent").await
}

pub async fn messages(db: &Db, ticket_id: &str) -> DomainResult<Vec<MessageView>> {
    let rows = sqlx::query(
        "SELECT m.seq, m.author, m.body, m.created_at, m.channel, m.quoted,
                COALESCE(s.display_name, s.email) AS staff_name
         FROM messages m LEFT JOIN staff s ON s.id = m.staff_id
         WHERE m.ticket_id = $1 ORDER BY m.seq",
    )
    .bind(ticket_id)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            let channel: Option<String> = r.try_get("channel")?;
            Ok(MessageView {
                seq: r.try_get("seq")?,
                author: r.try_get("author")?,
                body: r.try_get("body")?,
                at: rfc3339(r.try_get("created_at")?),
                channel: channel.unwrap_or_else(|| "web".to_string()),
                quoted: r.try_get("quoted")?,
                staff_name: r.try_get("staff_name")?,
            })
        })
        .collect()
}

/// How many characters of the first line a subject keeps.
const SUBJECT_CHARS: usize = 80;

/// A ticket's subject: the first non-empty line of its first message, cut at
/// [`SUBJECT_CHARS`] characters with an ellipsis.
pub fn subject_of(first_message: &str) -> String {
    let line = first_message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= SUBJECT_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(SUBJECT_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// How many lines a customer's history lists of each kind — their other tickets, their
/// past refunds — newest first (the case header and `list_customer_history`).
/// The count of all of them goes beside, so a cut list says that it is one.
pub const HISTORY_LINES: i64 = 20;

/// One of a customer's tickets, as their history lists it beside another ticket: its
/// subject and where its case stands.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TicketLine {
    pub id: String,
    /// The first line of its first message, shortened (`subject_of`).
    pub subject: String,
    pub created_at: String,
    pub case_id: Option<String>,
    /// The case's status as stored (`refund_succeeded`, …).
    pub case_status: Option<String>,
    /// The case's status in words (`Refunded`, …).
    pub case_status_label: Option<String>,
}

/// The newest of a customer's other tickets, and how many there are in all.
#[derive(Debug, Clone, Default)]
pub struct OtherTickets {
    pub lines: Vec<TicketLine>,
    pub total: i64,
}

/// The customer's tickets other than `except_ticket_id`, newest first, at most `limit`,
/// each with its case, and their count: one read, however many there are.
pub async fn other_tickets(
    db: &Db,
    customer_id: &str,
    except_ticket_id: &str,
    limit: i64,
) -> DomainResult<OtherTickets> {
    let rows = sqlx::query(
        "SELECT t.id, t.created_at, c.id AS case_id, c.status AS case_status,
                (SELECT body FROM messages m WHERE m.ticket_id = t.id ORDER BY m.seq LIMIT 1) AS first_message,
                (SELECT COUNT(*) FROM tickets o WHERE o.customer_id = $1 AND o.id <> $2) AS total
         FROM tickets t LEFT JOIN cases c ON c.ticket_id = t.id
         WHERE t.customer_id = $1 AND t.id <> $2
         ORDER BY t.created_at DESC, t.id DESC LIMIT $3",
    )
    .bind(customer_id)
    .bind(except_ticket_id)
    .bind(limit)
    .fetch_all(db.reader())
    .await?;
    let mut other = OtherTickets::default();
    for row in &rows {
        other.total = row.try_get("total")?;
        let status = row
            .try_get::<Option<String>, _>("case_status")?
            .map(|s| CaseStatus::parse(&s))
            .transpose()?;
        let first: Option<String> = row.try_get("first_message")?;
        other.lines.push(TicketLine {
            id: row.try_get("id")?,
            subject: subject_of(first.as_deref().unwrap_or("")),
            created_at: rfc3339(row.try_get("created_at")?),
            case_id: row.try_get("case_id")?,
            case_status: status.map(|s| s.as_str().to_string()),
            case_status_label: status.map(|s| s.label().to_string()),
        });
    }
    Ok(other)
}

#[cfg(test)]
mod tests {
    use super::subject_of;

    #[test]
    fn a_subject_is_the_first_line_of_the_first_message_shortened() {
        assert_eq!(
            subject_of("\n  Charged twice \nfor my plan"),
            "Charged twice"
        );
        assert_eq!(subject_of(""), "");
        let long = "é".repeat(200);
        let subject = subject_of(&long);
        assert_eq!(subject.chars().count(), 80);
        assert!(subject.ends_with('…'));
    }
}
