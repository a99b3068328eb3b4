//! The outbox's sender (docs/spec/email.md): claims due rows, renders each once
//! — in the transaction that issues its fresh single-use sign-in link, so the bytes and
//! the link exist together — and sends them over `SMTP_URL`. The server took it: sent,
//! and the bytes dropped. It did not: tried again after one backoff that doubles per
//! attempt (`MAIL_RETRY_SECS`, at most an hour), for up to a week. A permanent refusal
//! marks the address undeliverable, which staff see.
//!
//! At least once, never a different mail: the Message-ID is the row's and a resend sends
//! the stored bytes, so a crash between the server's `250` and the row's update makes a
//! second copy with the same Message-ID, which mail clients fold into one.
//! `run_once` is one pass (tests call it; `serve`'s worker loops it).

use std::time::Duration;

use domain::backoff::Backoff;
use sqlx::Row;

use super::render::{self, MailContext};
use crate::channels::mail::MailSettings;
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult};
use mailbox::outbox::{self, OutboxMail, Recipient};
use mailbox::{addresses, inbound, MailKind};
use store::Db;

/// What the sender works with.
#[derive(Clone, Copy)]
pub struct Postman<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub settings: &'a MailSettings,
    /// Names this process in the rows' leases.
    pub instance_id: &'a str,
}

/// Rows one pass claims at most.
const BATCH: i64 = 50;
/// How long a claimed row stays with this process unrenewed (a crash frees it then).
const LEASE_MS: i64 = 60_000;
/// The longest wait between two attempts.
pub const MAX_RETRY_MS: i64 = 3_600_000;
/// A mail not sent within a week is given up (`expired`): nobody wants last week's
/// "we received your request".
pub const EXPIRE_AFTER_MS: i64 = 7 * 24 * 3600 * 1000;

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SendReport {
    pub sent: usize,
    pub retried: usize,
    pub undeliverable: usize,
    pub expired: usize,
}

impl SendReport {
    pub fn handled(&self) -> usize {
        self.sent + self.retried + self.undeliverable + self.expired
    }
}

/// The wait before attempt `attempts + 1`: the retry setting, doubled per attempt made
/// (the product's one backoff, `domain::backoff`, in the outbox's milliseconds).
pub fn backoff_ms(retry_ms: i64, attempts: i64) -> i64 {
    let millis = |ms: i64| Duration::from_millis(ms.max(0) as u64);
    let attempt = attempts.clamp(0, i64::from(u32::MAX)) as u32;
    let wait = Backoff::new(millis(retry_ms), millis(MAX_RETRY_MS)).delay(attempt);
    wait.as_millis().min(MAX_RETRY_MS as u128) as i64
}

