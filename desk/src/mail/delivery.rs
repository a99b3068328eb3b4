//! A customer's mail into its ticket (docs/spec/email.md, "Threads"): our Message-IDs or
//! theirs in `In-Reply-To`/`References`, else the ticket token in the subject, else a new
//! ticket (which joins an open case on the same order, as the page's do); recorded with
//! the ticket it opens or continues, its new words apart from the quoted rest, its
//! attachments within the limits. A sender over the rate limit is held whole, processed
//! later, in order, nothing dropped.
//!
//! What it does not do: decide whether a mail may reach a ticket at all (`inbound` runs
//! those checks first), or read more into the text than its new words (`new_words`).

use base64::Engine;

use super::intake::{
    duplicate_now, ignored, InboundOutcome, Incoming, Intake, Outcome, HOLD_MS, MAX_ATTACHMENTS,
    MAX_ATTACHMENT_BYTES,
};
use super::unverified;
use crate::customer::{self, EmailIn, NewTicket, Origin};
use crate::error::{DomainError, DomainResult};
use crate::replies::MAX_MESSAGE_CHARS;
use crate::tickets::Ticket;
use mail_message::new_words;
use mail_message::parse::{self, ParsedMail};
use mailbox::attachments::Attachment;
use mailbox::inbound::{self as record, InboundStatus, Taken};
use store::Db;

/// Holds a mail of a sender over the rate limit: kept whole, processed later.
pub(super) async fn hold(
    db: &Db,
    base: &Taken<'_>,
    raw: &[u8],
    customer_id: &str,
    now: i64,
) -> DomainResult<InboundOutcome> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
    let taken = Taken {
        status: InboundStatus::Held,
        outcome: None,
        reason: Some("held_rate_limited"),
        customer_id: Some(customer_id),
        raw: Some(&encoded),
        process_after: now + HOLD_MS,
        ..base.clone()
    };
    let mut tx = db.begin().await?;
    let recorded = record::record(&mut tx, &taken).await?;
    tx.commit().await?;
    if recorded.is_none() {
        return duplicate_now(db, base.message_key).await;
    }
    Ok(ignored("held_rate_limited"))
}

/// Opens or continues the ticket, recording the mail with it (`held_id`: a held mail's
/// record, finished instead of written anew). A mail whose record is `Unverified` opens
/// its ticket waiting for the sender's confirmation (`customer::open_ticket`).
pub(super) async fn deliver(
    intake: Intake<'_>,
    mail: &Incoming<'_>,
    base: Taken<'_>,
    held_id: Option<&str>,
    raw: &[u8],
) -> DomainResult<InboundOutcome> {
    let ticket = thread_ticket(intake.db, mail.customer_id, mail.parsed).await?;
    let (attachments, left_out) = kept_attachments(&mail.parsed.attachments);
    let words = words_of(mail.parsed, ticket.is_none(), left_out);
    let taken = Taken {
        customer_id: Some(mail.customer_id),
        ..base
    };
    let email = EmailIn {
        quoted: Some(&words.quoted),
        attachments: &attachments,
        taken,
        held_id,
    };
    let result = match &ticket {
        Some(ticket) => append(intake, ticket, &words.new_words, &email).await,
        None => open(intake, mail.customer_id, &words.new_words, &email).await,
    };
    match result {
        Ok(outcome) => Ok(outcome),
        Err(DomainError::TooManyRequests) if email.taken.status == InboundStatus::Unverified => {
            // Held as rate limited it would later be taken as proven: it waits as unverified.
            unverified::hold(intake, &email.taken, raw, mail.customer_id).await
        }
        Err(DomainError::TooManyRequests) => {
            // The page's own flood limit (the customer also writes there): held, not lost.
            let now = intake.clock.now_ms();
            if let Some(id) = held_id {
                record::hold_until(intake.db, id, now + HOLD_MS).await?;
                return Ok(ignored("held_rate_limited"));
            }
            hold(intake.db, &email.taken, raw, mail.customer_id, now).await
        }
        Err(DomainError::Conflict { code, .. }) if code == customer::DUPLICATE_MAIL => {
            duplicate_now(intake.db, email.taken.message_key).await
        }
        Err(e) => Err(e),
    }
}

