//! Email through real mail servers: a Postfix + Dovecot pair of
//! each test's own (`scripts/mail-servers`), customers who write with swaks and Python's
//! smtplib, and what the product sent read back with Python's imaplib. The app takes the
//! support mailbox with its watcher's `run_once` and sends with the worker's pass, on a
//! `ManualClock`; the SIGKILL test runs `refund-agent serve` itself.
//!
//! These need the servers installed and root (the daemons drop privileges):
//! `.ci/run` runs `scripts/mail-servers install` and sets `TEST_MAIL_SERVERS=1`; without
//! it each test says so and passes without running.
//!
//! Long because every test needs the real Postfix and Dovecot set up the same way; the helpers
//! that do it stay beside the tests that use them.

use std::collections::BTreeSet;
use std::sync::Arc;

use desk::agent::investigator::Investigator;
use serde_json::{json, Value};

use super::{kinds_for, outbox, ticket_messages};
use crate::support::mail::{self, MailServers, SUPPORT};
use crate::support::{spawn_app_configured, TestApp};

const LI_WEI: &str = "li.wei@example.cn";
const EMMA: &str = "emma.johnson@example.com";

/// The test's own servers, or `None` (with the reason printed) when they are not
/// available here.
fn servers() -> Option<MailServers> {
    if std::env::var("TEST_MAIL_SERVERS").is_err() {
        eprintln!(
            "\n*** NOT RUN: set TEST_MAIL_SERVERS=1 after scripts/mail-servers install (.ci/run does) ***\n"
        );
        return None;
    }
    Some(MailServers::start())
}

async fn app_on(servers: &MailServers) -> TestApp {
    spawn_app_configured(Arc::new(Investigator), |c| servers.configure(c)).await
}

/// One pass of the mailbox watcher over the support mailbox.
async fn take_mailbox(app: &TestApp) -> anyhow::Result<usize> {
    let target = app
        .state
        .channels
        .mail
        .imap
        .clone()
        .expect("IMAP_URL is set");
    desk::mail::imap_watch::run_once(app.state.intake(), &target).await
}

/// The ids of the mails a user holds, each once; panics on a Message-ID seen twice.
fn distinct_ids(mails: &[Value]) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for m in mails {
        let id = m["message_id"].as_str().unwrap().to_string();
        assert!(!id.is_empty(), "every mail has a Message-ID: {m:#}");
        assert!(ids.insert(id.clone()), "{id} arrived twice");
    }
    ids
}

