//! The execution lease on a case: one executor at a time carries out its refunds; a
//! dead one's lease runs out and another resumes from the stored intents.

use sqlx::Row;

use super::{load_case, Case};
use crate::error::DomainResult;
use store::{Backend, Db};

/// Case states in which the refund executor (or the reconciler) works on a case.
const EXECUTABLE_CASES: &str =
    "status IN ('approved', 'executing', 'refund_pending', 'pending_verification')";

/// A case lease held by one executor: released only by the holder that took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaseLease {
    pub case_id: String,
    pub owner: String,
    /// The expiry this claim set: it identifies the claim, so a holder whose lease
    /// expired and was taken over (even by the same owner name) cannot release the next
    /// holder's lease.
    pub expires_at: i64,
}

/// Claims a case for execution; `None` when someone else holds it or it is not ready.
///
/// The claim is a versioned update: it bumps the case's version, so a previous holder
/// whose lease expired (an instance that stalled, or was killed and whose writes are
/// still in flight) fails its next versioned case transition instead of racing the new
/// holder. On PostgreSQL the row is first locked with `FOR UPDATE SKIP LOCKED` in a
/// short transaction, so instances claiming at once never wait on one another: the
/// loser sees no row and moves on. SQLite has one writer and no row locks; there the
/// versioned update alone decides.
pub(crate) async fn claim_case(
    db: &Db,
    case_id: &str,
    owner: &str,
    now: i64,
) -> DomainResult<Option<(Case, CaseLease)>> {
    // A worker holds a case for one work lease (`crate::lease`, on the `cases` row) while
    // it executes the case's refunds; one that dies mid-case loses it, and another
    // resumes from the stored intents.
    let expires_at = now + crate::lease::ms();
    let claimed = match db.backend() {
        Backend::Postgres => {
            let mut tx = db.begin().await?;
            let candidate = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT version FROM cases WHERE id = $1 AND {EXECUTABLE_CASES}
                   AND (lease_expires_at IS NULL OR lease_expires_at < $2) FOR UPDATE SKIP LOCKED"
            )))
            .bind(case_id)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?;
            let taken = match candidate {
                Some(row) => {
                    let version: i64 = row.try_get("version")?;
                    take_case_lease(&mut tx, case_id, version, owner, expires_at, now).await?
                }
                None => false,
            };
            tx.commit().await?;
            taken
        }
        // No read-then-write transaction here: on a SQLite file shared by several
        // processes, upgrading a read transaction to a write one can fail with
        // SQLITE_BUSY at once; two autocommit statements wait on `busy_timeout` instead.
        Backend::Sqlite => {
            let candidate = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT version FROM cases WHERE id = $1 AND {EXECUTABLE_CASES}
                   AND (lease_expires_at IS NULL OR lease_expires_at < $2)"
            )))
            .bind(case_id)
            .bind(now)
            .fetch_optional(db.pool())
            .await?;
            match candidate {
                Some(row) => {
                    let version: i64 = row.try_get("version")?;
                    let mut conn = db.pool().acquire().await?;
                    take_case_lease(&mut conn, case_id, version, owner, expires_at, now).await?
                }
                None => false,
            }
        }
    };
    if !claimed {
        return Ok(None);
    }
    tracing::debug!(case_id, owner, "case claimed");
    let lease = CaseLease {
        case_id: case_id.to_string(),
        owner: owner.to_string(),
        expires_at,
    };
    match load_case(db, case_id).await? {
        Some(case) => Ok(Some((case, lease))),
        None => {
            release_case(db, &lease).await?;
            Ok(None)
        }
    }
}

/// The versioned lease update both claim paths end with: it succeeds only if the case
/// is still at `version`, still executable, and its lease still free or expired.
async fn take_case_lease(
    conn: &mut sqlx::AnyConnection,
    case_id: &str,
    version: i64,
    owner: &str,
    expires_at: i64,
    now: i64,
) -> DomainResult<bool> {
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE cases SET lease_owner = $1, lease_expires_at = $2, version = version + 1
         WHERE id = $3 AND version = $4 AND {EXECUTABLE_CASES}
           AND (lease_expires_at IS NULL OR lease_expires_at < $5)"
    )))
    .bind(owner)
    .bind(expires_at)
    .bind(case_id)
    .bind(version)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives a case lease up, if it is still the one `lease` took (same owner, same
/// expiry). It changes no case state, so it does not bump the version: settles by
/// webhooks or the reconciler in flight need not retry because of it.
pub(crate) async fn release_case(db: &Db, lease: &CaseLease) -> DomainResult<()> {
    sqlx::query(
        "UPDATE cases SET lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $1 AND lease_owner = $2 AND lease_expires_at = $3",
    )
    .bind(&lease.case_id)
    .bind(&lease.owner)
    .bind(lease.expires_at)
    .execute(db.pool())
    .await?;
    Ok(())
}
