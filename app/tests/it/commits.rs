//! Commits per ticket on SQLite: every transaction a ticket costs from its
//! creation (`customer::create_ticket`) until its case awaits approval
//! (`worker::run_once`), counted by SQLite itself and attributed by what each wrote.
//!
//! How it counts, without touching the product: SQLite's `sqlite3_auto_extension`
//! gives this test every connection the process opens; on the connections to this
//! test's database file it installs a statement trace and a commit hook. A commit is
//! what the commit hook sees (read-only transactions never reach it), and its
//! statements are those traced on that connection since it last committed, rolled back
//! or ran a statement outside a transaction. Connections to other tests' databases get
//! no hooks. It deliberately measures SQLite only: on PostgreSQL the same code paths
//! issue the same transactions.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Mutex, Once};

use desk::customer::NewTicket;
use serde_json::json;
use sqlx::Row;

use crate::support::{app_on, start_mock};

/// What the hooks record: the directory they watch, the statements each watched
/// connection ran since its last commit, every commit's statements, in order, and
/// every statement traced (reads outside a transaction included).
struct Watch {
    dir: Option<String>,
    open: Vec<(usize, Vec<String>)>,
    commits: Vec<Vec<String>>,
    traced: Vec<String>,
}

static WATCH: Mutex<Watch> = Mutex::new(Watch {
    dir: None,
    open: Vec::new(),
    commits: Vec::new(),
    traced: Vec::new(),
});

const SQLITE_TRACE_STMT: c_uint = 0x01;

type Trace = unsafe extern "C" fn(c_uint, *mut c_void, *mut c_void, *mut c_void) -> c_int;

// The SQLite library sqlx links (libsqlite3-sys); declared here, not a new dependency.
unsafe extern "C" {
    fn sqlite3_auto_extension(entry: Option<unsafe extern "C" fn()>) -> c_int;
    fn sqlite3_trace_v2(
        db: *mut c_void,
        mask: c_uint,
        cb: Option<Trace>,
        ctx: *mut c_void,
    ) -> c_int;
    fn sqlite3_commit_hook(
        db: *mut c_void,
        cb: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
        ctx: *mut c_void,
    ) -> *mut c_void;
    fn sqlite3_rollback_hook(
        db: *mut c_void,
        cb: Option<unsafe extern "C" fn(*mut c_void)>,
        ctx: *mut c_void,
    ) -> *mut c_void;
    fn sqlite3_get_autocommit(db: *mut c_void) -> c_int;
    fn sqlite3_db_filename(db: *mut c_void, name: *const c_char) -> *const c_char;
}

fn watch() -> std::sync::MutexGuard<'static, Watch> {
    WATCH
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn statements_of(watch: &mut Watch, db: *mut c_void) -> &mut Vec<String> {
    let key = db as usize;
    let at = match watch.open.iter().position(|(k, _)| *k == key) {
        Some(at) => at,
        None => {
            watch.open.push((key, Vec::new()));
            watch.open.len() - 1
        }
    };
    &mut watch.open[at].1
}

unsafe extern "C" fn on_statement(
    mask: c_uint,
    db: *mut c_void,
    _stmt: *mut c_void,
    sql: *mut c_void,
) -> c_int {
    if mask != SQLITE_TRACE_STMT || sql.is_null() {
        return 0;
    }
    // SAFETY: for SQLITE_TRACE_STMT, X is the statement's text, NUL-terminated.
    let text = unsafe { CStr::from_ptr(sql as *const c_char) }.to_string_lossy();
    // SAFETY: `db` is the connection this trace was installed on (its context).
    let outside_a_transaction = unsafe { sqlite3_get_autocommit(db) } != 0;
    let mut watch = watch();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    watch.traced.push(text.clone());
    let statements = statements_of(&mut watch, db);
    if outside_a_transaction {
        statements.clear();
    }
    statements.push(text);
    0
}

unsafe extern "C" fn on_commit(db: *mut c_void) -> c_int {
    let mut watch = watch();
    let statements = std::mem::take(statements_of(&mut watch, db));
    watch.commits.push(statements);
    0
}

unsafe extern "C" fn on_rollback(db: *mut c_void) {
    statements_of(&mut watch(), db).clear();
}