/// One pass: every due row, sent or scheduled again. Without `SMTP_URL` nothing is sent.
pub async fn run_once(postman: Postman<'_>) -> DomainResult<SendReport> {
    let mut report = SendReport::default();
    if postman.settings.smtp.is_none() || postman.settings.from.is_none() {
        return Ok(report);
    }
    let now = postman.clock.now_ms();
    let due = outbox::claim_due(postman.db, postman.instance_id, now, LEASE_MS, BATCH).await?;
    for mut mail in due {
        match deliver(postman, &mut mail, now).await {
            Ok(Delivery::Sent) => report.sent += 1,
            Ok(Delivery::Retry) => report.retried += 1,
            Ok(Delivery::Undeliverable) => report.undeliverable += 1,
            Ok(Delivery::Expired) => report.expired += 1,
            // Another process took the row over (its lease expired mid-send): its turn.
            Err(DomainError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}

enum Delivery {
    Sent,
    Retry,
    Undeliverable,
    Expired,
}

/// Renders (first attempt only) and sends one claimed row, and records how it went.
async fn deliver(postman: Postman<'_>, mail: &mut OutboxMail, now: i64) -> DomainResult<Delivery> {
    let db = postman.db;
    if now - mail.created_at > EXPIRE_AFTER_MS {
        outbox::mark_final(db, mail, "expired", "not sent within a week").await?;
        return Ok(Delivery::Expired);
    }
    if mail.rendered.is_none() {
        let domain = postman.settings.from_domain();
        let Some(context) = context(db, mail, domain).await? else {
            outbox::mark_final(db, mail, "undeliverable", "no address to send to").await?;
            return Ok(Delivery::Undeliverable);
        };
        if let Some((_, why)) = addresses::undeliverable(db, &context.recipient).await? {
            let why = format!("the address is undeliverable: {why}");
            outbox::mark_final(db, mail, "undeliverable", &why).await?;
            return Ok(Delivery::Undeliverable);
        }
        render_and_keep(postman, mail, &context, now).await?;
    }
    let (recipient, raw) = mail
        .rendered
        .clone()
        .ok_or_else(|| DomainError::Internal(anyhow::anyhow!("mail {} not rendered", mail.id)))?;
    match transmit(postman.settings, &recipient, raw.as_bytes()).await {
        Ok(()) => {
            outbox::mark_sent(db, mail, postman.clock.now_ms()).await?;
            tracing::info!(mail_id = %mail.id, kind = mail.kind.as_str(), "mail sent");
            Ok(Delivery::Sent)
        }
        Err(Failure::Permanent(why)) => {
            addresses::mark_undeliverable(db, &recipient, &why, now).await?;
            outbox::mark_final(db, mail, "undeliverable", &why).await?;
            tracing::warn!(mail_id = %mail.id, error = %why, "mail refused for good");
            Ok(Delivery::Undeliverable)
        }
        Err(Failure::Transient(why)) => {
            let next = now + backoff_ms(postman.settings.retry_ms, mail.attempts);
            outbox::mark_retry(db, mail, next, &why).await?;
            tracing::warn!(mail_id = %mail.id, error = %why, attempts = mail.attempts + 1, "mail not sent; will retry");
            Ok(Delivery::Retry)
        }
    }
}

/// Issues the mail's sign-in link and keeps its bytes, in one transaction.
async fn render_and_keep(
    postman: Postman<'_>,
    mail: &mut OutboxMail,
    context: &MailContext,
    now: i64,
) -> DomainResult<()> {
    let public = &postman.settings.public_url;
    let mut tx = postman.db.begin().await?;
    let link = match (mail.recipient, &mail.customer_id) {
        (Recipient::Staff, _) => mail
            .case_id
            .as_ref()
            .map(|case| format!("{public}/console/cases/{case}")),
        (Recipient::Customer, Some(customer)) => {
            let token = crate::auth::issue_mail_sign_in_link(&mut tx, customer, now).await?;
            if mail.kind == MailKind::ConfirmSender {
                confirm_with(&mut tx, mail, &token).await?;
            }
            let next = match &mail.ticket_id {
                Some(ticket) => format!("/tickets/{ticket}"),
                None => "/tickets".to_string(),
            };
            // The sign-in page speaks the mail's language, not the browser's.
            let lang = crate::replies::Language::from_stored(&mail.language).as_str();
            Some(format!(
                "{public}/sign-in?link={token}&next={next}&lang={lang}"
            ))
        }
        _ => None,
    };
    let words = render::words(mail, link);
    let bytes = render::render(postman.settings, mail, context, &words, now / 1000)
        .map_err(DomainError::Internal)?;
    let raw = String::from_utf8(bytes)
        .map_err(|e| DomainError::Internal(anyhow::anyhow!("a rendered mail is not ASCII: {e}")))?;
    outbox::store_rendered(&mut tx, mail, &context.recipient, &raw).await?;
    tx.commit().await?;
    Ok(())
}

/// Ties the held, unverified mail a confirmation answers to the link it carries.
async fn confirm_with(tx: &mut store::Tx<'_>, mail: &OutboxMail, token: &str) -> DomainResult<()> {
    if let Some(key) = &mail.in_reply_to {
        if let Some(id) = inbound::unverified_by_key(tx, key).await? {
            inbound::set_confirm_link(tx, &id, &crate::auth::token_hash(token)).await?;
        }
    }
    Ok(())
}

/// Where the mail goes and what it threads with; `None` when there is no address.
async fn context(db: &Db, mail: &OutboxMail, domain: &str) -> DomainResult<Option<MailContext>> {
    let recipient: Option<String> = match mail.recipient {
        Recipient::Customer => {
            sqlx::query_scalar("SELECT email FROM customers WHERE id = $1")
                .bind(&mail.customer_id)
                .fetch_optional(db.reader())
                .await?
        }
        Recipient::Staff => {
            sqlx::query_scalar("SELECT email FROM staff WHERE id = $1")
                .bind(&mail.staff_id)
                .fetch_optional(db.reader())
                .await?
        }
        Recipient::Sender => mail.address.clone(),
    };
    let Some(recipient) = recipient.filter(|r| r.contains('@')) else {
        return Ok(None);
    };
    let mut context = MailContext {
        recipient: recipient.trim().to_string(),
        ..MailContext::default()
    };
    if let Some(ticket) = &mail.ticket_id {
        let first =
            sqlx::query("SELECT body FROM messages WHERE ticket_id = $1 ORDER BY seq LIMIT 1")
                .bind(ticket)
                .fetch_optional(db.reader())
                .await?;
        if let Some(row) = first {
            context.ticket_subject = crate::tickets::subject_of(&row.try_get::<String, _>("body")?);
        }
        if mail.recipient == Recipient::Customer {
            context.references = references(db, mail, ticket, domain).await?;
        }
    } else if let Some(answered) = &mail.in_reply_to {
        context.references = vec![answered.clone()];
    }
    Ok(Some(context))
}

/// The ticket's earlier Message-IDs (at most the last 20), the answered mail last.
async fn references(
    db: &Db,
    mail: &OutboxMail,
    ticket: &str,
    domain: &str,
) -> DomainResult<Vec<String>> {
    let domain_less = outbox::thread_of_ticket(db, ticket, &mail.id, mail.created_at).await?;
    let mut ids: Vec<String> = Vec::new();
    for (_, id, ours) in domain_less {
        // Our rows are stored by id; the world knows them as Message-IDs.
        let id = if ours {
            mailbox::message_id(&id, domain)
        } else {
            id
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if let Some(answered) = &mail.in_reply_to {
        ids.retain(|id| id != answered);
        ids.push(answered.clone());
    }
    let skip = ids.len().saturating_sub(20);
    Ok(ids.split_off(skip))
}

/// Why an attempt failed.
enum Failure {
    /// The server refused the mail for good (5xx): the address is undeliverable.
    Permanent(String),
    /// Anything else (no connection, 4xx, a timeout): try again later.
    Transient(String),
}

/// Hands the bytes to the SMTP server: envelope from the support address (bounces come
/// back to it) to the one recipient.
async fn transmit(settings: &MailSettings, recipient: &str, raw: &[u8]) -> Result<(), Failure> {
    use lettre::AsyncTransport;
    let (Some(smtp), Some(from)) = (&settings.smtp, &settings.from) else {
        return Err(Failure::Transient(
            "SMTP_URL or MAIL_FROM is not set".into(),
        ));
    };
    let parse = |a: &str| {
        a.parse::<lettre::Address>()
            .map_err(|e| format!("'{a}': {e}"))
    };
    let from = parse(from).map_err(Failure::Permanent)?;
    let to = parse(recipient).map_err(Failure::Permanent)?;
    let envelope = lettre::address::Envelope::new(Some(from), vec![to])
        .map_err(|e| Failure::Permanent(e.to_string()))?;
    match smtp.send_raw(&envelope, raw).await {
        Ok(_) => Ok(()),
        Err(e) if e.is_permanent() => Err(Failure::Permanent(e.to_string())),
        Err(e) => Err(Failure::Transient(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_per_attempt_and_stops_at_an_hour() {
        assert_eq!(backoff_ms(30_000, 0), 30_000);
        assert_eq!(backoff_ms(30_000, 1), 60_000);
        assert_eq!(backoff_ms(30_000, 3), 240_000);
        assert_eq!(backoff_ms(30_000, 10), MAX_RETRY_MS);
        assert_eq!(backoff_ms(30_000, 10_000), MAX_RETRY_MS);
    }
}
