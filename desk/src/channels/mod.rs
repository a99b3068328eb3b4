//! Telling people what happened: the one seam between the workflow and the ways a person
//! is reached (ARCHITECTURE.md, "Adding a channel"; docs/spec/email.md).
//!
//! The workflow says once, in the transaction of the change, what to tell whom: a
//! [`Notice`] and the words the customer's ticket shows. The customer's page needs no
//! delivery — it is the record itself (the thread and the case's status) — and every
//! channel in [`CHANNELS`] delivers the notice its own way, committing or rolling back
//! with the change. Mail is the one such channel today: its outbox row, sent later by
//! `mail::send`. No workflow module names a channel. Each channel's settings are a field
//! of [`ChannelConfig`], checked by the channel, and what it runs with a field of
//! [`Channels`]. What a worker pass does with the channels — deliver what was written,
//! take in what people wrote — is `crate::reach`, above the workflow whose tickets a
//! message opens.

pub mod mail;

use crate::error::DomainResult;
use crate::states::CaseStatus;
pub use domain::notice::Notice;
use store::Tx;

/// A way of reaching a person beside the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Mail to the address on record (docs/spec/email.md).
    Mail,
}

/// The channels every notice is delivered to. Each sends only once its own setting is
/// given (mail: `SMTP_URL`); until then what it wrote waits.
pub const CHANNELS: &[Channel] = &[Channel::Mail];

/// Every channel's settings, as configured (docs/configuration.md); each unset part leaves
/// that part of its channel off.
#[derive(Debug, Clone, Default)]
pub struct ChannelConfig {
    /// Mail in and out (docs/spec/email.md).
    pub mail: mail::MailConfig,
}

impl ChannelConfig {
    /// Each channel's own check of its settings (`serve` refuses to start on a failure).
    pub fn check(&self) -> Result<(), MissingSetting> {
        mail::check(&self.mail)
    }
}

/// A channel's setting that another of its settings needs.
#[derive(Debug, thiserror::Error)]
#[error("{needed} must be set with {with}: {why}")]
pub struct MissingSetting {
    pub needed: &'static str,
    pub with: &'static str,
    pub why: &'static str,
}

/// What each channel runs with, made once from its settings.
#[derive(Debug, Clone)]
pub struct Channels {
    pub mail: mail::MailSettings,
}

impl Channels {
    /// The channels `config` describes; a malformed setting stops start-up.
    pub fn from_config(config: &ChannelConfig, public_url: Option<&str>) -> anyhow::Result<Self> {
        Ok(Channels {
            mail: mail::MailSettings::from_config(&config.mail, public_url)?,
        })
    }
}

/// Tells the customer of `ticket_id` of a change: `words` are what their ticket shows
/// (empty when the notice speaks for itself: received, approved, reopened).
pub async fn tell_customer(
    tx: &mut Tx<'_>,
    notice: Notice,
    ticket_id: &str,
    words: &str,
    now: i64,
) -> DomainResult<()> {
    for channel in CHANNELS {
        match channel {
            Channel::Mail => mail::customer(tx, notice, ticket_id, words, now).await?,
        }
    }
    Ok(())
}

/// Tells one staff member of a change on a case (assigned to them), saying `why`.
pub async fn tell_staff(
    tx: &mut Tx<'_>,
    notice: Notice,
    staff_id: &str,
    case_id: &str,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    for channel in CHANNELS {
        match channel {
            Channel::Mail => mail::staff(tx, notice, staff_id, case_id, why, now).await?,
        }
    }
    Ok(())
}

/// Tells a person invited to the team how to join: `words` carry the invitation's link.
pub async fn tell_invitee(
    tx: &mut Tx<'_>,
    address: &str,
    words: &str,
    now: i64,
) -> DomainResult<()> {
    for channel in CHANNELS {
        match channel {
            Channel::Mail => mail::invitee(tx, address, words, now).await?,
        }
    }
    Ok(())
}

/// Tells every supervisor that a case waits for one of them (docs/spec/roles.md:
/// supervisors resolve escalations), saying `why`.
pub async fn tell_supervisors(
    tx: &mut Tx<'_>,
    case_id: &str,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    for channel in CHANNELS {
        match channel {
            Channel::Mail => mail::supervisors(tx, case_id, why, now).await?,
        }
    }
    Ok(())
}

/// The notice a decision's words go out as: what the customer's page shows of the case
/// (`shown`, RP-007 included), a question when it waits for them, else a reply.
pub fn of_decided(shown: CaseStatus) -> Notice {
    match shown {
        CaseStatus::AwaitingCustomer => Notice::Question,
        _ => Notice::Reply,
    }
}

/// The notice a settled refund's status goes out as (`refunds::settle`).
pub fn of_settled(status: CaseStatus) -> Notice {
    match status {
        CaseStatus::RefundSucceeded => Notice::Completed,
        CaseStatus::RefundPending => Notice::Submitted,
        CaseStatus::PendingVerification => Notice::Verifying,
        CaseStatus::RefundFailed => Notice::Failed,
        _ => Notice::Reply,
    }
}
