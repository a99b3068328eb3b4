//! Where reads of committed state run (`Db::reader`): a few read-only connections of
//! our own, outside the writers' pool (in-memory SQLite, which exists once per
//! connection, reads through that pool).
//!
//! Why not a sqlx pool: a pooled connection is pinged when it goes back to
//! the pool — a task and a round trip after every read, to SQLite's connection thread
//! or to the PostgreSQL server — and that is not a setting; by default it is pinged
//! before it is lent too. A one-row page measured about 1.5× the requests per second
//! without them (the bench's peer, same machine and run). Here a SQLite connection is
//! never pinged: it has no peer to lose. A PostgreSQL connection is pinged only when it
//! sat idle for more than [`CHECK_IDLE_AFTER`] (a server restart or an idle timeout cuts
//! idle connections; one in steady use shows its loss by failing). A connection that
//! answered with an error is closed instead of kept, and a new one is opened on demand.
//! A read abandoned half-way (the client went away) leaves nothing behind: SQLite's
//! connection thread finishes it before the next command, and sqlx's PostgreSQL
//! connection drains what is left of it before the next query.
//!
//! `Readers` is an `Executor`, so a read is written the same either way:
//! `query.fetch_optional(db.reader())`. No transactions here, and no writes: readers are
//! `query_only` (SQLite) or `default_transaction_read_only` (PostgreSQL).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt, TryFutureExt};
use sqlx::any::{AnyConnectOptions, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo};
use sqlx::{
    Any, AnyConnection, AnyPool, ConnectOptions, Connection, Describe, Either, Execute, Executor,
    SqlStr,
};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::backend::Backend;

/// How long a PostgreSQL reader may sit idle before it is pinged when lent.
pub const CHECK_IDLE_AFTER: Duration = Duration::from_secs(1);

/// The reads of a `Db`.
#[derive(Debug)]
pub enum Readers {
    /// In-memory SQLite: reads share the writers' pool.
    Pool(AnyPool),
    /// A SQLite file or PostgreSQL: read-only connections of our own.
    Own(ReadConnections),
}

/// At most `permits` read-only connections, opened on first need and lent one read at
/// a time; each idle one with the moment it came back.
pub struct ReadConnections {
    options: AnyConnectOptions,
    backend: Backend,
    idle: Mutex<Vec<(AnyConnection, Instant)>>,
    permits: Semaphore,
}

impl std::fmt::Debug for ReadConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadConnections")
            .field("backend", &self.backend)
            .field("available", &self.permits.available_permits())
            .finish()
    }
}

/// A connection lent for one read; it goes back on drop unless the read failed.
struct Lent<'a> {
    connection: Option<AnyConnection>,
    readers: &'a ReadConnections,
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
                self.readers.idle().push((connection, Instant::now()));
            }
        }
    }
}

impl ReadConnections {
    /// Opens one connection now, so a bad file, path or server fails at start-up.
    pub async fn open(
        options: AnyConnectOptions,
        backend: Backend,
        connections: usize,
    ) -> Result<Self, sqlx::Error> {
        let first = connect(&options, backend).await?;
        Ok(ReadConnections {
            options,
            backend,
            idle: Mutex::new(vec![(first, Instant::now())]),
            permits: Semaphore::new(connections),
        })
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(AnyConnection, Instant)>> {
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
            Some((connection, since)) => self.checked(connection, since).await?,
            None => connect(&self.options, self.backend).await?,
        };
        Ok(Lent {
            connection: Some(connection),
            readers: self,
            _permit: permit,
        })
    }

    /// An idle connection fit to lend: a PostgreSQL one idle for long is pinged first,
    /// and replaced when the ping fails.
    async fn checked(
        &self,
        mut connection: AnyConnection,
        since: Instant,
    ) -> Result<AnyConnection, sqlx::Error> {
        if self.backend == Backend::Sqlite || since.elapsed() < CHECK_IDLE_AFTER {
            return Ok(connection);
        }
        match connection.ping().await {
            Ok(()) => Ok(connection),
            Err(e) => {
                tracing::info!(error = %e, "an idle reader connection was lost; opening another");
                connect(&self.options, self.backend).await
            }
        }
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

    async fn prepare_with(
        &self,
        sql: SqlStr,
        parameters: &[AnyTypeInfo],
    ) -> Result<AnyStatement, sqlx::Error> {
        let mut lent = self.lend().await?;
        let result = match lent.connection() {
            Ok(connection) => connection.prepare_with(sql, parameters).await,
            Err(e) => Err(e),
        };
        lent.keep_if_ok(&result);
        result
    }

    async fn describe(&self, sql: SqlStr) -> Result<Describe<Any>, sqlx::Error> {
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
        let idle = std::mem::take(&mut *self.idle());
        for (connection, _) in idle {
            let _ = connection.close().await;
        }
    }
}

/// A read-only connection: it refuses any write. On SQLite it waits out a writer's lock
/// for 5 s, as the writer does.
async fn connect(
    options: &AnyConnectOptions,
    backend: Backend,
) -> Result<AnyConnection, sqlx::Error> {
    let mut connection = options.connect().await?;
    let setup: &[&str] = match backend {
        Backend::Sqlite => &[
            "PRAGMA query_only = ON",
            "PRAGMA busy_timeout = 5000",
            "PRAGMA foreign_keys = ON",
        ],
        Backend::Postgres => &["SET default_transaction_read_only = on"],
    };
    for statement in setup {
        connection.execute(*statement).await?;
    }
    Ok(connection)
}

impl Readers {
    pub async fn close(&self) {
        match self {
            Readers::Pool(pool) => pool.close().await,
            Readers::Own(readers) => readers.close().await,
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
            Readers::Own(readers) => readers
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
            Readers::Own(readers) => Box::pin(readers.fetch_optional(query)),
        }
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement, sqlx::Error>>
    where
        'p: 'e,
    {
        match self {
            Readers::Pool(pool) => pool.prepare_with(sql, parameters),
            Readers::Own(readers) => Box::pin(readers.prepare_with(sql, parameters)),
        }
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<Any>, sqlx::Error>>
    where
        'p: 'e,
    {
        match self {
            Readers::Pool(pool) => pool.describe(sql),
            Readers::Own(readers) => Box::pin(readers.describe(sql)),
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
        let url = crate::Db::sqlite_url(dir.path());
        // The file and its schema come from the writer.
        crate::Db::connect(&url).await.expect("the database opens");
        let options = AnyConnectOptions::from_str(&url).expect("a sqlite url");
        let readers = ReadConnections::open(options, Backend::Sqlite, 1)
            .await
            .expect("a reader opens");
        (dir, Readers::Own(readers))
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
        let broken = sqlx::query("SELECT nothing FROM nowhere")
            .fetch_all(&readers)
            .await;
        assert!(broken.is_err());
        let Readers::Own(own) = &readers else {
            unreachable!("one_reader opens SQLite readers")
        };
        assert!(
            own.idle().is_empty(),
            "a connection that failed is not kept"
        );
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
