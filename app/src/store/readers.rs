//! Where reads of committed state run (`Db::reader`): on a SQLite file, a few read-only
//! connections of our own; elsewhere, the one pool.
//!
//! Why not a second sqlx pool (issue 19): a pooled SQLite connection is pinged when it
//! goes back to the pool — a round trip to the connection's own thread, spawned as a
//! task after every read — and that is not a setting. A one-row page measured about
//! 1.5× the requests per second without it (the bench's peer, same machine and run).
//! A read-only SQLite connection needs no such check: it has no peer to lose, and a
//! read abandoned half-way (the client went away) leaves nothing behind — the
//! connection's thread finishes it before the next command. A connection that answered
//! with an error is closed instead of kept, and a new one is opened on demand.
//!
//! `Readers` is an `Executor`, so a read is written the same against either kind:
//! `query.fetch_optional(db.reader())`. What this does not do: transactions (readers
//! are `query_only`), and nothing on PostgreSQL, where the pool is kept as it is.

use std::sync::{Mutex, PoisonError};

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt, TryFutureExt};
use sqlx::any::{AnyConnectOptions, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo};
use sqlx::{
    Any, AnyConnection, AnyPool, ConnectOptions, Connection, Describe, Either, Execute, Executor,
};
use tokio::sync::{Semaphore, SemaphorePermit};

/// The reads of a `Db`.
#[derive(Debug)]
pub enum Readers {
    /// PostgreSQL and in-memory SQLite: reads share the writers' pool.
    Pool(AnyPool),
    /// A SQLite file: read-only connections of our own.
    Sqlite(SqliteReaders),
}

/// At most `permits` read-only connections, opened on first need and handed out one
/// read at a time.
pub struct SqliteReaders {
    options: AnyConnectOptions,
    idle: Mutex<Vec<AnyConnection>>,
    permits: Semaphore,
}

impl std::fmt::Debug for SqliteReaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteReaders")
            .field("available", &self.permits.available_permits())
            .finish()
    }
}

/// A connection lent for one read; it goes back on drop unless the read failed.
struct Lent<'a> {
    connection: Option<AnyConnection>,
    readers: &'a SqliteReaders,
    _permit: SemaphorePermit<'a>,
}

impl Lent<'_> {
    fn connection(&mut self) -> Result<&mut AnyConnection, sqlx::Error> {
        self.connection.as_mut().ok_or(sqlx::Error::PoolClosed)
    }

    /// After an error the connection is closed rather than lent again.
    fn keep_if_ok<T>(mut self, result: &Result<T, sqlx::Error>) {
        if result.is_err() {
            self.connection = None;
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            if !self.readers.permits.is_closed() {
                self.readers.idle().push(connection);
            }
        }
    }
}

impl SqliteReaders {
    /// Opens one connection now, so a bad file or path fails at start-up.
    pub async fn open(options: AnyConnectOptions, connections: usize) -> Result<Self, sqlx::Error> {
        let first = connect(&options).await?;
        Ok(SqliteReaders {
            options,
            idle: Mutex::new(vec![first]),
            permits: Semaphore::new(connections),
        })
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<AnyConnection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn lend(&self) -> Result<Lent<'_>, sqlx::Error> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self.idle().pop();
        let connection = match idle {
            Some(connection) => connection,
            None => connect(&self.options).await?,
        };
        Ok(Lent {
            connection: Some(connection),
            readers: self,
            _permit: permit,
        })
    }

    /// Every row of `query`, on a lent connection.
    async fn gather<'q, E>(&self, query: E) -> Result<Vec<Item>, sqlx::Error>
    where
        E: 'q + Execute<'q, Any>,
    {
        let mut lent = self.lend().await?;
        let result = async {
            let mut items = Vec::new();
            let mut stream = lent.connection()?.fetch_many(query);
            while let Some(item) = stream.next().await {
                items.push(Ok(item?));
            }
            Ok(items)
        }
        .await;
        lent.keep_if_ok(&result);
        result
    }

    async fn fetch_optional<'q, E>(&self, query: E) -> Result<Option<AnyRow>, sqlx::Error>
    where
        E: 'q + Execute<'q, Any>,
    {
        let mut lent = self.lend().await?;
        let result = match lent.connection() {
            Ok(connection) => connection.fetch_optional(query).await,
            Err(e) => Err(e),
        };
        lent.keep_if_ok(&result);
        result
    }

