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
//! This file is that order (once per Message-ID, never answering our own mail or bounces,
//! unknown senders, the sender's proof, the rate limit, then the thread), read top down;
//! each step it hands on stands below it: `delivery` (into a ticket), `unverified`,
//! `bounces`, and what they share in `intake`.

use base64::Engine;

use super::delivery::{self, deliver, thread_ticket};
use super::intake::{
    duplicate, duplicate_now, ignored, InboundOutcome, Incoming, Intake, Outcome, HOLD_MS,
    MAILS_PER_SENDER_PER_MINUTE, MAX_MAIL_BYTES,
};
use super::unverified::{self, UNVERIFIED_SENDER};
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::replies::detect_language;
use mail_message::authentication::{sender_proof, SenderProof};
use mail_message::parse::{self, Automatic, ParsedMail};
use mailbox::inbound::{self as record, InboundStatus, Taken};
use mailbox::{addresses, outbox};
use store::Db;

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
        return take_unproven(intake, &mail, base, raw, &why).await;
    }
    let (recent, held) = record::sender_load(intake.db, base.sender, now - HOLD_MS).await?;
    if held || recent >= MAILS_PER_SENDER_PER_MINUTE {
        return delivery::hold(intake.db, &base, raw, &customer_id, now).await;
    }
    let mail = Incoming {
        parsed: &parsed,
        customer_id: &customer_id,
    };
    deliver(intake, &mail, base, None, raw).await
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

/// An unproven mail (`unverified`; `why`: what the proof lacked, for the log): a new request
/// opens its waiting ticket; a mail for an existing ticket is held.
async fn take_unproven(
    intake: Intake<'_>,
    mail: &Incoming<'_>,
    base: Taken<'_>,
    raw: &[u8],
    why: &str,
) -> DomainResult<InboundOutcome> {
    tracing::warn!(
        customer_id = mail.customer_id,
        why,
        "mail does not prove its sender"
    );
    let taken = Taken {
        status: InboundStatus::Unverified,
        reason: Some(UNVERIFIED_SENDER),
        ..base
    };
    if thread_ticket(intake.db, mail.customer_id, mail.parsed)
        .await?
        .is_some()
    {
        return unverified::hold(intake, &taken, raw, mail.customer_id).await;
    }
    let mut outcome = deliver(intake, mail, taken, None, raw).await?;
    if outcome.outcome == Outcome::Opened {
        outcome.reason = Some(UNVERIFIED_SENDER.to_string());
    }
    Ok(outcome)
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
