//! The mail we took in: each message once, by its Message-ID (or the SHA-256 of its bytes
//! when it has none), whether it came through the API or the watched mailbox
//! (docs/spec/email.md: each message is taken once). Mail held by the per-sender rate
//! limit, or until an unverified sender confirms through a link, keeps its bytes here
//! until it is processed; nothing is dropped.
//!
//! What it does not do: decide what a mail means (`desk::mail::inbound`).

use sqlx::Row;

use crate::error::MailboxResult;
use store::{new_id, Db, Tx};

/// Where a mail waits, or that it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboundStatus {
    /// Held by the rate limit: processed at `process_after`.
    Held,
    /// In a customer's name but not proven to be theirs: waits for the customer's sign-in
    /// (with its ticket when it opened one, else held whole).
    Unverified,
    /// Processed (opened, appended or ignored).
    Done,
}

impl InboundStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InboundStatus::Held => "held",
            InboundStatus::Unverified => "unverified",
            InboundStatus::Done => "done",
        }
    }
}

/// A mail as it is recorded.
#[derive(Debug, Clone)]
pub struct Taken<'a> {
    pub message_key: &'a str,
    pub sender: &'a str,
    /// `api` or `imap`.
    pub source: &'a str,
    pub status: InboundStatus,
    pub outcome: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub ticket_id: Option<&'a str>,
    pub customer_id: Option<&'a str>,
    /// The bytes (base64), kept only while the mail waits.
    pub raw: Option<&'a str>,
    pub imap_uid: Option<&'a str>,
    pub received_at: i64,
    pub process_after: i64,
}

/// Records a mail. `Ok(None)` when its key was taken already (a duplicate: nothing is
/// written, and the caller's transaction stays usable on both backends).
pub async fn record(tx: &mut Tx<'_>, mail: &Taken<'_>) -> MailboxResult<Option<String>> {
    let id = new_id("in");
    let done = sqlx::query(
        "INSERT INTO mail_inbound (id, message_key, sender, source, status, outcome, reason, ticket_id,
             customer_id, raw, imap_uid, received_at, process_after, processed_at, seq)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM mail_inbound))
         ON CONFLICT (message_key) DO NOTHING",
    )
    .bind(&id)
    .bind(mail.message_key)
    .bind(mail.sender)
    .bind(mail.source)
    .bind(mail.status.as_str())
    .bind(mail.outcome)
    .bind(mail.reason)
    .bind(mail.ticket_id)
    .bind(mail.customer_id)
    .bind(mail.raw)
    .bind(mail.imap_uid)
    .bind(mail.received_at)
    .bind(mail.process_after)
    .bind((mail.status == InboundStatus::Done).then_some(mail.received_at))
    .execute(&mut **tx)
    .await?;
    Ok((done.rows_affected() == 1).then_some(id))
}

/// What was recorded for a key before: its outcome and ticket.
#[derive(Debug, Clone)]
pub struct Seen {
    pub id: String,
    pub status: String,
    pub outcome: Option<String>,
    pub ticket_id: Option<String>,
}

pub async fn seen(db: &Db, message_key: &str) -> MailboxResult<Option<Seen>> {
    let row = sqlx::query(
        "SELECT id, status, outcome, ticket_id FROM mail_inbound WHERE message_key = $1",
    )
    .bind(message_key)
    .fetch_optional(db.pool())
    .await?;
    row.map(|r| {
        Ok(Seen {
            id: r.try_get("id")?,
            status: r.try_get("status")?,
            outcome: r.try_get("outcome")?,
            ticket_id: r.try_get("ticket_id")?,
        })
    })
    .transpose()
}

