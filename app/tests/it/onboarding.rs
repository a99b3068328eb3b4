//! A team's own data: customers and orders imported from the shop's files
//! with the real `refund-agent` binary into an empty data directory, against the
//! payments mock loaded with a Stripe-shaped account — customers `cus_…`, charges naming
//! their order under a non-default metadata key — then a ticket investigated, approved
//! and refunded end to end; bad files changing nothing; missing payment records going
//! to a person; unlinked charges listed and linked; `seed` and a real provider; charge,
//! dispute and refund webhooks keeping proposals current; reconciliation's drift.
//!
//! Long because import, linking and the shop's PUT API apply one set of rules
//! (docs/spec/history.md) to the same fixtures.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use axum::http::StatusCode;
use desk::agent::investigator::Investigator;
use serde_json::{json, Value};
use support::{app_on, start_mock, test_database_url, TestApp};

/// The metadata key this shop's charges name their order under.
const ORDER_KEY: &str = "shop_order";

/// A file of the walk-through docs/guides/connect.md runs on
/// (`fixtures/connect/`): `account.json` is the payments account — customers `cus_…`,
/// charges naming their order under `shop_order` only, one till charge naming none —
/// and the CSV files the shop's exports.
fn connect_fixture(name: &str) -> String {
    let path = desk::config::default_fixtures_dir()
        .join("connect")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `refund-agent` on `data_dir`, pointed at the mock as a deployer would point it at
/// their provider (`PAYMENTS_URL`, key, webhook secret, `PAYMENTS_ORDER_KEY`).
fn refund_agent(data_dir: &Path, database_url: &str, mock_url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refund-agent"));
    cmd.arg("--data-dir")
        .arg(data_dir)
        .env("DATABASE_URL", database_url)
        .env("PAYMENTS_URL", mock_url)
        .env("PAYMENTS_API_KEY", "sk_test_refund_desk")
        .env("PAYMENTS_WEBHOOK_SECRET", "whsec_test_refund_desk")
        .env("PAYMENTS_ORDER_KEY", ORDER_KEY)
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .env_remove("LLM_BASE_URL")
        .env("RUST_LOG", "warn");
    cmd
}

/// Runs the command to its end. The tests run on a multi-threaded runtime: the payments
/// mock it talks to is served by this process while this thread waits.
fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("refund-agent runs")
}

fn summary(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON summary on stdout")
}

/// A shop: the mock loaded with its account, its files written, an empty data dir.
struct Shop {
    dir: tempfile::TempDir,
    mock: payments_mock::RunningMock,
    database_url: String,
}

impl Shop {
    async fn new() -> Shop {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mock = start_mock(dir.path()).await;
        desk::world::load_into_provider(&mock.base_url(), &connect_fixture("account.json"))
            .await
            .expect("the account loads into the mock");
        for file in ["customers.csv", "orders.csv"] {
            std::fs::write(dir.path().join(file), connect_fixture(file)).expect("a file");
        }
        let database_url = test_database_url(&dir.path().join("data")).await;
        Shop {
            dir,
            mock,
            database_url,
        }
    }

    fn cli(&self) -> Command {
        refund_agent(
            &self.dir.path().join("data"),
            &self.database_url,
            &self.mock.base_url(),
        )
    }

    fn import(&self, what: &str, file: &str) -> Output {
        run(self
            .cli()
            .args(["import", what])
            .arg(self.dir.path().join(file)))
    }

