//! `import customers|orders FILE` (docs/spec/history.md, docs/spec/interfaces.md): a shop's export upserted
//! by id, all of it or nothing.
//!
//! Staged, in four steps, so that memory stays flat on a file of any size and nothing is
//! ever half-imported:
//! 1. **read and stage** — the file is streamed row by row (`rows`); each row is checked
//!    (`desk::onboarding::records`) and the good ones go to a staging table under this
//!    import's id, a hundred rows a statement; a duplicate id is the staging table's
//!    primary key saying no. Bad rows are collected with their line (the first [`MAX_REPORTED`], all counted).
//! 2. **check the set** — in SQL over the staged rows: an order's unknown customer, an
//!    order moving to another customer, an email or a provider customer given twice or
//!    already another customer's.
//! 3. **link** (customers, with a provider) — a given `provider_customer_id` must exist
//!    at the provider; a customer without one is linked by email through the provider's
//!    customer list when exactly one provider customer has that email and no other
//!    customer of ours is linked to it; several, or none, leave it unlinked (counted).
//! 4. **write** — one transaction upserts the staged rows into `customers` or `orders`,
//!    ten thousand lines of the file a statement, through those tables' writer
//!    (`desk::onboarding::records::upsert_staged`).
//!
//! Each step is linear in the file's rows, and reports its progress (`reading` bytes,
//! `checking` checks, `linking` customers, `writing` rows) for the command's bars.
//!
//! Any bad row, or a provider that cannot be asked, stops before step 4: nothing is
//! written, and the staged rows are deleted (rows a crash left behind are deleted by the
//! next import once a day old).
//!
//! What it deliberately does not do: create provider customers, read charges (linking
//! charges to orders is by metadata, `desk::onboarding::charges`), or import one row of a file
//! that has a bad one.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use sqlx::Row;

pub use crate::outcome::{ImportError, Links, Progress};
use crate::rows::{Format, RowError, Rows};
use desk::onboarding::records::{
    self, Customer, CustomerRow, Order, OrderRow, RecordError, StagedInto,
};
use payments_adapter::PaymentsClient;
use store::Db;

/// At most this many bad rows are kept for the report (every one is counted).
pub const MAX_REPORTED: usize = 1000;
/// Rows in one staging statement (9 values each: within every backend's limit).
const BATCH: usize = 100;
/// Staged rows committed together.
const COMMIT_EVERY: usize = 2000;
/// Staged rows older than this were left by a crash: the next import deletes them.
const STALE_MS: i64 = 24 * 3600 * 1000;

/// What an import did.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// `customers` or `orders`.
    pub kind: &'static str,
    pub format: Format,
    pub rows: u64,
    pub created: u64,
    pub updated: u64,
    /// Customers only: how each came to be linked to the provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Links>,
    pub seconds: f64,
    /// This process's peak resident memory (Linux `VmHWM`), so a run over a large file
    /// shows it stayed flat; absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory_kib: Option<u64>,
}

/// This process's peak resident memory in KiB, where the kernel reports it (Linux).
pub fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Bad rows, the first [`MAX_REPORTED`] kept.
#[derive(Default)]
struct Bad {
    errors: Vec<RowError>,
    count: u64,
}

impl Bad {
    fn push(&mut self, line: u64, id: Option<&str>, message: String) {
        self.count += 1;
        if self.errors.len() < MAX_REPORTED {
            self.errors.push(RowError {
                line,
                id: id.map(String::from),
                message,
            });
        }
    }

    fn into_result(mut self) -> Result<(), ImportError> {
        if self.count == 0 {
            return Ok(());
        }
        self.errors.sort_by_key(|e| e.line);
        Err(ImportError::Rows {
            errors: self.errors,
            count: self.count,
        })
    }
}

/// A query on either backend, binding values as it goes.
type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>;

/// A record ready to stage: its id and its bound values after `(import_id, id, line)`.
trait Staged {
    const TABLE: &'static str;
    const COLUMNS: &'static str;
    fn id(&self) -> &str;
    fn bind<'q>(&'q self, query: AnyQuery<'q>) -> AnyQuery<'q>;
}

impl Staged for Customer {
    const TABLE: &'static str = "import_customers";
    const COLUMNS: &'static str = "name, email, email_key, region, provider_customer_id, linked_by";
    fn id(&self) -> &str {
        &self.id
    }
    fn bind<'q>(&'q self, query: AnyQuery<'q>) -> AnyQuery<'q> {
        query
            .bind(&self.name)
            .bind(&self.email)
            .bind(self.email_key())
            .bind(self.region.code())
            .bind(self.provider_customer_id.as_deref())
            .bind(self.provider_customer_id.as_ref().map(|_| "given"))
    }
}

