//! A bounce counts only for mail we sent (docs/spec/email.md, "No loops"): a
//! delivery-status notification (RFC 3464) whose returned mail carries a Message-ID of
//! ours (`<outbox-id@MAIL_FROM's domain>`), for an address that mail went to. A hard
//! failure (status `5.x.x`) marks the address undeliverable, which staff see and clear;
//! a soft one (`4.x.x`: the server will retry, a full mailbox) marks nothing. Anyone can
//! write a mail that looks like a bounce: one naming no mail of ours, or an address our
//! mail did not go to, changes nothing. The desk sends from the support address itself
//! (no VERP return path), so the Message-ID is the one reference.
//!
//! What it does not do: read the report (`parse`), or answer it (a bounce never is).

use super::intake::Intake;
use crate::error::DomainResult;
use mail_message::parse::Bounce;
use mailbox::{addresses, outbox, outbox_id_of};

/// Marks what a bounce proves undeliverable. Returns how many addresses it marked.
pub async fn take(intake: Intake<'_>, bounce: &Bounce, now: i64) -> DomainResult<usize> {
    let domain = format!("@{}", intake.settings.from_domain());
    let mut marked = 0;
    for id in &bounce.returned_ids {
        let ours = id
            .to_ascii_lowercase()
            .ends_with(&domain.to_ascii_lowercase());
        let Some(outbox_id) = outbox_id_of(id).filter(|_| ours) else {
            continue;
        };
        let sent_to = outbox::addresses_of(intake.db, outbox_id).await?;
        for (address, status) in &bounce.failed {
            if !sent_to.contains(address) {
                continue;
            }
            match status.chars().next() {
                Some('5') => {
                    let why = format!("our mail {id} bounced for good (status {status})");
                    addresses::mark_undeliverable(intake.db, address, &why, now).await?;
                    tracing::warn!(address = %address, status, "hard bounce: address marked undeliverable");
                    marked += 1;
                }
                Some('4') => {
                    tracing::info!(address = %address, status, "soft bounce: the server retries; nothing marked");
                }
                _ => {}
            }
        }
    }
    if marked == 0 && bounce.returned_ids.is_empty() {
        tracing::info!("a bounce naming no mail of ours: nothing marked");
    }
    Ok(marked)
}

/// A customer's address as staff see it for mail (`GET /api/v1/customers/{id}/mail`).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CustomerMail {
    pub customer_id: String,
    pub address: String,
    /// Set while mail to the address is not sent: since when, and why.
    pub undeliverable: Option<UndeliverableMark>,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct UndeliverableMark {
    pub since: String,
    pub reason: String,
}

async fn address_of(db: &store::Db, customer_id: &str) -> DomainResult<String> {
    let email: Option<String> = sqlx::query_scalar("SELECT email FROM customers WHERE id = $1")
        .bind(customer_id)
        .fetch_optional(db.reader())
        .await?;
    email.ok_or(crate::error::DomainError::NotFound("customer"))
}

/// Whether mail reaches `customer_id`'s address on record.
pub async fn customer_mail(db: &store::Db, customer_id: &str) -> DomainResult<CustomerMail> {
    let address = address_of(db, customer_id).await?;
    let undeliverable = addresses::undeliverable(db, &address)
        .await?
        .map(|(at, reason)| UndeliverableMark {
            since: crate::clock::rfc3339(at),
            reason,
        });
    Ok(CustomerMail {
        customer_id: customer_id.to_string(),
        address,
        undeliverable,
    })
}

/// Staff clear the mark (the customer fixed their mailbox): mail goes to the address
/// again. Audited with who did it; harmless when there is no mark.
pub async fn clear(db: &store::Db, actor: &str, customer_id: &str, now: i64) -> DomainResult<()> {
    let address = address_of(db, customer_id).await?;
    let mut tx = db.begin().await?;
    if addresses::clear_undeliverable(&mut tx, &address).await? {
        let action = "undeliverable_cleared";
        crate::audit::record(&mut tx, actor, action, customer_id, "", now).await?;
    }
    tx.commit().await?;
    Ok(())
}