/// Runs for every connection SQLite opens in this process; hooks only the watched file's.
unsafe extern "C" fn on_open(
    db: *mut c_void,
    _error: *mut *mut c_char,
    _api: *const c_void,
) -> c_int {
    // SAFETY: `db` is the connection being opened; "main" is its main database.
    let file = unsafe { sqlite3_db_filename(db, c"main".as_ptr()) };
    if file.is_null() {
        return 0;
    }
    // SAFETY: a NUL-terminated path owned by the connection.
    let file = unsafe { CStr::from_ptr(file) }
        .to_string_lossy()
        .into_owned();
    let watched = watch()
        .dir
        .as_ref()
        .is_some_and(|dir| file.starts_with(dir.as_str()));
    if watched {
        // SAFETY: hooks on a live connection, with the connection itself as context.
        unsafe {
            sqlite3_trace_v2(db, SQLITE_TRACE_STMT, Some(on_statement), db);
            sqlite3_commit_hook(db, Some(on_commit), db);
            sqlite3_rollback_hook(db, Some(on_rollback), db);
        }
    }
    0
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        type Entry = unsafe extern "C" fn(*mut c_void, *mut *mut c_char, *const c_void) -> c_int;
        // SAFETY: SQLite calls an auto extension with exactly this signature (it takes
        // the pointer as `void (*)(void)` and casts it back).
        let entry = unsafe { std::mem::transmute::<Entry, unsafe extern "C" fn()>(on_open) };
        // SAFETY: registering a function that lives as long as the process.
        assert_eq!(unsafe { sqlite3_auto_extension(Some(entry)) }, 0);
    });
}

/// The code path a transaction comes from, named by the writes it made (one line of
/// the table in /work/notes and BENCHMARKS.md): each write as `VERB table`, in order,
/// repeats collapsed.
fn writes_of(statements: &[String]) -> String {
    let mut writes: Vec<String> = Vec::new();
    for sql in statements {
        let words: Vec<&str> = sql.split(' ').collect();
        let verb = words
            .first()
            .map(|w| w.to_ascii_uppercase())
            .unwrap_or_default();
        let table = match verb.as_str() {
            "INSERT" | "REPLACE" => words
                .iter()
                .skip_while(|w| !w.eq_ignore_ascii_case("into"))
                .nth(1),
            "UPDATE" => words.get(1),
            "DELETE" => words
                .iter()
                .skip_while(|w| !w.eq_ignore_ascii_case("from"))
                .nth(1),
            // `WITH last AS (…) INSERT INTO run_events …`
            "WITH" => words
                .iter()
                .skip_while(|w| !w.eq_ignore_ascii_case("insert"))
                .nth(2),
            _ => None,
        };
        let Some(table) = table else { continue };
        let verb = if verb == "WITH" {
            "INSERT"
        } else {
            verb.as_str()
        };
        let write = format!(
            "{verb} {}",
            table.trim_matches(|c: char| !c.is_alphanumeric() && c != '_')
        );
        if writes.last() != Some(&write) {
            writes.push(write);
        }
    }
    if writes.is_empty() {
        "(no write)".to_string()
    } else {
        writes.join(" + ")
    }
}

/// `n` customers in the US, each charged twice (49.00 USD) for one annual plan: the
/// bench's ticket (a duplicate charge: six tool calls, then a refund proposed).
fn duplicate_charge_world(n: usize) -> String {
    let (mut customers, mut orders, mut charges) = (vec![], vec![], vec![]);
    for i in 0..n {
        customers.push(
            json!({"id": format!("K-{i}"), "name": format!("Commits {i}"),
            "email": format!("commits{i}@example.test"), "region": "US"}),
        );
        orders.push(
            json!({"id": format!("O-K{i}"), "customer_id": format!("K-{i}"),
            "product": "annual_plan", "amount": "49.00", "currency": "USD",
            "created_at": "2026-11-20T09:00:00Z"}),
        );
        for (suffix, at) in [("a", "2026-11-20T09:00:05Z"), ("b", "2026-11-20T09:01:10Z")] {
            charges.push(
                json!({"id": format!("ch_k{i}{suffix}"), "order_id": format!("O-K{i}"),
                "customer_id": format!("K-{i}"), "amount": "49.00", "currency": "USD",
                "captured": true, "status": "succeeded", "disputed": false, "created_at": at,
                "payment_method": "pm_card_visa_4242", "amount_refunded": "0.00"}),
            );
        }
    }
    json!({"customers": customers, "orders": orders, "charges": charges, "refunds": []}).to_string()
}

/// `n` tickets created, then investigated by `worker::run_once` (its claim loops side by
/// side, their steps through the group writer), on a fresh SQLite database; returns
/// every commit from the first ticket's creation until every case awaits approval.
/// The commits `n` tickets cost, and every statement they ran (`Watch::traced`).
async fn commits_of_tickets(n: usize) -> (Vec<Vec<String>>, Vec<String>) {
    // One count at a time: the watch (the directory watched, the commits seen) is the
    // process's, and the two tests below run side by side otherwise.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = ONE_AT_A_TIME.lock().await;
    install();
    let dir = tempfile::tempdir().expect("a temp dir");
    watch().dir = Some(dir.path().display().to_string());
    let mock = start_mock(dir.path()).await;
    let world = duplicate_charge_world(n);
    desk::world::load_into_provider(&mock.base_url(), &world)
        .await
        .expect("world loads into the mock");
    let url = store::Db::sqlite_url(dir.path());
    let model = std::sync::Arc::new(desk::agent::investigator::Investigator);
    let app = app_on(dir, mock, url, model, |_| {}).await;
    let parsed = desk::world::World::parse(&world).expect("the world parses");
    parsed.load_into(&app.state.db).await.expect("world loads");
    watch().commits.clear();
    watch().traced.clear();
    let state = &app.state;
    for i in 0..n {
        let input = NewTicket {
            message: "I was charged twice for my annual plan".into(),
            order_id: None,
        };
        let (db, clock) = (&state.db, state.clock.as_ref());
        desk::customer::create_ticket(db, clock, state.queue(), &format!("K-{i}"), input)
            .await
            .expect("the ticket is created");
    }
    for _ in 0..20 {
        if desk::worker::run_once(state).await.expect("a worker pass") == 0 {
            break;
        }
    }
    let commits = std::mem::take(&mut watch().commits);
    let traced = std::mem::take(&mut watch().traced);
    watch().dir = None;
    let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM cases GROUP BY status")
        .fetch_all(state.db.pool())
        .await
        .unwrap();
    let statuses: Vec<(String, i64)> = rows.iter().map(|r| (r.get("status"), r.get("n"))).collect();
    let expected = [("awaiting_approval".to_string(), n as i64)];
    assert_eq!(statuses, expected, "every case investigated");
    (commits, traced)
}