    async fn app(self) -> TestApp {
        app_on(
            self.dir,
            self.mock,
            self.database_url,
            Arc::new(Investigator),
            |config| config.payments_order_key = ORDER_KEY.into(),
        )
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shop_imports_its_csv_files_and_a_charged_twice_ticket_is_refunded_end_to_end() {
    let shop = Shop::new().await;
    let customers = summary(&shop.import("customers", "customers.csv"));
    assert_eq!(customers["created"], 3, "{customers:#}");
    assert_eq!(customers["links"]["given"], 1, "{customers:#}");
    assert_eq!(customers["links"]["by_email"], 1, "{customers:#}");
    assert_eq!(customers["links"]["ambiguous"], 1, "{customers:#}");
    let orders = summary(&shop.import("orders", "orders.csv"));
    assert_eq!(
        (orders["rows"].clone(), orders["created"].clone()),
        (json!(3), json!(3))
    );

    let app = shop.app().await;
    let linked: String =
        sqlx::query_scalar("SELECT provider_customer_id FROM customers WHERE id = 'SHOP-2'")
            .fetch_one(app.state.db.pool())
            .await
            .expect("SHOP-2");
    assert_eq!(linked, "cus_Bo71kX", "linked by email through the provider");

    let (_, case) = app
        .open_ticket(
            "SHOP-1",
            "Hi, I was charged twice for order #5001, please fix",
        )
        .await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let refunds = case["decision"]["refunds"].as_array().expect("refunds");
    assert_eq!(refunds.len(), 1, "{case:#}");
    assert_eq!(refunds[0]["charge_id"], "ch_ann_2");
    let case_id = case["id"].as_str().expect("an id");
    let fingerprint = case["fingerprint"].as_str().expect("a fingerprint");
    let (status, body) = app
        .approve(&app.supervisor_token, case_id, fingerprint)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.drain().await;
    let case = app.case(case_id).await;
    assert_eq!(case["status"], "refund_succeeded", "{case:#}");
    let at_provider = app.provider_refunds("ch_ann_2").await;
    assert_eq!(at_provider.len(), 1, "{at_provider:?}");
    assert_eq!(at_provider[0]["amount"], 9900);
    assert!(app.provider_refunds("ch_ann_1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_order_whose_charge_names_no_order_goes_to_a_person_until_staff_link_it() {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    summary(&shop.import("orders", "orders.csv"));
    let unlinked = summary(&run(shop.cli().args(["charges", "unlinked", "--sync"])));
    let listed: Vec<&str> = unlinked
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|c| c["charge_id"].as_str())
        .collect();
    assert_eq!(listed, ["ch_bo_pos"], "{unlinked:#}");
    assert_eq!(unlinked[0]["customer_id"], "SHOP-2");
    let app = shop.app().await;

    let (_, case) = app
        .open_ticket(
            "SHOP-2",
            "My monthly plan order #6002 was charged twice, I want my money back",
        )
        .await;
    assert_eq!(case["status"], "escalated", "{case:#}");
    let reason = case["decision"]["escalation"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("payment records missing") && reason.contains("#6002"),
        "{case:#}"
    );

    // Staff link the till charge to the order: the next investigation sees it.
    let payments = app.state.payments.clone();
    desk::onboarding::charges::link_charge(
        &app.state.db,
        &payments,
        "ch_bo_pos",
        "#6002",
        "staff-test",
        0,
    )
    .await
    .expect("the charge is Bo's and so is the order");
    assert!(
        desk::onboarding::charges::list_unlinked(&app.state.db, None, 50)
            .await
            .expect("a list")
            .is_empty()
    );
    let refused = desk::onboarding::charges::link_charge(
        &app.state.db,
        &payments,
        "ch_ann_1",
        "#6002",
        "staff-test",
        0,
    )
    .await
    .expect_err("Ann's charge on Bo's order");
    assert_eq!(refused.code(), "charge_already_linked");
    let refused = desk::onboarding::charges::link_charge(
        &app.state.db,
        &payments,
        "ch_bo_pos",
        "#5001",
        "staff-test",
        0,
    )
    .await
    .expect_err("Bo's till charge on Ann's order");
    assert_eq!(refused.code(), "charge_owner_mismatch");
    app.close_case(case["id"].as_str().expect("an id")).await;
    app.clock.advance(time::Duration::minutes(61));
    let (_, case) = app
        .open_ticket(
            "SHOP-2",
            "Order #6002: I was charged twice for my monthly plan",
        )
        .await;
    assert_eq!(
        (
            case["status"].clone(),
            case["decision"]["reason_code"].clone()
        ),
        (json!("denied"), json!("not_duplicate")),
        "one charge on the order, now seen: nothing is duplicated; {case:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_any_bad_row_imports_nothing_and_names_every_bad_line() {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    let bad = "\
id,customer_id,product,amount,currency,created_at
#7001,SHOP-1,annual_plan,99.00,USD,2026-11-20T09:00:00Z
#7002,SHOP-1,annual_plan,99.00,XTS,2026-11-20T09:00:00Z
#7001,SHOP-1,addon,1.00,USD,2026-11-20T09:00:00Z
#7003,SHOP-404,addon,1.00,USD,2026-11-20T09:00:00Z
#7004,SHOP-1,addon,\"1.00
#7005,SHOP-1,addon,1.00,USD,yesterday
";
    std::fs::write(shop.dir.path().join("bad.csv"), bad).expect("a file");
    let output = shop.import("orders", "bad.csv");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "bad.csv:3: unknown currency 'XTS'",
        "bad.csv:4: [#7001] duplicate id #7001 (first on line 2)",
        "bad.csv:5: [#7003] customer SHOP-404 does not exist",
        "bad.csv:6: ",
        "nothing was imported",
    ] {
        assert!(stderr.contains(expected), "{expected:?} not in {stderr}");
    }
    let jsonl = "{\"id\":\"SHOP-9\",\"name\":\"Nine\",\"email\":\"nine@shop.example\",\"region\":\"JP\"}\n\
                 {\"id\":\"SHOP-10\",\"name\":\"Ten\",\"email\":\"ANN@shop.example\",\"region\":\"JP\"}\n\
                 not json\n";
    std::fs::write(shop.dir.path().join("more.jsonl"), jsonl).expect("a file");
    let output = shop.import("customers", "more.jsonl");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "more.jsonl:2: [SHOP-10] email ANN@shop.example is already customer SHOP-1's"
        ) && stderr.contains("more.jsonl:3: not a JSON object"),
        "{stderr}"
    );

    let app = shop.app().await;
    let count = |sql: &'static str| {
        let pool = app.state.db.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .expect("a count")
        }
    };
    assert_eq!(count("SELECT COUNT(*) FROM orders").await, 0);
    assert_eq!(count("SELECT COUNT(*) FROM customers").await, 3);
    assert_eq!(
        count(
            "SELECT (SELECT COUNT(*) FROM import_orders) + (SELECT COUNT(*) FROM import_customers)"
        )
        .await,
        0,
        "nothing staged is left behind"
    );
}

