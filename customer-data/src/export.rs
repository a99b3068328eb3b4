//! `customer export ID` (docs/spec/data.md): everything held about one customer as one
//! JSON document — every row [`classify::TABLES`] says is theirs (profile, orders,
//! tickets and messages, cases with their proposals and decisions, runs and their
//! events, approvals, refunds, notes, audit entries about them) — read a page of rows at
//! a time and written row by row, so memory holds one page, whatever the count.
//!
//! Deliberately not here: credentials (token and link hashes are secrets, not data
//! about the person), and the provider's own records of the customer.

use serde_json::{Map, Value};
use sqlx::{Column, Row};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::classify::{self, Rows};
use desk::error::{DomainError, DomainResult};
use store::Db;

/// How much an export wrote.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Exported {
    pub rows: u64,
    pub bytes: u64,
}

/// The document's shape, for the OpenAPI description only (the export itself is written
/// row by row, never built as a value).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ExportDocument {
    pub customer_id: String,
    /// Unix milliseconds.
    pub exported_at: i64,
    /// Each table holding the customer's rows, by name: a list of rows, column by name
    /// (JSON columns as JSON).
    #[schema(value_type = Object)]
    pub tables: serde_json::Value,
}

/// Writes the document for `customer_id` to `out`:
/// `{"customer_id": …, "exported_at": ms, "tables": {"customers": [{…}], "orders": […], …}}`.
/// An unknown customer is `NotFound` before anything is written.
pub async fn export<W: AsyncWrite + Unpin>(
    db: &Db,
    customer_id: &str,
    now: i64,
    out: &mut W,
) -> DomainResult<Exported> {
    desk::onboarding::records::require_customer(db, customer_id).await?;
    let mut done = Exported::default();
    let head = format!(
        "{{\"customer_id\":{},\"exported_at\":{now},\"tables\":{{",
        Value::String(customer_id.into())
    );
    write(out, head.as_bytes(), &mut done).await?;
    let mut first_table = true;
    for table in classify::TABLES {
        let Rows::Redact(condition) = table.rows else {
            continue;
        };
        let open = format!(
            "{}{}:[",
            if first_table { "" } else { "," },
            Value::String(table.name.into())
        );
        first_table = false;
        write(out, open.as_bytes(), &mut done).await?;
        export_table(db, table, condition, customer_id, out, &mut done).await?;
        write(out, b"]", &mut done).await?;
    }
    write(out, b"}}\n", &mut done).await?;
    out.flush().await.map_err(io)?;
    Ok(done)
}

/// Rows read at a time: memory holds one page, whatever the customer's count.
const PAGE: i64 = 500;

/// One table's rows of the customer, a page at a time in key order, each row written
/// out before the next page is read.
async fn export_table<W: AsyncWrite + Unpin>(
    db: &Db,
    table: &classify::Table,
    condition: &str,
    customer_id: &str,
    out: &mut W,
    done: &mut Exported,
) -> DomainResult<()> {
    let sql = format!(
        "SELECT * FROM {} WHERE {condition} ORDER BY {} LIMIT $2 OFFSET $3",
        table.name,
        table.key.join(", ")
    );
    let mut first = true;
    let mut offset = 0;
    loop {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .bind(customer_id)
            .bind(PAGE)
            .bind(offset)
            .fetch_all(db.reader())
            .await?;
        for row in &rows {
            let mut line = if first { Vec::new() } else { b",".to_vec() };
            first = false;
            serde_json::to_writer(&mut line, &row_json(row))
                .map_err(|e| DomainError::Internal(e.into()))?;
            write(out, &line, done).await?;
            done.rows += 1;
        }
        if (rows.len() as i64) < PAGE {
            return Ok(());
        }
        offset += PAGE;
    }
}

/// A row as a JSON object: integers as numbers, text as strings — or as the JSON it
/// holds (proposals, decisions, run events), so the document reads as one.
fn row_json(row: &sqlx::any::AnyRow) -> Value {
    let mut object = Map::new();
    for column in row.columns() {
        let name = column.name();
        let value = if let Ok(text) = row.try_get::<Option<String>, _>(name) {
            match text {
                Some(t) if t.starts_with('{') || t.starts_with('[') => {
                    serde_json::from_str(&t).unwrap_or(Value::String(t))
                }
                Some(t) => Value::String(t),
                None => Value::Null,
            }
        } else if let Ok(number) = row.try_get::<Option<i64>, _>(name) {
            number.map(Value::from).unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        object.insert(name.to_string(), value);
    }
    Value::Object(object)
}

async fn write<W: AsyncWrite + Unpin>(
    out: &mut W,
    bytes: &[u8],
    done: &mut Exported,
) -> DomainResult<()> {
    out.write_all(bytes).await.map_err(io)?;
    done.bytes += bytes.len() as u64;
    Ok(())
}

fn io(e: std::io::Error) -> DomainError {
    DomainError::Internal(anyhow::Error::new(e).context("writing the export"))
}
