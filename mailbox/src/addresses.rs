//! What we know of an address: that it bounced (undeliverable, shown to staff and never
//! written to again until it changes or staff clear it), and when an unknown sender was last told to write
//! from their account's address (docs/spec/email.md: one reply, no loop).

use sqlx::Row;

use crate::error::MailboxResult;
use domain::address::normalise_address;
use store::{Db, Tx};

/// How long an unknown sender's one reply holds: another mail from them within it gets
/// none (a flood or a loop from a stranger gets one answer a day at most).
pub const UNKNOWN_SENDER_REPLY_EVERY_MS: i64 = 24 * 3600 * 1000;

/// Marks `address` undeliverable (a bounce, or the receiving server refused it).
pub async fn mark_undeliverable(
    db: &Db,
    address: &str,
    reason: &str,
    now: i64,
) -> MailboxResult<()> {
    sqlx::query(
        "INSERT INTO mail_addresses (address, undeliverable_at, undeliverable_reason) VALUES ($1, $2, $3)
         ON CONFLICT (address) DO UPDATE SET undeliverable_at = $2, undeliverable_reason = $3",
    )
    .bind(normalise_address(address))
    .bind(now)
    .bind(reason)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Mail goes to `address` again (staff cleared its mark). Returns whether it was marked.
pub async fn clear_undeliverable(tx: &mut Tx<'_>, address: &str) -> MailboxResult<bool> {
    let done = sqlx::query(
        "UPDATE mail_addresses SET undeliverable_at = NULL, undeliverable_reason = NULL
         WHERE address = $1 AND undeliverable_at IS NOT NULL",
    )
    .bind(normalise_address(address))
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Why `address` is undeliverable, and since when; `None` when it is not known to be.
pub async fn undeliverable(db: &Db, address: &str) -> MailboxResult<Option<(i64, String)>> {
    let row = sqlx::query(
        "SELECT undeliverable_at, undeliverable_reason FROM mail_addresses
         WHERE address = $1 AND undeliverable_at IS NOT NULL",
    )
    .bind(normalise_address(address))
    .fetch_optional(db.reader())
    .await?;
    row.map(|r| {
        let reason: Option<String> = r.try_get("undeliverable_reason")?;
        Ok((r.try_get("undeliverable_at")?, reason.unwrap_or_default()))
    })
    .transpose()
}

/// Whether an unknown sender gets a reply now; if so, it is recorded in `tx` (with the
/// reply), so two mails at once get one reply between them.
pub async fn take_unknown_sender_reply(
    tx: &mut Tx<'_>,
    address: &str,
    now: i64,
) -> MailboxResult<bool> {
    let address = normalise_address(address);
    let done = sqlx::query(
        "INSERT INTO mail_addresses (address, unknown_sender_reply_at) VALUES ($1, $2)
         ON CONFLICT (address) DO UPDATE SET unknown_sender_reply_at = $2
         WHERE mail_addresses.unknown_sender_reply_at IS NULL
            OR mail_addresses.unknown_sender_reply_at <= $3",
    )
    .bind(&address)
    .bind(now)
    .bind(now - UNKNOWN_SENDER_REPLY_EVERY_MS)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}
