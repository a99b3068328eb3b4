//! The outbox: every mail the product sends, written in the transaction of the change it
//! reports (docs/spec/email.md), then claimed, rendered once and sent by `desk::mail::send`.
//!
//! A row is the mail's identity: its id gives the Message-ID, and the bytes rendered on
//! the first attempt are kept until the server took them, so a resend after a crash is
//! byte for byte the same mail. What it does not do: choose words (the callers pass the
//! text the customer is shown, `replies` has the rest) or talk to a server.

use sqlx::any::AnyRow;
use sqlx::Row;

use crate::error::{MailboxError, MailboxResult};
use store::{new_id, Db, Tx};

pub use domain::notice::Notice as MailKind;

/// The Message-ID of an outbox row: its id at the support address's domain, so the same
/// row always makes the same mail (docs/spec/email.md: a resend is recognisably the same).
pub fn message_id(outbox_id: &str, from_domain: &str) -> String {
    format!("{outbox_id}@{from_domain}")
}

/// The outbox row a Message-ID of ours names (`out_…@domain`), if it is one of ours.
pub fn outbox_id_of(message_id: &str) -> Option<&str> {
    let id = message_id
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    let (local, _) = id.split_once('@')?;
    local.starts_with("out_").then_some(local)
}

fn parse_kind(s: &str) -> MailboxResult<MailKind> {
    MailKind::parse(s).ok_or_else(|| MailboxError::Corrupt(format!("unknown mail kind '{s}'")))
}

/// Who a row is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipient {
    /// The customer, at the address on record when the mail is rendered.
    Customer,
    /// A staff member, at their staff address.
    Staff,
    /// An address that is no customer's (the unknown sender it answers).
    Sender,
}

impl Recipient {
    fn as_str(self) -> &'static str {
        match self {
            Recipient::Customer => "customer",
            Recipient::Staff => "staff",
            Recipient::Sender => "sender",
        }
    }

    fn parse(s: &str) -> MailboxResult<Recipient> {
        match s {
            "customer" => Ok(Recipient::Customer),
            "staff" => Ok(Recipient::Staff),
            "sender" => Ok(Recipient::Sender),
            _ => Err(MailboxError::Corrupt(format!(
                "unknown mail recipient '{s}'"
            ))),
        }
    }
}

/// One row to write.
struct NewMail<'a> {
    kind: MailKind,
    recipient: Recipient,
    customer_id: Option<&'a str>,
    staff_id: Option<&'a str>,
    address: Option<&'a str>,
    ticket_id: Option<&'a str>,
    case_id: Option<&'a str>,
    language: &'a str,
    body: &'a str,
    in_reply_to: Option<&'a str>,
}

impl<'a> NewMail<'a> {
    /// A mail of `kind` to `recipient` in `language`, about nothing yet and with no body
    /// of ours (the fields a caller sets say what it is about).
    fn to(kind: MailKind, recipient: Recipient, language: &'a str) -> Self {
        NewMail {
            kind,
            recipient,
            customer_id: None,
            staff_id: None,
            address: None,
            ticket_id: None,
            case_id: None,
            language,
            body: "",
            in_reply_to: None,
        }
    }
}

async fn insert(tx: &mut Tx<'_>, mail: &NewMail<'_>, now: i64) -> MailboxResult<String> {
    let id = new_id("out");
    sqlx::query(
        "INSERT INTO mail_outbox (id, kind, recipient_kind, customer_id, staff_id, address, ticket_id,
             case_id, language, body, in_reply_to, status, attempts, next_attempt_at, version, created_at, seq)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', 0, $12, 1, $12,
                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM mail_outbox))",
    )
    .bind(&id)
    .bind(mail.kind.as_str())
    .bind(mail.recipient.as_str())
    .bind(mail.customer_id)
    .bind(mail.staff_id)
    .bind(mail.address)
    .bind(mail.ticket_id)
    .bind(mail.case_id)
    .bind(mail.language)
    .bind(mail.body)
    .bind(mail.in_reply_to)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// A customer-facing change on `ticket_id`: its mail to the ticket's customer, in the
