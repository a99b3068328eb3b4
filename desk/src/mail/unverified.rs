//! A customer's mail that does not prove its sender (docs/spec/email.md, "Who wrote"):
//! anyone can write a From line. A new request opens its ticket, but its case waits for
//! the customer (`awaiting_customer`, no agent run: nothing is investigated or proposed)
//! and the customer is asked, at the address on record, to confirm through a single-use
//! sign-in link. A mail that would continue a ticket is held whole, not added to it (its
//! words would send a decided case back to investigation). Once the customer signs in
//! through that link, the waiting case is investigated and held mail is taken as theirs.
//!
//! What it does not do: decide what proves a sender (`authentication`), choose between a
//! waiting ticket and a held mail (`inbound`, which knows the thread), or render the link
//! (`send` issues it when it renders the mail, and ties it to the mail here).

use base64::Engine;

use super::intake::{duplicate_now, ignored, InboundOutcome, Intake};
use crate::cases::{self, CaseStatus};
use crate::error::DomainResult;
use crate::runs::Queue;
use mailbox::inbound::{self as record, InboundStatus, Taken};
use mailbox::{outbox, MailKind};
use store::Db;

/// The reason an unproven mail's record and answer carry.
pub const UNVERIFIED_SENDER: &str = "unverified_sender";

/// Keeps an unproven mail whole, not acted on, and asks the customer (at the address
/// on record, in their own language, not the mail's) to confirm it by signing in.
pub(super) async fn hold(
    intake: Intake<'_>,
    base: &Taken<'_>,
    raw: &[u8],
    customer_id: &str,
) -> DomainResult<InboundOutcome> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
    let taken = Taken {
        status: InboundStatus::Unverified,
        outcome: None,
        reason: Some(UNVERIFIED_SENDER),
        ticket_id: None,
        customer_id: Some(customer_id),
        raw: Some(&encoded),
        ..base.clone()
    };
    let language = crate::tickets::customer_language(intake.db, customer_id).await?;
    let mut tx = intake.db.begin().await?;
    if record::record(&mut tx, &taken).await?.is_none() {
        return duplicate_now(intake.db, base.message_key).await;
    }
    let (kind, key, now) = (
        MailKind::ConfirmSender,
        Some(base.message_key),
        base.received_at,
    );
    outbox::to_customer_account(&mut tx, kind, customer_id, language.as_str(), key, now).await?;
    tx.commit().await?;
    Ok(ignored("held_unverified_sender"))
}

/// After a customer signed in through a link: what was waiting for that link goes on —
/// each waiting case it opened is investigated, each held mail is taken as theirs on the
/// worker's next pass. Never fails the sign-in (a failure is logged; the mail waits).
pub async fn confirmed_by_link(db: &Db, queue: Queue<'_>, link_token: &str, now: i64) {
    let hash = crate::auth::token_hash(link_token);
    match confirm(db, queue, &hash, now).await {
        Ok(0) => {}
        Ok(n) => {
            tracing::info!(
                confirmed = n,
                "unverified mail confirmed by its customer's sign-in"
            );
            queue.wake.notify_one();
        }
        Err(e) => tracing::error!(error = %e, "confirming mail failed; it still waits"),
    }
}

async fn confirm(db: &Db, queue: Queue<'_>, link_hash: &str, now: i64) -> DomainResult<usize> {
    let mut tx = db.begin().await?;
    let (opened, held) = record::release_confirmed(&mut tx, link_hash, now).await?;
    for ticket_id in &opened {
        let Some(case) = cases::case_for_ticket_tx(&mut tx, ticket_id).await? else {
            continue;
        };
        // Only a case still waiting for this confirmation: the customer may have written
        // on the page meanwhile, which sent it on already.
        if case.status == CaseStatus::AwaitingCustomer && case.run_id.is_none() {
            cases::start_investigation(&mut tx, queue.versions, &case, now).await?;
            let why = "the customer confirmed the mail by signing in";
            crate::audit::record(&mut tx, "system", "sender_confirmed", &case.id, why, now).await?;
        }
    }
    tx.commit().await?;
    Ok(opened.len() + held)
}