/// A CSV of `n` orders of one customer, and `bad` (a line number) spoiled if given.
fn many_orders(path: &Path, n: usize, bad: Option<usize>) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("a file"));
    writeln!(out, "id,customer_id,product,amount,currency,created_at").expect("written");
    for i in 0..n {
        let currency = if Some(i + 2) == bad { "ABC" } else { "JPY" };
        writeln!(
            out,
            "ORD-{i:06},SHOP-1,addon,{},{currency},2026-10-01T00:00:00Z",
            100 + i % 900
        )
        .expect("written");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_orders_import_in_flat_memory_and_one_bad_row_stops_them_all() {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    let dir = shop.dir.path().to_path_buf();
    many_orders(&dir.join("bad.csv"), 100_000, Some(77_777));
    let output = shop.import("orders", "bad.csv");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("bad.csv:77777: unknown currency 'ABC'")
            && stderr.contains("1 bad rows; nothing was imported"),
        "{stderr}"
    );

    many_orders(&dir.join("small.csv"), 10_000, None);
    many_orders(&dir.join("large.csv"), 100_000, None);
    let small = summary(&shop.import("orders", "small.csv"));
    let large = summary(&shop.import("orders", "large.csv"));
    assert_eq!(
        (large["created"].clone(), large["updated"].clone()),
        (json!(90_000), json!(10_000))
    );
    // Same-run ratio: ten times the rows, not ten times the memory.
    let (small_kib, large_kib) = (
        small["peak_memory_kib"]
            .as_f64()
            .expect("Linux reports VmHWM"),
        large["peak_memory_kib"]
            .as_f64()
            .expect("Linux reports VmHWM"),
    );
    eprintln!("peak memory: 10,000 rows {small_kib} KiB, 100,000 rows {large_kib} KiB");
    assert!(
        large_kib < small_kib * 1.5,
        "memory grew with the file: {small_kib} KiB → {large_kib} KiB"
    );
    let app = shop.app().await;
    let orders: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders")
        .fetch_one(app.state.db.pool())
        .await
        .expect("a count");
    assert_eq!(orders, 100_000);
}

/// A CSV of `n` customers, each with an email of their own, and the `spoiled` lines
/// (line number, text) written in place of the generated ones.
fn many_customers(path: &Path, n: usize, spoiled: &[(usize, &str)]) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("a file"));
    writeln!(out, "id,name,email,region,provider_customer_id").expect("written");
    for i in 0..n {
        match spoiled.iter().find(|(line, _)| *line == i + 2) {
            Some((_, text)) => writeln!(out, "{text}"),
            None => writeln!(
                out,
                "SHOP-C{i:06},Customer {i},c{i}@many.example,{},",
                ["CN", "US", "EU", "JP"][i % 4]
            ),
        }
        .expect("written");
    }
}

/// The `import customers --offline` of a file in the shop's directory.
fn import_offline(shop: &Shop, file: &str) -> Output {
    run(shop
        .cli()
        .args(["import", "customers", "--offline"])
        .arg(shop.dir.path().join(file)))
}

