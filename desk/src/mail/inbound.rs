//! What a customer's mail does (docs/spec/email.md), whether it came through
//! `POST /api/v1/inbound/email` or the watched mailbox: each message once (by Message-ID,
//! or its bytes' hash), recorded in the same transaction as the ticket it opens or
//! continues.
//!
//! In order: a mail seen before is a duplicate; our own mail, auto-replies and bounces
//! are never answered (a bounce marks the failed address undeliverable); a sender whose
//! address is on no customer's record gets one reply in their language and no ticket; a
//! mail that does not prove its sender (`authentication`) goes to `unverified`: its
//! ticket waits, nothing proposed, until the customer signs in through the link we mail
//! to the address on record; a sender over the rate limit is held and processed
//! later, in order, nothing dropped. Then the thread decides: our Message-IDs or theirs
//! in `In-Reply-To`/`References`, else the ticket token in the subject, else a new
//! ticket (which joins an open case on the same order, as the page's do).
//!
//! What it does not do: answer (the outbox rows written with each change do), or read
//! more into the text than its new words (`new_words`).
//!
//! One file because a mail's way in reads in the order its checks run (once per
//! Message-ID, never answering our own mail or bounces, unknown senders, the sender's
//! proof, the rate limit, then the thread): split, that order would be spread over files.

use base64::Engine;
use serde::Serialize;

use super::authentication::{sender_proof, SenderProof};
use super::new_words;
use super::parse::{self, Automatic, ParsedMail};
use super::MailSettings;
use crate::clock::Clock;
use crate::customer::{self, EmailIn, NewTicket, Origin};
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::mailbox::attachments::Attachment;
use crate::mailbox::inbound::{self as record, InboundStatus, Taken};
use crate::mailbox::{addresses, outbox};
use crate::replies::{detect_language, MAX_MESSAGE_CHARS};
use crate::runs::Queue;
use crate::tickets::Ticket;
use store::Db;

/// The largest raw message taken (the route's body limit too).
pub const MAX_MAIL_BYTES: usize = 25 * 1024 * 1024;
/// Attachments kept per mail; more are noted for staff, not kept.
pub const MAX_ATTACHMENTS: usize = 10;
/// The largest attachment kept.
pub const MAX_ATTACHMENT_BYTES: usize = 10 * 1024 * 1024;
/// Mails of one sender processed per minute; more are held (below the page's ten
/// messages a minute, so a held mail is never refused as a flood when its turn comes).
pub const MAILS_PER_SENDER_PER_MINUTE: i64 = 5;
/// How long a held mail waits before it is looked at again.
pub const HOLD_MS: i64 = 60_000;

/// What the mail channel works with.
#[derive(Clone, Copy)]
pub struct Intake<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub queue: Queue<'a>,
    pub settings: &'a MailSettings,
}

/// `POST /api/v1/inbound/email`'s answer (docs/spec/interfaces.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct InboundOutcome {
    pub ticket_id: Option<String>,
    pub outcome: Outcome,
    /// Why a mail was ignored or held (`auto_reply`, `bounce`, `our_own_address`,
    /// `unknown_sender`, `held_rate_limited`, `held_unverified_sender`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Opened,
    Appended,
    Duplicate,
    Ignored,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Opened => "opened",
            Outcome::Appended => "appended",
            Outcome::Duplicate => "duplicate",
            Outcome::Ignored => "ignored",
        }
    }
}

pub(super) fn ignored(reason: &str) -> InboundOutcome {
    InboundOutcome {
        ticket_id: None,
        outcome: Outcome::Ignored,
        reason: Some(reason.to_string()),
    }
}