/// ticket's language, saying `body` (the words the ticket shows), in the caller's
/// transaction (docs/spec/email.md: written with the change it reports). Returns the row.
pub async fn to_customer(
    tx: &mut Tx<'_>,
    kind: MailKind,
    ticket_id: &str,
    body: &str,
    now: i64,
) -> MailboxResult<String> {
    let row = sqlx::query(
        "SELECT t.customer_id, t.language, c.id AS case_id,
                (SELECT i.message_key FROM mail_inbound i WHERE i.ticket_id = t.id
                   AND i.message_key NOT LIKE 'sha256:%' ORDER BY i.received_at DESC LIMIT 1) AS last_in
         FROM tickets t LEFT JOIN cases c ON c.ticket_id = t.id WHERE t.id = $1",
    )
    .bind(ticket_id)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(MailboxError::NotFound("ticket"))?;
    let customer_id: String = row.try_get("customer_id")?;
    let language: String = row.try_get("language")?;
    let case_id: Option<String> = row.try_get("case_id")?;
    let last_in: Option<String> = row.try_get("last_in")?;
    let mail = NewMail {
        customer_id: Some(&customer_id),
        ticket_id: Some(ticket_id),
        case_id: case_id.as_deref(),
        body,
        in_reply_to: last_in.as_deref(),
        ..NewMail::to(kind, Recipient::Customer, &language)
    };
    insert(tx, &mail, now).await
}

/// A mail to the customer about no ticket (the sender-confirmation mail).
pub async fn to_customer_account(
    tx: &mut Tx<'_>,
    kind: MailKind,
    customer_id: &str,
    language: &str,
    in_reply_to: Option<&str>,
    now: i64,
) -> MailboxResult<String> {
    let mail = NewMail {
        customer_id: Some(customer_id),
        in_reply_to,
        ..NewMail::to(kind, Recipient::Customer, language)
    };
    insert(tx, &mail, now).await
}

/// The one reply to a sender who is no customer of ours, at their own address.
pub async fn to_sender(
    tx: &mut Tx<'_>,
    address: &str,
    language: &str,
    in_reply_to: Option<&str>,
    now: i64,
) -> MailboxResult<String> {
    let mail = NewMail {
        address: Some(address),
        in_reply_to,
        ..NewMail::to(MailKind::UnknownSender, Recipient::Sender, language)
    };
    insert(tx, &mail, now).await
}

/// A staff invitation at the invitee's own address (they have no account yet), `body`
/// carrying its link.
pub async fn to_invitee(
    tx: &mut Tx<'_>,
    address: &str,
    body: &str,
    now: i64,
) -> MailboxResult<String> {
    let mail = NewMail {
        address: Some(address),
        body,
        ..NewMail::to(MailKind::StaffInvited, Recipient::Sender, "en")
    };
    insert(tx, &mail, now).await
}

/// A mail to one staff member about a case (assigned to them).
pub async fn to_staff(
    tx: &mut Tx<'_>,
    kind: MailKind,
    staff_id: &str,
    case_id: &str,
    body: &str,
    now: i64,
) -> MailboxResult<String> {
    let ticket_id: Option<String> = sqlx::query_scalar("SELECT ticket_id FROM cases WHERE id = $1")
        .bind(case_id)
        .fetch_optional(&mut **tx)
        .await?;
    let mail = NewMail {
        staff_id: Some(staff_id),
        ticket_id: ticket_id.as_deref(),
        case_id: Some(case_id),
        body,
        ..NewMail::to(kind, Recipient::Staff, "en")
    };
    insert(tx, &mail, now).await
}

/// An escalation that waits for a supervisor: one mail to each supervisor (docs/spec/
/// roles.md: supervisors resolve escalations), saying why.
pub async fn to_supervisors(
    tx: &mut Tx<'_>,
    case_id: &str,
    why: &str,
    now: i64,
) -> MailboxResult<usize> {
    let supervisors: Vec<String> =
        sqlx::query_scalar("SELECT id FROM staff WHERE role = 'supervisor' ORDER BY id")
            .fetch_all(&mut **tx)
            .await?;
    for staff_id in &supervisors {
        to_staff(tx, MailKind::StaffEscalation, staff_id, case_id, why, now).await?;
    }
    Ok(supervisors.len())
}

/// The addresses the row `outbox_id` went (or goes) to, normalised: the one it was
/// rendered for, the customer's address on record, an unknown sender's address. Empty
/// when there is no such row.
pub async fn addresses_of(db: &Db, outbox_id: &str) -> MailboxResult<Vec<String>> {
    let row = sqlx::query(
        "SELECT o.recipient, o.address, c.email FROM mail_outbox o
         LEFT JOIN customers c ON c.id = o.customer_id WHERE o.id = $1",
    )
    .bind(outbox_id)
    .fetch_optional(db.reader())
    .await?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for column in ["recipient", "address", "email"] {
        if let Some(address) = row.try_get::<Option<String>, _>(column)? {
            found.push(domain::address::normalise_address(&address));
        }
    }
    Ok(found)
}

