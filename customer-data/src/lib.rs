//! The customer's data over its life (docs/spec/data.md): what is held about whom and
//! where ([`classify`]), handed out ([`export`]), erased ([`erase`]), expired
//! ([`retention`]), and brought back from a backup ([`restore`]) with the refunds made
//! since adopted from the provider before anything is served ([`adoption`]); what the
//! worker's pass does of it ([`lifecycle`], registered on the state by `app` through the
//! desk's `chores` seam). A crate above the desk: the desk's workflow never calls it.
//!
//! The one exception to "one writer per table" (ARCHITECTURE.md): erasure and retention
//! rewrite the classified text columns of other modules' tables in place.
//!
//! Deliberately not here: who may ask (`web::access`: administer only) and how a case
//! moves (`desk::cases`, `desk::refunds`).

pub mod adoption;
pub mod classify;
pub mod erase;
pub mod export;
pub mod lifecycle;
pub mod restore;
pub mod retention;

pub use lifecycle::Lifecycle;

use sqlx::Row;

use desk::error::DomainResult;
use store::{Backend, Db};

/// Every table of the live schema with its TEXT columns (SQLite's catalogue, or
/// PostgreSQL's `information_schema`), sorted: what [`classify::unclassified`] checks.
pub async fn schema_text_columns(db: &Db) -> DomainResult<Vec<(String, Vec<String>)>> {
    let mut schema = std::collections::BTreeMap::<String, Vec<String>>::new();
    match db.backend() {
        Backend::Sqlite => {
            let tables = sqlx::query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            )
            .fetch_all(db.pool())
            .await?;
            for table in tables {
                let name: String = table.try_get("name")?;
                let columns = sqlx::query("SELECT name, type FROM pragma_table_info($1)")
                    .bind(&name)
                    .fetch_all(db.pool())
                    .await?;
                let entry = schema.entry(name).or_default();
                for column in columns {
                    let kind: String = column.try_get("type")?;
                    if kind.eq_ignore_ascii_case("text") {
                        entry.push(column.try_get("name")?);
                    }
                }
            }
        }
        Backend::Postgres => {
            let rows = sqlx::query(
                "SELECT CAST(t.table_name AS TEXT) AS tname, CAST(c.column_name AS TEXT) AS cname,
                        CAST(c.data_type AS TEXT) AS ctype
                   FROM information_schema.tables t
                   LEFT JOIN information_schema.columns c
                     ON c.table_schema = t.table_schema AND c.table_name = t.table_name
                  WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'",
            )
            .fetch_all(db.pool())
            .await?;
            for row in rows {
                let entry = schema.entry(row.try_get("tname")?).or_default();
                let kind: Option<String> = row.try_get("ctype")?;
                if kind.as_deref() == Some("text") {
                    entry.push(row.try_get("cname")?);
                }
            }
        }
    }
    Ok(schema.into_iter().collect())
}