/// Five bad rows far apart in a large file, one for each kind of check (docs/spec/history.md):
/// an id given twice, an email given twice (in another case) or already another
/// customer's, an unknown region, and a provider customer given twice — line 70,000 has
/// it first and is good.
const SPOILED_CUSTOMERS: [(usize, &str); 6] = [
    (20_000, "SHOP-C000008,Again,again@many.example,US,"),
    (40_000, "SHOP-C039998,Twin,C0@MANY.example,EU,"),
    (60_000, "SHOP-C059998,Ann again,ann@shop.example,US,"),
    (70_000, "SHOP-C069998,First,p1@many.example,US,cus_many_1"),
    (77_777, "SHOP-C077775,Nowhere,nowhere@many.example,XX,"),
    (80_000, "SHOP-C079998,Second,p2@many.example,US,cus_many_1"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_customers_import_in_flat_memory_and_bad_rows_stop_them_all() {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    let dir = shop.dir.path().to_path_buf();
    many_customers(&dir.join("bad.csv"), 100_000, &SPOILED_CUSTOMERS);
    let output = import_offline(&shop, "bad.csv");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    for expected in [
        "bad.csv:20000: [SHOP-C000008] duplicate id SHOP-C000008 (first on line 10)",
        "bad.csv:40000: [SHOP-C039998] email C0@MANY.example is also customer SHOP-C000000's (line 2)",
        "bad.csv:60000: [SHOP-C059998] email ann@shop.example is already customer SHOP-1's",
        "bad.csv:77777: region: unknown region 'XX'",
        "bad.csv:80000: [SHOP-C079998] provider customer cus_many_1 is also customer SHOP-C069998's (line 70000)",
        "5 bad rows; nothing was imported",
    ] {
        assert!(stderr.contains(expected), "{expected:?} not in {stderr}");
    }

    many_customers(&dir.join("small.csv"), 10_000, &[]);
    many_customers(&dir.join("large.csv"), 100_000, &[]);
    let small = summary(&import_offline(&shop, "small.csv"));
    let large = summary(&import_offline(&shop, "large.csv"));
    assert_eq!(
        (large["created"].clone(), large["updated"].clone()),
        (json!(90_000), json!(10_000))
    );
    // Same-run ratio: ten times the rows, not ten times the memory.
    let kib = |s: &Value| s["peak_memory_kib"].as_f64().expect("Linux reports VmHWM");
    let (small_kib, large_kib) = (kib(&small), kib(&large));
    eprintln!("peak memory: 10,000 customers {small_kib} KiB, 100,000 customers {large_kib} KiB");
    assert!(
        large_kib < small_kib * 1.5,
        "memory grew with the file: {small_kib} KiB → {large_kib} KiB"
    );
    let app = shop.app().await;
    let count = |sql: &'static str| {
        let pool = app.state.db.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .expect("a count")
        }
    };
    assert_eq!(count("SELECT COUNT(*) FROM customers").await, 100_003);
    assert_eq!(count("SELECT COUNT(*) FROM import_customers").await, 0);
}

/// A provider that is not the mock, as Stripe answers a request without a key: 401 to
/// everything. Records each request's method and path.
async fn real_provider() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let router = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let log = log.clone();
        async move {
            if let Ok(mut seen) = log.lock() {
                seen.push(format!("{} {}", request.method(), request.uri().path()));
            }
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({ "error": { "type": "invalid_request_error",
                    "message": "You did not provide an API key." } })),
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_refuses_a_real_provider_before_writing_anything_and_app_only_touches_only_the_app() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (url, seen) = real_provider().await;
    let data = dir.path().join("data");
    let database_url = store::Db::sqlite_url(&data);
    let seed = |extra: &[&str]| {
        let mut cmd = refund_agent(&data, &database_url, &url);
        run(cmd.arg("seed").args(extra))
    };

    let refused = seed(&[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("is not the payments mock") && stderr.contains("Nothing was written"),
        "{stderr}"
    );
    assert!(!data.exists(), "the data directory was created");
    assert_eq!(
        seen.lock().expect("the log").clone(),
        ["GET /__mock/about"],
        "one question, nothing written at the provider"
    );

    let app_only = seed(&["--app-only"]);
    let stderr = String::from_utf8_lossy(&app_only.stderr);
    assert!(app_only.status.success(), "{stderr}");
    assert!(
        stderr.contains("nothing sent to the payment provider"),
        "{stderr}"
    );
    assert_eq!(
        seen.lock().expect("the log").len(),
        1,
        "--app-only asked nothing"
    );
    let db = store::Db::connect(&database_url)
        .await
        .expect("the database");
    let customers: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM customers")
        .fetch_one(db.pool())
        .await
        .expect("a count");
    assert!(customers > 0, "the demo world's customers are in the app");
}