/// A row claimed for sending.
#[derive(Debug, Clone)]
pub struct OutboxMail {
    pub id: String,
    pub kind: MailKind,
    pub recipient: Recipient,
    pub customer_id: Option<String>,
    pub staff_id: Option<String>,
    pub address: Option<String>,
    pub ticket_id: Option<String>,
    pub case_id: Option<String>,
    pub language: String,
    pub body: String,
    pub in_reply_to: Option<String>,
    pub attempts: i64,
    /// The address it goes to and the bytes, once rendered.
    pub rendered: Option<(String, String)>,
    pub version: i64,
    pub created_at: i64,
}

const COLUMNS: &str =
    "id, kind, recipient_kind, customer_id, staff_id, address, ticket_id, case_id, \
     language, body, in_reply_to, attempts, recipient, raw, version, created_at";

fn mail_of_row(row: &AnyRow) -> MailboxResult<OutboxMail> {
    let recipient: Option<String> = row.try_get("recipient")?;
    let raw: Option<String> = row.try_get("raw")?;
    Ok(OutboxMail {
        id: row.try_get("id")?,
        kind: parse_kind(&row.try_get::<String, _>("kind")?)?,
        recipient: Recipient::parse(&row.try_get::<String, _>("recipient_kind")?)?,
        customer_id: row.try_get("customer_id")?,
        staff_id: row.try_get("staff_id")?,
        address: row.try_get("address")?,
        ticket_id: row.try_get("ticket_id")?,
        case_id: row.try_get("case_id")?,
        language: row.try_get("language")?,
        body: row.try_get("body")?,
        in_reply_to: row.try_get("in_reply_to")?,
        attempts: row.try_get("attempts")?,
        rendered: recipient.zip(raw),
        version: row.try_get("version")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Claims up to `limit` mails due at `now` with a lease of `lease_ms` (a versioned
/// update each: two instances never send one row at the same time).
pub async fn claim_due(
    db: &Db,
    owner: &str,
    now: i64,
    lease_ms: i64,
    limit: i64,
) -> MailboxResult<Vec<OutboxMail>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= $1
           AND (lease_expires_at IS NULL OR lease_expires_at < $1)
         ORDER BY created_at, seq, id LIMIT $2"
    )))
    .bind(now)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    let mut claimed = Vec::new();
    for row in &rows {
        let mut mail = mail_of_row(row)?;
        let done = sqlx::query(
            "UPDATE mail_outbox SET lease_owner = $1, lease_expires_at = $2, version = version + 1
             WHERE id = $3 AND version = $4",
        )
        .bind(owner)
        .bind(now + lease_ms)
        .bind(&mail.id)
        .bind(mail.version)
        .execute(db.pool())
        .await?;
        if done.rows_affected() == 1 {
            mail.version += 1;
            claimed.push(mail);
        }
    }
    Ok(claimed)
}

/// Keeps what a mail was rendered to — its address and bytes — in the transaction that
/// issued its sign-in link, so every later attempt sends exactly these bytes.
pub async fn store_rendered(
    tx: &mut Tx<'_>,
    mail: &mut OutboxMail,
    recipient: &str,
    raw: &str,
) -> MailboxResult<()> {
    versioned(tx, mail, "recipient = $1, raw = $2", &[recipient, raw]).await?;
    mail.rendered = Some((recipient.to_string(), raw.to_string()));
    Ok(())
}

