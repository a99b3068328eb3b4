//! The database: one sqlx `AnyPool` over SQLite (default, a file under the data dir) or
//! PostgreSQL (`DATABASE_URL=postgres://…`), with one set of portable migrations.
//!
//! Queries use `$N` placeholders, which both backends accept, and only TEXT and BIGINT
//! columns, so the same SQL runs unchanged on both. State changes are versioned updates
//! (`… WHERE id = $x AND version = $y`) inside transactions.

use std::path::Path;
use std::str::FromStr;

use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

pub type Tx<'a> = sqlx::Transaction<'a, sqlx::Any>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone)]
pub struct Db {
    pool: AnyPool,
    /// Reads of committed state outside any transaction (pages, API reads, token
    /// lookups). On a SQLite file it is its own small pool of read-only connections, so
    /// readers run side by side in WAL mode instead of queueing behind the one writer
    /// connection; elsewhere it is `pool`.
    reader: AnyPool,
    backend: Backend,
}

/// Read-only SQLite connections (WAL lets them read while the writer writes).
const SQLITE_READERS: u32 = 4;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Db {
    /// Opens the database named by `url` and runs the migrations.
    pub async fn connect(url: &str) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("postgres") {
            Backend::Postgres
        } else if url.starts_with("sqlite") {
            Backend::Sqlite
        } else {
            anyhow::bail!("unsupported DATABASE_URL scheme (use sqlite:// or postgres://)");
        };
        let options = AnyConnectOptions::from_str(url).context("parsing the database url")?;
        let pool = match backend {
            // SQLite has one writer at a time. One pooled connection serialises writes
            // in-process instead of failing them with SQLITE_BUSY on lock upgrade.
            Backend::Sqlite => sqlite_pool(options.clone(), 1, false).await,
            Backend::Postgres => {
                AnyPoolOptions::new()
                    .max_connections(10)
                    .connect_with(options.clone())
                    .await
            }
        }
        .context("connecting to the database")?;
        MIGRATOR.run(&pool).await.context("running migrations")?;
        // An in-memory SQLite database exists once per connection: it has no readers.
        let reader = if backend == Backend::Sqlite && !url.contains(":memory:") {
            sqlite_pool(options, SQLITE_READERS, true)
                .await
                .context("opening the read-only connections")?
        } else {
            pool.clone()
        };
        Ok(Db {
            pool,
            reader,
            backend,
        })
    }

    pub fn sqlite_url(data_dir: &Path) -> String {
        format!(
            "sqlite://{}?mode=rwc",
            data_dir.join("refund-desk.db").display()
        )
    }

    /// The pool for writes, transactions and reads that must see them.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The pool for reads of committed state outside a transaction. A read here sees
    /// every commit that finished before it started (never a transaction's own
    /// uncommitted writes: read those through the transaction).
    pub fn reader(&self) -> &AnyPool {
        &self.reader
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub async fn begin(&self) -> Result<Tx<'static>, sqlx::Error> {
        self.pool.begin().await
    }

    /// Versions of this build's migrations not recorded as applied (`/readyz`): empty
    /// when the schema is the one this code was written for.
    pub async fn missing_migrations(&self) -> Result<Vec<i64>, sqlx::Error> {
        use sqlx::Row;
        let rows = sqlx::query("SELECT version FROM _sqlx_migrations WHERE success = TRUE")
            .fetch_all(&self.pool)
            .await?;
        let applied = rows
            .iter()
            .map(|row| row.try_get::<i64, _>("version"))
            .collect::<Result<std::collections::BTreeSet<i64>, _>>()?;
        Ok(MIGRATOR
            .iter()
            .filter(|m| !m.migration_type.is_down_migration())
            .map(|m| m.version)
            .filter(|version| !applied.contains(version))
            .collect())
    }

    pub async fn close(&self) {
        self.reader.close().await;
        self.pool.close().await
    }
}

async fn sqlite_pool(
    options: AnyConnectOptions,
    connections: u32,
    read_only: bool,
) -> Result<AnyPool, sqlx::Error> {
    AnyPoolOptions::new()
        .max_connections(connections)
        // A ping before every acquire is a round trip to the connection's thread for a
        // file in this process that cannot have gone away: one more hop per transaction
        // and per pooled read (issue 19; sqlx pings by default, for network databases).
        .test_before_acquire(false)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if read_only {
                    // Refuses any write on this connection: reads only, by construction.
                    conn.execute("PRAGMA query_only = ON").await?;
                } else {
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                }
                conn.execute("PRAGMA busy_timeout = 5000").await?;
                conn.execute("PRAGMA foreign_keys = ON").await?;
                Ok(())
            })
        })
        .connect_with(options)
        .await
}

/// Fresh opaque id with a type prefix, e.g. `case_5f0c…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Row;

    /// Staff rows as a reader sees them.
    async fn committed_staff(db: &Db) -> i64 {
        sqlx::query("SELECT COUNT(*) AS n FROM staff")
            .fetch_one(db.reader())
            .await
            .unwrap()
            .get("n")
    }

    #[tokio::test]
    async fn sqlite_readers_see_every_commit_and_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&Db::sqlite_url(dir.path())).await.unwrap();
        sqlx::query("INSERT INTO staff (id, email, role, password_hash, created_at) VALUES ('s1', 'a@b.c', 'agent', 'x', 1)")
            .execute(db.pool())
            .await
            .unwrap();
        // A read through the reader right after the commit sees it.
        assert_eq!(committed_staff(&db).await, 1);
        // While the writer holds an open write transaction, readers still read (WAL),
        // and see only what was committed.
        let mut tx = db.begin().await.unwrap();
        sqlx::query("INSERT INTO staff (id, email, role, password_hash, created_at) VALUES ('s2', 'd@e.f', 'agent', 'x', 1)")
            .execute(&mut *tx)
            .await
            .unwrap();
        assert_eq!(
            committed_staff(&db).await,
            1,
            "an uncommitted write is invisible to readers"
        );
        tx.commit().await.unwrap();
        // The reader refuses writes: nothing can change state through it.
        let refused = sqlx::query("DELETE FROM staff")
            .execute(db.reader())
            .await
            .expect_err("the reader pool is read-only");
        assert!(refused.to_string().contains("readonly"), "{refused}");
        assert_eq!(committed_staff(&db).await, 2);
    }
}
