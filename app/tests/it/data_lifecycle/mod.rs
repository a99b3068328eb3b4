//! A customer's data over its life (docs/spec/data.md): every table classified,
//! erasure that leaves no trace in the database file, its write-ahead log or a
//! PostgreSQL dump while the money records still add up, export as one JSON document,
//! backups restored without sending a refund twice, retention, and logs without
//! personal data. Each test runs on SQLite, or on PostgreSQL under `TEST_DATABASE_URL`.
//!
//! Long because export, erasure, retention and restore are checked against each other on one
//! customer's world (what export lists, erasure must clear).

use std::path::Path;

use axum::http::StatusCode;
use customer_data::classify;
use desk::auth::StaffRole;
use serde_json::json;
use sqlx::Row;

use crate::support::{spawn_app, TestApp};

mod after_restore;
mod erase_places;
mod erased_reconcile;

const SECRET_PHRASE: &str = "Marmaduke the ginger cat watched me pay";

#[tokio::test]
async fn every_table_and_text_column_of_the_schema_is_classified() {
    let app = spawn_app().await;
    let schema = customer_data::schema_text_columns(&app.state.db)
        .await
        .unwrap();
    assert!(
        schema
            .iter()
            .any(|(t, cols)| t == "messages" && cols.contains(&"body".to_string())),
        "the schema listing sees the messages' text: {schema:?}"
    );
    let missing = classify::unclassified(&schema);
    assert!(
        missing.is_empty(),
        "classify these in customer_data::classify::TABLES: {missing:?}"
    );
}

/// Refund totals per currency over the intents the provider finished.
async fn refund_totals(app: &TestApp) -> Vec<(String, i64)> {
    let rows = sqlx::query(
        "SELECT currency, CAST(SUM(amount_minor) AS BIGINT) AS total FROM refund_intents
          WHERE status = 'succeeded' GROUP BY currency ORDER BY currency",
    )
    .fetch_all(app.state.db.pool())
    .await
    .unwrap();
    rows.iter()
        .map(|r| (r.get("currency"), r.get("total")))
        .collect()
}

