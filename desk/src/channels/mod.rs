//! Telling people what happened: the one seam between the workflow and the ways a person
//! is reached (ARCHITECTURE.md, "Adding a channel"; docs/spec/email.md).
//!
//! The workflow says once, in the transaction of the change, what to tell whom: a
//! [`Notice`] and the words the customer's ticket shows. The customer's page needs no
//! delivery — it is the record itself (the thread and the case's status) — and every
//! channel in [`CHANNELS`] delivers the notice its own way, committing or rolling back
//! with the change. Mail is the one such channel today: its outbox row, sent later by
//! `mail::send`. No workflow module names a channel.

mod mail;

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