/// Takes one raw message (`source`: `api` or `imap`, with its UID).
pub async fn take(
    intake: Intake<'_>,
    raw: &[u8],
    source: &str,
    imap_uid: Option<&str>,
) -> DomainResult<InboundOutcome> {
    if raw.len() > MAX_MAIL_BYTES {
        return Err(DomainError::PayloadTooLarge(format!(
            "a mail is at most {MAX_MAIL_BYTES} bytes"
        )));
    }
    let now = intake.clock.now_ms();
    let parsed = match parse::parse(raw) {
        Ok(parsed) => parsed,
        Err(e) => return Err(DomainError::bad_request(ErrorCode::NotAMail, e.to_string())),
    };
    if let Some(seen) = record::seen(intake.db, &parsed.message_key).await? {
        return Ok(duplicate(seen));
    }
    let base = Taken {
        message_key: &parsed.message_key,
        sender: parsed.from.as_deref().unwrap_or(""),
        source,
        status: InboundStatus::Done,
        outcome: Some("ignored"),
        reason: None,
        ticket_id: None,
        customer_id: None,
        raw: None,
        imap_uid,
        received_at: now,
        process_after: now,
    };
    if let Some(reason) = never_answered(intake, &parsed, now).await? {
        return finish_ignored(intake.db, &base, reason).await;
    }
    let Some(customer_id) = customer_of(intake.db, base.sender).await? else {
        return unknown_sender(intake, &parsed, &base, now).await;
    };
    let trusted = intake.settings.authserv_id.as_deref();
    let proof = sender_proof(&parsed.authentication_results, trusted, base.sender);
    if let SenderProof::Unproven(why) = proof {
        let mail = Incoming {
            parsed: &parsed,
            customer_id: &customer_id,
        };
        return super::unverified::take(intake, &mail, base, raw, &why).await;
    }
    let (recent, held) = record::sender_load(intake.db, base.sender, now - HOLD_MS).await?;
    if held || recent >= MAILS_PER_SENDER_PER_MINUTE {
        return hold(intake.db, &base, raw, &customer_id, now).await;
    }
    let mail = Incoming {
        parsed: &parsed,
        customer_id: &customer_id,
    };
    deliver(intake, &mail, base, None, raw).await
}

/// A mail already taken: its first outcome's ticket.
fn duplicate(seen: record::Seen) -> InboundOutcome {
    InboundOutcome {
        ticket_id: seen.ticket_id,
        outcome: Outcome::Duplicate,
        reason: Some(format!(
            "taken before ({})",
            seen.outcome.unwrap_or(seen.status)
        )),
    }
}

/// Why a mail must never be answered (docs/spec/email.md: no loops), if it must not.
/// A bounce of a mail of ours marks the address it failed for (`bounces`).
async fn never_answered(
    intake: Intake<'_>,
    parsed: &ParsedMail,
    now: i64,
) -> DomainResult<Option<&'static str>> {
    let Some(from) = parsed.from.as_deref() else {
        return Ok(Some("no_sender"));
    };
    if intake.settings.from.as_deref() == Some(from) {
        return Ok(Some("our_own_address"));
    }
    match &parsed.automatic {
        Some(Automatic::Bounce(bounce)) => {
            super::bounces::take(intake, bounce, now).await?;
            Ok(Some("bounce"))
        }
        Some(Automatic::AutoReply(_)) => Ok(Some("auto_reply")),
        None => Ok(None),
    }
}

async fn finish_ignored(db: &Db, base: &Taken<'_>, reason: &str) -> DomainResult<InboundOutcome> {
    let mut tx = db.begin().await?;
    let taken = Taken {
        reason: Some(reason),
        ..base.clone()
    };
    let recorded = record::record(&mut tx, &taken).await?;
    tx.commit().await?;
    if recorded.is_none() {
        return duplicate_now(db, base.message_key).await;
    }
    tracing::info!(reason, "mail ignored");
    Ok(ignored(reason))
}

/// The duplicate answer for a key another delivery recorded meanwhile.
pub(super) async fn duplicate_now(db: &Db, key: &str) -> DomainResult<InboundOutcome> {
    match record::seen(db, key).await? {
        Some(seen) => Ok(duplicate(seen)),
        None => Err(DomainError::Internal(anyhow::anyhow!(
            "mail {key} neither new nor seen"
        ))),
    }
}

/// The customer whose address on record is `address` (docs/spec/email.md: compared
/// case-insensitively, the display name ignored).
async fn customer_of(db: &Db, address: &str) -> DomainResult<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM customers WHERE lower(trim(email)) = $1 ORDER BY id LIMIT 1",
    )
    .bind(address)
    .fetch_optional(db.reader())
    .await?)
}

