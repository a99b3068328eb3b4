//! `import history`: a Zendesk-shaped export of a shop whose customers and
//! orders were imported, against the payments mock holding the shop's charges and the
//! refunds the team made after some tickets — the history `shadow` reads, each row's
//! inferred outcome shown with its evidence; unreadable tickets writing nothing; a
//! hundred thousand tickets read in flat memory.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use backtest::history_import::{
    self as history, infer::TagMap, source::HistoryFormat, HistoryOptions,
};
use serde_json::{json, Value};

use crate::support::{start_mock, test_database_url};

/// The shop's account: Ann charged twice for #5001 and refunded a day after her
/// ticket; Bo's order #6001 never refunded.
fn account() -> Value {
    json!({
        "customers": [
            { "id": "cus_Ann", "email": "ann@shop.example", "created_at": "2026-01-01T00:00:00Z" },
            { "id": "cus_Bo", "email": "bo@shop.example", "created_at": "2026-01-01T00:00:00Z" }
        ],
        "charges": [
            { "id": "ch_a1", "customer_id": "cus_Ann", "amount": "99.00", "currency": "USD",
              "created_at": "2026-11-20T09:00:05Z", "payment_method": "pm_card_visa",
              "metadata": { "shop_order": "#5001" } },
            { "id": "ch_a2", "customer_id": "cus_Ann", "amount": "99.00", "currency": "USD",
              "created_at": "2026-11-20T09:01:40Z", "payment_method": "pm_card_visa",
              "metadata": { "shop_order": "#5001" } },
            { "id": "ch_b1", "customer_id": "cus_Bo", "amount": "4.99", "currency": "USD",
              "created_at": "2026-11-21T09:00:05Z", "payment_method": "pm_card_visa",
              "metadata": { "shop_order": "#6001" } }
        ],
        "refunds": [
            { "id": "re_a2", "charge_id": "ch_a2", "amount": "99.00", "currency": "USD",
              "status": "succeeded", "created_at": "2026-11-23T11:00:00Z", "reason": "duplicate" }
        ]
    })
}

const CUSTOMERS: &str = "id,name,email,region,provider_customer_id\n\
SHOP-1,Ann Lee,ann@shop.example,US,cus_Ann\n\
SHOP-2,Bo Chen,bo@shop.example,US,cus_Bo\n";

const ORDERS: &str = "id,customer_id,product,amount,currency,created_at\n\
#5001,SHOP-1,annual_plan,99.00,USD,2026-11-20T09:00:00Z\n\
#6001,SHOP-2,addon,4.99,USD,2026-11-21T09:00:00Z\n";

/// Zendesk's JSON export: users and tickets a line each, comments inside the ticket; one
/// ticket in the API's shape (`{"ticket", "comments", "users"}`).
const EXPORT: &str = r#"{"id": 901, "email": "ann@shop.example", "name": "Ann Lee", "role": "end-user"}
{"id": 902, "email": "bo@shop.example", "name": "Bo Chen", "role": "end-user"}
{"id": 1001, "created_at": "2026-11-22T10:00:00Z", "subject": "Charged twice for #5001", "requester_id": 901, "tags": ["billing"], "comments": [{"author_id": 901, "plain_body": "Hello, my card was charged two times for order #5001. Please refund one.", "created_at": "2026-11-22T10:00:00Z"}, {"author_id": 3, "plain_body": "Sorry about that, refunding now.", "created_at": "2026-11-23T10:59:00Z", "public": true}]}
{"ticket": {"id": 1002, "created_at": "2026-11-24T08:00:00Z", "subject": "Bitte prüfen", "requester_id": 902, "tags": ["tier2"]}, "comments": [{"author_id": 902, "body": "Ich möchte mein Geld für #6001 zurück, ich habe es nie benutzt.", "created_at": "2026-11-24T08:00:00Z"}], "users": []}
{"id": 1003, "created_at": "2026-11-24T09:00:00Z", "subject": "Refund?", "requester": {"id": 999, "email": "stranger@else.example"}, "requester_id": 999, "comments": [{"author_id": 999, "plain_body": "Refund my order please"}]}
"#;

async fn shop() -> (
    tempfile::TempDir,
    payments_mock::RunningMock,
    store::Db,
    payments_adapter::PaymentsClient,
) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mock = start_mock(dir.path()).await;
    desk::world::load_into_provider(&mock.base_url(), &account().to_string())
        .await
        .expect("the account loads");
    let db = store::Db::connect(&test_database_url(dir.path()).await)
        .await
        .expect("a database");
    let payments = payments_adapter::PaymentsClient::new(
        &mock.base_url(),
        "sk_test_refund_desk",
        std::time::Duration::from_secs(5),
        std::time::Duration::from_millis(5),
    )
    .expect("a client")
    .with_order_key("shop_order");
    for (name, text) in [("customers.csv", CUSTOMERS), ("orders.csv", ORDERS)] {
        std::fs::write(dir.path().join(name), text).expect("a file");
    }
    let mut quiet = |_: &'static str, _: u64, _: u64| {};
    shop_import::import::import_customers(
        &db,
        Some(&payments),
        &dir.path().join("customers.csv"),
        None,
        0,
        &mut quiet,
    )
    .await
    .expect("customers import");
    shop_import::import::import_orders(&db, &dir.path().join("orders.csv"), None, 0, &mut quiet)
        .await
        .expect("orders import");
    (dir, mock, db, payments)
}