/// A provider event signed as the provider signs it, sent to the app's receiver.
async fn deliver(app: &TestApp, id: &str, kind: &str, object: Value) -> Value {
    let body = json!({ "id": id, "object": "event", "type": kind, "data": { "object": object } })
        .to_string();
    let now = {
        use desk::clock::Clock;
        app.clock.now_ms() / 1000
    };
    let request = axum::http::Request::post("/api/v1/webhooks/payments")
        .header("content-type", "application/json")
        .header(
            "stripe-signature",
            payments_mock::sign_payload(desk::config::DEFAULT_WEBHOOK_SECRET, now, body.as_bytes()),
        )
        .body(axum::body::Body::from(body))
        .expect("a request");
    let (status, text) = app.raw(request).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    serde_json::from_str(&text).expect("an acknowledgement")
}

/// Ann's "charged twice" case, awaiting approval of a refund of `ch_ann_2`.
async fn awaiting_refund_of_ann_2() -> (TestApp, String) {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    summary(&shop.import("orders", "orders.csv"));
    let app = shop.app().await;
    let (_, case) = app
        .open_ticket("SHOP-1", "I was charged twice for order #5001")
        .await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(case["decision"]["refunds"][0]["charge_id"], "ch_ann_2");
    let id = case["id"].as_str().expect("an id").to_string();
    (app, id)
}