impl Staged for Order {
    const TABLE: &'static str = "import_orders";
    const COLUMNS: &'static str = "customer_id, product, amount_minor, currency, created_at";
    fn id(&self) -> &str {
        &self.id
    }
    fn bind<'q>(&'q self, query: AnyQuery<'q>) -> AnyQuery<'q> {
        query
            .bind(&self.customer_id)
            .bind(self.product.as_str())
            .bind(self.amount.minor_units())
            .bind(self.amount.currency().code())
            .bind(desk::clock::to_ms(self.created_at))
    }
}

/// Step 1: reads the whole file, staging the good rows under `import_id`. Returns the
/// number of rows read.
async fn stage<R, T>(
    db: &Db,
    import_id: &str,
    now: i64,
    rows: &mut Rows<R>,
    check: impl Fn(R) -> Result<T, RecordError>,
    bad: &mut Bad,
    progress: Progress<'_>,
) -> Result<u64, ImportError>
where
    R: serde::de::DeserializeOwned,
    T: Staged,
{
    let mut count = 0;
    let mut batch: Vec<(u64, T)> = Vec::with_capacity(BATCH);
    let mut tx = db.begin().await?;
    let mut in_tx = 0;
    while let Some((line, row)) = rows.next_row() {
        count += 1;
        match row.and_then(|r| check(r).map_err(|e| e.to_string())) {
            Ok(record) => batch.push((line, record)),
            Err(message) => bad.push(line, None, message),
        }
        if batch.len() == BATCH {
            in_tx += insert_batch(&mut tx, import_id, now, &batch, bad).await?;
            batch.clear();
            let (done, total) = rows.progress();
            progress("reading", done, total);
        }
        if in_tx >= COMMIT_EVERY {
            tx.commit().await?;
            tx = db.begin().await?;
            in_tx = 0;
        }
    }
    insert_batch(&mut tx, import_id, now, &batch, bad).await?;
    tx.commit().await?;
    let (done, total) = rows.progress();
    progress("reading", done, total);
    Ok(count)
}

/// Stages a batch in one statement; a row the primary key refuses is a duplicate id,
/// reported with the line that has it first.
async fn insert_batch<T: Staged>(
    tx: &mut store::Tx<'_>,
    import_id: &str,
    now: i64,
    batch: &[(u64, T)],
    bad: &mut Bad,
) -> Result<usize, ImportError> {
    if batch.is_empty() {
        return Ok(0);
    }
    let width = T::COLUMNS.split(',').count() + 4;
    let values: Vec<String> = (0..batch.len())
        .map(|i| {
            let params: Vec<String> = (1..=width).map(|j| format!("${}", i * width + j)).collect();
            format!("({})", params.join(", "))
        })
        .collect();
    let sql = format!(
        "INSERT INTO {} (import_id, id, line, staged_at, {}) VALUES {} ON CONFLICT (import_id, id) DO NOTHING RETURNING line",
        T::TABLE,
        T::COLUMNS,
        values.join(", ")
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (line, record) in batch {
        query = record.bind(
            query
                .bind(import_id)
                .bind(record.id())
                .bind(*line as i64)
                .bind(now),
        );
    }
    let inserted: std::collections::HashSet<i64> = query
        .fetch_all(&mut **tx)
        .await?
        .iter()
        .map(|r| r.try_get::<i64, _>("line"))
        .collect::<Result<_, _>>()?;
    for (line, record) in batch {
        if inserted.contains(&(*line as i64)) {
            continue;
        }
        let first: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT line FROM {} WHERE import_id = $1 AND id = $2",
            T::TABLE
        )))
        .bind(import_id)
        .bind(record.id())
        .fetch_one(&mut **tx)
        .await?
        .try_get("line")?;
        bad.push(
            *line,
            Some(record.id()),
            format!("duplicate id {} (first on line {first})", record.id()),
        );
    }
    Ok(inserted.len())
}

/// Runs one set-wide check: `sql` selects `line, id, problem` of the staged rows that
/// fail it (bound to the import id), each a bad row. Streamed: a file whose every row
/// fails keeps only the first [`MAX_REPORTED`] in memory.
async fn check_set(db: &Db, import_id: &str, sql: &str, bad: &mut Bad) -> Result<(), ImportError> {
    use futures_util::TryStreamExt;
    let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .bind(import_id)
        .fetch(db.pool());
    while let Some(row) = rows.try_next().await? {
        let line: i64 = row.try_get("line")?;
        let id: String = row.try_get("id")?;
        bad.push(line as u64, Some(&id), row.try_get("problem")?);
    }
    Ok(())
}

/// Deletes this import's staged rows, and any a crash left more than a day ago.
async fn unstage(db: &Db, table: &str, import_id: &str, now: i64) -> Result<(), ImportError> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE import_id = $1 OR staged_at < $2"
    )))
    .bind(import_id)
    .bind(now - STALE_MS)
    .execute(db.pool())
    .await?;
    Ok(())
}