/// A held mail is processed: done, with its outcome, and its bytes dropped. Versioned on
/// the status it was claimed in, so two workers never process one mail.
pub async fn finish(
    tx: &mut Tx<'_>,
    id: &str,
    from_status: InboundStatus,
    outcome: &str,
    reason: Option<&str>,
    ticket_id: Option<&str>,
    now: i64,
) -> MailboxResult<bool> {
    let done = sqlx::query(
        "UPDATE mail_inbound SET status = 'done', outcome = $1, reason = $2, ticket_id = $3,
             raw = NULL, processed_at = $4 WHERE id = $5 AND status = $6",
    )
    .bind(outcome)
    .bind(reason)
    .bind(ticket_id)
    .bind(now)
    .bind(id)
    .bind(from_status.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Held mail due at `now`, oldest first: `(id, base64 bytes)`.
pub async fn due(db: &Db, now: i64, limit: i64) -> MailboxResult<Vec<(String, String)>> {
    let rows = sqlx::query(
        "SELECT id, raw FROM mail_inbound WHERE status = 'held' AND process_after <= $1
         ORDER BY received_at, seq, id LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            let raw: Option<String> = r.try_get("raw")?;
            Ok((r.try_get("id")?, raw.unwrap_or_default()))
        })
        .collect()
}

/// Puts a held mail back until `after` (its sender is still over the limit).
pub async fn hold_until(db: &Db, id: &str, after: i64) -> MailboxResult<()> {
    sqlx::query("UPDATE mail_inbound SET process_after = $1 WHERE id = $2 AND status = 'held'")
        .bind(after)
        .bind(id)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// How many of `sender`'s mails were processed into a ticket since `since`, and whether
/// any of theirs is still held (a later mail waits behind it: their order is kept).
pub async fn sender_load(db: &Db, sender: &str, since: i64) -> MailboxResult<(i64, bool)> {
    let row = sqlx::query(
        "SELECT (SELECT COUNT(*) FROM mail_inbound WHERE sender = $1 AND status = 'done'
                   AND processed_at > $2 AND outcome IN ('opened', 'appended')) AS recent,
                (SELECT COUNT(*) FROM mail_inbound WHERE sender = $1 AND status = 'held') AS held",
    )
    .bind(sender)
    .bind(since)
    .fetch_one(db.pool())
    .await?;
    Ok((row.try_get("recent")?, row.try_get::<i64, _>("held")? > 0))
}

/// The ticket one of `message_ids` (a mail's In-Reply-To and References) names, if it
/// is `customer_id`'s: one of our own mails, or an earlier mail of theirs.
pub async fn ticket_of_thread(
    db: &Db,
    customer_id: &str,
    message_ids: &[String],
) -> MailboxResult<Option<String>> {
    // Newest reference first: a thread's last id is the mail answered.
    for id in message_ids.iter().rev() {
        let ticket = match crate::outbox::outbox_id_of(id) {
            Some(outbox_id) => crate::outbox::ticket_of_outbox(db, outbox_id).await?,
            None => sqlx::query_scalar::<_, Option<String>>(
                "SELECT ticket_id FROM mail_inbound WHERE message_key = $1",
            )
            .bind(id.trim().trim_start_matches('<').trim_end_matches('>'))
            .fetch_optional(db.reader())
            .await?
            .flatten(),
        };
        if let Some(ticket) = ticket {
            if owns_ticket(db, customer_id, &ticket).await? {
                return Ok(Some(ticket));
            }
        }
    }
    Ok(None)
}

/// Whether `ticket_id` is `customer_id`'s (a thread never crosses customers).
pub async fn owns_ticket(db: &Db, customer_id: &str, ticket_id: &str) -> MailboxResult<bool> {
    let owner: Option<String> = sqlx::query_scalar("SELECT customer_id FROM tickets WHERE id = $1")
        .bind(ticket_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(owner.as_deref() == Some(customer_id))
}

/// Ties an unverified mail to the sign-in link mailed to confirm it.
pub async fn set_confirm_link(tx: &mut Tx<'_>, id: &str, link_hash: &str) -> MailboxResult<()> {
    sqlx::query("UPDATE mail_inbound SET confirm_link_hash = $1 WHERE id = $2")
        .bind(link_hash)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The unverified mail a confirmation mail was written for (`in_reply_to` = its key).
pub async fn unverified_by_key(
    tx: &mut Tx<'_>,
    message_key: &str,
) -> MailboxResult<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM mail_inbound WHERE message_key = $1 AND status = 'unverified'",
    )
    .bind(message_key)
    .fetch_optional(&mut **tx)
    .await?)
}

/// The customer signed in through the link mailed for an unverified mail
/// (docs/spec/email.md: no path to money until then): a mail that opened a waiting ticket
/// is done (its tickets are returned, for their cases to go on); a held one is released
/// to be processed as theirs. Returns `(tickets, how many held were released)`.
pub async fn release_confirmed(
    tx: &mut Tx<'_>,
    link_hash: &str,
    now: i64,
) -> MailboxResult<(Vec<String>, usize)> {
    let tickets: Vec<String> = sqlx::query_scalar(
        "SELECT ticket_id FROM mail_inbound
         WHERE confirm_link_hash = $1 AND status = 'unverified' AND ticket_id IS NOT NULL",
    )
    .bind(link_hash)
    .fetch_all(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE mail_inbound SET status = 'done', reason = 'confirmed', processed_at = $1
         WHERE confirm_link_hash = $2 AND status = 'unverified' AND ticket_id IS NOT NULL",
    )
    .bind(now)
    .bind(link_hash)
    .execute(&mut **tx)
    .await?;
    let held = sqlx::query(
        "UPDATE mail_inbound SET status = 'held', reason = 'confirmed', process_after = $1
         WHERE confirm_link_hash = $2 AND status = 'unverified' AND ticket_id IS NULL",
    )
    .bind(now)
    .bind(link_hash)
    .execute(&mut **tx)
    .await?;
    Ok((tickets, held.rows_affected() as usize))
}

/// What the mail channel did with each mail, for `/metrics`-style counts in tests and
/// reports: `(status, outcome, count)`.
pub async fn counts(db: &Db) -> MailboxResult<Vec<(String, Option<String>, i64)>> {
    let rows = sqlx::query(
        "SELECT status, outcome, COUNT(*) AS n FROM mail_inbound GROUP BY status, outcome ORDER BY status, outcome",
    )
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get("status")?, r.try_get("outcome")?, r.try_get("n")?)))
        .collect()
}