async fn open_dispute(app: &TestApp, charge: &str) {
    let response = reqwest::Client::new()
        .post(format!(
            "{}/__mock/charges/{charge}/dispute",
            app.mock.base_url()
        ))
        .json(&json!({ "reason": "duplicate" }))
        .send()
        .await
        .expect("the mock answers");
    assert!(response.status().is_success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispute_opened_on_a_charge_sends_the_proposal_resting_on_it_back_to_investigation() {
    let (app, case_id) = awaiting_refund_of_ann_2().await;
    // A charge no case awaits on: read back, nothing to change.
    let ack = deliver(&app, "evt_bo", "charge.updated", json!({ "id": "ch_bo_1" })).await;
    assert_eq!(ack["outcome"], "unchanged");
    assert_eq!(app.case(&case_id).await["status"], "awaiting_approval");

    open_dispute(&app, "ch_ann_2").await;
    let dispute = json!({ "id": "dp_1", "object": "dispute", "charge": "ch_ann_2" });
    let ack = deliver(&app, "evt_dp", "charge.dispute.created", dispute.clone()).await;
    assert_eq!(ack["outcome"], "applied");
    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "investigating", "{case:#}");
    assert!(
        case["void_reason"]
            .as_str()
            .is_some_and(|r| r.contains("charge.dispute.created on charge ch_ann_2")),
        "{case:#}"
    );
    let again = deliver(&app, "evt_dp", "charge.dispute.created", dispute).await;
    assert_eq!(again["outcome"], "duplicate");

    app.drain().await;
    let case = app.case(&case_id).await;
    assert_eq!(
        (
            case["status"].clone(),
            case["decision"]["reason_code"].clone()
        ),
        (json!("escalated"), json!("dispute_open")),
        "the fresh facts show the dispute (RP-006): {case:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_made_elsewhere_sends_the_proposal_on_its_charge_back_to_investigation() {
    let (app, case_id) = awaiting_refund_of_ann_2().await;
    app.refund_elsewhere("ch_ann_2", 9900).await;
    let refund = app.provider_refunds("ch_ann_2").await.remove(0);
    let ack = deliver(&app, "evt_rf", "refund.created", refund).await;
    assert_eq!(ack["outcome"], "unmatched", "no intent of ours made it");
    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "investigating", "{case:#}");
    app.drain().await;
    let case = app.case(&case_id).await;
    assert_eq!(
        (
            case["status"].clone(),
            case["decision"]["reason_code"].clone()
        ),
        (json!("denied"), json!("already_refunded")),
        "the duplicate was refunded already, elsewhere: {case:#}"
    );
    assert_eq!(app.provider_refunds("ch_ann_2").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_charge_naming_no_order_is_listed_for_staff_when_its_webhook_arrives() {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    summary(&shop.import("orders", "orders.csv"));
    let app = shop.app().await;
    let listed = || async {
        desk::onboarding::charges::list_unlinked(&app.state.db, None, 50)
            .await
            .expect("a list")
            .into_iter()
            .map(|c| c.charge_id)
            .collect::<Vec<_>>()
    };
    assert!(listed().await.is_empty(), "no sync has run");
    let till = json!({ "customers": [], "orders": [], "refunds": [], "charges": [{
        "id": "ch_ann_till", "customer_id": "cus_Ann8fQ2", "amount": "12.00", "currency": "USD",
        "captured": true, "status": "succeeded", "created_at": "2026-11-28T09:00:00Z",
        "payment_method": "pm_card_visa", "metadata": { "channel": "pos" } }] });
    desk::world::load_into_provider(&app.mock.base_url(), &till.to_string())
        .await
        .expect("a new charge at the provider");
    let ack = deliver(
        &app,
        "evt_till",
        "charge.succeeded",
        json!({ "id": "ch_ann_till" }),
    )
    .await;
    assert_eq!(ack["outcome"], "unchanged", "no proposal rests on it");
    assert_eq!(listed().await, ["ch_ann_till"]);
    let unlinked = desk::onboarding::charges::list_unlinked(&app.state.db, None, 50)
        .await
        .expect("a list");
    assert_eq!(unlinked[0].customer_id.as_deref(), Some("SHOP-1"));
    assert_eq!(
        (unlinked[0].amount.as_str(), unlinked[0].currency.as_str()),
        ("12.00", "USD")
    );

    // Linked by staff, a later event about it leaves it off the list.
    let payments = app.state.payments.clone();
    desk::onboarding::charges::link_charge(
        &app.state.db,
        &payments,
        "ch_ann_till",
        "#5001",
        "staff",
        0,
    )
    .await
    .expect("Ann's charge on Ann's order");
    deliver(
        &app,
        "evt_till_2",
        "charge.updated",
        json!({ "id": "ch_ann_till" }),
    )
    .await;
    assert!(listed().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_reports_customers_and_orders_that_drifted_from_the_provider() {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    summary(&shop.import("orders", "orders.csv"));
    let db = store::Db::connect(&shop.database_url)
        .await
        .expect("the database");
    // A customer linked to a provider customer that is gone, with a paid order.
    let gone = desk::onboarding::records::CustomerRow {
        id: Some("SHOP-4".into()),
        name: Some("Gone".into()),
        email: Some("gone@shop.example".into()),
        region: Some("US".into()),
        provider_customer_id: Some("cus_Gone".into()),
    };
    desk::onboarding::records::put_customer(&db, "SHOP-4", gone)
        .await
        .expect("stored");
    db.close().await;
    // At the provider: Ann's email changed, and two charges naming Bo's order paid by
    // Ann, one in euros.
    let changes = json!({ "orders": [], "refunds": [],
        "customers": [{ "id": "cus_Ann8fQ2", "email": "ann.lee@shop.example", "name": "Ann Lee" }],
        "charges": [{ "id": "ch_odd", "customer_id": "cus_Ann8fQ2", "amount": "4.99", "currency": "EUR",
            "captured": true, "status": "succeeded", "created_at": "2026-11-23T09:00:00Z",
            "payment_method": "pm_card_visa", "metadata": { ORDER_KEY: "#6001" } },
            { "id": "ch_odd_usd", "customer_id": "cus_Ann8fQ2", "amount": "4.99", "currency": "USD",
            "captured": true, "status": "succeeded", "created_at": "2026-11-23T09:01:00Z",
            "payment_method": "pm_card_visa", "metadata": { ORDER_KEY: "#6001" } }] });
    desk::world::load_into_provider(&shop.mock.base_url(), &changes.to_string())
        .await
        .expect("the provider changes");

    let output = run(shop.cli().arg("reconcile"));
    assert!(!output.status.success(), "drift needs a person");
    let report: Value = serde_json::from_slice(&output.stdout).expect("the report");
    let drift = &report["drift"];
    let lines = |list: &str| -> Vec<(String, String)> {
        drift[list]["first"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|d| {
                let who = d.get("order_id").unwrap_or(&d["customer_id"]);
                (
                    d["kind"].as_str().unwrap_or_default().to_string(),
                    who.as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let mut customers = lines("customers");
    customers.sort();
    assert_eq!(
        customers,
        [
            ("email_differs".to_string(), "SHOP-1".to_string()),
            ("linkable".to_string(), "SHOP-3".to_string()),
            ("linkable".to_string(), "SHOP-3".to_string()),
            ("missing_at_provider".to_string(), "SHOP-4".to_string()),
        ],
        "{drift:#}"
    );
    let mut orders = lines("orders");
    orders.sort();
    assert_eq!(
        orders,
        [
            ("currency_differs".to_string(), "#6001".to_string()),
            ("customer_differs".to_string(), "#6001".to_string()),
            ("no_charge".to_string(), "#6002".to_string()),
        ],
        "{drift:#}"
    );
    assert_eq!(drift["unlinked_charges"], 1, "Bo's till charge: {drift:#}");
    assert_eq!(drift["provider_charges"], 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_customer_the_account_does_not_have_is_a_bad_row_and_nothing_is_imported() {
    let shop = Shop::new().await;
    let file = "id,name,email,region,provider_customer_id\n\
                SHOP-1,Ann Lee,ann@shop.example,US,cus_Ann8fQ2\n\
                SHOP-5,Eve,eve@shop.example,US,cus_Nope\n";
    std::fs::write(shop.dir.path().join("c.csv"), file).expect("a file");
    let output = shop.import("customers", "c.csv");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "c.csv:3: [SHOP-5] provider customer cus_Nope does not exist at the provider"
        ),
        "{stderr}"
    );
    let db = store::Db::connect(&shop.database_url)
        .await
        .expect("the database");
    let customers: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM customers")
        .fetch_one(db.pool())
        .await
        .expect("a count");
    assert_eq!(
        customers, 0,
        "SHOP-1 on line 2 was good, and is not imported either"
    );
}

/// What a shop backend's `PUT /api/v1/customers/{id}` and `/orders/{id}` will call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_customer_or_order_is_upserted_with_the_checks_of_an_import() {
    use desk::onboarding::records::{put_customer, put_order, CustomerRow, OrderRow, Upserted};
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    summary(&shop.import("orders", "orders.csv"));
    let db = store::Db::connect(&shop.database_url)
        .await
        .expect("the database");
    let customer = |id: &str, email: &str| CustomerRow {
        id: Some(id.into()),
        name: Some("Dee".into()),
        email: Some(email.into()),
        region: Some("JP".into()),
        provider_customer_id: None,
    };
    let order = |id: &str, customer: &str, currency: &str| OrderRow {
        id: Some(id.into()),
        customer_id: Some(customer.into()),
        product: Some("addon".into()),
        amount: Some("500".into()),
        currency: Some(currency.into()),
        created_at: Some("2026-11-25T09:00:00Z".into()),
    };
    let code = |e: desk::error::DomainError| e.code().as_str();

    assert_eq!(
        put_customer(&db, "SHOP-7", customer("SHOP-7", "dee@shop.example"))
            .await
            .ok(),
        Some(Upserted::Created)
    );
    assert_eq!(
        put_customer(&db, "SHOP-7", customer("SHOP-7", "dee@shop.example"))
            .await
            .ok(),
        Some(Upserted::Updated)
    );
    assert_eq!(
        put_customer(&db, "SHOP-8", customer("SHOP-8", "ANN@shop.example"))
            .await
            .map_err(code),
        Err("customer_conflict"),
        "Ann's email, whatever its case"
    );
    assert_eq!(
        put_customer(&db, "SHOP-9", customer("SHOP-7", "nine@shop.example"))
            .await
            .map_err(code),
        Err("id_mismatch")
    );
    assert_eq!(
        put_order(&db, "#7001", order("#7001", "SHOP-7", "JPY"))
            .await
            .ok(),
        Some(Upserted::Created)
    );
    assert_eq!(
        put_order(&db, "#7002", order("#7002", "SHOP-7", "XYZ"))
            .await
            .map_err(code),
        Err("unknown_currency")
    );
    assert_eq!(
        put_order(&db, "#7003", order("#7003", "SHOP-404", "JPY"))
            .await
            .map_err(code),
        Err("unknown_customer")
    );
    assert_eq!(
        put_order(&db, "#5001", order("#5001", "SHOP-7", "JPY"))
            .await
            .map_err(code),
        Err("order_owner_changed"),
        "Ann's order never moves to Dee"
    );
    let owner: String = sqlx::query_scalar("SELECT customer_id FROM orders WHERE id = '#5001'")
        .fetch_one(db.pool())
        .await
        .expect("#5001");
    assert_eq!(owner, "SHOP-1");
}

/// A shop backend keeps its customers and orders current over the API with its
/// `integration` token; an admin may too; an agent may not, and a bad record changes
/// nothing.
#[tokio::test]
async fn a_shop_backend_puts_customers_and_orders_with_its_integration_token_only() {
    let app = crate::support::spawn_app().await;
    let now = 1_800_000_000_000;
    let (integration, _) = desk::auth::accounts::issue_service_token(
        &app.state.db,
        "test",
        desk::auth::ServiceKind::Integration,
        "shop",
        30,
        now,
    )
    .await
    .unwrap();
    let customer =
        serde_json::json!({"name": "Ines Ortega", "email": "ines@example.es", "region": "EU"});
    let (status, body) = app
        .request(
            "PUT",
            "/api/v1/customers/C-4242",
            Some(&integration),
            Some(customer.clone()),
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::OK, "{body}");
    assert_eq!(body["result"], "created");
    let (status, body) = app
        .request(
            "PUT",
            "/api/v1/customers/C-4242",
            Some(&integration),
            Some(customer.clone()),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["result"].clone()),
        (200, "updated".into()),
        "idempotent"
    );
    let order = serde_json::json!({"customer_id": "C-4242", "product": "annual_plan",
                                   "amount": "120.00", "currency": "EUR", "created_at": "2026-11-20T10:00:00Z"});
    let (status, body) = app
        .request(
            "PUT",
            "/api/v1/orders/O-4242",
            Some(&integration),
            Some(order.clone()),
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::OK, "{body}");

    let (status, _) = app
        .request(
            "PUT",
            "/api/v1/orders/O-4242",
            Some(&app.agent_token),
            Some(order.clone()),
        )
        .await;
    assert_eq!(
        status,
        axum::http::StatusCode::FORBIDDEN,
        "an agent is no shop backend"
    );
    let bad = serde_json::json!({"customer_id": "C-4242", "product": "annual_plan",
                                 "amount": "12.345", "currency": "EUR", "created_at": "2026-11-20T10:00:00Z"});
    let (status, body) = app
        .request(
            "PUT",
            "/api/v1/orders/O-4243",
            Some(&integration),
            Some(bad),
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::BAD_REQUEST, "{body}");
    let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE id = 'O-4243'")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(stored, 0, "a bad record changes nothing");
    let (status, _) = app
        .request("GET", "/api/v1/charges/unlinked", Some(&integration), None)
        .await;
    assert_eq!(
        status,
        axum::http::StatusCode::FORBIDDEN,
        "its own routes only"
    );
    let (status, _) = app
        .request(
            "GET",
            "/api/v1/charges/unlinked",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::OK);
}

use crate::conversation::{console_get, console_post};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_see_charges_naming_no_order_in_the_console_and_a_supervisor_links_one() {
    let shop = Shop::new().await;
    summary(&shop.import("customers", "customers.csv"));
    summary(&shop.import("orders", "orders.csv"));
    let app = shop.app().await;
    app.staff_token(desk::auth::StaffRole::Admin).await;
    let (admin, admin_csrf) = app.staff_session("admin@test.example").await;
    let (agent, _) = app.staff_session("agent@test.example").await;
    let (lead, csrf) = app.staff_session("supervisor@test.example").await;

    // An admin reads the provider's charges again; the till charge is listed.
    let (status, body) = console_post(
        &app,
        &admin,
        "/console/charges/sync",
        &format!("csrf={admin_csrf}"),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    let (status, page) =
        console_get(&app, &admin, "/console/charges?done=synced&read=5&listed=1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("data-charge=\"ch_bo_pos\"") && page.contains("id=\"sync-charges\""),
        "{page}"
    );

    // An agent sees it, with no form to link it nor to sync.
    let (status, page) = console_get(&app, &agent, "/console/charges").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-charge=\"ch_bo_pos\""), "{page}");
    assert!(
        !page.contains("/link\"") && !page.contains("id=\"sync-charges\""),
        "{page}"
    );
    let (status, _) = console_post(
        &app,
        &agent,
        "/console/charges/ch_bo_pos/link",
        "csrf=x&order_id=%236002",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "an agent links nothing");

    // A supervisor's link to another customer's order is refused in words; what was typed
    // stays, and the charge stays listed.
    let (status, page) = console_post(
        &app,
        &lead,
        "/console/charges/ch_bo_pos/link",
        &format!("csrf={csrf}&order_id=%235001"),
    )
    .await;
    assert!(status.is_client_error(), "{status}");
    assert!(
        page.contains("id=\"action-error\"") && page.contains("value=\"#5001\""),
        "{page}"
    );
    assert_eq!(
        desk::onboarding::charges::list_unlinked(&app.state.db, None, 50)
            .await
            .expect("a list")
            .len(),
        1
    );

    // The right order: linked, audited, and the list is empty.
    let (status, _) = console_post(
        &app,
        &lead,
        "/console/charges/ch_bo_pos/link",
        &format!("csrf={csrf}&order_id=%236002"),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page) = console_get(&app, &lead, "/console/charges?done=linked").await;
    assert!(
        page.contains("id=\"no-charges\"") && page.contains("Charge linked"),
        "{page}"
    );
    let (_, audit) = console_get(&app, &lead, "/console/audit.csv").await;
    assert!(
        audit
            .lines()
            .any(|l| l.contains("charge_linked") && l.contains("ch_bo_pos")),
        "the link is audited: {audit}"
    );
}
