//! The HTTP peer (not part of the product): the same stack — axum and sqlx on
//! SQLite — serving one page from one row, with sqlx's default pool, nothing else. The
//! bench (`app/benches/product/`, phase `http`) loads it beside `refund-agent serve`
//! when it is built, so the product's pages have a same-run measure of what the stack
//! itself costs on this machine.
//!
//! `cargo build --release -p app --example http_peer`, then
//! `target/release/examples/http_peer DIR 127.0.0.1:PORT` serves `GET /items/{id}` (ids
//! `i0` … `i199`) from `DIR/peer.db`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use axum::Router;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool};
use sqlx::Row;

/// Items the page reads from.
const ITEMS: usize = 200;

async fn item(
    State(pool): State<SqlitePool>,
    Path(id): Path<String>,
) -> Result<Html<String>, StatusCode> {
    let row = sqlx::query("SELECT title, body, status FROM items WHERE id = $1")
        .bind(&id)
        .fetch_optional(&pool)
        .await
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?
        .ok_or(StatusCode::NOT_FOUND)?;
    let field = |name: &str| row.try_get::<String, _>(name).unwrap_or_default();
    Ok(Html(format!(
        "<!doctype html><title>{id}</title><h1>{}</h1><p>{}</p><p>{}</p>",
        field("title"),
        field("body"),
        field("status")
    )))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(addr)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: http_peer DIR HOST:PORT");
    };
    let options = SqliteConnectOptions::new()
        .filename(format!("{dir}/peer.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal);
    let pool = SqlitePool::connect_with(options).await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, title TEXT, body TEXT, status TEXT)",
    )
    .execute(&pool)
    .await?;
    for i in 0..ITEMS {
        sqlx::query("INSERT OR IGNORE INTO items VALUES ($1, $2, $3, $4)")
            .bind(format!("i{i}"))
            .bind(format!("Item {i}"))
            .bind("Order O-800000001 was charged twice, please refund the duplicate.")
            .bind("awaiting_approval")
            .execute(&pool)
            .await?;
    }
    let app = Router::new()
        .route("/items/{id}", get(item))
        .with_state(pool);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await?;
    Ok(())
}
