//! Which database a `Db` talks to: the one fact the pools and the readers both branch on
//! (SQLite has one writer connection and WAL readers; PostgreSQL a pool of both).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}