/// The ticket the support mailbox's mails opened, by its one outbox row's ticket.
async fn only_ticket(app: &TestApp) -> String {
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM tickets")
        .fetch_all(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

/// The demo world reloaded into the mock with `ch_1001b` refunds created pending, so a
/// refund is first submitted and only later completed (RP-005's two mails).
async fn pending_refunds(app: &TestApp) {
    let path = desk::config::default_fixtures_dir().join("billing/demo.json");
    let mut world: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for charge in world["charges"].as_array_mut().unwrap() {
        if charge["id"] == "ch_1001b" {
            charge["refund_profile"] = json!("pending");
        }
    }
    desk::world::load_into_provider(&app.mock.base_url(), &world.to_string())
        .await
        .unwrap();
}

async fn settle_at_provider(app: &TestApp, refund_id: &str) {
    let url = format!("{}/__mock/refunds/{refund_id}/settle", app.mock.base_url());
    let response = reqwest::Client::new()
        .post(url)
        .json(&json!({"outcome": "succeeded"}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{response:?}");
}

#[tokio::test]
async fn charged_twice_by_mail_is_answered_with_a_link_approved_and_both_refund_mails_follow() {
    let Some(servers) = servers() else { return };
    let app = app_on(&servers).await;
    pending_refunds(&app).await;
    // The customer writes with swaks, as Debian ships it.
    servers.swaks(
        LI_WEI,
        "Charged twice",
        "I was charged twice for my annual plan",
    );
    servers.wait_for(SUPPORT, 1);
    assert_eq!(take_mailbox(&app).await.unwrap(), 1);
    app.drain().await;
    let ticket_id = only_ticket(&app).await;
    // A reply in their language with a single-use link, from the support address.
    let mails = servers.wait_for(LI_WEI, 2);
    let reply = &mails[1];
    assert!(
        reply["from"].as_str().unwrap().contains(SUPPORT),
        "{reply:#}"
    );
    assert!(
        reply["subject"]
            .as_str()
            .unwrap()
            .contains(&format!("[#{ticket_id}]")),
        "{reply:#}"
    );
    assert!(
        reply["text"]
            .as_str()
            .unwrap()
            .contains("http://desk.test/"),
        "{reply:#}"
    );
    assert!(
        reply["html"]
            .as_str()
            .unwrap()
            .contains("href=\"http://desk.test/"),
        "{reply:#}"
    );
    // The link opens the sign-in page in the ticket's language.
    let language: String = sqlx::query_scalar("SELECT language FROM tickets WHERE id = $1")
        .bind(&ticket_id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    let text = reply["text"].as_str().unwrap();
    let link = text
        .split_whitespace()
        .find(|word| word.contains("/sign-in?link="))
        .unwrap_or_else(|| panic!("no sign-in link in {text}"));
    assert!(link.ends_with(&format!("&lang={language}")), "{link}");
    // The case waits in the queue; a supervisor approves it.
    let case_id: String = sqlx::query_scalar("SELECT id FROM cases WHERE ticket_id = $1")
        .bind(&ticket_id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let (status, body) = app
        .approve(
            &app.supervisor_token,
            &case_id,
            case["fingerprint"].as_str().unwrap(),
        )
        .await;
    assert!(status.is_success(), "{body}");
    app.drain().await;
    assert_eq!(app.case(&case_id).await["status"], "refund_pending");
    // The bank settles; the reconciler sees it; the worker sends the last mail.
    let refund_id: String =
        sqlx::query_scalar("SELECT provider_refund_id FROM refund_intents WHERE case_id = $1")
            .bind(&case_id)
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    settle_at_provider(&app, &refund_id).await;
    desk::reconcile::run(app.state.reconciler()).await.unwrap();
    app.drain().await;
    assert_eq!(app.case(&case_id).await["status"], "refund_succeeded");
    let mails = servers.wait_for(LI_WEI, 5);
    let subjects: Vec<&str> = mails
        .iter()
        .map(|m| m["subject"].as_str().unwrap())
        .collect();
    println!("li.wei received {} mails: {subjects:#?}", mails.len());
    assert_eq!(
        kinds_for(&outbox(&app).await, &ticket_id),
        ["received", "reply", "approved", "submitted", "completed"]
    );
    assert!(
        subjects[2].starts_with("Your refund was approved"),
        "{subjects:?}"
    );
    assert!(
        subjects[3].starts_with("Your refund was sent to the payment provider"),
        "{subjects:?}"
    );
    assert!(
        subjects[4].starts_with("Your refund is completed"),
        "{subjects:?}"
    );
    // RP-005: the approved mail says the money has not gone yet.
    assert!(mails[2]["text"]
        .as_str()
        .unwrap()
        .contains("has not reached the payment provider"));
    assert_eq!(distinct_ids(&mails).len(), 5);
    // The customer answers the last mail with smtplib: it lands on the same ticket.
    let last_id = mails[4]["message_id"].as_str().unwrap();
    let answer = mail::build(
        LI_WEI,
        &format!("Re: {}", subjects[4]),
        "Thank you, I see it now.",
        &[
            &format!("In-Reply-To: <{last_id}>"),
            &format!("References: <{last_id}>"),
        ],
    );
    servers.send(LI_WEI, &answer);
    servers.wait_for(SUPPORT, 2);
    assert_eq!(take_mailbox(&app).await.unwrap(), 1);
    let messages = ticket_messages(&app, &ticket_id).await;
    let last = messages
        .iter()
        .rev()
        .find(|m| m["author"] == "customer")
        .unwrap();
    assert_eq!(last["channel"], "email");
    assert_eq!(last["body"], "Thank you, I see it now.");
    assert_eq!(only_ticket(&app).await, ticket_id, "no second ticket");
}

#[tokio::test]
async fn while_smtp_is_down_nothing_is_lost_and_afterwards_every_mail_arrives_once() {
    let Some(servers) = servers() else { return };
    let app = app_on(&servers).await;
    servers.stop();
    // Three customers write through the page while the mail server is away.
    let customers = [
        ("C-100", LI_WEI),
        ("C-200", EMMA),
        ("C-300", "lukas.mueller@example.de"),
    ];
    for (customer, _) in customers {
        app.open_ticket(customer, "I was charged twice for my annual plan")
            .await;
    }
    let mut expected = Vec::new();
    for (customer, address) in customers {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM mail_outbox WHERE customer_id = $1")
            .bind(customer)
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
        assert!(n >= 2, "{customer}: a received mail and a reply at least");
        expected.push((address, n as usize));
    }
    // The worker tried each (the page's path drains it) and scheduled it again.
    app.drain().await;
    let tried: Vec<(String, i64)> = sqlx::query_as("SELECT status, attempts FROM mail_outbox")
        .fetch_all(app.state.db.pool())
        .await
        .unwrap();
    assert!(
        tried.iter().all(|(s, a)| s == "pending" && *a >= 1),
        "{tried:?}"
    );
    // A second pass inside the backoff sends nothing and changes nothing.
    let report = desk::mail::send::run_once(app.state.postman())
        .await
        .unwrap();
    assert_eq!(report.handled(), 0, "{report:?}");
    // Sixty seconds of outage (the clock's), then the server is back.
    app.clock.advance(time::Duration::seconds(60));
    app.drain().await;
    servers.start_again();
    for _ in 0..3 {
        app.clock.advance(time::Duration::minutes(5));
        app.drain().await;
    }
    let mut delivered = 0;
    for (address, n) in &expected {
        let mails = servers.wait_for(address, *n);
        assert_eq!(distinct_ids(&mails).len(), *n, "{address}");
        delivered += n;
    }
    let written: usize = expected.iter().map(|(_, n)| n).sum();
    let statuses: BTreeSet<String> = outbox(&app).await.into_iter().map(|r| r.3).collect();
    println!("after the outage: {delivered} mails delivered, each once; outbox {statuses:?}");
    assert_eq!(delivered, written);
    assert_eq!(statuses, BTreeSet::from(["sent".to_string()]));
    // Nothing more is sent by later passes: no mail twice.
    app.clock.advance(time::Duration::hours(2));
    app.drain().await;
    let again: usize = expected.iter().map(|(a, _)| servers.read(a).len()).sum();
    assert_eq!(again, written);
}

#[tokio::test]
async fn while_imap_is_down_no_mail_is_lost_and_a_mail_taken_but_not_flagged_opens_no_second_ticket(
) {
    let Some(servers) = servers() else { return };
    let app = app_on(&servers).await;
    servers.swaks(
        LI_WEI,
        "Charged twice",
        "I was charged twice for my annual plan",
    );
    servers.wait_for(SUPPORT, 1);
    servers.stop();
    // The mailbox is away: the pass fails, nothing is taken, nothing changes.
    assert!(take_mailbox(&app).await.is_err());
    let tickets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tickets")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(tickets, 0);
    servers.start_again();
    assert_eq!(take_mailbox(&app).await.unwrap(), 1);
    let ticket_id = only_ticket(&app).await;
    // The ticket committed but the flag never reached the server (the connection died
    // between the two): the next pass sees the message again and opens nothing new.
    mail::mailtool(&[
        "unflag",
        "127.0.0.1",
        &servers.imap_port.to_string(),
        SUPPORT,
        desk::mail::imap_watch::TAKEN_FLAG,
    ]);
    assert_eq!(
        take_mailbox(&app).await.unwrap(),
        1,
        "seen again, flagged now"
    );
    assert_eq!(take_mailbox(&app).await.unwrap(), 0, "and not again");
    assert_eq!(only_ticket(&app).await, ticket_id);
    let outcomes: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT source, outcome FROM mail_inbound")
            .fetch_all(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(outcomes, [("imap".to_string(), Some("opened".to_string()))]);
    let messages = ticket_messages(&app, &ticket_id).await;
    let from_customer = messages
        .iter()
        .filter(|m| m["author"] == "customer")
        .count();
    assert_eq!(from_customer, 1, "{messages:#?}");
}

#[tokio::test]
async fn an_out_of_office_a_bounce_and_our_own_address_get_no_reply_through_postfix() {
    let Some(servers) = servers() else { return };
    let app = app_on(&servers).await;
    let away = mail::build(
        LI_WEI,
        "Automatic reply: Charged twice",
        "I am away until Monday.",
        &["Auto-Submitted: auto-replied"],
    );
    servers.send(LI_WEI, &away);
    servers.send("MAILER-DAEMON@mx.example.cn", &super::bounce_for(EMMA));
    servers.swaks(
        SUPPORT,
        "We received your request",
        "A loop, if we answered it.",
    );
    // One ordinary mail, so "no reply" is not only a silent product.
    servers.swaks(
        "lukas.mueller@example.de",
        "Charged twice",
        "I was charged twice for my annual plan",
    );
    servers.wait_for(SUPPORT, 4);
    assert_eq!(take_mailbox(&app).await.unwrap(), 4);
    app.drain().await;
    let lukas = servers.wait_for("lukas.mueller@example.de", 2);
    for quiet in [LI_WEI, EMMA] {
        assert!(servers.read(quiet).is_empty(), "{quiet} got mail");
    }
    // Our own address got only the mail it sent, never an answer to it.
    assert_eq!(servers.read(SUPPORT).len(), 4);
    let reasons: Vec<(Option<String>,)> =
        sqlx::query_as("SELECT reason FROM mail_inbound WHERE outcome = 'ignored' ORDER BY seq")
            .fetch_all(app.state.db.pool())
            .await
            .unwrap();
    let reasons: Vec<String> = reasons.into_iter().filter_map(|r| r.0).collect();
    assert_eq!(reasons, ["auto_reply", "bounce", "our_own_address"]);
    // The bounce returns no mail of ours: it marks nothing (docs/spec/email.md).
    let marked = mailbox::addresses::undeliverable(&app.state.db, EMMA)
        .await
        .unwrap();
    assert!(marked.is_none());
    println!(
        "4 mails in: 3 unanswered, {} replies to the ordinary one",
        lukas.len()
    );
}

#[tokio::test]
async fn a_hundred_mails_in_a_minute_through_postfix_are_held_and_all_reach_the_ticket_later() {
    let Some(servers) = servers() else { return };
    let app = app_on(&servers).await;
    servers.swaks(
        LI_WEI,
        "Charged twice",
        "Mail 0: I was charged twice for my annual plan",
    );
    servers.wait_for(SUPPORT, 1);
    take_mailbox(&app).await.unwrap();
    let ticket_id = only_ticket(&app).await;
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for n in 1..100 {
        let raw = mail::build(
            LI_WEI,
            &format!("Re: Charged twice [#{ticket_id}]"),
            &format!("Mail {n}: any news?"),
            &[],
        );
        let file = dir.path().join(format!("{n:03}.eml"));
        std::fs::write(&file, raw).unwrap();
        files.push(file.to_string_lossy().to_string());
    }
    // All 99 in one SMTP session, well inside a minute.
    servers.send_files(LI_WEI, &files);
    servers.wait_for(SUPPORT, 100);
    assert_eq!(take_mailbox(&app).await.unwrap(), 99);
    let held: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM mail_inbound WHERE status = 'held'")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    println!("100 mails in a minute: {held} held");
    assert!(held >= 90, "{held}");
    for _ in 0..30 {
        app.clock.advance(time::Duration::seconds(61));
        app.drain().await;
    }
    let customer: Vec<String> = ticket_messages(&app, &ticket_id)
        .await
        .iter()
        .filter(|m| m["author"] == "customer")
        .map(|m| m["body"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(customer.len(), 100, "nothing dropped");
    // Each mail once. Postfix delivers a session's mails in parallel, so the mailbox's
    // order (which the product keeps: the API test shows it) need not be the sending one.
    let numbers: BTreeSet<usize> = customer
        .iter()
        .map(|b| {
            let n = b.split("Mail ").nth(1).and_then(|r| r.split(':').next());
            n.and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{b:?}"))
        })
        .collect();
    assert_eq!(numbers, (0..100).collect::<BTreeSet<usize>>());
}

/// `refund-agent serve` on `data`, sending through `servers` (the kill test's process).
fn serve_command(
    data: &std::path::Path,
    payments: &str,
    servers: &MailServers,
) -> std::process::Command {
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
        .env("SMTP_URL", servers.smtp_url())
        .env("MAIL_FROM", SUPPORT)
        .env("MAIL_AUTHSERV_ID", mail::AUTHSERV_ID)
        .env("PUBLIC_URL", "http://desk.test")
        // The first retry after a second, so the restarted process sends soon.
        .env("MAIL_RETRY_SECS", "1")
        .env_remove("IMAP_URL")
        .env_remove("DATABASE_URL")
        .env_remove("LLM_BASE_URL")
        .env("RUST_LOG", "warn");
    cmd
}

/// The kill test's outbox, read from the process's SQLite file: `(id, status)`.
async fn outbox_of(data: &std::path::Path) -> Vec<(String, String)> {
    let pool = sqlx::SqlitePool::connect(&store::Db::sqlite_url(data))
        .await
        .unwrap();
    let rows = sqlx::query_as(
        "SELECT id, status FROM mail_outbox WHERE customer_id = 'C-100' ORDER BY seq",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows
}

/// The kill test's outbox attempts: `(id, attempts, next attempt at)`, for a failure's message.
async fn outbox_attempts(data: &std::path::Path) -> Vec<(String, i64, Option<i64>)> {
    let pool = sqlx::SqlitePool::connect(&store::Db::sqlite_url(data))
        .await
        .unwrap();
    let rows = sqlx::query_as(
        "SELECT id, attempts, next_attempt_at FROM mail_outbox WHERE customer_id = 'C-100' ORDER BY seq",
    )
    .fetch_all(&pool)
    .await
    .unwrap_or_default();
    pool.close().await;
    rows
}

// Multi-threaded: the payments mock answers `seed` while this thread waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_killed_after_the_change_committed_and_before_its_mail_went_sends_it_once_after_restart(
) {
    use crate::support::serve::{self, sigkill};
    let Some(servers) = servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mock = crate::support::start_mock(dir.path()).await;
    let data = dir.path().join("app");
    let (_, customer) = serve::seed(&mut serve_command(&data, &mock.base_url(), &servers));
    // The mail server is away: whatever the process does, no mail leaves it.
    servers.stop();
    let mut first = serve::start(&mut serve_command(&data, &mock.base_url(), &servers)).await;
    let response = reqwest::Client::new()
        .post(format!("{}/api/v1/tickets", first.base))
        .bearer_auth(&customer)
        .json(&json!({ "message": "I was charged twice for my annual plan" }))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{response:?}");
    // The ticket and its mails committed; SIGKILL before any was sent.
    sigkill(&mut first);
    let written = outbox_of(&data).await;
    assert!(
        !written.is_empty(),
        "at least the received mail: {written:?}"
    );
    assert!(written.iter().all(|(_, s)| s == "pending"), "{written:?}");
    servers.start_again();
    let mut second = serve::start(&mut serve_command(&data, &mock.base_url(), &servers)).await;
    // The restarted process sends what was written (and the agent's reply, if the kill
    // came before the investigation): bounded, until every row is sent.
    // A mail the first process already tried while the server was away waits for its
    // retry (1 s, doubling per attempt): the bound leaves room for a few attempts made
    // on a slow, loaded machine before the kill.
    let mut after = Vec::new();
    for _ in 0..1200 {
        after = outbox_of(&data).await;
        if after.len() >= 2 && after.iter().all(|(_, s)| s == "sent") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    sigkill(&mut second);
    let attempts = outbox_attempts(&data).await;
    assert!(
        after.iter().all(|(_, s)| s == "sent"),
        "{after:?} {attempts:?}"
    );
    // Each mail once, its Message-ID the row's own (stable across the restart:
    // docs/spec/email.md), the one written before the kill among them.
    let mails = servers.wait_for(LI_WEI, after.len());
    let ids = distinct_ids(&mails);
    assert_eq!(ids.len(), after.len(), "{mails:#?}");
    for (row, _) in &written {
        assert!(
            ids.contains(&format!("{row}@shop.test")),
            "{row} in {ids:?}"
        );
    }
    println!(
        "killed before sending, restarted: {} mails, each once",
        ids.len()
    );
}

/// A case's decision, as compared between the two ways in.
async fn decision_of(app: &TestApp, ticket_id: &str) -> Value {
    let case_id: Option<String> = sqlx::query_scalar("SELECT id FROM cases WHERE ticket_id = $1")
        .bind(ticket_id)
        .fetch_optional(app.state.db.pool())
        .await
        .unwrap();
    let Some(case_id) = case_id else {
        return json!({ "case": null });
    };
    let case = app.case(&case_id).await;
    json!({
        "status": case["status"],
        "reason_code": case["reason_code"],
        "refund_total": case["refund_total"],
        "currency": case["currency"],
        "required_role": case["required_role"],
    })
}

/// Drains until no case of the app is still being investigated (a provider read may
/// wait for its retry, as `open_ticket` allows).
async fn settle_investigations(app: &TestApp) {
    for _ in 0..4 {
        app.drain().await;
        let open: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM cases WHERE status = 'investigating'")
                .fetch_one(app.state.db.pool())
                .await
                .unwrap();
        if open == 0 {
            return;
        }
        app.clock.advance(time::Duration::milliseconds(
            desk::runs::DEPENDENCY_RETRY_MS + 1,
        ));
    }
}

/// Every history ticket of the dev set
/// (`evals/history/varied-dev.jsonl`, whatever it holds) written as its customer's mail
/// by Python's `email` (`mailtool.py history`), sent through Postfix and taken from the
/// mailbox, reaches the same decision as the same messages posted to the API. A sample
/// (every 15th ticket) by default; `TEST_MAIL_DEVSET_EVERY=1` runs all of it.
#[tokio::test]
async fn every_dev_set_ticket_sent_as_mail_through_postfix_reaches_the_same_decision_as_through_the_api(
) {
    let Some(servers) = servers() else { return };
    let every = std::env::var("TEST_MAIL_DEVSET_EVERY").unwrap_or_else(|_| "15".into());
    let devset =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../evals/history/varied-dev.jsonl");
    let out = tempfile::tempdir().unwrap();
    let out_s = out.path().to_string_lossy().to_string();
    mail::mailtool(&[
        "history",
        &devset.to_string_lossy(),
        &out_s,
        SUPPORT,
        &every,
    ]);
    let manifest: Vec<Value> =
        serde_json::from_slice(&std::fs::read(out.path().join("manifest.json")).unwrap()).unwrap();
    let world = std::fs::read_to_string(out.path().join("world.json")).unwrap();
    let by_api = spawn_app_configured(Arc::new(Investigator), mail::api_only).await;
    let by_mail = app_on(&servers).await;
    for app in [&by_api, &by_mail] {
        desk::world::load_into_provider(&app.mock.base_url(), &world)
            .await
            .unwrap();
        desk::world::World::parse(&world)
            .unwrap()
            .load_into(&app.state.db)
            .await
            .unwrap();
    }
    let mut in_mailbox = 0;
    let mut differ = Vec::new();
    let mut outcomes = std::collections::BTreeMap::new();
    for entry in &manifest {
        let customer = entry["customer_id"].as_str().unwrap();
        let texts: Vec<&str> = entry["texts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        // Through the API: the first message opens the ticket, later ones are added.
        let ticket = by_api.post_ticket(customer, texts[0]).await;
        let api_ticket = ticket["id"].as_str().unwrap().to_string();
        settle_investigations(&by_api).await;
        let token = by_api.customer_token(customer).await;
        for text in &texts[1..] {
            let path = format!("/api/v1/tickets/{api_ticket}/messages");
            let (status, body) = by_api
                .request("POST", &path, Some(&token), Some(json!({ "text": text })))
                .await;
            assert!(status.is_success(), "{body}");
            settle_investigations(&by_api).await;
        }
        // Through Postfix: each mail sent with smtplib, taken by the watcher.
        let from = entry["from"].as_str().unwrap();
        for file in entry["files"].as_array().unwrap() {
            servers.send(
                from,
                &std::fs::read(out.path().join(file.as_str().unwrap())).unwrap(),
            );
            in_mailbox += 1;
            servers.wait_for(SUPPORT, in_mailbox);
            assert_eq!(take_mailbox(&by_mail).await.unwrap(), 1);
            settle_investigations(&by_mail).await;
        }
        let mail_tickets: Vec<String> =
            sqlx::query_scalar("SELECT id FROM tickets WHERE customer_id = $1")
                .bind(customer)
                .fetch_all(by_mail.state.db.pool())
                .await
                .unwrap();
        assert_eq!(
            mail_tickets.len(),
            1,
            "{}: one ticket for its mails",
            entry["ticket"]
        );
        let api = decision_of(&by_api, &api_ticket).await;
        let mail = decision_of(&by_mail, &mail_tickets[0]).await;
        if api != mail {
            differ.push(format!("{}: API {api} / mail {mail}", entry["ticket"]));
        }
        *outcomes.entry(api["status"].to_string()).or_insert(0usize) += 1;
    }
    println!(
        "dev set through Postfix: {} tickets ({in_mailbox} mails), {} with another decision than through the API; through the API: {outcomes:?}",
        manifest.len(),
        differ.len()
    );
    assert!(differ.is_empty(), "{differ:#?}");
}
