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
    backend: Backend,
}

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
            Backend::Sqlite => {
                AnyPoolOptions::new()
                    .max_connections(1)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute("PRAGMA journal_mode = WAL").await?;
                            conn.execute("PRAGMA synchronous = NORMAL").await?;
                            conn.execute("PRAGMA busy_timeout = 5000").await?;
                            conn.execute("PRAGMA foreign_keys = ON").await?;
                            Ok(())
                        })
                    })
                    .connect_with(options)
                    .await
            }
            Backend::Postgres => {
                AnyPoolOptions::new()
                    .max_connections(10)
                    .connect_with(options)
                    .await
            }
        }
        .context("connecting to the database")?;
        MIGRATOR.run(&pool).await.context("running migrations")?;
        Ok(Db { pool, backend })
    }

    pub fn sqlite_url(data_dir: &Path) -> String {
        format!(
            "sqlite://{}?mode=rwc",
            data_dir.join("refund-desk.db").display()
        )
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub async fn begin(&self) -> Result<Tx<'static>, sqlx::Error> {
        self.pool.begin().await
    }

    pub async fn close(&self) {
        self.pool.close().await
    }
}

/// Fresh opaque id with a type prefix, e.g. `case_5f0c…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}