async fn append(
    intake: Intake<'_>,
    ticket: &Ticket,
    text: &str,
    email: &EmailIn<'_>,
) -> DomainResult<InboundOutcome> {
    let origin = Origin::Email(email);
    customer::add_message_from(intake.db, intake.clock, intake.queue, ticket, text, origin).await?;
    tracing::info!(ticket_id = %ticket.id, "mail appended to its ticket");
    Ok(InboundOutcome {
        ticket_id: Some(ticket.id.to_string()),
        outcome: Outcome::Appended,
        reason: None,
    })
}

async fn open(
    intake: Intake<'_>,
    customer_id: &str,
    text: &str,
    email: &EmailIn<'_>,
) -> DomainResult<InboundOutcome> {
    let input = NewTicket {
        message: text.to_string(),
        order_id: None,
    };
    let origin = Origin::Email(email);
    let ticket = customer::open_ticket(
        intake.db,
        intake.clock,
        intake.queue,
        customer_id,
        input,
        origin,
    )
    .await?;
    tracing::info!(ticket_id = %ticket.id, "mail opened a ticket");
    Ok(InboundOutcome {
        ticket_id: Some(ticket.id.into_string()),
        outcome: Outcome::Opened,
        reason: None,
    })
}

/// The ticket a mail continues: its thread (our Message-IDs or the customer's earlier
/// mails), else the `[#tkt_…]` token in its subject; only ever the sender's own ticket.
pub(super) async fn thread_ticket(
    db: &Db,
    customer_id: &str,
    parsed: &ParsedMail,
) -> DomainResult<Option<Ticket>> {
    let mut ticket_id = record::ticket_of_thread(db, customer_id, &parsed.thread_ids).await?;
    if ticket_id.is_none() {
        if let Some(token) = subject_token(&parsed.subject) {
            if record::owns_ticket(db, customer_id, token).await? {
                ticket_id = Some(token.to_string());
            }
        }
    }
    match ticket_id {
        Some(id) => crate::tickets::load_ticket(db, &id).await,
        None => Ok(None),
    }
}

/// The ticket id in a subject's `[#tkt_…]`, as our mails write it.
pub fn subject_token(subject: &str) -> Option<&str> {
    let start = subject.find("[#tkt_")? + 2;
    let end = start + subject[start..].find(']')?;
    let token = &subject[start..end];
    token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(token)
}

/// The message's new words and the rest (quoted thread, signature, anything past the
/// message limit, what was not kept), for staff.
struct Words {
    new_words: String,
    quoted: String,
}

fn words_of(parsed: &ParsedMail, new_ticket: bool, left_out: Vec<String>) -> Words {
    // The one place a mail's text is split into new words and the rest (`new_words`).
    let split = new_words::split(&parsed.text);
    let subject = parsed.subject.trim();
    let mut text = split.new_words;
    // A new ticket's subject often names what it is about ("Refund for O-1001").
    if new_ticket && !subject.is_empty() && !text.contains(subject) {
        text = if text.is_empty() {
            subject.to_string()
        } else {
            format!("{subject}\n\n{text}")
        };
    }
    if text.trim().is_empty() {
        text = if subject.is_empty() {
            "(no text)".to_string()
        } else {
            subject.to_string()
        };
    }
    let mut quoted = split.quoted;
    if text.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
        let rest: String = text.chars().skip(MAX_MESSAGE_CHARS).collect();
        quoted = format!("[the rest of the message]\n{rest}\n\n{quoted}");
        text = cut;
    }
    for note in left_out {
        quoted.push_str(&format!("\n[attachment not kept: {note}]"));
    }
    Words {
        new_words: text.replace('\u{0}', ""),
        quoted: quoted.trim().replace('\u{0}', ""),
    }
}

/// The attachments within the limits, and a note for each left out.
fn kept_attachments(all: &[parse::RawAttachment]) -> (Vec<Attachment>, Vec<String>) {
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for a in all {
        if a.bytes.len() > MAX_ATTACHMENT_BYTES {
            left_out.push(format!(
                "{} ({} bytes, over {MAX_ATTACHMENT_BYTES})",
                a.filename,
                a.bytes.len()
            ));
        } else if kept.len() >= MAX_ATTACHMENTS {
            left_out.push(format!(
                "{} (more than {MAX_ATTACHMENTS} attachments)",
                a.filename
            ));
        } else {
            kept.push(Attachment {
                filename: a.filename.clone(),
                content_type: a.content_type.clone(),
                bytes: a.bytes.clone(),
            });
        }
    }
    (kept, left_out)
}
