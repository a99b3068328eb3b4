//! Who works on a run: the claim (`FOR UPDATE SKIP LOCKED` on PostgreSQL, a versioned
//! update alone on SQLite), the lease's renewal while a slow call is under way, and its
//! release.

use sqlx::Row;

use super::{run_changed, run_from_row, Run, DEPENDENCY_RETRY_MS, RUN_COLUMNS};
use crate::error::DomainResult;
use store::{Backend, Db};

/// The runs a worker may claim: active ones (being advanced, or abandoned by a worker
/// that died) and ones that waited on a dependency long enough, whose lease is free or
/// expired. `$1` is now, `$2` is now minus [`DEPENDENCY_RETRY_MS`]. Only top-level runs:
/// a child run is advanced inside its parent's step, under its parent's lease.
const CLAIMABLE_RUNS: &str = "(status IN ('ready', 'model_running', 'tool_pending', 'tool_running')
                OR (status = 'awaiting_dependency' AND updated_at <= $2))
           AND (lease_expires_at IS NULL OR lease_expires_at < $1)
           AND parent_run_id IS NULL";

/// Claims a runnable run whose lease is free or expired: one a worker is advancing (or
/// was, before it died), or one that waited on a dependency long enough. Returns the
/// claimed run; the claim is a versioned update, so of two workers racing for one run
/// exactly one gets it, and the version it bumps makes every later update of the
/// previous holder fail.
///
/// On PostgreSQL the candidate is picked with `FOR UPDATE SKIP LOCKED` in a short
/// transaction, so workers of several instances never queue behind one another's
/// claims: each takes the oldest run nobody is claiming right now. SQLite has one
/// writer and no row locks; it reads a few candidates and relies on the versioned
/// update alone (a lost race just moves on to the next candidate). Either way the claim
/// returns the run as its update left it (no read after it).
pub async fn claim_next(db: &Db, owner: &str, now: i64) -> DomainResult<Option<Run>> {
    let claimed = match db.backend() {
        Backend::Postgres => claim_next_skip_locked(db, owner, now).await?,
        Backend::Sqlite => claim_next_versioned(db, owner, now).await?,
    };
    if let Some(run) = &claimed {
        tracing::debug!(run_id = %run.id, owner, "run claimed");
    }
    Ok(claimed)
}

/// PostgreSQL: lock one claimable run, skipping rows other claims hold, then take its
/// lease with the versioned update, and commit (the row lock lasts only this long).
async fn claim_next_skip_locked(db: &Db, owner: &str, now: i64) -> DomainResult<Option<Run>> {
    let mut tx = db.begin().await?;
    let candidate = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT id, version FROM runs WHERE {CLAIMABLE_RUNS}
         ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED"
    )))
    .bind(now)
    .bind(now - DEPENDENCY_RETRY_MS)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = candidate else {
        tx.rollback().await?;
        return Ok(None);
    };
    let id: String = row.try_get("id")?;
    let version: i64 = row.try_get("version")?;
    let taken = take_run_lease(&mut tx, &id, version, owner, now).await?;
    tx.commit().await?;
    Ok(taken)
}

/// SQLite (and any backend without row locks): a few candidates, each tried with the
/// versioned update until one is won. Candidates are read one status at a time in
/// creation order, so each read walks the `(status, created_at)` index instead of
/// sorting every queued run: runs abandoned mid-step first, then ready runs, then runs
/// whose dependency wait is over. The five reads are one statement (each
/// statement is a round trip to the connection's thread), on a reader (the
/// writers' pool checks its connection with one more trip when it comes back); a
/// candidate claimed since is just lost to the versioned update.
async fn claim_next_versioned(db: &Db, owner: &str, now: i64) -> DomainResult<Option<Run>> {
    // Every candidate lost means each was claimed or changed since the read: read again
    // (a few times), rather than report an empty queue that is not.
    for _ in 0..5 {
        let candidates = sqlx::query(CANDIDATES_BY_STATUS)
            .bind(now)
            .bind(now - DEPENDENCY_RETRY_MS)
            .fetch_all(db.reader())
            .await?;
        if candidates.is_empty() {
            return Ok(None);
        }
        for row in candidates {
            let id: String = row.try_get("id")?;
            let version: i64 = row.try_get("version")?;
            if !held::take(&id, now) {
                // Another claim loop of this process holds it or is claiming it: its
                // versioned update would only lose (no write a read could
                // replace; it was one lost claim per loop per run).
                continue;
            }
            let mut conn = db.pool().acquire().await?;
            if let Some(run) = take_run_lease(&mut conn, &id, version, owner, now).await? {
                return Ok(Some(run));
            }
            held::give_up(&id);
        }
    }
    Ok(None)
}