    async fn prepare_with<'q>(
        &self,
        sql: &'q str,
        parameters: &[AnyTypeInfo],
    ) -> Result<AnyStatement<'q>, sqlx::Error> {
        let mut lent = self.lend().await?;
        let result = match lent.connection() {
            Ok(connection) => connection.prepare_with(sql, parameters).await,
            Err(e) => Err(e),
        };
        lent.keep_if_ok(&result);
        result
    }

    async fn describe(&self, sql: &str) -> Result<Describe<Any>, sqlx::Error> {
        let mut lent = self.lend().await?;
        let result = match lent.connection() {
            Ok(connection) => connection.describe(sql).await,
            Err(e) => Err(e),
        };
        lent.keep_if_ok(&result);
        result
    }

    /// Closes the idle connections and lends no more.
    pub async fn close(&self) {
        self.permits.close();
        let idle: Vec<AnyConnection> = std::mem::take(&mut *self.idle());
        for connection in idle {
            let _ = connection.close().await;
        }
    }
}

/// A read-only connection: refuses any write, waits out a writer's lock for 5 s.
async fn connect(options: &AnyConnectOptions) -> Result<AnyConnection, sqlx::Error> {
    let mut connection = options.connect().await?;
    connection.execute("PRAGMA query_only = ON").await?;
    connection.execute("PRAGMA busy_timeout = 5000").await?;
    connection.execute("PRAGMA foreign_keys = ON").await?;
    Ok(connection)
}

impl Readers {
    pub async fn close(&self) {
        match self {
            Readers::Pool(pool) => pool.close().await,
            Readers::Sqlite(readers) => readers.close().await,
        }
    }
}

type Item = Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>;

impl<'p> Executor<'p> for &'p Readers {
    type Database = Any;

    /// On SQLite the rows are gathered before the first is given out: the connection
    /// goes back as soon as its statement is done, and reads here are pages of rows.
    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, Item>
    where
        'p: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match self {
            Readers::Pool(pool) => pool.fetch_many(query),
            Readers::Sqlite(readers) => readers
                .gather(query)
                .map_ok(futures_util::stream::iter)
                .unwrap_or_else(|e| futures_util::stream::iter(vec![Err(e)]))
                .flatten_stream()
                .boxed(),
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<AnyRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match self {
            Readers::Pool(pool) => pool.fetch_optional(query),
            Readers::Sqlite(readers) => Box::pin(readers.fetch_optional(query)),
        }
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement<'q>, sqlx::Error>>
    where
        'p: 'e,
    {
        match self {
            Readers::Pool(pool) => pool.prepare_with(sql, parameters),
            Readers::Sqlite(readers) => Box::pin(readers.prepare_with(sql, parameters)),
        }
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, Result<Describe<Any>, sqlx::Error>>
    where
        'p: 'e,
    {
        match self {
            Readers::Pool(pool) => pool.describe(sql),
            Readers::Sqlite(readers) => Box::pin(readers.describe(sql)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use sqlx::Row;

    use super::*;

    async fn one_reader() -> (tempfile::TempDir, Readers) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let url = crate::store::Db::sqlite_url(dir.path());
        // The file and its schema come from the writer.
        crate::store::Db::connect(&url).await.expect("the database opens");
        let options = AnyConnectOptions::from_str(&url).expect("a sqlite url");
        let readers = SqliteReaders::open(options, 1).await.expect("a reader opens");
        (dir, Readers::Sqlite(readers))
    }

    async fn answer(readers: &Readers) -> i64 {
        sqlx::query("SELECT 41 + 1 AS n")
            .fetch_one(readers)
            .await
            .expect("a read")
            .get("n")
    }

    #[tokio::test]
    async fn a_failed_read_closes_its_connection_and_the_next_read_gets_another() {
        let (_dir, readers) = one_reader().await;
        let refused = sqlx::query("DELETE FROM staff").execute(&readers).await;
        assert!(refused.is_err(), "readers are read-only");
        let broken = sqlx::query("SELECT nothing FROM nowhere").fetch_all(&readers).await;
        assert!(broken.is_err());
        let Readers::Sqlite(own) = &readers else {
            unreachable!("one_reader opens SQLite readers")
        };
        assert!(own.idle().is_empty(), "a connection that failed is not kept");
        assert_eq!(answer(&readers).await, 42);
        assert_eq!(own.idle().len(), 1, "a good connection goes back");
    }

    #[tokio::test]
    async fn a_read_abandoned_half_way_leaves_its_connection_fit_for_the_next() {
        let (_dir, readers) = one_reader().await;
        let long = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000) \
                    SELECT x FROM c";
        let abandoned = tokio::time::timeout(
            std::time::Duration::from_millis(5),
            sqlx::query(long).fetch_all(&readers),
        )
        .await;
        assert!(abandoned.is_err(), "the long read was cut off");
        // One connection only: the next read runs on the one whose read was dropped.
        assert_eq!(answer(&readers).await, 42);
        let rows = sqlx::query("SELECT x FROM (SELECT 1 AS x UNION ALL SELECT 2) ORDER BY x")
            .fetch_all(&readers)
            .await
            .expect("a read");
        assert_eq!(rows.len(), 2);
    }
}
