//! Email (docs/spec/email.md): mail in through `POST /api/v1/inbound/email`,
//! the outbox written with each change, and — in `mail_servers` — the whole way through
//! real Postfix and Dovecot. Every test mail is built by Python's `email` package.
//!
//! Long because mail's journeys share one builder of mails and one reader of the outbox
//! (below, before the tests); the real-server journeys are apart in `mail_servers`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::agent::investigator::Investigator;
use serde_json::{json, Value};
use sqlx::Row;

use crate::support::mail::{self, INBOUND_TOKEN, SUPPORT};
use crate::support::{spawn_app_configured, TestApp};

mod bounces;
mod mail_servers;
mod proof;

pub(crate) async fn mail_app() -> TestApp {
    spawn_app_configured(Arc::new(Investigator), mail::api_only).await
}

/// `POST /api/v1/inbound/email` with `raw` as the mail server would send it.
pub(crate) async fn inbound(app: &TestApp, raw: &[u8]) -> (StatusCode, Value) {
    let request = Request::post("/api/v1/inbound/email")
        .header("authorization", format!("Bearer {INBOUND_TOKEN}"))
        .header("content-type", "message/rfc822")
        .body(Body::from(raw.to_vec()))
        .unwrap();
    let (status, body) = app.raw(request).await;
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// The outbox as `(kind, recipient_kind, ticket_id, status)`, oldest first.
pub(crate) async fn outbox(app: &TestApp) -> Vec<(String, String, Option<String>, String)> {
    sqlx::query(
        "SELECT kind, recipient_kind, ticket_id, status FROM mail_outbox ORDER BY created_at, seq, id",
    )
    .fetch_all(app.state.db.pool())
    .await
    .unwrap()
    .iter()
    .map(|r| {
        (
            r.get("kind"),
            r.get("recipient_kind"),
            r.get("ticket_id"),
            r.get("status"),
        )
    })
    .collect()
}

fn kinds_for(outbox: &[(String, String, Option<String>, String)], ticket: &str) -> Vec<String> {
    outbox
        .iter()
        // The ticket's customer's mails (staff mails about it are counted apart).
        .filter(|(_, to, t, _)| t.as_deref() == Some(ticket) && to == "customer")
        .map(|(k, ..)| k.clone())
        .collect()
}

async fn ticket_messages(app: &TestApp, ticket_id: &str) -> Vec<Value> {
    // The staff view of the thread (with each mail's quoted part), as the case API and
    // the console read it.
    let messages = desk::tickets::messages(&app.state.db, ticket_id)
        .await
        .unwrap();
    serde_json::to_value(messages)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_customer_mail_opens_a_ticket_in_their_language_and_writes_the_received_mail() {
    let app = mail_app().await;
    let raw = mail::build(
        "\"Li Wei\" <Li.Wei@Example.CN>",
        "重复扣款",
        "我的年度会员被扣了两次款，订单 O-1001。",
        &["Reply-To: someone.else@evil.test"],
    );
    let (status, body) = inbound(&app, &raw).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["outcome"], "opened", "{body}");
    let ticket_id = body["ticket_id"].as_str().unwrap();
    let (_, ticket) = app.customer_ticket("C-100", ticket_id).await;
    assert_eq!(ticket["language"], "zh", "{ticket}");
    assert_eq!(ticket["messages"][0]["channel"], "email");
    assert!(ticket["messages"][0]["body"]
        .as_str()
        .unwrap()
        .contains("被扣了两次款"));
    // The received mail is in the outbox with the ticket, for the customer on record
    // (never the Reply-To): the row names the customer, not an address.
    let row = sqlx::query(
        "SELECT kind, recipient_kind, customer_id, address FROM mail_outbox WHERE ticket_id = $1",
    )
    .bind(ticket_id)
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(row.get::<String, _>("kind"), "received");
    assert_eq!(row.get::<String, _>("recipient_kind"), "customer");
    assert_eq!(row.get::<String, _>("customer_id"), "C-100");
    assert_eq!(row.get::<Option<String>, _>("address"), None);
}

#[tokio::test]
async fn every_charset_and_encoding_reaches_the_ticket_as_the_customer_wrote_it() {
    let app = mail_app().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_string_lossy().to_string();
    // Six customers, so no one of them reaches the flood limit.
    let senders = [
        "li.wei@example.cn",
        "emma.johnson@example.com",
        "lukas.mueller@example.de",
        "yuki.sato@example.jp",
        "zhang.min@example.cn",
        "wang.fang@example.cn",
    ];
    let mut built = Vec::new();
    for sender in senders {
        let sub = dir.path().join(sender);
        let sub_s = sub.to_string_lossy().to_string();
        mail::mailtool(&["corpus", &sub_s, sender, SUPPORT]);
        built.push(sub);
    }
    let manifest: Vec<Value> =
        serde_json::from_slice(&std::fs::read(built[0].join("manifest.json")).unwrap()).unwrap();
    let mut checked = 0;
    for (n, entry) in manifest.iter().enumerate() {
        let file = entry["file"].as_str().unwrap();
        let raw = std::fs::read(built[n % built.len()].join(file)).unwrap();
        // A new hour for each, under the tickets-per-hour limit of any one customer.
        app.clock.advance(time::Duration::minutes(61));
        let (status, body) = inbound(&app, &raw).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{file}: {body}");
        assert_eq!(body["outcome"], "opened", "{file}: {body}");
        let messages = ticket_messages(&app, body["ticket_id"].as_str().unwrap()).await;
        let text = messages[0]["body"].as_str().unwrap();
        let expect = entry["expect"].as_str().unwrap();
        assert!(
            text.contains(expect),
            "{file} ({}, {}): {text:?} lacks {expect:?}",
            entry["charset"],
            entry["form"]
        );
        assert!(
            !text.contains('\u{fffd}') && !text.contains("\u{1b}$B"),
            "{file}: undecoded bytes in {text:?}"
        );
        if entry["form"] == "multipart/alternative" {
            assert!(
                !text.contains("must not win"),
                "plain text preferred: {text:?}"
            );
        }
        if entry["form"] == "html only" {
            assert!(
                !text.contains('<') && !text.contains("color:red"),
                "HTML turned to text: {text:?}"
            );
        }
        checked += 1;
    }
    let charsets: std::collections::BTreeSet<&str> = manifest
        .iter()
        .map(|e| e["charset"].as_str().unwrap())
        .collect();
    println!(
        "{checked} mails in {} charsets reached their tickets decoded: {charsets:?}",
        charsets.len()
    );
    assert_eq!(checked, manifest.len());
    for charset in [
        "utf-8",
        "iso-2022-jp",
        "shift_jis",
        "gb18030",
        "gbk",
        "big5",
        "iso-8859-1",
        "iso-8859-2",
        "windows-1250",
        "windows-1251",
        "windows-1252",
    ] {
        assert!(charsets.contains(charset), "{charset} is in the corpus");
    }
    let _ = out;
}

#[tokio::test]
async fn the_same_mail_twice_is_a_duplicate_and_opens_one_ticket() {
    let app = mail_app().await;
    let raw = mail::build(
        "li.wei@example.cn",
        "Charged twice",
        "I was charged twice for O-1001.",
        &[],
    );
    let (_, first) = inbound(&app, &raw).await;
    assert_eq!(first["outcome"], "opened");
    let (status, second) = inbound(&app, &raw).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(second["outcome"], "duplicate", "{second}");
    assert_eq!(second["ticket_id"], first["ticket_id"]);
    let tickets: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM tickets WHERE customer_id = 'C-100'")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(tickets, 1);
}

#[tokio::test]
async fn a_reply_continues_its_ticket_by_our_message_id_and_else_by_the_subject_token() {
    let app = mail_app().await;
    let raw = mail::build(
        "li.wei@example.cn",
        "Charged twice",
        "I was charged twice for O-1001.",
        &[],
    );
    let (_, opened) = inbound(&app, &raw).await;
    let ticket_id = opened["ticket_id"].as_str().unwrap().to_string();
    let (outbox_id,): (String,) = sqlx::query_as("SELECT id FROM mail_outbox WHERE ticket_id = $1")
        .bind(&ticket_id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    let ours = format!("<{outbox_id}@shop.test>");
    let reply = mail::build(
        "li.wei@example.cn",
        "Re: something else entirely",
        "Any news?\n\nOn Mon, Support <support@shop.test> wrote:\n> We received your request",
        &[
            &format!("In-Reply-To: {ours}"),
            &format!("References: {ours}"),
        ],
    );
    let (_, appended) = inbound(&app, &reply).await;
    assert_eq!(appended["outcome"], "appended", "{appended}");
    assert_eq!(appended["ticket_id"], ticket_id.as_str());
    // No thread headers (a client that drops them): the token in the subject.
    let by_token = mail::build(
        "li.wei@example.cn",
        &format!("Re: Charged twice [#{ticket_id}]"),
        "Still waiting.",
        &[],
    );
    let (_, appended) = inbound(&app, &by_token).await;
    assert_eq!(appended["outcome"], "appended", "{appended}");
    assert_eq!(appended["ticket_id"], ticket_id.as_str());
    // Someone else's ticket token opens their own ticket instead: threads never cross.
    let other = mail::build(
        "emma.johnson@example.com",
        &format!("Re: [#{ticket_id}]"),
        "Mine too.",
        &[],
    );
    let (_, theirs) = inbound(&app, &other).await;
    assert_eq!(theirs["outcome"], "opened", "{theirs}");
    assert_ne!(theirs["ticket_id"], ticket_id.as_str());
    // The new words reached the ticket; the quote is kept apart, for staff.
    let messages = ticket_messages(&app, &ticket_id).await;
    assert_eq!(messages[1]["body"], "Any news?");
    assert!(messages[1]["quoted"]
        .as_str()
        .unwrap()
        .contains("We received your request"));
}

#[tokio::test]
async fn an_unknown_sender_gets_one_reply_in_their_language_and_no_ticket() {
    let app = mail_app().await;
    for n in 0..3 {
        let raw = mail::build(
            "stranger@example.org",
            "退款",
            &format!("我要退款 {n}"),
            &[],
        );
        let (status, body) = inbound(&app, &raw).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        assert_eq!(body["outcome"], "ignored");
        assert_eq!(body["reason"], "unknown_sender");
        assert!(body["ticket_id"].is_null());
    }
    let rows = sqlx::query("SELECT kind, address, language FROM mail_outbox")
        .fetch_all(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "one reply for three mails");
    assert_eq!(rows[0].get::<String, _>("kind"), "unknown_sender");
    assert_eq!(rows[0].get::<String, _>("address"), "stranger@example.org");
    assert_eq!(rows[0].get::<String, _>("language"), "zh");
    let tickets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tickets")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(tickets, 0);
}

#[tokio::test]
async fn auto_replies_bounces_and_our_own_address_get_no_reply_and_a_bounce_marks_the_address() {
    let app = mail_app().await;
    let out_of_office = mail::build(
        "li.wei@example.cn",
        "Out of office",
        "I am away until Monday.",
        &["Auto-Submitted: auto-replied", "X-Autoreply: yes"],
    );
    let bulk = mail::build(
        "emma.johnson@example.com",
        "Newsletter",
        "News.",
        &["Precedence: bulk"],
    );
    let ours = mail::build(SUPPORT, "Loop?", "We received your request", &[]);
    for (raw, reason) in [
        (&out_of_office, "auto_reply"),
        (&bulk, "auto_reply"),
        (&ours, "our_own_address"),
    ] {
        let (_, body) = inbound(&app, raw).await;
        assert_eq!(body["outcome"], "ignored", "{body}");
        assert_eq!(body["reason"], reason, "{body}");
    }
    // A delivery report for Li Wei's address, built as a mail server writes one.
    let bounce = bounce_for("li.wei@example.cn");
    let (_, body) = inbound(&app, &bounce).await;
    assert_eq!(body["reason"], "bounce", "{body}");
    assert!(
        outbox(&app).await.is_empty(),
        "nothing answered: {:?}",
        outbox(&app).await
    );
    let tickets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tickets")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(tickets, 0);
    // A bounce of our own mail marks the address, and staff see it on the case.
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let ours: String = sqlx::query_scalar(
        "SELECT id FROM mail_outbox WHERE customer_id = 'C-100' ORDER BY seq DESC LIMIT 1",
    )
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    let ours = mailbox::message_id(&ours, "shop.test");
    let bounce = mail::mailtool(&[
        "bounce",
        SUPPORT,
        "li.wei@example.cn",
        "--message-id",
        &ours,
    ]);
    inbound(&app, &bounce).await;
    let case = app.case(case["id"].as_str().unwrap()).await;
    assert!(
        case["customer_email_undeliverable"]
            .as_str()
            .unwrap()
            .contains("bounced for good"),
        "{case:#}"
    );
}

/// A delivery status notification (RFC 3464) for `address`, built by Python's `email`
/// as a mail server writes one.
pub(crate) fn bounce_for(address: &str) -> Vec<u8> {
    mail::mailtool(&["bounce", SUPPORT, address])
}

#[tokio::test]
async fn a_hundred_mails_from_one_address_in_a_minute_are_held_and_all_processed_later() {
    let app = mail_app().await;
    let mut held = 0;
    let mut taken = 0;
    let first = mail::build(
        "li.wei@example.cn",
        "Charged twice",
        "Mail 0: charged twice for O-1001.",
        &[],
    );
    let (_, opened) = inbound(&app, &first).await;
    let ticket_id = opened["ticket_id"].as_str().unwrap().to_string();
    taken += 1;
    for n in 1..100 {
        // Each answers the ticket (a customer hammering "any news?").
        let raw = mail::build(
            "li.wei@example.cn",
            &format!("Re: Charged twice [#{ticket_id}]"),
            &format!("Mail {n}: any news?"),
            &[],
        );
        let (status, body) = inbound(&app, &raw).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        match body["reason"].as_str() {
            Some("held_rate_limited") => held += 1,
            _ => taken += 1,
        }
    }
    println!("in the first minute: {taken} taken, {held} held");
    assert_eq!(
        taken as i64,
        desk::mail::intake::MAILS_PER_SENDER_PER_MINUTE
    );
    assert_eq!(held + taken, 100);
    // Minute by minute, the worker takes the held mail in, in order, nothing dropped.
    for _ in 0..30 {
        app.clock.advance(time::Duration::seconds(61));
        app.drain().await;
    }
    let messages = ticket_messages(&app, &ticket_id).await;
    let customer: Vec<&str> = messages
        .iter()
        .filter(|m| m["author"] == "customer")
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    assert_eq!(customer.len(), 100, "every mail reached the ticket");
    for (n, body) in customer.iter().enumerate() {
        assert!(
            body.contains(&format!("Mail {n}:")),
            "in order: {n} is {body:?}"
        );
    }
    let waiting: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM mail_inbound WHERE status <> 'done'")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(waiting, 0);
}

/// A reply that does not prove its sender is held whole, not added to the ticket (its
/// words would send a decided case back to investigation), until the customer signs in
/// through the link mailed for it.
#[tokio::test]
async fn an_unproven_reply_is_held_until_the_customer_signs_in_through_the_mailed_link() {
    let app = mail_app().await;
    let first = mail::build(
        "li.wei@example.cn",
        "Charged twice",
        "Charged twice for O-1001.",
        &[],
    );
    let (_, opened) = inbound(&app, &first).await;
    let ticket_id = opened["ticket_id"].as_str().unwrap().to_string();
    app.drain().await;
    let raw = mail::build_as_written(
        "li.wei@example.cn",
        &format!("Re: Charged twice [#{ticket_id}]"),
        "Refund it to my other card instead.",
        &["Authentication-Results: mx.shop.test; spf=fail smtp.mailfrom=example.cn"],
    );
    let (_, body) = inbound(&app, &raw).await;
    assert_eq!(body["outcome"], "ignored", "{body}");
    assert_eq!(body["reason"], "held_unverified_sender");
    app.drain().await;
    let customer_words = |messages: Vec<Value>| {
        messages
            .iter()
            .filter(|m| m["author"] == "customer")
            .count()
    };
    assert_eq!(customer_words(ticket_messages(&app, &ticket_id).await), 1);
    let rows = outbox(&app).await;
    assert_eq!(rows.last().unwrap().0, "confirm_sender", "{rows:?}");
    // Any other sign-in releases nothing.
    let other = app.sign_in_link("C-100", "/tickets").await;
    sign_in(
        &app,
        other
            .split("link=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap(),
    )
    .await;
    app.drain().await;
    assert_eq!(customer_words(ticket_messages(&app, &ticket_id).await), 1);
    let link = confirm_link(&app).await;
    sign_in(&app, &link).await;
    app.drain().await;
    let messages = ticket_messages(&app, &ticket_id).await;
    assert_eq!(customer_words(messages.clone()), 2, "{messages:#?}");
    assert!(messages
        .iter()
        .any(|m| m["body"].as_str().unwrap().contains("other card")));
}

/// The confirmation mail's link, issued and tied to the held mail as the sender does
/// when it renders the mail (SMTP is not configured in the API-only app).
async fn confirm_link(app: &TestApp) -> String {
    let key: String =
        sqlx::query_scalar("SELECT in_reply_to FROM mail_outbox WHERE kind = 'confirm_sender'")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    let mut tx = app.state.db.begin().await.unwrap();
    let now = desk::clock::Clock::now_ms(app.clock.as_ref());
    let token = desk::auth::issue_mail_sign_in_link(&mut tx, "C-100", now)
        .await
        .unwrap();
    let id = mailbox::inbound::unverified_by_key(&mut tx, &key)
        .await
        .unwrap()
        .unwrap();
    mailbox::inbound::set_confirm_link(&mut tx, &id, &desk::auth::token_hash(&token))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    token
}

/// Signs in through a link as the browser does (the form's POST).
async fn sign_in(app: &TestApp, token: &str) {
    let response = app
        .response(
            Request::post("/sign-in")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(format!("link={token}&next=/tickets")))
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_inbound_route_refuses_a_missing_or_wrong_token_and_a_body_that_is_no_mail() {
    let app = mail_app().await;
    let raw = mail::build("li.wei@example.cn", "x", "y", &[]);
    for token in [None, Some("wrong"), Some(app.agent_token.as_str())] {
        let mut request =
            Request::post("/api/v1/inbound/email").header("content-type", "message/rfc822");
        if let Some(t) = token {
            request = request.header("authorization", format!("Bearer {t}"));
        }
        let (status, body) = app
            .raw(request.body(Body::from(raw.clone())).unwrap())
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}: {body}");
    }
    let request = Request::post("/api/v1/inbound/email")
        .header("authorization", format!("Bearer {INBOUND_TOKEN}"))
        .header("content-type", "application/json")
        .body(Body::from(raw.clone()))
        .unwrap();
    let (status, body) = app.raw(request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("unsupported_media_type"), "{body}");
    let (status, body) = inbound(&app, b"\x00\x01 not a mail").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(outbox(&app).await.is_empty());
    // Without INBOUND_EMAIL_TOKEN the route refuses everyone.
    let closed = crate::support::spawn_app().await;
    let (status, _) = inbound(&closed, &raw).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn attachments_are_kept_and_served_to_staff_only_as_downloads_never_rendered() {
    let app = mail_app().await;
    let script = format!(
        r#"
import sys
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.mime.application import MIMEApplication
m = MIMEMultipart("mixed")
m["From"] = "li.wei@example.cn"; m["To"] = "{SUPPORT}"; m["Subject"] = "Receipts"
m["Message-ID"] = "<att-1@example.cn>"
m.attach(MIMEText("Receipts attached."))
html = MIMEText("<script>alert(1)</script>", "html")
html.add_header("Content-Disposition", "attachment", filename="../../evil.html")
m.attach(html)
for n in range(11):
    a = MIMEApplication(b"%PDF-1.4 " + bytes([n]), "pdf")
    a.add_header("Content-Disposition", "attachment", filename=f"r{{n}}.pdf")
    m.attach(a)
sys.stdout.buffer.write(m.as_bytes())
"#
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (_, body) = inbound(&app, &out.stdout).await;
    assert_eq!(body["outcome"], "opened", "{body}");
    let ticket_id = body["ticket_id"].as_str().unwrap();
    let kept = mailbox::attachments::of_ticket(&app.state.db, ticket_id)
        .await
        .unwrap();
    assert_eq!(
        kept.len(),
        desk::mail::intake::MAX_ATTACHMENTS,
        "ten kept of twelve"
    );
    let messages = ticket_messages(&app, ticket_id).await;
    assert!(
        messages[0]["quoted"]
            .as_str()
            .unwrap()
            .contains("attachment not kept"),
        "{messages:?}"
    );
    let html = kept
        .iter()
        .find(|a| a.filename == "evil.html")
        .expect("the file name lost its path");
    let path = format!("/api/v1/attachments/{}", html.id);
    // A customer may not fetch it; staff get it as a download.
    let customer = app.customer_token("C-100").await;
    let (status, _) = app.request("GET", &path, Some(&customer), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let response = app
        .response(
            Request::get(&path)
                .header("authorization", format!("Bearer {}", app.agent_token))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers();
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert!(headers["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment; filename=\"evil.html\""));
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(headers["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("sandbox"));
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    assert_eq!(&bytes[..], b"<script>alert(1)</script>");
}

#[tokio::test]
async fn staff_see_each_message_s_channel_and_the_quoted_part_collapsed() {
    let app = mail_app().await;
    let raw = mail::build("li.wei@example.cn", "Charged twice", "I was charged twice for my annual plan.\n\nOn Mon, Shop <shop@x.test> wrote:\n> Thank you for your order O-9999", &[]);
    let (_, body) = inbound(&app, &raw).await;
    let ticket_id = body["ticket_id"].as_str().unwrap();
    app.drain().await;
    let case_id: String = sqlx::query_scalar("SELECT id FROM cases WHERE ticket_id = $1")
        .bind(ticket_id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let (status, page) = app
        .raw(
            Request::get(format!("/console/cases/{case_id}"))
                .header("cookie", cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("data-channel=\"email\""),
        "the channel is shown"
    );
    assert!(
        page.contains("<details class=\"quoted\"><summary>"),
        "the quote is collapsed"
    );
    assert!(page.contains("O-9999"), "and there");
    // The investigator read the new words only: the quoted order is no part of its facts.
    let case = app.case(&case_id).await;
    assert_ne!(case["evidence"]["order_id"], "O-9999", "{case:#}");
}

#[tokio::test]
async fn every_customer_facing_change_writes_its_mail_in_the_same_transaction() {
    let app = mail_app().await;
    // Through the page's API, not mail: every customer hears back by mail either way.
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(
        kinds_for(&outbox(&app).await, &ticket_id),
        ["received", "reply"]
    );
    let case_id = case["id"].as_str().unwrap();
    let (status, body) = app
        .approve(
            &app.supervisor_token,
            case_id,
            case["fingerprint"].as_str().unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        kinds_for(&outbox(&app).await, &ticket_id),
        ["received", "reply", "approved"]
    );
    app.drain().await;
    let case = app.case(case_id).await;
    assert_eq!(case["status"], "refund_succeeded", "{case:#}");
    assert_eq!(
        kinds_for(&outbox(&app).await, &ticket_id),
        ["received", "reply", "approved", "completed"]
    );
    // A staff reply, then a close with a last reply: one mail each.
    app.staff_message(case_id, "Glad we could help.", false)
        .await;
    app.staff_message(case_id, "internal only", true).await;
    app.close_case(case_id).await;
    assert_eq!(
        kinds_for(&outbox(&app).await, &ticket_id),
        [
            "received",
            "reply",
            "approved",
            "completed",
            "reply",
            "closed"
        ]
    );
    // A refused change writes nothing: approving again is a conflict and no mail.
    let (status, _) = app.approve(&app.supervisor_token, case_id, "stale").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(kinds_for(&outbox(&app).await, &ticket_id).len(), 6);
}

#[tokio::test]
async fn a_rejection_an_escalation_and_an_assignment_mail_the_customer_and_the_staff_concerned() {
    let app = mail_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/reject"),
            Some(&app.supervisor_token),
            Some(json!({"fingerprint": case["fingerprint"], "reason": "checked by phone"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        kinds_for(&outbox(&app).await, &ticket_id).last().unwrap(),
        "rejected"
    );
    let (status, _) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/assign"),
            Some(&app.supervisor_token),
            Some(json!({"email": "agent@test.example"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let staff: Vec<(String, String)> = sqlx::query_as("SELECT o.kind, s.email FROM mail_outbox o JOIN staff s ON s.id = o.staff_id WHERE o.recipient_kind = 'staff'")
        .fetch_all(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(
        staff,
        [(
            "staff_assigned".to_string(),
            "agent@test.example".to_string()
        )]
    );
    // An escalation (another customer's order named in the chat) waits for the
    // supervisors: each hears of it by mail; the customer gets exactly what an
    // order that exists nowhere would get (RP-007: neither confirm nor deny),
    // the question which order they mean.
    let (ticket2, case2) = app
        .open_ticket(
            "C-200",
            "I was charged twice on order O-1001, refund it now, the manager approved.",
        )
        .await;
    assert_eq!(case2["status"], "escalated", "{case2:#}");
    assert_eq!(
        kinds_for(&outbox(&app).await, &ticket2),
        ["received", "question"]
    );
    let escalations: Vec<(String, String)> = sqlx::query_as("SELECT o.case_id, s.role FROM mail_outbox o JOIN staff s ON s.id = o.staff_id WHERE o.kind = 'staff_escalation'")
        .fetch_all(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(
        escalations,
        [(
            case2["id"].as_str().unwrap().to_string(),
            "supervisor".to_string()
        )]
    );
}

/// RP-007 on the mail channel (docs/spec/domain.md, "Whose order"): a proven mail naming
/// another customer's order is escalated to the supervisors and flagged, while the
/// customer's mails and page say exactly what a mail naming an order that exists nowhere
/// gets — the question which order they mean.
#[tokio::test]
async fn a_mail_naming_another_customers_order_reads_to_the_customer_like_an_unknown_order() {
    let app = mail_app().await;
    let mut opened = Vec::new();
    for order in ["O-2001", "O-2999"] {
        let raw = mail::build(
            "\"Zhang Min\" <zhang.min@example.cn>",
            "Charged twice",
            &format!("Hello, please refund order {order}, I was charged twice.\n\nZhang Min"),
            &[],
        );
        let (status, body) = inbound(&app, &raw).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert_eq!(body["outcome"], "opened", "{body}");
        opened.push(body["ticket_id"].as_str().unwrap().to_string());
    }
    app.drain().await;
    let case_of = |ticket| crate::customer::case_id_of(&app, ticket);
    let theirs = app.case(&case_of(&opened[0]).await).await;
    assert_eq!(theirs["status"], "escalated", "{theirs:#}");
    assert_eq!(theirs["reason_code"], "ownership_mismatch");
    assert_eq!(theirs["queue"], "supervisors", "{theirs:#}");
    let nobodys = app.case(&case_of(&opened[1]).await).await;
    assert_eq!(nobodys["status"], "awaiting_customer", "{nobodys:#}");
    let seen = |ticket| crate::customer::seen_by_the_customer(&app, "C-500", ticket);
    let same = |lines: Vec<String>| -> Vec<String> {
        lines
            .iter()
            .map(|l| l.replace("O-2001", "<order>").replace("O-2999", "<order>"))
            .collect()
    };
    let (a, b) = (seen(&opened[0]).await, seen(&opened[1]).await);
    assert!(
        a.iter().filter(|l| l.starts_with("mail ")).count() >= 2,
        "{a:#?}"
    );
    assert_eq!(
        same(a.clone()),
        same(b.clone()),
        "another customer's order:\n{a:#?}\nno such order:\n{b:#?}"
    );
    let flagged: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'security_flag' AND subject = $1",
    )
    .bind(theirs["id"].as_str().unwrap())
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(flagged, 1, "the escalation is audited as a security flag");
}
