//! `customer erase ID` (docs/spec/data.md): the customer's name, email and every text
//! they wrote or that quotes them, rewritten in place as [`classify::TABLES`] says; their
//! credentials deleted and forgotten by this process; the money records (refund intents,
//! approvals, decisions, policy versions, idempotency keys) kept, with the customer
//! known from then on by a pseudonym. Audited; erasing again does it again, harmlessly.
//!
//! On SQLite every writer zeroes what it frees (`secure_delete`, set where the store
//! opens its writer), so the rewritten rows leave nothing in the file's free space; a
//! database older than that is rebuilt once (`VACUUM`, [`vacuum_if_due`]); then the
//! write-ahead log is folded in and truncated ([`checkpoint`]). On PostgreSQL the old
//! row versions are VACUUM's (docs/guides/customer-data.md says what the operator runs).
//!
//! Deliberately not here: the provider's copy of the customer (the desk keeps a
//! tombstone: the provider's customer id under the pseudonym, which `reconcile` reports
//! as erased), and a case still moving money (refused with a typed conflict until it is
//! at rest).

use sqlx::Row;

use super::classify::{self, Class, Rows, ERASED, ERASED_JSON};
use desk::error::{DomainError, DomainResult, ErrorCode};
use store::{Backend, Db, Tx};

/// What an erasure did.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Erased {
    pub customer_id: String,
    pub pseudonym: String,
    /// Rows rewritten or deleted, all tables together.
    pub rows: u64,
    /// True when the customer had been erased before (this run changed what was new).
    pub again: bool,
}

/// Case statuses in which money may still move: erasure waits for them.
const MONEY_IN_FLIGHT: &str = "('approved', 'executing', 'refund_pending', 'pending_verification')";

/// Erases `customer_id`'s personal data. `actor` is who asked (a staff id, or `cli`).
pub async fn erase(db: &Db, actor: &str, customer_id: &str, now: i64) -> DomainResult<Erased> {
    let previous = pseudonym_of(db, customer_id).await?;
    desk::onboarding::records::require_customer(db, customer_id).await?;
    refuse_while_money_moves(db, customer_id).await?;
    revoke_credentials(db, actor, customer_id, now).await?;
    let again = previous.is_some();
    let pseudonym = previous.unwrap_or_else(|| store::new_id("anon"));
    if db.backend() == Backend::Sqlite {
        // Freed cells and pages are zeroed, so the old text is not left in the file.
        sqlx::query("PRAGMA secure_delete = ON")
            .execute(db.pool())
            .await?;
    }
    let mut tx = db.begin().await?;
    let mut rows = 0;
    for table in classify::TABLES {
        rows += erase_table(&mut tx, table, customer_id, &pseudonym).await?;
    }
    record_erasure(&mut tx, actor, customer_id, &pseudonym, now).await?;
    tx.commit().await?;
    desk::customer::forget_page_splits();
    vacuum_if_due(db).await?;
    checkpoint(db).await?;
    tracing::info!(pseudonym = %pseudonym, rows, again, "customer erased");
    Ok(Erased {
        customer_id: customer_id.to_string(),
        pseudonym,
        rows,
        again,
    })
}

/// The pseudonym an earlier erasure gave the customer.
pub async fn pseudonym_of(db: &Db, customer_id: &str) -> DomainResult<Option<String>> {
    let row = sqlx::query("SELECT pseudonym FROM erasures WHERE customer_id = $1")
        .bind(customer_id)
        .fetch_optional(db.pool())
        .await?;
    Ok(row.map(|r| r.try_get("pseudonym")).transpose()?)
}

/// docs/spec/data.md: a case whose refund is being executed finishes first; a run still
/// working would write the text back.
async fn refuse_while_money_moves(db: &Db, customer_id: &str) -> DomainResult<()> {
    let busy = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT c.id FROM cases c WHERE c.customer_id = $1 AND (c.status IN {MONEY_IN_FLIGHT}
            OR EXISTS (SELECT 1 FROM refund_intents ri WHERE ri.case_id = c.id
                       AND ri.status IN ('created', 'submitting', 'pending', 'pending_verification')))
         LIMIT 1"
    )))
    .bind(customer_id)
    .fetch_optional(db.pool())
    .await?;
    if let Some(row) = busy {
        let case_id: String = row.try_get("id")?;
        return Err(DomainError::conflict(
            ErrorCode::RefundInFlight,
            format!("case {case_id} is still moving money; erase once its refund is final"),
        ));
    }
    let running = sqlx::query(
        "SELECT r.case_id FROM runs r JOIN cases c ON c.id = r.case_id WHERE c.customer_id = $1
           AND r.status NOT IN ('completed', 'failed', 'cancelled') LIMIT 1",
    )
    .bind(customer_id)
    .fetch_optional(db.pool())
    .await?;
    if let Some(row) = running {
        let case_id: String = row.try_get("case_id")?;
        return Err(DomainError::conflict(
            ErrorCode::CaseInProgress,
            format!("case {case_id} is still open with the agent; erase once it is closed"),
        ));
    }
    Ok(())
}