/// Up to ten claimable runs per status, in the order `claim_next_versioned` tries them
/// (`rank`, then creation). `$1` is now, `$2` now minus the dependency retry period.
const CANDIDATES_BY_STATUS: &str = "
    SELECT id, version FROM (
        SELECT * FROM (SELECT id, version, created_at, 0 AS rank FROM runs
            WHERE status = 'model_running' AND (lease_expires_at IS NULL OR lease_expires_at < $1)
              AND parent_run_id IS NULL ORDER BY created_at LIMIT 10) AS model_running
        UNION ALL
        SELECT * FROM (SELECT id, version, created_at, 1 AS rank FROM runs
            WHERE status = 'tool_running' AND (lease_expires_at IS NULL OR lease_expires_at < $1)
              AND parent_run_id IS NULL ORDER BY created_at LIMIT 10) AS tool_running
        UNION ALL
        SELECT * FROM (SELECT id, version, created_at, 2 AS rank FROM runs
            WHERE status = 'tool_pending' AND (lease_expires_at IS NULL OR lease_expires_at < $1)
              AND parent_run_id IS NULL ORDER BY created_at LIMIT 10) AS tool_pending
        UNION ALL
        SELECT * FROM (SELECT id, version, created_at, 3 AS rank FROM runs
            WHERE status = 'ready' AND (lease_expires_at IS NULL OR lease_expires_at < $1)
              AND parent_run_id IS NULL ORDER BY created_at LIMIT 10) AS ready
        UNION ALL
        SELECT * FROM (SELECT id, version, created_at, 4 AS rank FROM runs
            WHERE status = 'awaiting_dependency' AND updated_at <= $2
              AND (lease_expires_at IS NULL OR lease_expires_at < $1)
              AND parent_run_id IS NULL ORDER BY created_at LIMIT 10) AS rested
    ) AS candidates ORDER BY rank, created_at LIMIT 10";

/// The versioned lease update both claim paths end with: it succeeds only if the run
/// is still at `version` and its lease still free or expired. Returns the run as it
/// left it.
async fn take_run_lease(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    version: i64,
    owner: &str,
    now: i64,
) -> DomainResult<Option<Run>> {
    let taken = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE runs SET lease_owner = $1, lease_expires_at = $2, version = version + 1
         WHERE id = $3 AND version = $4 AND (lease_expires_at IS NULL OR lease_expires_at < $5)
         RETURNING {RUN_COLUMNS}"
    )))
    .bind(owner)
    .bind(now + crate::lease::ms())
    .bind(id)
    .bind(version)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?;
    taken.as_ref().map(run_from_row).transpose()
}

/// Extends the lease of a run we hold, during a step that takes long (a slow model).
/// Fails with `RUN_CHANGED` when the lease was lost: the caller must stop.
pub async fn renew_lease(db: &Db, run: &mut Run, now: i64) -> DomainResult<()> {
    let Some(owner) = run.lease_owner.clone() else {
        return Ok(());
    };
    let done = sqlx::query(
        "UPDATE runs SET lease_expires_at = $1, version = version + 1
         WHERE id = $2 AND version = $3 AND lease_owner = $4",
    )
    .bind(now + crate::lease::ms())
    .bind(run.id.as_str())
    .bind(run.version)
    .bind(&owner)
    .execute(db.pool())
    .await?;
    if done.rows_affected() != 1 {
        return Err(run_changed());
    }
    run.version += 1;
    run.lease_expires_at = Some(now + crate::lease::ms());
    Ok(())
}

/// Releases the lease `run` holds (the run may continue elsewhere later). A versioned
/// update naming the owner: it does nothing if the run changed since `run` was read or
/// holds no lease (a run that waits or ended gave its lease up already).
pub async fn release(db: &Db, run: &Run) -> DomainResult<()> {
    // This process stops holding it whatever the write below does: once its lease is
    // free or expired, any claim loop may take it again.
    held::give_up(&run.id);
    if run.lease_owner.is_none() {
        // Nothing to give up (a run that waits or ended released it in its last step).
        return Ok(());
    }
    sqlx::query(
        "UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL, version = version + 1
         WHERE id = $1 AND version = $2 AND lease_owner = $3",
    )
    .bind(run.id.as_str())
    .bind(run.version)
    .bind(&run.lease_owner)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// The runs this process's SQLite claim loops hold or are claiming: a loop
/// skips them instead of losing a versioned update to its sibling. Only a hint, and one
/// that expires with the lease it was taken for: the versioned update still decides
/// (between processes, and between app states in one process), a run whose holder hung
/// past its lease is taken over as before, and a run leaves the set when its holder
/// releases it ([`release`]) or loses the claim.
mod held {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    fn runs() -> std::sync::MutexGuard<'static, HashMap<String, i64>> {
        static HELD: OnceLock<Mutex<HashMap<String, i64>>> = OnceLock::new();
        let held = HELD.get_or_init(Default::default);
        held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks `id` held by this process until its lease taken `now` would expire;
    /// `false` if it already is.
    pub(super) fn take(id: &str, now: i64) -> bool {
        let mut runs = runs();
        if runs.get(id).is_some_and(|until| *until >= now) {
            return false;
        }
        // Expired hints go with the next claim, so the set stays as small as the work.
        runs.retain(|_, until| *until >= now);
        runs.insert(id.to_string(), now + crate::lease::ms());
        true
    }

    pub(super) fn give_up(id: &str) {
        runs().remove(id);
    }
}
