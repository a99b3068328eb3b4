//! The database: one sqlx `AnyPool` over SQLite (default, a file under the data dir) or
//! PostgreSQL (`DATABASE_URL=postgres://…`), with one set of portable migrations.
//!
//! Queries use `$N` placeholders, which both backends accept, and only TEXT and BIGINT
//! columns, so the same SQL runs unchanged on both. State changes are versioned updates
//! (`… WHERE id = $x AND version = $y`) inside transactions.
//!
//! SQL is a `&'static str` wherever it can be. Where it is put together with `format!`
//! (shared column lists, a variable number of placeholders, a condition chosen from
//! this crate's constants), it is wrapped in `sqlx::AssertSqlSafe`, sqlx 0.9's mark of
//! SQL audited by hand: only constants and `$N` placeholders go into the text, every
//! value is bound.

use std::path::Path;
use std::str::FromStr;

use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

mod backend;
mod readers;
pub use backend::Backend;
pub use readers::{Readers, CHECK_IDLE_AFTER};

pub type Tx<'a> = sqlx::Transaction<'a, sqlx::Any>;

#[derive(Clone)]
pub struct Db {
    pool: AnyPool,
    /// Reads of committed state outside any transaction (pages, API reads, token
    /// lookups): a few read-only connections of their own (`readers`), so on SQLite
    /// they run side by side in WAL mode instead of queueing behind the one writer
    /// connection; in-memory SQLite reads through `pool`.
    reader: std::sync::Arc<Readers>,
    backend: Backend,
    /// The url it was opened with (a checkpoint opens its own SQLite connection).
    url: std::sync::Arc<str>,
}

/// Read-only connections (on SQLite, WAL lets them read while the writer writes). More
/// did not read faster on two cores: a read's cost is its hand-off, not its wait.
const READERS: usize = 4;

/// How long a PostgreSQL query waits for a pooled connection before it fails.
const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

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
            Backend::Sqlite => sqlite_writer(options.clone()).await,
            Backend::Postgres => {
                AnyPoolOptions::new()
                    .max_connections(10)
                    // A request waits this long for a connection, then answers 503
                    // (`database_unavailable`) instead of hanging for sqlx's default 30 s
                    // while the database is away (docs/spec/invariants.md: an outage answers 503).
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_with(options.clone())
                    .await
            }
        }
        .context("connecting to the database")?;
        MIGRATOR.run(&pool).await.context("running migrations")?;
        // An in-memory SQLite database exists once per connection: it has no readers.
        let reader = if url.contains(":memory:") {
            Readers::Pool(pool.clone())
        } else {
            let readers = readers::ReadConnections::open(options, backend, READERS)
                .await
                .context("opening the read-only connections")?;
            Readers::Own(readers)
        };
        Ok(Db {
            pool,
            reader: std::sync::Arc::new(reader),
            backend,
            url: url.into(),
        })
    }

    /// On SQLite, folds the write-ahead log into the database file and truncates the log
    /// to nothing (`wal_checkpoint(TRUNCATE)`, waiting up to the busy timeout for
    /// readers of an older snapshot): `true` when done, `false` when a reader still held
    /// old pages. Always `true` on PostgreSQL (no such log in the data directory). Run
    /// on a connection of its own: the Any driver cannot read a PRAGMA's answer.
    pub async fn checkpoint_truncate(&self) -> anyhow::Result<bool> {
        use sqlx::{ConnectOptions, Connection};
        if self.backend != Backend::Sqlite || self.url.contains(":memory:") {
            return Ok(true);
        }
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(&self.url)?
            .busy_timeout(std::time::Duration::from_secs(5));
        let mut conn = options.connect().await?;
        let (busy, _log, _done): (i64, i64, i64) =
            sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_one(&mut conn)
                .await?;
        conn.close().await?;
        Ok(busy == 0)
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

    /// Where reads of committed state outside a transaction run (an `Executor`). A read
    /// here sees every commit that finished before it started (never a transaction's
    /// own uncommitted writes: read those through the transaction).
    pub fn reader(&self) -> &Readers {
        &self.reader
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub async fn begin(&self) -> Result<Tx<'static>, sqlx::Error> {
        self.pool.begin().await
    }

    /// Versions of this build's migrations not recorded as applied (`/readyz`): empty
    /// when the schema is the one this code was written for. Read on a reader, as every
    /// page is: a probe neither waits behind the writer nor costs the writers' pool its
    /// ping on return.
    pub async fn missing_migrations(&self) -> Result<Vec<i64>, sqlx::Error> {
        use sqlx::Row;
        let rows = sqlx::query("SELECT version FROM _sqlx_migrations WHERE success = TRUE")
            .fetch_all(self.reader())
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

/// The one SQLite connection that writes (WAL, so readers read beside it). Every text it
/// frees — a row deleted or rewritten, an expired message, an erased customer — is
/// zeroed in the page it leaves (`secure_delete`): docs/spec/data.md, erasure leaves no
/// copy in the database's free space.
async fn sqlite_writer(options: AnyConnectOptions) -> Result<AnyPool, sqlx::Error> {
    AnyPoolOptions::new()
        .max_connections(1)
        // A SQLite connection is a file handle: no peer can hang up on it, so sqlx's
        // ping before each acquire only costs a round trip to the connection's thread
        //.
        .test_before_acquire(false)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                conn.execute("PRAGMA journal_mode = WAL").await?;
                conn.execute("PRAGMA synchronous = NORMAL").await?;
                conn.execute("PRAGMA busy_timeout = 5000").await?;
                conn.execute("PRAGMA foreign_keys = ON").await?;
                conn.execute("PRAGMA secure_delete = ON").await?;
                Ok(())
            })
        })
        .connect_with(options)
        .await
}

