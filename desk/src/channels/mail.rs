//! The mail channel's part of a notice: its outbox row, in the caller's transaction
//! (`mailbox::outbox`); `mail::send` renders and sends it later.

use crate::error::DomainResult;
use domain::notice::Notice;
use mailbox::outbox;
use store::Tx;

pub(super) async fn customer(
    tx: &mut Tx<'_>,
    notice: Notice,
    ticket_id: &str,
    words: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_customer(tx, notice, ticket_id, words, now).await?;
    Ok(())
}

pub(super) async fn staff(
    tx: &mut Tx<'_>,
    notice: Notice,
    staff_id: &str,
    case_id: &str,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_staff(tx, notice, staff_id, case_id, why, now).await?;
    Ok(())
}

pub(super) async fn invitee(
    tx: &mut Tx<'_>,
    address: &str,
    words: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_invitee(tx, address, words, now).await?;
    Ok(())
}

pub(super) async fn supervisors(
    tx: &mut Tx<'_>,
    case_id: &str,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_supervisors(tx, case_id, why, now).await?;
    Ok(())
}
