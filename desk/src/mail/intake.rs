//! What every step of a customer's mail on its way in shares (docs/spec/email.md): the
//! limits, what the channel works with (`Intake`), the mail on its way to a ticket
//! (`Incoming`) and the answers a mail gets (`InboundOutcome`), a duplicate's among them.
//!
//! The floor under `inbound` (the order of the checks), `delivery` (into a ticket),
//! `unverified` and `bounces`: it imports none of them, so they form a line, not a circle.
//! What it does not do: decide anything about a mail.

use serde::Serialize;

use crate::channels::mail::MailSettings;
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult};
use crate::runs::Queue;
use mail_message::parse::ParsedMail;
use mailbox::inbound as record;
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

/// A customer's mail on its way to a ticket.
pub(super) struct Incoming<'a> {
    pub(super) parsed: &'a ParsedMail,
    pub(super) customer_id: &'a str,
}

/// A mail already taken: its first outcome's ticket.
pub(super) fn duplicate(seen: record::Seen) -> InboundOutcome {
    InboundOutcome {
        ticket_id: seen.ticket_id,
        outcome: Outcome::Duplicate,
        reason: Some(format!(
            "taken before ({})",
            seen.outcome.unwrap_or(seen.status)
        )),
    }
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