/// The customer's tokens stop working at once, here and (by the revocation) in the
/// in-process token cache; rows without a public id are deleted with the rest.
async fn revoke_credentials(db: &Db, actor: &str, customer_id: &str, now: i64) -> DomainResult<()> {
    let rows = sqlx::query(
        "SELECT token_id FROM auth_tokens WHERE subject_kind = 'customer' AND subject_id = $1 AND token_id IS NOT NULL",
    )
    .bind(customer_id)
    .fetch_all(db.pool())
    .await?;
    for row in rows {
        let token_id: String = row.try_get("token_id")?;
        match desk::auth::accounts::revoke(db, actor, &token_id, now).await {
            Ok(()) | Err(DomainError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn erase_table(
    tx: &mut Tx<'_>,
    table: &classify::Table,
    customer_id: &str,
    pseudonym: &str,
) -> DomainResult<u64> {
    let condition = match table.rows {
        Rows::NoCustomer => return Ok(0),
        Rows::Delete(condition) => {
            let sql = format!("DELETE FROM {} WHERE {condition}", table.name);
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(customer_id)
                .execute(&mut **tx)
                .await?;
            return Ok(done.rows_affected());
        }
        Rows::Redact(condition) => condition,
    };
    let email = format!("{pseudonym}@erased.invalid");
    let mut sets = Vec::new();
    let mut values: Vec<&str> = Vec::new();
    for (column, class) in table.columns {
        let (value, unique) = match class {
            Class::Name => (pseudonym, false),
            Class::Email => (email.as_str(), false),
            Class::Text => (ERASED, false),
            Class::Payload => (ERASED_JSON, false),
            Class::MessageId => (ERASED, true),
            Class::Keep | Class::Staff | Class::Summary => continue,
        };
        values.push(value);
        let n = values.len() + 1;
        // A unique column (a Message-ID intake is keyed by) gets the row's own key too.
        let replacement = match unique {
            true => format!("${n} || ' ' || {}", table.key[0]),
            false => format!("${n}"),
        };
        sets.push(format!(
            "{column} = CASE WHEN {column} IS NULL THEN NULL ELSE {replacement} END"
        ));
    }
    let mut rows = 0;
    if !sets.is_empty() {
        let sql = format!(
            "UPDATE {} SET {} WHERE {condition}",
            table.name,
            sets.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(customer_id);
        for value in values {
            query = query.bind(value);
        }
        rows += query.execute(&mut **tx).await?.rows_affected();
    }
    for (column, class) in table.columns {
        if *class == Class::Summary {
            rows += erase_summaries(tx, table, column, condition, customer_id).await?;
        }
    }
    Ok(rows)
}

/// Replaces the `summary` string of each JSON document in `column` (the rest is kept).
async fn erase_summaries(
    tx: &mut Tx<'_>,
    table: &classify::Table,
    column: &str,
    condition: &str,
    customer_id: &str,
) -> DomainResult<u64> {
    let keys = table.key.join(", ");
    let select = format!(
        "SELECT {keys}, {column} AS doc FROM {} WHERE {condition} AND {column} IS NOT NULL",
        table.name
    );
    let found = sqlx::query(sqlx::AssertSqlSafe(select))
        .bind(customer_id)
        .fetch_all(&mut **tx)
        .await?;
    let matches: Vec<String> = (0..table.key.len())
        .map(|i| format!("{} = ${}", table.key[i], i + 2))
        .collect();
    let update = format!(
        "UPDATE {} SET {column} = $1 WHERE {}",
        table.name,
        matches.join(" AND ")
    );
    let mut rows = 0;
    for row in found {
        let doc: String = row.try_get("doc")?;
        let Some(scrubbed) = scrub_summary(&doc) else {
            continue;
        };
        let mut query = sqlx::query(sqlx::AssertSqlSafe(update.clone())).bind(scrubbed);
        for key in table.key {
            query = bind_key(query, &row, key)?;
        }
        rows += query.execute(&mut **tx).await?.rows_affected();
    }
    Ok(rows)
}

/// Binds a key column as it was read (text, else an integer).
fn bind_key<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    row: &sqlx::any::AnyRow,
    key: &str,
) -> DomainResult<sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>> {
    Ok(match row.try_get::<String, _>(key) {
        Ok(text) => query.bind(text),
        Err(_) => query.bind(row.try_get::<i64, _>(key)?),
    })
}

/// The document with its `summary` replaced; `None` when there is nothing to replace.
/// A document that is not JSON is replaced whole (it cannot be read apart).
pub(super) fn scrub_summary(doc: &str) -> Option<String> {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(doc) else {
        return (doc != ERASED_JSON).then(|| ERASED_JSON.to_string());
    };
    let summary = value.get_mut("summary")?;
    if summary.as_str() == Some(ERASED) {
        return None;
    }
    *summary = serde_json::Value::String(ERASED.into());
    Some(value.to_string())
}

async fn record_erasure(
    tx: &mut Tx<'_>,
    actor: &str,
    customer_id: &str,
    pseudonym: &str,
    now: i64,
) -> DomainResult<()> {
    sqlx::query(
        "INSERT INTO erasures (customer_id, pseudonym, erased_by, first_erased_at, last_erased_at)
         VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (customer_id) DO UPDATE SET last_erased_at = $4, erased_by = $3",
    )
    .bind(customer_id)
    .bind(pseudonym)
    .bind(actor)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    desk::audit::record(tx, actor, "customer_erased", customer_id, pseudonym, now).await
}

/// On SQLite, a database that held text before every writer zeroed what it frees is
/// rebuilt once (`erasure_vacuum_due`, migration 0066): VACUUM writes every live row into
/// fresh pages, so no free page or free space in a page keeps an older text. It takes
/// as long as copying the file, and other writers wait meanwhile: once, not on every
/// erasure.
async fn vacuum_if_due(db: &Db) -> DomainResult<()> {
    if db.backend() != Backend::Sqlite {
        return Ok(());
    }
    let due = sqlx::query("SELECT reason FROM erasure_vacuum_due LIMIT 1")
        .fetch_optional(db.pool())
        .await?;
    if due.is_none() {
        return Ok(());
    }
    sqlx::query("VACUUM").execute(db.pool()).await?;
    sqlx::query("DELETE FROM erasure_vacuum_due")
        .execute(db.pool())
        .await?;
    tracing::info!("database rebuilt once: text freed before zeroing is gone");
    Ok(())
}

/// How often, and how far apart, the write-ahead log is asked to fold in and truncate
/// while another connection still reads an older snapshot (each try also waits the
/// connection's busy timeout).
const CHECKPOINT_TRIES: u32 = 5;
const CHECKPOINT_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// On SQLite, the write-ahead log is folded into the file and truncated, so the old
/// pages are gone from both. A reader holding an older snapshot is waited for; one that
/// outlasts every try makes this an error (the erasure itself is committed: erasing
/// again finishes it).
pub(super) async fn checkpoint(db: &Db) -> DomainResult<()> {
    if db.backend() != Backend::Sqlite {
        return Ok(());
    }
    for _ in 0..CHECKPOINT_TRIES {
        if db.checkpoint_truncate().await? {
            return Ok(());
        }
        tokio::time::sleep(CHECKPOINT_PAUSE).await;
    }
    Err(anyhow::anyhow!(
        "erased, but the write-ahead log is still read by another connection and still holds the old pages: erase again to truncate it"
    )
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposal_loses_its_summary_and_keeps_its_refunds() {
        let doc = r#"{"request":"duplicate_charge","summary":"Alice says ch_1 twice","refunds":[{"charge_id":"ch_1"}]}"#;
        let scrubbed = scrub_summary(doc).expect("a summary to replace");
        assert!(!scrubbed.contains("Alice"));
        assert!(scrubbed.contains("ch_1"));
        assert_eq!(
            scrub_summary(&scrubbed),
            None,
            "erasing twice changes nothing"
        );
    }
}