fn options(dir: &Path, format: HistoryFormat, file: &str) -> HistoryOptions {
    HistoryOptions {
        format,
        file: dir.join(file),
        users: None,
        out: dir.join("history.jsonl"),
        window_days: 14,
        tag_map: TagMap::parse("tier2 = \"escalate\"\nneeds_order = \"request_info\"")
            .expect("a map"),
        skip_invalid: false,
    }
}

#[tokio::test]
async fn a_zendesk_export_becomes_a_history_shadow_replays_with_each_inference_shown() {
    let (dir, _mock, db, payments) = shop().await;
    std::fs::write(dir.path().join("export.json"), EXPORT).expect("a file");
    let mut quiet = |_: u64, _: u64| {};
    let report = history::import_history(
        &db,
        &payments,
        options(dir.path(), HistoryFormat::Zendesk, "export.json"),
        &mut quiet,
    )
    .await
    .expect("the import");
    assert_eq!(
        (report.tickets, report.written, report.unmatched),
        (3, 2, 1),
        "{report:?}"
    );
    assert_eq!(report.unmatched_tickets[0].ticket_id, "1003");
    let unmatched = std::fs::read_to_string(dir.path().join("history.jsonl.unmatched.jsonl"))
        .expect("the unmatched tickets are listed");
    assert!(unmatched.contains("stranger@else.example"), "{unmatched}");

    let text = std::fs::read_to_string(dir.path().join("history.jsonl")).expect("the history");
    let (tickets, bad) = shadow::replay::parse_history(&text);
    assert!(bad.is_empty(), "{bad:?}");
    let ann = &tickets[0];
    assert_eq!(
        (ann.id.as_str(), ann.customer_id.as_str()),
        ("1001", "SHOP-1")
    );
    assert_eq!(ann.human.outcome.as_str(), "refund");
    assert_eq!(ann.human.refunds.len(), 1);
    assert_eq!(
        (
            ann.human.refunds[0].charge_id.as_str(),
            ann.human.refunds[0].amount.as_str()
        ),
        ("ch_a2", "99.00")
    );
    assert_eq!(
        ann.world.charges.len(),
        2,
        "both charges stood at the ticket"
    );
    assert!(
        ann.world.refunds.is_empty(),
        "the refund came after the ticket"
    );
    let inference = &ann.human.extra["inference"];
    assert_eq!(inference["rule"], "refund_in_window");
    assert!(
        inference["evidence"][0].as_str().unwrap_or_default().contains("refund re_a2 of 99.00 USD on charge ch_a2 (order #5001), succeeded, 1 day 1 h after the ticket"),
        "{inference}"
    );
    let bo = &tickets[1];
    assert_eq!(
        (
            bo.human.outcome.as_str(),
            bo.human.extra["inference"]["rule"].as_str()
        ),
        ("escalate", Some("tag"))
    );

    let policies =
        desk::policies::load_policy_set(&desk::config::default_fixtures_dir().join("policies"))
            .expect("policies");
    let index_dir = dir.path().join("index");
    let index =
        std::sync::Arc::new(desk::policies::open_index(&index_dir, &policies).expect("an index"));
    let shadow = app::shadow::run(
        &desk::agent::investigator::Investigator,
        &policies,
        &index,
        &tickets,
        bad,
        |_, _| {},
    )
    .await;
    assert!(shadow.tickets.iter().all(|t| t.human_inference.is_some()));
    assert_eq!(
        shadow.tickets[0].agent.outcome.as_str(),
        "refund",
        "{:?}",
        shadow.tickets[0]
    );
    // The page counts the rules; each row's evidence is in report.json (and, for a
    // disagreement, in its example and in report.csv).
    let html = app::shadow::html(&shadow);
    assert!(
        html.contains("How the team's outcomes were inferred")
            && html.contains("<td>refund_in_window</td>"),
        "{html}"
    );
    assert!(
        shadow.tickets[0].human_inference.as_ref().unwrap()["evidence"][0]
            .as_str()
            .unwrap_or_default()
            .contains("1 day 1 h after the ticket")
    );
    let json = serde_json::to_value(&shadow.tickets[1]).expect("json");
    assert_eq!(json["human_inference"]["rule"], "tag");
}

