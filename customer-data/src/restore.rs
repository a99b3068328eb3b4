//! `backup FILE` and `restore FILE` (docs/spec/data.md), and the gate a restore closes.
//!
//! A backup is a consistent copy taken while `serve` runs: on SQLite `VACUUM INTO` (one
//! read transaction, so writers go on in WAL mode); on PostgreSQL `pg_dump
//! --format=custom` (one snapshot). A restore brings it back into an empty data
//! directory (or empty database: `pg_restore`), runs the migrations, then closes the
//! gate: a `restores` row, and every refund intent the backup had not seen final in
//! `restore_checks`. Until `adoption::adopt_after_restore` has looked them up and read
//! every refund on the restored charges at the provider, nothing is served or executed
//! (`refunds::restore_gate_closed`). A refund made after the backup is adopted, never
//! sent again — even when the provider has forgotten its idempotency key.
//!
//! Deliberately not here: restoring over live data (refused), and the provider's state.

use std::path::Path;

use anyhow::Context;
use sqlx::Row;

use desk::error::DomainResult;
use desk::refunds::Sender;
use store::Db;

/// Intent statuses that are not final: after a restore, each is checked before sending.
const NOT_FINAL: &str = "('created', 'submitting', 'pending', 'pending_verification')";

/// Writes a consistent copy of the database at `database_url` to `file` (which must not
/// exist).
pub async fn backup(database_url: &str, file: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        !file.exists(),
        "{} exists: a backup never overwrites a file",
        file.display()
    );
    if database_url.starts_with("postgres") {
        return run_tool(
            "pg_dump",
            &[
                "--format=custom",
                "--no-owner",
                "--file",
                path_str(file)?,
                database_url,
            ],
        );
    }
    let db = Db::connect(database_url).await?;
    let copied = sqlx::query("VACUUM INTO $1")
        .bind(path_str(file)?)
        .execute(db.pool())
        .await
        .context("VACUUM INTO the backup file");
    db.close().await;
    copied.map(|_| ())
}

/// Brings `file` back as the database at `database_url`, which must be empty (no SQLite
/// file; a PostgreSQL database without tables), and closes the restore gate. Returns
/// how many intents wait to be checked at the provider.
pub async fn restore(database_url: &str, file: &Path, now: i64) -> anyhow::Result<u64> {
    anyhow::ensure!(file.is_file(), "no backup at {}", file.display());
    if database_url.starts_with("postgres") {
        refuse_unless_empty_postgres(database_url).await?;
        run_tool(
            "pg_restore",
            &["--no-owner", "--dbname", database_url, path_str(file)?],
        )?;
    } else {
        let target = sqlite_path(database_url)?;
        anyhow::ensure!(
            !target.exists(),
            "{} exists: restore only into an empty data directory",
            target.display()
        );
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::copy(file, &target).context("copying the backup into place")?;
    }
    let db = Db::connect(database_url).await?;
    let waiting = close_gate(&db, now).await;
    db.close().await;
    Ok(waiting?)
}

/// The restore waits for its adoption (a `restores` row), and every intent not final
/// in the restored data for a look at the provider. Returns how many intents wait.
pub async fn close_gate(db: &Db, now: i64) -> DomainResult<u64> {
    let mut tx = db.begin().await?;
    sqlx::query("INSERT INTO restores (id, restored_at) VALUES ($1, $2)")
        .bind(store::new_id("restore"))
        .bind(now)
        .execute(&mut *tx)
        .await?;
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO restore_checks (intent_id, restored_at)
         SELECT id, $1 FROM refund_intents WHERE status IN {NOT_FINAL}
         ON CONFLICT (intent_id) DO UPDATE SET restored_at = $1, checked_at = NULL, outcome = NULL"
    )))
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected())
}

/// How many restored intents still wait for a look at the provider (the gate is
/// closed while any does).
pub async fn waiting(db: &Db) -> DomainResult<i64> {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM restore_checks WHERE checked_at IS NULL")
            .fetch_one(db.reader())
            .await?;
    Ok(n)
}

/// Looks up, at the provider, the restored intents not yet checked (a worker pass and
/// `reconcile` call it); returns how many were checked now. Those the provider could
/// not answer for stay unchecked, and the gate closed.
pub async fn check_restored(s: Sender<'_>) -> DomainResult<usize> {
    let rows = sqlx::query(
        "SELECT intent_id FROM restore_checks WHERE checked_at IS NULL ORDER BY intent_id LIMIT 100",
    )
    .fetch_all(s.db.pool())
    .await?;
    let mut checked = 0;
    for row in rows {
        let intent_id: String = row.try_get("intent_id")?;
        let Some(outcome) = desk::refunds::check_restored(s, &intent_id).await? else {
            continue;
        };
        sqlx::query("UPDATE restore_checks SET checked_at = $1, outcome = $2 WHERE intent_id = $3")
            .bind(s.clock.now_ms())
            .bind(outcome.as_str())
            .bind(&intent_id)
            .execute(s.db.pool())
            .await?;
        tracing::info!(intent_id = %intent_id, outcome = outcome.as_str(), "restored intent checked at the provider");
        checked += 1;
    }
    Ok(checked)
}

async fn refuse_unless_empty_postgres(database_url: &str) -> anyhow::Result<()> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(database_url).await?;
    let tables = sqlx::query(
        "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    .fetch_one(&pool)
    .await?
    .try_get::<i64, _>("n")?;
    pool.close().await;
    anyhow::ensure!(
        tables == 0,
        "the database holds {tables} tables: restore only into an empty one"
    );
    Ok(())
}

/// The file of a `sqlite://PATH?…` url.
fn sqlite_path(database_url: &str) -> anyhow::Result<std::path::PathBuf> {
    let rest = database_url
        .strip_prefix("sqlite://")
        .or_else(|| database_url.strip_prefix("sqlite:"))
        .context("DATABASE_URL is neither sqlite: nor postgres:")?;
    let path = rest.split('?').next().unwrap_or(rest);
    anyhow::ensure!(
        !path.contains(":memory:"),
        "an in-memory database has no backup"
    );
    Ok(path.into())
}

fn path_str(path: &Path) -> anyhow::Result<&str> {
    path.to_str().context("the file name is not UTF-8")
}

/// Runs a PostgreSQL client tool, failing with its stderr.
fn run_tool(tool: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new(tool)
        .args(args)
        .output()
        .with_context(|| format!("running {tool} (PostgreSQL's client tools)"))?;
    anyhow::ensure!(
        out.status.success(),
        "{tool} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sqlite_file_is_read_from_its_url() {
        let path = super::sqlite_path("sqlite:///data/refund-desk.db?mode=rwc").unwrap();
        assert_eq!(path, std::path::PathBuf::from("/data/refund-desk.db"));
        assert!(super::sqlite_path("sqlite::memory:").is_err());
    }
}