/// A refunded case for C-100 whose message says something only they said, a staff note
/// quoting it, and a second customer's ticket that must survive untouched.
async fn refunded_customer_with_history(app: &TestApp) -> String {
    let message = format!("I was charged twice for my annual plan. {SECRET_PHRASE}.");
    let (_, case) = app.open_ticket("C-100", &message).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let case_id = case["id"].as_str().unwrap().to_string();
    app.staff_message(&case_id, &format!("customer said: {SECRET_PHRASE}"), true)
        .await;
    let fingerprint = app.case(&case_id).await["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = app
        .approve(&app.supervisor_token, &case_id, &fingerprint)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.drain().await;
    assert_eq!(app.case(&case_id).await["status"], "refund_succeeded");
    app.open_ticket("C-600", "I was charged twice for my annual plan")
        .await;
    case_id
}

/// Every file under `dir` holding any of `needles` (as UTF-8 bytes or JSON-escaped),
/// the payments mock's own files (`payments/`: the provider's copy, not ours) aside.
fn files_holding(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.ends_with("payments") {
            continue;
        }
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        for needle in needles {
            let escaped = serde_json::to_string(needle).unwrap();
            let escaped = escaped.trim_matches('"');
            for form in [needle.as_bytes(), escaped.as_bytes()] {
                if contains(&bytes, form) {
                    found.push(format!("{} holds {needle:?}", path.display()));
                }
            }
        }
    }
    found
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// A plain-SQL dump of the PostgreSQL database (`pg_dump`), as text.
fn pg_dump(url: &str) -> String {
    let out = std::process::Command::new("pg_dump")
        .arg("--no-owner")
        .arg(url)
        .output()
        .expect("pg_dump runs (PostgreSQL client installed by scripts/postgres-up)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn erasing_a_customer_leaves_none_of_their_words_in_the_store_and_keeps_the_money() {
    let (logs, _capturing) = crate::support::logs::capture();
    let app = spawn_app().await;
    let case_id = refunded_customer_with_history(&app).await;
    let totals = refund_totals(&app).await;
    assert!(!totals.is_empty());
    let needles = ["Li Wei", "li.wei@example.cn", SECRET_PHRASE, "Marmaduke"];
    let is_sqlite = app.database_url.starts_with("sqlite");
    if is_sqlite {
        let before = files_holding(app.dir.path(), &needles);
        assert!(!before.is_empty(), "the search finds the customer before");
    }
    let admin = app.staff_token(StaffRole::Admin).await;
    let (status, erased) = app
        .request("POST", "/api/v1/customers/C-100/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{erased}");
    assert_eq!(erased["again"], false);
    let pseudonym = erased["pseudonym"].as_str().unwrap().to_string();

    // The data directory (the database file and its log on SQLite, the policy index
    // on both) and everything logged.
    let left = files_holding(app.dir.path(), &needles);
    assert!(left.is_empty(), "after erasure: {left:?}");
    let captured = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(captured.contains("customer erased"));
    for needle in needles {
        assert!(!captured.contains(needle), "{needle:?} in the logs");
    }
    if !is_sqlite {
        let dump = pg_dump(&app.database_url);
        for needle in needles {
            assert!(!dump.contains(needle), "the dump still holds {needle:?}");
        }
        assert!(
            dump.contains("Olivia Brown"),
            "the dump holds other customers"
        );
    }
    assert_eq!(
        refund_totals(&app).await,
        totals,
        "refund totals per currency"
    );
    let report = desk::reconcile::run(app.state.reconciler()).await.unwrap();
    assert!(report.is_clean(), "{}", report.summary());
    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "refund_succeeded");
    assert_eq!(case["refunds"].as_array().unwrap().len(), 1, "{case:#}");

    // Twice: harmless, same pseudonym, still nothing to find.
    let (status, again) = app
        .request("POST", "/api/v1/customers/C-100/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["again"], true);
    assert_eq!(again["pseudonym"], pseudonym.as_str());
    let audit = sqlx::query("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'customer_erased' AND subject = 'C-100'")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(audit.get::<i64, _>("n"), 2, "each erasure is audited");
    // The other customer keeps their words.
    let others = sqlx::query(
        "SELECT COUNT(*) AS n FROM messages m JOIN tickets t ON t.id = m.ticket_id
                              WHERE t.customer_id = 'C-600' AND m.body LIKE '%charged twice%'",
    )
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(others.get::<i64, _>("n"), 1);
}

#[tokio::test]
async fn a_customer_token_stops_working_when_the_customer_is_erased() {
    let app = spawn_app().await;
    let token = app.customer_token("C-200").await;
    let (status, _) = app
        .request("GET", "/api/v1/tickets", Some(&token), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    customer_data::erase::erase(&app.state.db, "cli", "C-200", 1)
        .await
        .unwrap();
    let (status, _) = app
        .request("GET", "/api/v1/tickets", Some(&token), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn erasure_waits_for_a_refund_being_executed_and_changes_nothing_meanwhile() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket(
            "C-100",
            &format!("I was charged twice for my annual plan. {SECRET_PHRASE}"),
        )
        .await;
    let case_id = case["id"].as_str().unwrap();
    let fingerprint = case["fingerprint"].as_str().unwrap();
    let (status, _) = app
        .approve(&app.supervisor_token, case_id, fingerprint)
        .await;
    assert_eq!(status, StatusCode::OK);
    // Approved, not yet executed: money is about to move.
    let admin = app.staff_token(StaffRole::Admin).await;
    let (status, body) = app
        .request("POST", "/api/v1/customers/C-100/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "refund_in_flight");
    let held = sqlx::query("SELECT COUNT(*) AS n FROM messages WHERE body LIKE '%Marmaduke%'")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(
        held.get::<i64, _>("n"),
        1,
        "a refused erasure changes nothing"
    );
    app.drain().await;
    let (status, body) = app
        .request("POST", "/api/v1/customers/C-100/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = app
        .request("POST", "/api/v1/customers/C-999/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A sink that keeps what it is given and the largest single write.
#[derive(Default)]
struct Sink {
    bytes: Vec<u8>,
    largest_write: usize,
}

impl tokio::io::AsyncWrite for Sink {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.largest_write = self.largest_write.max(buf.len());
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// `count` tickets of `customer_id`, each with one message of about a kilobyte, written
/// straight into the store (the API's hourly ticket limit would take days of clock).
async fn many_stored_tickets(app: &TestApp, customer_id: &str, count: usize) {
    let mut tx = app.state.db.begin().await.unwrap();
    for n in 0..count {
        let id = format!("T-bulk-{n:05}");
        sqlx::query("INSERT INTO tickets (id, customer_id, order_id, language, created_at) VALUES ($1, $2, NULL, 'en', $3)")
            .bind(&id)
            .bind(customer_id)
            .bind(n as i64)
            .execute(&mut *tx)
            .await
            .unwrap();
        let body = format!(
            "ticket {n}: {}",
            "my card statement says something else. ".repeat(25)
        );
        sqlx::query("INSERT INTO messages (ticket_id, seq, author, body, created_at) VALUES ($1, 1, 'customer', $2, $3)")
            .bind(&id)
            .bind(body)
            .bind(n as i64)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn a_customer_with_a_thousand_tickets_is_exported_row_by_row_as_one_json_document() {
    let app = spawn_app().await;
    app.open_ticket("C-300", "I was charged twice for my annual plan")
        .await;
    many_stored_tickets(&app, "C-300", 1000).await;
    let mut sink = Sink::default();
    let done = customer_data::export::export(&app.state.db, "C-300", 7, &mut sink)
        .await
        .unwrap();
    let total = sink.bytes.len();
    assert_eq!(done.bytes as usize, total);
    assert!(total > 1_000_000, "about a kilobyte per ticket: {total}");
    // Streamed: no write holds more than one row (a message of ~1 KB, a run event).
    assert!(
        sink.largest_write < 16 * 1024,
        "largest write {} of {total} bytes",
        sink.largest_write
    );
    let doc: serde_json::Value = serde_json::from_slice(&sink.bytes).expect("one JSON document");
    let tables = &doc["tables"];
    assert_eq!(doc["customer_id"], "C-300");
    assert_eq!(tables["customers"][0]["name"], "Lukas Müller");
    assert_eq!(tables["tickets"].as_array().unwrap().len(), 1001);
    assert!(tables["messages"].as_array().unwrap().len() >= 1001);
    assert_eq!(tables["cases"].as_array().unwrap().len(), 1);
    assert!(
        tables["cases"][0]["decision"].is_object(),
        "JSON kept as JSON"
    );
    assert!(!tables["run_events"].as_array().unwrap().is_empty());
    assert!(!tables["audit_log"].as_array().unwrap().is_empty());
    assert!(
        tables.get("auth_tokens").is_none(),
        "credentials are not exported"
    );
    let text = String::from_utf8_lossy(&sink.bytes);
    assert!(
        !text.contains("Olivia Brown") && !text.contains("C-600"),
        "nobody else"
    );

    // The admin's console export is the same document, streamed over HTTP.
    let admin = app.staff_token(StaffRole::Admin).await;
    let (status, body) = app
        .raw(get_with_token("/api/v1/customers/C-300/export", &admin))
        .await;
    assert_eq!(status, StatusCode::OK);
    let over_http: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        over_http["tables"]["tickets"].as_array().unwrap().len(),
        1001
    );
    let (status, _) = app
        .raw(get_with_token("/api/v1/customers/C-nobody/export", &admin))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

fn get_with_token(path: &str, token: &str) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::get(path)
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap()
}

/// `count` more customers (`C-R00`…), each with an order of `order` USD paid by charges
/// of `charged` USD (`twice`: two of them, a duplicate charge), in the provider and the app.
async fn add_customers(app: &TestApp, count: usize, order: &str, charged: &str, twice: bool) {
    let mut customers = Vec::new();
    let mut orders = Vec::new();
    let mut charges = Vec::new();
    for n in 0..count {
        let id = format!("C-R{n:02}");
        let order_id = format!("O-R{n:02}");
        customers.push(json!({"id": id, "name": format!("Restored Person {n}"),
            "email": format!("restored{n}@example.com"), "region": "US"}));
        orders.push(
            json!({"id": order_id, "customer_id": id, "product": "annual_plan",
            "amount": order, "currency": "USD", "created_at": "2026-11-20T09:00:00Z"}),
        );
        let copies: &[&str] = if twice { &["a", "b"] } else { &["a"] };
        for (i, copy) in copies.iter().enumerate() {
            charges.push(
                json!({"id": format!("ch_r{n:02}{copy}"), "order_id": order_id,
                "customer_id": id, "amount": charged, "currency": "USD", "captured": true,
                "status": "succeeded", "disputed": false,
                "created_at": format!("2026-11-20T09:0{i}:00Z"),
                "payment_method": "pm_card_visa", "amount_refunded": "0.00"}),
            );
        }
    }
    let world =
        json!({"customers": customers, "orders": orders, "charges": charges, "refunds": []})
            .to_string();
    desk::world::load_into_provider(&app.mock.base_url(), &world)
        .await
        .unwrap();
    desk::world::World::parse(&world)
        .unwrap()
        .load_into(&app.state.db)
        .await
        .unwrap();
}

/// Opens one ticket per new customer, lets the agent propose, and approves each case.
async fn approved_cases(app: &TestApp, count: usize, message: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..count {
        let ticket = app.post_ticket(&format!("C-R{n:02}"), message).await;
        ids.push(ticket["case"]["id"].as_str().unwrap().to_string());
    }
    app.drain().await;
    for id in &ids {
        let case = app.case(id).await;
        assert_eq!(case["status"], "awaiting_approval", "{case:#}");
        let fingerprint = case["fingerprint"].as_str().unwrap();
        let (status, body) = app.approve(&app.supervisor_token, id, fingerprint).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    ids
}

/// Refunds the provider holds on the added customers' charges (they had none before).
async fn provider_refunds_made(app: &TestApp, customers: usize) -> usize {
    let mut made = 0;
    for n in 0..customers {
        for copy in ["a", "b"] {
            made += app
                .provider_refunds(&format!("ch_r{n:02}{copy}"))
                .await
                .len();
        }
    }
    made
}

/// Where a backup of this app's database goes, and an empty database to restore into.
async fn backup_target(app: &TestApp) -> (std::path::PathBuf, tempfile::TempDir, String) {
    let file = app.dir.path().join("backup.bin");
    let dir = tempfile::tempdir().unwrap();
    let url = match crate::support::fresh_postgres_url("rd_restore").await {
        Some(url) => url,
        None => store::Db::sqlite_url(dir.path()),
    };
    (file, dir, url)
}

/// The desk started again on the restored database, with the same provider.
async fn restarted_on(app: TestApp, dir: tempfile::TempDir, url: String) -> TestApp {
    let TestApp { state, mock, .. } = app;
    state.db.close().await;
    crate::support::app_on(
        dir,
        mock,
        url,
        std::sync::Arc::new(desk::agent::investigator::Investigator),
        |_| {},
    )
    .await
}

async fn statuses(app: &TestApp, cases: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in cases {
        out.push(app.case(id).await["status"].as_str().unwrap().to_string());
    }
    out
}

#[tokio::test]
async fn a_backup_taken_before_ten_refunds_restores_without_sending_any_again() {
    let app = spawn_app().await;
    add_customers(&app, 10, "49.00", "49.00", true).await;
    let cases = approved_cases(&app, 10, "I was charged twice for my annual plan").await;
    let (file, dir, url) = backup_target(&app).await;
    customer_data::restore::backup(&app.database_url, &file)
        .await
        .unwrap();
    app.drain().await;
    assert_eq!(provider_refunds_made(&app, 10).await, 10);
    assert!(statuses(&app, &cases)
        .await
        .iter()
        .all(|s| s == "refund_succeeded"));
    // The provider forgets the keys (a day later), so a resend would be a new refund.
    reqwest::Client::new()
        .post(format!("{}/__mock/clock", app.mock.base_url()))
        .json(&json!({"advance_seconds": 25 * 3600}))
        .send()
        .await
        .unwrap();

    let waiting = customer_data::restore::restore(&url, &file, 1)
        .await
        .unwrap();
    assert_eq!(
        waiting, 10,
        "every intent the backup held unsent waits for a check"
    );
    let restored = restarted_on(app, dir, url).await;
    assert!(desk::refunds::restore_gate_closed(&restored.state.db)
        .await
        .unwrap());
    assert_eq!(
        statuses(&restored, &cases).await,
        vec!["approved"; 10],
        "every case the backup held is there, as it was"
    );
    restored.drain().await;
    assert_eq!(provider_refunds_made(&restored, 10).await, 10, "0 repeated");
    assert_eq!(
        statuses(&restored, &cases).await,
        vec!["refund_succeeded"; 10]
    );
    assert!(!desk::refunds::restore_gate_closed(&restored.state.db)
        .await
        .unwrap());
    let report = desk::reconcile::run(restored.state.reconciler())
        .await
        .unwrap();
    assert!(report.is_clean(), "{}", report.summary());
}

#[tokio::test]
async fn a_refund_caught_mid_send_in_the_backup_is_adopted_not_sent_again_after_its_key_expired() {
    let app = spawn_app().await;
    // Overcharged: 25.00 for a 20.00 order, so the refund is partial and a second one
    // would still fit on the charge.
    add_customers(&app, 1, "20.00", "25.00", false).await;
    let cases = approved_cases(&app, 1, "I was overcharged for my annual plan").await;
    let http = reqwest::Client::new();
    http.post(format!("{}/__mock/faults", app.mock.base_url()))
        .json(&json!({"mode": "rate_limit", "method": "POST", "path": "/v1/refunds"}))
        .send()
        .await
        .unwrap();
    desk::worker::run_once(&app.state).await.unwrap();
    assert_eq!(app.case(&cases[0]).await["status"], "executing");
    let (file, dir, url) = backup_target(&app).await;
    customer_data::restore::backup(&app.database_url, &file)
        .await
        .unwrap();
    http.delete(format!("{}/__mock/faults", app.mock.base_url()))
        .send()
        .await
        .unwrap();
    app.drain().await;
    assert_eq!(provider_refunds_made(&app, 1).await, 1);
    http.post(format!("{}/__mock/clock", app.mock.base_url()))
        .json(&json!({"advance_seconds": 25 * 3600}))
        .send()
        .await
        .unwrap();

    customer_data::restore::restore(&url, &file, 1)
        .await
        .unwrap();
    let restored = restarted_on(app, dir, url).await;
    restored.drain().await;
    assert_eq!(
        provider_refunds_made(&restored, 1).await,
        1,
        "not sent again"
    );
    assert_eq!(restored.case(&cases[0]).await["status"], "refund_succeeded");
}

#[tokio::test]
async fn the_worker_redacts_text_past_its_retention_window_and_keeps_the_money() {
    let app = spawn_app().await;
    let case_id = refunded_customer_with_history(&app).await;
    let totals = refund_totals(&app).await;
    let windows = app.state.retention;
    assert_eq!(
        (
            windows.message_days,
            windows.run_event_days,
            windows.audit_days
        ),
        (730, 180, 3650),
        "the defaults"
    );
    let count = |sql: &'static str| {
        let db = app.state.db.clone();
        async move {
            sqlx::query(sql)
                .fetch_one(db.pool())
                .await
                .unwrap()
                .get::<i64, _>("n")
        }
    };
    const SECRET_MESSAGES: &str =
        "SELECT COUNT(*) AS n FROM messages WHERE body LIKE '%Marmaduke%'";
    const LIVE_EVENTS: &str =
        "SELECT COUNT(*) AS n FROM run_events WHERE payload <> '{\"erased\":true}'";
    const DETAILED_AUDIT: &str =
        "SELECT COUNT(*) AS n FROM audit_log WHERE detail <> '[erased]' AND detail <> ''";
    // A translation quotes its message: it goes with the message's text.
    const TRANSLATIONS: &str = "SELECT COUNT(*) AS n FROM message_translations";
    sqlx::query(
        "INSERT INTO message_translations (ticket_id, seq, language, text, model, created_at)
         SELECT ticket_id, seq, 'en', 'Marmaduke, translated', 'tiny', 1 FROM messages
         WHERE body LIKE '%Marmaduke%'",
    )
    .execute(app.state.db.pool())
    .await
    .unwrap();
    let events_before = count(LIVE_EVENTS).await;
    assert!(events_before > 0);
    let audit_before = count(DETAILED_AUDIT).await;

    // Within every window: nothing changes.
    app.clock.advance(time::Duration::days(179));
    desk::worker::run_once(&app.state).await.unwrap();
    assert_eq!(count(SECRET_MESSAGES).await, 1);
    assert_eq!(count(LIVE_EVENTS).await, events_before);

    // Past the run-event window: the finished runs' payloads go.
    app.clock.advance(time::Duration::days(2));
    desk::worker::run_once(&app.state).await.unwrap();
    let live = count(LIVE_EVENTS).await;
    assert!(live < events_before, "{live} of {events_before}");
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM messages WHERE body LIKE '%Marmaduke%'").await,
        1
    );
    assert_eq!(
        count(SECRET_MESSAGES).await,
        1,
        "messages have a longer window"
    );
    assert_eq!(count(TRANSLATIONS).await, 1);

    // Past the message window, then the audit window (each once per period).
    app.clock.advance(time::Duration::days(731 - 181));
    desk::worker::run_once(&app.state).await.unwrap();
    assert_eq!(count(SECRET_MESSAGES).await, 0);
    assert_eq!(count(TRANSLATIONS).await, 0);
    assert_eq!(
        count(DETAILED_AUDIT).await,
        audit_before,
        "audit kept longer"
    );
    app.clock.advance(time::Duration::days(3651 - 731));
    desk::worker::run_once(&app.state).await.unwrap();
    assert!(count(DETAILED_AUDIT).await < audit_before);

    assert_eq!(refund_totals(&app).await, totals);
    let status = sqlx::query("SELECT status FROM cases WHERE id = $1")
        .bind(&case_id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(status.get::<String, _>("status"), "refund_succeeded");
}

fn with_cookie(
    method: &str,
    path: &str,
    cookie: &str,
    form: Option<String>,
) -> axum::http::Request<axum::body::Body> {
    let builder = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("cookie", cookie);
    match form {
        Some(body) => builder
            .header("content-type", "application/x-www-form-urlencoded")
            .body(axum::body::Body::from(body))
            .unwrap(),
        None => builder.body(axum::body::Body::empty()).unwrap(),
    }
}

#[tokio::test]
async fn the_admin_console_shows_the_windows_exports_and_erases_a_customer() {
    let app = spawn_app().await;
    app.open_ticket("C-200", &format!("Charged twice? {SECRET_PHRASE}"))
        .await;
    app.staff_token(StaffRole::Admin).await;
    let (cookie, csrf) = app.staff_session("admin@test.example").await;
    let (status, page) = app
        .raw(with_cookie("GET", "/console/data", &cookie, None))
        .await;
    assert_eq!(status, StatusCode::OK);
    for shown in [
        "730 days",
        "180 days",
        "3650 days",
        "MESSAGE_RETENTION_DAYS",
    ] {
        assert!(page.contains(shown), "{shown} on the page");
    }
    let (status, doc) = app
        .raw(with_cookie(
            "GET",
            "/console/data/export?customer=C-200",
            &cookie,
            None,
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc.contains("Emma Johnson") && doc.contains("Marmaduke"));

    // The id typed differently: refused, nothing erased.
    let form = format!("csrf={csrf}&customer=C-200&confirm=C-20");
    let (status, _) = app
        .raw(with_cookie(
            "POST",
            "/console/data/erase",
            &cookie,
            Some(form),
        ))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Without the form's token: refused.
    let form = "csrf=forged&customer=C-200&confirm=C-200".to_string();
    let (status, _) = app
        .raw(with_cookie(
            "POST",
            "/console/data/erase",
            &cookie,
            Some(form),
        ))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let form = format!("csrf={csrf}&customer=C-200&confirm=C-200");
    let response = app
        .response(with_cookie(
            "POST",
            "/console/data/erase",
            &cookie,
            Some(form),
        ))
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let (_, doc) = app
        .raw(with_cookie(
            "GET",
            "/console/data/export?customer=C-200",
            &cookie,
            None,
        ))
        .await;
    assert!(
        !doc.contains("Emma Johnson") && !doc.contains("Marmaduke"),
        "{doc}"
    );
}

/// Runs of 13 to 19 digits, spaces or dashes between them allowed: what a card number
/// looks like in text.
fn card_like_numbers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // Ids (uuids, `ch_…`, `req_…`) hold digit runs too: a number stands alone.
        let joined = |c: &char| c.is_ascii_alphanumeric() || *c == '_' || *c == '-';
        if !chars[i].is_ascii_digit() || (i > 0 && joined(&chars[i - 1])) {
            i += 1;
            continue;
        }
        let (mut j, mut digits) = (i, 0);
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || ((chars[j] == ' ' || chars[j] == '-')
                    && chars.get(j + 1).is_some_and(|c| c.is_ascii_digit())))
        {
            digits += usize::from(chars[j].is_ascii_digit());
            j += 1;
        }
        if (13..=19).contains(&digits) && !chars.get(j).is_some_and(joined) {
            found.push(chars[i..j].iter().collect());
        }
        i = j.max(i + 1);
    }
    found
}

#[test]
fn card_like_numbers_are_found_with_or_without_separators_and_ids_are_not() {
    assert_eq!(
        card_like_numbers("card 4242 4242 4242 4242, or 5555-5555-5555-4444."),
        vec!["4242 4242 4242 4242", "5555-5555-5555-4444"]
    );
    assert!(card_like_numbers("order O-1001, charge ch_1001a, 2026-11-29 10:00").is_empty());
    assert!(card_like_numbers("req 9d1c3f0e-4240-8524-677314ab9f01 run_90603059039544").is_empty());
}

#[tokio::test]
async fn a_day_of_traffic_logs_no_customer_name_email_message_or_card_number_at_info() {
    let (logs, _capturing) = crate::support::logs::capture();

    let app = spawn_app().await;
    add_customers(&app, 10, "49.00", "49.00", true).await;
    let mut people: Vec<(String, String, String)> = Vec::new();
    for row in sqlx::query("SELECT id, name, email FROM customers ORDER BY id")
        .fetch_all(app.state.db.pool())
        .await
        .unwrap()
    {
        people.push((row.get("id"), row.get("name"), row.get("email")));
    }
    assert_eq!(people.len(), 19);
    // A day: every customer writes every two hours, with their name, email and card in
    // the text; staff approve what waits; the worker runs between.
    for hour in 0..12 {
        for (id, name, email) in &people {
            let text = format!(
                "I was charged twice for my annual plan. I am {name}, write to {email}; card 4000 0566 5566 5556 (hour {hour})"
            );
            let token = app.customer_token(id).await;
            let (status, _) = app
                .request(
                    "POST",
                    "/api/v1/tickets",
                    Some(&token),
                    Some(json!({"message": text})),
                )
                .await;
            assert!(
                status == StatusCode::CREATED || status == StatusCode::CONFLICT,
                "{status}"
            );
        }
        app.drain().await;
        let (_, queue) = app
            .request(
                "GET",
                "/api/v1/cases?status=awaiting_approval",
                Some(&app.supervisor_token),
                None,
            )
            .await;
        for case in queue.as_array().cloned().unwrap_or_default() {
            let id = case["id"].as_str().unwrap();
            let full = app.case(id).await;
            if let Some(fp) = full["fingerprint"].as_str() {
                app.approve(&app.supervisor_token, id, fp).await;
            }
        }
        app.drain().await;
        app.clock.advance(time::Duration::hours(2));
    }
    let refunds = refund_totals(&app).await;
    assert!(!refunds.is_empty(), "money moved during the day");

    let captured = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let lines = captured.lines().count();
    assert!(lines > 500, "a day of traffic was logged ({lines} lines)");
    // The capture sees the app's own lines (a search of nothing would pass).
    assert!(
        captured.contains("case transition"),
        "no case transition captured"
    );
    assert!(
        captured.contains("provider accepted refund"),
        "no refund captured"
    );
    let tickets = sqlx::query("SELECT COUNT(*) AS n FROM tickets")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
        .get::<i64, _>("n");
    eprintln!(
        "a day of traffic: {tickets} tickets, {lines} log lines searched, refunds {refunds:?}"
    );
    for (_, name, email) in &people {
        assert!(!captured.contains(name.as_str()), "{name} in the logs");
        assert!(!captured.contains(email.as_str()), "{email} in the logs");
    }
    assert!(
        !captured.contains("charged twice"),
        "message text in the logs"
    );
    let cards: Vec<String> = captured
        .lines()
        .flat_map(|line| card_like_numbers(&strip_times(line)))
        .collect();
    assert!(cards.is_empty(), "card-like numbers in the logs: {cards:?}");
}

/// A log line without its timestamp fields (milliseconds look like 13 digits).
fn strip_times(line: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_string();
    };
    if let Some(object) = value.as_object_mut() {
        object.remove("timestamp");
    }
    value.to_string()
}

/// `refund-agent` on `data`, against the mock at `payments`, with only these settings.
fn refund_agent(data: &Path, payments: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_refund-agent"));
    cmd.arg("--data-dir")
        .arg(data)
        .env("PAYMENTS_URL", payments)
        .env("PAYMENTS_API_KEY", desk::config::DEFAULT_PAYMENTS_KEY)
        .env(
            "PAYMENTS_WEBHOOK_SECRET",
            desk::config::DEFAULT_WEBHOOK_SECRET,
        )
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .env_remove("DATABASE_URL")
        .env_remove("LLM_BASE_URL")
        .env("RUST_LOG", "warn");
    cmd
}

/// `refund-agent` with `payments` as the provider, run to its end within a minute,
/// without blocking the test's runtime (the payments mock answers on it meanwhile).
async fn run_for_a_minute(data: &Path, payments: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = tokio::process::Command::from(refund_agent(data, payments));
    cmd.args(args).kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("refund-agent {args:?} still ran after a minute"))
        .unwrap()
}

fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Cases (id, status) and refund intents (id, status, amount) of a database.
type Holdings = (Vec<(String, String)>, Vec<(String, String, i64)>);

/// Cases and refund intents with their statuses, from a database.
async fn holdings(url: &str) -> Holdings {
    let db = store::Db::connect(url).await.unwrap();
    let cases = sqlx::query("SELECT id, status FROM cases ORDER BY id")
        .fetch_all(db.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get("id"), r.get("status")))
        .collect();
    let intents = sqlx::query("SELECT id, status, amount_minor FROM refund_intents ORDER BY id")
        .fetch_all(db.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get("id"), r.get("status"), r.get("amount_minor")))
        .collect();
    db.close().await;
    (cases, intents)
}

/// Every case and refund intent the backup held is restored; what differs is what the
/// provider did since, adopted by `restore` (docs/spec/data.md, "Backups"): a case moved
/// into its refund states, an intent to the provider's status, an intent for a refund
/// made after the backup.
fn assert_restored_as_held_or_adopted(held: &Holdings, restored: &Holdings) {
    let cases: std::collections::BTreeMap<_, _> = restored.0.iter().cloned().collect();
    assert_eq!(cases.len(), held.0.len(), "every case, no other");
    for (id, was) in &held.0 {
        let now = &cases[id];
        assert!(
            now == was || now.starts_with("refund_") || now == "pending_verification",
            "{id}: {was} restored as {now}"
        );
    }
    let intents: std::collections::BTreeMap<_, _> = restored
        .1
        .iter()
        .map(|(id, status, amount)| (id.clone(), (status.clone(), *amount)))
        .collect();
    for (id, _, amount) in &held.1 {
        assert_eq!(intents[id].1, *amount, "intent {id} keeps its amount");
    }
    eprintln!(
        "restore adopted {} cases' refunds and {} refund intents made after the backup",
        held.0.iter().filter(|(id, was)| &cases[id] != was).count(),
        restored.1.len() - held.1.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serve_works_restores_every_case_and_refund_it_held() {
    let dir = tempfile::tempdir().unwrap();
    let mock = crate::support::start_mock(dir.path()).await;
    let data = dir.path().join("app");
    let (agent, _) = crate::support::serve::seed(&mut refund_agent(&data, &mock.base_url()));
    let mut customers = Vec::new();
    for id in ["C-100", "C-200", "C-400", "C-600", "C-700", "C-800"] {
        let token = run_ok(refund_agent(&data, &mock.base_url()).args(["customer", "token", id]));
        customers.push(token.trim().to_string());
    }
    let mut serve = crate::support::serve::start(&mut refund_agent(&data, &mock.base_url())).await;
    // Load: tickets opened and approvals given while the backup is taken.
    let base = serve.base.clone();
    let load = tokio::spawn(async move {
        let http = reqwest::Client::new();
        for round in 0..3 {
            for token in &customers {
                let _ = http
                    .post(format!("{base}/api/v1/tickets"))
                    .bearer_auth(token)
                    .json(&json!({"message": format!("I was charged twice for my annual plan ({round})")}))
                    .send()
                    .await;
            }
            let waiting: serde_json::Value = http
                .get(format!("{base}/api/v1/cases?status=awaiting_approval"))
                .bearer_auth(&agent)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for case in waiting.as_array().cloned().unwrap_or_default() {
                let _ = http
                    .post(format!(
                        "{base}/api/v1/cases/{}/approve",
                        case["id"].as_str().unwrap()
                    ))
                    .bearer_auth(&agent)
                    .json(&json!({"fingerprint": case["fingerprint"]}))
                    .send()
                    .await;
            }
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let file = dir.path().join("during-load.db");
    let data_for_backup = data.clone();
    let (payments, file_arg) = (mock.base_url(), file.clone());
    tokio::task::spawn_blocking(move || {
        run_ok(
            refund_agent(&data_for_backup, &payments)
                .arg("backup")
                .arg(&file_arg),
        )
    })
    .await
    .unwrap();
    load.await.unwrap();
    crate::support::serve::sigkill(&mut serve);

    // What the backup held (read from a copy: opening runs the migrations).
    let copy = dir.path().join("copy.db");
    std::fs::copy(&file, &copy).unwrap();
    let held = holdings(&format!("sqlite://{}?mode=rwc", copy.display())).await;
    assert!(!held.0.is_empty(), "the backup holds cases");
    eprintln!(
        "backup under load: {} cases, {} refund intents held",
        held.0.len(),
        held.1.len()
    );

    let fresh = dir.path().join("restored");
    let err = refund_agent(&fresh, &mock.base_url())
        .arg("restore")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        err.status.success(),
        "{}",
        String::from_utf8_lossy(&err.stderr)
    );
    let restored = holdings(&store::Db::sqlite_url(&fresh)).await;
    assert_restored_as_held_or_adopted(&held, &restored);
    // Restoring over it again is refused: only into an empty data directory.
    let again = refund_agent(&fresh, &mock.base_url())
        .arg("restore")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!again.status.success());

    // The restored desk exports and erases a customer from the command line.
    let doc = run_ok(refund_agent(&fresh, &mock.base_url()).args(["customer", "export", "C-100"]));
    let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(doc["tables"]["customers"][0]["email"], "li.wei@example.cn");
    // Which customers the backup caught with money moving or a run still working depends
    // on how far the load got: read it from the restored data, then each of them is refused
    // and every other one erased.
    let busy: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT c.customer_id FROM cases c WHERE c.customer_id <> 'C-300' AND (
           c.status IN ('approved', 'executing', 'refund_pending', 'pending_verification')
           OR EXISTS (SELECT 1 FROM refund_intents ri WHERE ri.case_id = c.id
                      AND ri.status IN ('created', 'submitting', 'pending', 'pending_verification'))
           OR EXISTS (SELECT 1 FROM runs r WHERE r.case_id = c.id
                      AND r.status NOT IN ('completed', 'failed', 'cancelled')))",
    )
    .fetch_all(
        &sqlx::SqlitePool::connect(&store::Db::sqlite_url(&fresh))
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    eprintln!("customers the backup caught mid-work: {busy:?}");
    for id in ["C-100", "C-200", "C-400", "C-600", "C-700", "C-800"] {
        let out = refund_agent(&fresh, &mock.base_url())
            .args(["customer", "erase", id])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        if busy.iter().any(|b| b == id) {
            assert!(!out.status.success(), "{id} was mid-work yet erased");
            assert!(said.contains("still") && said.contains("case_"), "{said}");
        } else {
            assert!(out.status.success(), "{id}: {said}");
        }
    }
    let erased =
        run_ok(refund_agent(&fresh, &mock.base_url()).args(["customer", "erase", "C-300"]));
    let erased: serde_json::Value = serde_json::from_str(&erased).unwrap();
    assert!(erased["pseudonym"].as_str().unwrap().starts_with("anon_"));
}

#[tokio::test]
async fn erasing_a_customer_who_wrote_by_mail_leaves_none_of_the_mail_in_the_store() {
    let app = crate::mail::mail_app().await;
    let body = format!(
        "I was charged twice for my annual plan. {SECRET_PHRASE}.\n\n\
         On Monday, Example Shop wrote:\n> Thank you for your order, Li Wei.\n"
    );
    let raw =
        crate::support::mail::build("Li Wei <li.wei@example.cn>", "Charged twice", &body, &[]);
    let (status, taken) = crate::mail::inbound(&app, &raw).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{taken}");
    let words = sqlx::query(
        "SELECT COUNT(*) AS n FROM messages WHERE body LIKE '%Marmaduke%' OR quoted LIKE '%Li Wei%'",
    )
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert!(
        words.get::<i64, _>("n") >= 1,
        "the mail's words are on the ticket"
    );
    let case_id = sqlx::query("SELECT id FROM cases WHERE customer_id = 'C-100'")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
        .get::<String, _>("id");
    app.close_case(&case_id).await;
    let needles = ["li.wei@example.cn", SECRET_PHRASE, "Marmaduke", "Li Wei"];
    if app.database_url.starts_with("sqlite") {
        assert!(!files_holding(app.dir.path(), &needles).is_empty());
    }

    let admin = app.staff_token(StaffRole::Admin).await;
    let (status, erased) = app
        .request("POST", "/api/v1/customers/C-100/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{erased}");
    for (table, column) in [
        ("mail_inbound", "raw"),
        ("mail_inbound", "sender"),
        ("mail_outbox", "body"),
        ("mail_outbox", "address"),
        ("messages", "quoted"),
        ("mail_addresses", "address"),
    ] {
        let sql = format!(
            "SELECT COUNT(*) AS n FROM {table} WHERE {column} LIKE '%Marmaduke%' \
             OR {column} LIKE '%li.wei@example.cn%' OR {column} LIKE '%Li Wei%'"
        );
        let left = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
        assert_eq!(
            left.get::<i64, _>("n"),
            0,
            "{table}.{column} still holds them"
        );
    }
    if app.database_url.starts_with("sqlite") {
        let left = files_holding(app.dir.path(), &needles);
        assert!(left.is_empty(), "after erasure: {left:?}");
    } else {
        let dump = pg_dump(&app.database_url);
        for needle in needles {
            assert!(!dump.contains(needle), "the dump still holds {needle:?}");
        }
    }
}