/// A sender on no customer's record: one reply (a day at most) asking them to write from
/// their account's address, in the language they wrote in; no ticket.
async fn unknown_sender(
    intake: Intake<'_>,
    parsed: &ParsedMail,
    base: &Taken<'_>,
    now: i64,
) -> DomainResult<InboundOutcome> {
    let mut tx = intake.db.begin().await?;
    let taken = Taken {
        reason: Some("unknown_sender"),
        ..base.clone()
    };
    if record::record(&mut tx, &taken).await?.is_none() {
        return duplicate_now(intake.db, base.message_key).await;
    }
    if addresses::take_unknown_sender_reply(&mut tx, base.sender, now).await? {
        let words = format!("{} {}", parsed.subject, parsed.text);
        let language = detect_language(&words, None, intake.queue.default_language);
        let answered = parsed.has_message_id.then_some(base.message_key);
        outbox::to_sender(&mut tx, base.sender, language.as_str(), answered, now).await?;
    }
    tx.commit().await?;
    Ok(ignored("unknown_sender"))
}

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

/// A customer's mail on its way to a ticket.
pub(super) struct Incoming<'a> {
    pub(super) parsed: &'a ParsedMail,
    pub(super) customer_id: &'a str,
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
            super::unverified::hold(intake, &email.taken, raw, mail.customer_id).await
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
    // Issue 34's reader replaces `new_words::split`; this is its one call.
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

/// Held mail whose time has come, oldest first: processed as if it arrived now, or held
/// again while its sender is still over the limit. Returns how many were processed.
pub async fn process_held(intake: Intake<'_>) -> DomainResult<usize> {
    let now = intake.clock.now_ms();
    let mut processed = 0;
    let mut still_over: Vec<String> = Vec::new();
    for (id, encoded) in record::due(intake.db, now, 200).await? {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&encoded)
            .map_err(|e| DomainError::Internal(anyhow::anyhow!("held mail {id}: {e}")))?;
        match process_one_held(intake, &id, &raw, &mut still_over).await? {
            true => processed += 1,
            false => record::hold_until(intake.db, &id, now + HOLD_MS).await?,
        }
    }
    Ok(processed)
}

/// One held mail; `false` when its sender is still over the limit (it waits again).
async fn process_one_held(
    intake: Intake<'_>,
    id: &str,
    raw: &[u8],
    still_over: &mut Vec<String>,
) -> DomainResult<bool> {
    let now = intake.clock.now_ms();
    let parsed = parse::parse(raw)
        .map_err(|e| DomainError::Internal(anyhow::anyhow!("held mail {id}: {e}")))?;
    let sender = parsed.from.clone().unwrap_or_default();
    if still_over.contains(&sender) {
        return Ok(false);
    }
    let (recent, _) = record::sender_load(intake.db, &sender, now - HOLD_MS).await?;
    if recent >= MAILS_PER_SENDER_PER_MINUTE {
        still_over.push(sender);
        return Ok(false);
    }
    let Some(customer_id) = customer_of(intake.db, &sender).await? else {
        let mut tx = intake.db.begin().await?;
        record::finish(
            &mut tx,
            id,
            InboundStatus::Held,
            "ignored",
            Some("unknown_sender"),
            None,
            now,
        )
        .await?;
        tx.commit().await?;
        return Ok(true);
    };
    let base = Taken {
        message_key: &parsed.message_key,
        sender: &sender,
        source: "held",
        status: InboundStatus::Done,
        outcome: None,
        reason: None,
        ticket_id: None,
        customer_id: Some(&customer_id),
        raw: None,
        imap_uid: None,
        received_at: now,
        process_after: now,
    };
    let mail = Incoming {
        parsed: &parsed,
        customer_id: &customer_id,
    };
    let outcome = deliver(intake, &mail, base, Some(id), raw).await?;
    Ok(outcome.reason.as_deref() != Some("held_rate_limited"))
}