/// SQL for one packed field: `x` as text, prefixed by its length in characters and a
/// colon (`5:hello`). Joined with `||` and gathered with `string_agg(…, '' ORDER BY …)`
/// (SQLite 3.44 and PostgreSQL alike), a whole list of records comes back in one column
/// of one row, which [`Packed`] reads back. `length` counts characters on both backends;
/// stored text never holds a NUL (`tickets::validate_message`; PostgreSQL refuses it),
/// where SQLite's `length` would stop.
#[macro_export]
macro_rules! packed_field {
    ($x:literal) => {
        concat!(
            "length(CAST(",
            $x,
            " AS TEXT)) || ':' || CAST(",
            $x,
            " AS TEXT)"
        )
    };
}

/// Reads back the fields [`packed_field`] wrote, in order.
pub struct Packed<'a>(&'a str);

impl<'a> Packed<'a> {
    pub fn new(text: &'a str) -> Packed<'a> {
        Packed(text)
    }

    /// Whether every field has been read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The next field; an error when the text is not what `packed_field` writes.
    pub fn field(&mut self) -> anyhow::Result<&'a str> {
        let (chars, rest) = self
            .0
            .split_once(':')
            .context("a packed field without its length")?;
        let chars: usize = chars.parse().context("a packed field's length")?;
        let end = rest
            .char_indices()
            .nth(chars)
            .map_or(rest.len(), |(at, _)| at);
        anyhow::ensure!(
            rest[..end].chars().count() == chars,
            "a packed field shorter than its length"
        );
        self.0 = &rest[end..];
        Ok(&rest[..end])
    }

    /// The next field as an integer.
    pub fn integer(&mut self) -> anyhow::Result<i64> {
        self.field()?.parse().context("a packed integer")
    }
}

/// Fresh opaque id with a type prefix, e.g. `case_5f0c…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// `text` as a LIKE pattern that matches it literally (`\` is the escape character: a
/// query using it says `ESCAPE '\'`).
pub fn like_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if matches!(ch, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
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

    #[test]
    fn packed_fields_read_back_whatever_text_they_hold() {
        let mut packed = Packed::new("2:425:a:b:c0:5:退款 ok");
        assert_eq!(packed.integer().unwrap(), 42);
        assert_eq!(packed.field().unwrap(), "a:b:c");
        assert_eq!(packed.field().unwrap(), "");
        assert_eq!(packed.field().unwrap(), "退款 ok");
        assert!(packed.is_empty());
        assert!(Packed::new("9:short").field().is_err());
        assert!(Packed::new("x:1").field().is_err());
        assert!(Packed::new("no length").field().is_err());
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

#[cfg(test)]
mod like_tests {
    #[test]
    fn like_patterns_match_percent_underscore_and_backslash_literally() {
        assert_eq!(super::like_literal(r"50%_off\x"), r"50\%\_off\\x");
        assert_eq!(super::like_literal("plain"), "plain");
    }
}