fn open<R: serde::de::DeserializeOwned>(
    path: &Path,
    format: Option<Format>,
) -> Result<(Rows<R>, Format), ImportError> {
    let format = match format {
        Some(f) => f,
        None => Format::detect(path)
            .map_err(|e| ImportError::File(format!("cannot read {}: {e}", path.display())))?,
    };
    let rows = Rows::open(path, format).map_err(|e| ImportError::File(e.message))?;
    Ok((rows, format))
}

/// The SQL of the orders' set-wide checks (each selects `line, id, problem`).
const ORDER_CHECKS: [&str; 2] = [
    "SELECT s.line, s.id, 'customer ' || s.customer_id || ' does not exist (import customers first)' AS problem
     FROM import_orders s WHERE s.import_id = $1
       AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = s.customer_id)",
    "SELECT s.line, s.id, 'order ' || s.id || ' is customer ' || o.customer_id || '''s, not ' || s.customer_id
            || '''s: an order never moves to another customer' AS problem
     FROM import_orders s JOIN orders o ON o.id = s.id
     WHERE s.import_id = $1 AND o.customer_id <> s.customer_id",
];

/// `import orders FILE`: every row checked, then all upserted in one transaction or
/// none.
pub async fn import_orders(
    db: &Db,
    path: &Path,
    format: Option<Format>,
    now: i64,
    progress: Progress<'_>,
) -> Result<ImportReport, ImportError> {
    let plan = (&ORDERS, Linking::None);
    run(db, plan, path, format, now, OrderRow::check, progress).await
}

/// What one kind of import stages, checks and writes.
struct Plan {
    kind: &'static str,
    staging: &'static str,
    /// Set-wide checks, each selecting `line, id, problem`.
    checks: &'static [&'static str],
    /// The live table, written through its writer (`records::upsert_staged`).
    write: StagedInto,
}

const ORDERS: Plan = Plan {
    kind: "orders",
    staging: "import_orders",
    checks: &ORDER_CHECKS,
    write: StagedInto::Orders,
};

const CUSTOMERS: Plan = Plan {
    kind: "customers",
    staging: "import_customers",
    checks: &CUSTOMER_CHECKS,
    write: StagedInto::Customers,
};

/// Customers are linked to the provider's customers before they are written.
enum Linking<'a> {
    None,
    Customers(Option<&'a PaymentsClient>),
}

/// The steps of every import: stage the file's good rows, run the set-wide checks, link
/// (customers), write all in one transaction or none, and drop the staging rows whatever
/// happened.
async fn run<R, T>(
    db: &Db,
    (plan, linking): (&Plan, Linking<'_>),
    path: &Path,
    format: Option<Format>,
    now: i64,
    check: impl Fn(R) -> Result<T, RecordError>,
    progress: Progress<'_>,
) -> Result<ImportReport, ImportError>
where
    R: serde::de::DeserializeOwned,
    T: Staged,
{
    let started = Instant::now();
    let (mut rows, format) = open::<R>(path, format)?;
    let import_id = store::new_id("imp");
    let mut bad = Bad::default();
    let result = async {
        let count = stage(
            db,
            &import_id,
            now,
            &mut rows,
            check,
            &mut bad,
            &mut *progress,
        )
        .await?;
        let checks = plan.checks.len() as u64;
        for (done, sql) in (0..).zip(plan.checks) {
            progress("checking", done, checks);
            check_set(db, &import_id, sql, &mut bad).await?;
        }
        progress("checking", checks, checks);
        std::mem::take(&mut bad).into_result()?;
        let links = match linking {
            Linking::None => None,
            Linking::Customers(Some(p)) => {
                Some(crate::link::link_staged(db, p, &import_id, progress).await?)
            }
            Linking::Customers(None) => Some(crate::link::unlinked_only(db, &import_id).await?),
        };
        let (created, updated) = write_staged(db, &import_id, plan, progress).await?;
        Ok(ImportReport {
            kind: plan.kind,
            format,
            rows: count,
            created,
            updated,
            links,
            seconds: started.elapsed().as_secs_f64(),
            peak_memory_kib: peak_memory_kib(),
        })
    }
    .await;
    unstage(db, plan.staging, &import_id, now).await?;
    result
}

/// Lines of the file upserted per statement, so the write reports its progress.
const WRITE_LINES: i64 = 10_000;

/// Upserts from staging into the live table, in one transaction (all or nothing), a
/// window of [`WRITE_LINES`] lines at a time through the staging table's line index;
/// `(created, updated)`.
async fn write_staged(
    db: &Db,
    import_id: &str,
    plan: &Plan,
    progress: Progress<'_>,
) -> Result<(u64, u64), ImportError> {
    let (rows, last) = staged_extent(db, plan.staging, import_id).await?;
    let live = plan.write.table();
    let existing_sql = format!(
        "SELECT COUNT(*) AS n FROM {} s JOIN {live} l ON l.id = s.id
         WHERE s.import_id = $1 AND s.line > $2 AND s.line <= $3",
        plan.staging
    );
    let mut tx = db.begin().await?;
    let (mut written, mut existing) = (0u64, 0u64);
    progress("writing", 0, rows);
    for from in (0..last).step_by(WRITE_LINES as usize) {
        let lines = (from, from + WRITE_LINES);
        let n: i64 = sqlx::query(sqlx::AssertSqlSafe(existing_sql.clone()))
            .bind(import_id)
            .bind(lines.0)
            .bind(lines.1)
            .fetch_one(&mut *tx)
            .await?
            .try_get("n")?;
        existing += n as u64;
        written += records::upsert_staged(&mut tx, plan.write, import_id, lines).await?;
        progress("writing", written, rows);
    }
    tx.commit().await?;
    Ok((written.saturating_sub(existing), existing))
}

/// How many rows this import staged, and the last line among them.
async fn staged_extent(db: &Db, staging: &str, import_id: &str) -> Result<(u64, i64), ImportError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) AS n, COALESCE(MAX(line), 0) AS last FROM {staging} WHERE import_id = $1"
    )))
    .bind(import_id)
    .fetch_one(db.pool())
    .await?;
    Ok((row.try_get::<i64, _>("n")? as u64, row.try_get("last")?))
}

/// The SQL of the customers' set-wide checks on what the file gives (each selects
/// `line, id, problem`). An existing customer the file also names is judged by the
/// file's row for it.
///
/// Each runs in time linear in the file whatever the planner knows of the tables'
/// sizes: SQLite keeps no statistics unless `ANALYZE` runs, and the staging table is
/// empty between imports. A value given twice is found by one sorted pass (a window over
/// the value, by line), not by joining the staged rows to themselves: SQLite ran that
/// join as a scan of every earlier row for each row, so 20,000 rows took minutes
/// (BENCHMARKS.md, "Importing customers"). `email_key || ''` has no column affinity,
/// which lets SQLite compare it with `lower(c.email)` through `customers_by_email_key`
/// rather than scan `customers` for each staged row.
const CUSTOMER_CHECKS: [&str; 4] = [
    "SELECT line, id, 'email ' || email || ' is also customer ' || first_id || '''s (line ' || first_line || ')' AS problem
     FROM (SELECT line, id, email, FIRST_VALUE(id) OVER w AS first_id, FIRST_VALUE(line) OVER w AS first_line
           FROM import_customers WHERE import_id = $1
           WINDOW w AS (PARTITION BY email_key ORDER BY line)) x
     WHERE line <> first_line",
    "SELECT s.line, s.id, 'email ' || s.email || ' is already customer ' || c.id || '''s' AS problem
     FROM import_customers s JOIN customers c ON lower(c.email) = s.email_key || '' AND c.id <> s.id
     WHERE s.import_id = $1
       AND NOT EXISTS (SELECT 1 FROM import_customers t WHERE t.import_id = s.import_id AND t.id = c.id AND t.email_key <> s.email_key)",
    "SELECT line, id, 'provider customer ' || provider_customer_id || ' is also customer ' || first_id || '''s (line ' || first_line || ')' AS problem
     FROM (SELECT line, id, provider_customer_id, FIRST_VALUE(id) OVER w AS first_id, FIRST_VALUE(line) OVER w AS first_line
           FROM import_customers WHERE import_id = $1 AND provider_customer_id IS NOT NULL
           WINDOW w AS (PARTITION BY provider_customer_id ORDER BY line)) x
     WHERE line <> first_line",
    "SELECT s.line, s.id, 'provider customer ' || s.provider_customer_id || ' is already customer ' || c.id || '''s' AS problem
     FROM import_customers s JOIN customers c ON c.provider_customer_id = s.provider_customer_id AND c.id <> s.id
     WHERE s.import_id = $1
       AND NOT EXISTS (SELECT 1 FROM import_customers t WHERE t.import_id = s.import_id AND t.id = c.id
                       AND COALESCE(t.provider_customer_id, '') <> s.provider_customer_id)",
];

/// `import customers FILE`: every row checked; with a provider, given provider
/// customers checked and the others linked by email; then all upserted in one
/// transaction or none.
pub async fn import_customers(
    db: &Db,
    payments: Option<&PaymentsClient>,
    path: &Path,
    format: Option<Format>,
    now: i64,
    progress: Progress<'_>,
) -> Result<ImportReport, ImportError> {
    let plan = (&CUSTOMERS, Linking::Customers(payments));
    run(db, plan, path, format, now, CustomerRow::check, progress).await
}