/// The periodic jobs a worker pass runs whatever the number of tickets (job claims,
/// reconciliation's report, retention), as opposed to a ticket's own commits.
fn periodic(path: &str) -> bool {
    path == "INSERT job_runs" || path.starts_with("UPDATE messages + UPDATE run_events")
}

/// The commits per code path, most first, as a Markdown table.
fn table(commits: &[Vec<String>], tickets: usize) -> String {
    let mut by_path: Vec<(String, usize)> = Vec::new();
    for statements in commits {
        let path = writes_of(statements);
        match by_path.iter_mut().find(|(p, _)| *p == path) {
            Some((_, n)) => *n += 1,
            None => by_path.push((path, 1)),
        }
    }
    by_path.sort_by_key(|p| std::cmp::Reverse(p.1));
    let mut out = format!(
        "| writes of the transaction | commits per ticket ({tickets} ticket(s)) |\n|---|---|\n"
    );
    for (path, n) in &by_path {
        out += &format!("| {path} | {:.2} |\n", *n as f64 / tickets as f64);
    }
    out + &format!(
        "| **total** | **{:.2}** |\n",
        commits.len() as f64 / tickets as f64
    )
}

fn show_sql(commits: &[Vec<String>]) {
    if std::env::var_os("COMMITS_SHOW_SQL").is_some() {
        for (i, statements) in commits.iter().enumerate() {
            println!("commit {i}: {}", statements.join(" ;; "));
        }
    }
}

#[tokio::test]
async fn one_ticket_costs_at_most_fifteen_sqlite_commits_of_its_own_from_creation_to_awaiting_approval(
) {
    let (commits, _) = commits_of_tickets(1).await;
    println!("{}", table(&commits, 1));
    show_sql(&commits);
    let own = commits.iter().filter(|c| !periodic(&writes_of(c))).count();
    assert!(
        own <= 15,
        "{own} commits of its own for one ticket (at most 15):\n{}",
        table(&commits, 1)
    );
    // Each of the investigation loop's steps (a run's update and its events, nothing
    // else) went to SQLite's connection thread as one text (`runs::one_trip`).
    let steps: Vec<&Vec<String>> = commits
        .iter()
        .filter(|c| {
            let writes = writes_of(c);
            writes.starts_with("UPDATE runs + INSERT run_events")
                && writes
                    .split(" + ")
                    .all(|w| w == "UPDATE runs" || w == "INSERT run_events")
        })
        .collect();
    assert!(!steps.is_empty(), "{}", table(&commits, 1));
    for step in steps {
        assert!(
            step.first()
                .is_some_and(|s| s.starts_with("BEGIN IMMEDIATE")),
            "a loop step committed statement by statement: {step:?}"
        );
    }
}

#[tokio::test]
async fn sixteen_tickets_investigated_together_cost_at_most_fifteen_sqlite_commits_each() {
    let n = 16;
    let (commits, _) = commits_of_tickets(n).await;
    println!("{}", table(&commits, n));
    show_sql(&commits);
    assert!(
        commits.len() <= 15 * n,
        "{} commits for {n} tickets (at most 15 each, periodic jobs included):\n{}",
        commits.len(),
        table(&commits, n)
    );
}

/// One investigation pass reads its run's events once (the log starts from what the
/// pass read to see whether the run was decided) and the customer's charge links
/// twice: once for every tool's charge listing (`TicketBilling`), once for the facts
/// the decision gathers afresh.
#[tokio::test]
async fn one_ticket_reads_its_run_events_once_and_its_charge_links_twice() {
    let (_, traced) = commits_of_tickets(1).await;
    let count = |needle: &str| traced.iter().filter(|s| s.contains(needle)).count();
    let events = "SELECT seq, kind, call_id, payload, created_at FROM run_events WHERE";
    assert_eq!(count(events), 1, "run events read per pass");
    assert_eq!(
        count("FROM charge_links l JOIN orders o"),
        2,
        "charge links read"
    );
}
