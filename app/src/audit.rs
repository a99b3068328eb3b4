//! The audit log: who did what to which case, and when. Append-only.

use crate::error::DomainResult;
use crate::store::{new_id, Tx};

pub async fn record(
    tx: &mut Tx<'_>,
    actor: &str,
    action: &str,
    subject: &str,
    detail: &str,
    now: i64,
) -> DomainResult<()> {
    sqlx::query("INSERT INTO audit_log (id, actor, action, subject, detail, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(new_id("aud"))
        .bind(actor)
        .bind(action)
        .bind(subject)
        .bind(detail)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