/// One versioned update of a claimed row (`sets` binds `$1…`; the id and version follow).
async fn versioned(
    tx: &mut Tx<'_>,
    mail: &mut OutboxMail,
    sets: &str,
    values: &[&str],
) -> MailboxResult<()> {
    let n = values.len();
    let sql = format!(
        "UPDATE mail_outbox SET {sets}, version = version + 1 WHERE id = ${} AND version = ${}",
        n + 1,
        n + 2
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for value in values {
        query = query.bind(*value);
    }
    let done = query
        .bind(&mail.id)
        .bind(mail.version)
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() != 1 {
        return Err(MailboxError::Changed(
            "the outbox row changed meanwhile (another sender took it)",
        ));
    }
    mail.version += 1;
    Ok(())
}

/// The server took the mail: sent, and its bytes (which carry a sign-in link) dropped.
pub async fn mark_sent(db: &Db, mail: &mut OutboxMail, now: i64) -> MailboxResult<()> {
    let mut tx = db.begin().await?;
    let at = now.to_string();
    versioned(
        &mut tx,
        mail,
        "status = 'sent', raw = NULL, lease_owner = NULL, lease_expires_at = NULL, attempts = attempts + 1, sent_at = CAST($1 AS BIGINT)",
        &[&at],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The attempt failed for now: tried again at `next_at`.
pub async fn mark_retry(
    db: &Db,
    mail: &mut OutboxMail,
    next_at: i64,
    error: &str,
) -> MailboxResult<()> {
    let mut tx = db.begin().await?;
    let at = next_at.to_string();
    versioned(
        &mut tx,
        mail,
        "attempts = attempts + 1, next_attempt_at = CAST($1 AS BIGINT), last_error = $2, lease_owner = NULL, lease_expires_at = NULL",
        &[&at, error],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The mail will never go (`undeliverable`: the address bounced or was refused;
/// `expired`: older than anyone would want it): kept, with why, and its bytes dropped.
pub async fn mark_final(
    db: &Db,
    mail: &mut OutboxMail,
    status: &str,
    error: &str,
) -> MailboxResult<()> {
    let mut tx = db.begin().await?;
    versioned(
        &mut tx,
        mail,
        "status = $1, last_error = $2, raw = NULL, lease_owner = NULL, lease_expires_at = NULL",
        &[status, error],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A ticket's earlier Message-IDs, oldest first: our mails to its customer written
/// before `before_ms` (by row id) and the customer's own mails (their keys).
pub async fn thread_of_ticket(
    db: &Db,
    ticket_id: &str,
    except_outbox_id: &str,
    before_ms: i64,
) -> MailboxResult<Vec<(i64, String, bool)>> {
    let rows = sqlx::query(
        "SELECT created_at AS at, id AS mid, 1 AS ours FROM mail_outbox
           WHERE ticket_id = $1 AND recipient_kind = 'customer' AND id <> $2 AND created_at <= $3
         UNION ALL
         SELECT received_at AS at, message_key AS mid, 0 AS ours FROM mail_inbound
           WHERE ticket_id = $1 AND message_key NOT LIKE 'sha256:%'
         ORDER BY at, mid",
    )
    .bind(ticket_id)
    .bind(except_outbox_id)
    .bind(before_ms)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            let ours: i64 = r.try_get("ours")?;
            Ok((r.try_get("at")?, r.try_get("mid")?, ours == 1))
        })
        .collect()
}

/// The ticket a Message-ID of ours belongs to, if it is one of ours.
pub async fn ticket_of_outbox(db: &Db, outbox_id: &str) -> MailboxResult<Option<String>> {
    let ticket: Option<Option<String>> =
        sqlx::query_scalar("SELECT ticket_id FROM mail_outbox WHERE id = $1")
            .bind(outbox_id)
            .fetch_optional(db.reader())
            .await?;
    Ok(ticket.flatten())
}

/// What the outbox holds for a ticket, for staff: each mail's kind, status and when.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct OutboxLine {
    pub id: String,
    pub kind: String,
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
}

/// The mails written for a ticket, oldest first.
pub async fn for_ticket(db: &Db, ticket_id: &str) -> MailboxResult<Vec<OutboxLine>> {
    let rows = sqlx::query(
        "SELECT id, kind, status, attempts, last_error, created_at, sent_at FROM mail_outbox
         WHERE ticket_id = $1 AND recipient_kind = 'customer' ORDER BY created_at, seq, id",
    )
    .bind(ticket_id)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(OutboxLine {
                id: r.try_get("id")?,
                kind: r.try_get("kind")?,
                status: r.try_get("status")?,
                attempts: r.try_get("attempts")?,
                last_error: r.try_get("last_error")?,
                created_at: domain::millis::rfc3339(r.try_get("created_at")?),
                sent_at: r
                    .try_get::<Option<i64>, _>("sent_at")?
                    .map(domain::millis::rfc3339),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_message_ids_name_their_outbox_row_and_others_name_none() {
        let id = message_id("out_1f2e", "shop.test");
        assert_eq!(id, "out_1f2e@shop.test");
        assert_eq!(outbox_id_of(&format!("<{id}>")), Some("out_1f2e"));
        assert_eq!(outbox_id_of("CAF=abc@mail.gmail.com"), None);
        assert_eq!(outbox_id_of("no-at-sign"), None);
    }
}