#[tokio::test]
async fn a_ticket_without_comments_writes_nothing_unless_told_to_skip_it() {
    let (dir, _mock, db, payments) = shop().await;
    let csv = "ticket_id,created_at,requester_email,subject,body,tags\n\
               T-1,2026-11-22T10:00:00Z,ann@shop.example,Twice,\"charged twice, order #5001\",billing\n\
               T-2,2026-11-22T11:00:00Z,bo@shop.example,Empty,,\n\
               T-1,2026-11-23T11:00:00Z,bo@shop.example,Again,a second T-1,\n";
    std::fs::write(dir.path().join("tickets.csv"), csv).expect("a file");
    let mut quiet = |_: u64, _: u64| {};
    let err = history::import_history(
        &db,
        &payments,
        options(dir.path(), HistoryFormat::Csv, "tickets.csv"),
        &mut quiet,
    )
    .await
    .expect_err("T-2 has no body");
    let history::HistoryError::Tickets { errors, count } = err else {
        panic!("{err}")
    };
    assert_eq!(
        (count, errors[0].line, errors[0].id.as_deref()),
        (2, 3, Some("T-2"))
    );
    assert_eq!(
        errors[1].message,
        "ticket id T-1 appears earlier in the export"
    );
    assert!(
        !dir.path().join("history.jsonl").exists()
            && !dir.path().join("history.jsonl.partial").exists()
    );

    let mut skipping = options(dir.path(), HistoryFormat::Csv, "tickets.csv");
    skipping.skip_invalid = true;
    let report = history::import_history(&db, &payments, skipping, &mut quiet)
        .await
        .expect("the rest");
    assert_eq!((report.written, report.invalid), (1, 2));
    let text = std::fs::read_to_string(dir.path().join("history.jsonl")).expect("the history");
    assert_eq!(
        shadow::replay::parse_history(&text).0[0]
            .human
            .outcome
            .as_str(),
        "refund"
    );
}

/// A Zendesk export of `n` tickets (one user and one ticket a line), each mail `chars`
/// long, from requesters the shop does not have; ticket `broken` has no comments.
fn big_export(path: &Path, n: usize, chars: usize, broken: Option<usize>) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("a file"));
    let body: String = "Lorem ipsum dolor sit amet, 注文番号 "
        .chars()
        .cycle()
        .take(chars)
        .collect();
    for i in 0..n {
        writeln!(
            out,
            "{}",
            json!({"id": 100_000 + i, "email": format!("u{i}@elsewhere.example")})
        )
        .expect("w");
        let comments = if Some(i) == broken {
            json!([])
        } else {
            json!([{"author_id": 100_000 + i, "plain_body": body}])
        };
        writeln!(out, "{}", json!({"id": i, "created_at": "2026-10-01T00:00:00Z", "requester_id": 100_000 + i, "comments": comments})).expect("w");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_tickets_read_in_flat_memory_and_one_without_comments_is_named() {
    let (dir, mock, _db, _payments) = shop().await;
    let data = dir.path();
    big_export(&data.join("small.json"), 10_000, 600, None);
    big_export(&data.join("large.json"), 100_000, 600, Some(77_777));
    let run = |file: &str, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_refund-agent"))
            .arg("--data-dir")
            .arg(data.join("data"))
            .env("DATABASE_URL", store::Db::sqlite_url(&data.join("data")))
            .env("PAYMENTS_URL", mock.base_url())
            .env("PAYMENTS_API_KEY", "sk_test_refund_desk")
            .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
            .env("RUST_LOG", "warn")
            .args(["import", "history", "--format", "zendesk"])
            .arg(data.join(file))
            .arg("--out")
            .arg(data.join(format!("{file}.jsonl")))
            .args(extra)
            .output()
            .expect("refund-agent runs")
    };
    let failed = run("large.json", &[]);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success());
    assert!(
        stderr.contains("large.json:155556: [77777] ticket 77777 has no comments"),
        "{stderr}"
    );
    assert!(!data.join("large.json.jsonl").exists());

    let summary = |output: std::process::Output| -> Value {
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("a summary")
    };
    let small = summary(run("small.json", &[]));
    let large = summary(run("large.json", &["--skip-invalid"]));
    assert_eq!(
        (
            large["tickets"].clone(),
            large["unmatched"].clone(),
            large["invalid"].clone()
        ),
        (json!(100_000), json!(99_999), json!(1))
    );
    let (small_kib, large_kib) = (
        small["peak_memory_kib"]
            .as_f64()
            .expect("Linux reports VmHWM"),
        large["peak_memory_kib"]
            .as_f64()
            .expect("Linux reports VmHWM"),
    );
    let file_kib = |name: &str| {
        std::fs::metadata(data.join(name))
            .expect("the export")
            .len() as f64
            / 1024.0
    };
    let (small_file, large_file) = (file_kib("small.json"), file_kib("large.json"));
    eprintln!(
        "import history peak memory: 10,000 tickets ({small_file:.0} KiB) {small_kib} KiB, \
         100,000 tickets ({large_file:.0} KiB) {large_kib} KiB"
    );
    // Same-run comparison: what grows with the export is the users' emails and the
    // requesters' ticket times — a few hundred bytes a ticket — never the mails' text
    // (here 600 characters each; a ticket's whole text is never kept).
    let per_ticket = (large_kib - small_kib) * 1024.0 / 90_000.0;
    eprintln!("{per_ticket:.0} bytes more per ticket");
    assert!(
        per_ticket < 400.0 && large_kib - small_kib < (large_file - small_file) / 3.0,
        "memory grew with the export: {small_kib} → {large_kib} KiB for {small_file:.0} → {large_file:.0} KiB"
    );
}
