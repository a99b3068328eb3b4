//! A mail proves who sent it or leads to no money (docs/spec/email.md, "Who wrote"): only
//! the trusted receiving server's `Authentication-Results` (RFC 8601) with a DMARC pass,
//! or an SPF or DKIM pass aligned with the From domain, counts. Every other form opens
//! the ticket unverified — nothing proposed — until the customer signs in through the
//! link mailed to the address on record.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;

use super::{inbound, mail_app, outbox};
use crate::support::mail::{self, SUPPORT};
use crate::support::TestApp;

/// A mail in Li Wei's name about a real double charge (CN¥198 on O-1001), with
/// `headers` as the attacker (or the servers on the way) wrote them; nothing else added.
pub(crate) fn in_li_weis_name(headers: &[&str]) -> Vec<u8> {
    let mut args = vec![
        "build",
        "li.wei@example.cn",
        SUPPORT,
        "Charged twice",
        "I was charged twice for my annual plan, please refund",
    ];
    for h in headers {
        args.push("--header");
        args.push(h);
    }
    mail::mailtool(&args)
}

/// The forms that prove nothing, each named. Each opened a ticket whose case went on to
/// a CN¥198 refund awaiting approval before the sender was proven (docs/spec/email.md):
/// the old reading held a mail only on the exact words `spf=fail` or `dmarc=fail`.
pub(crate) const UNPROVEN: &[(&str, &[&str])] = &[
    ("no Authentication-Results at all", &[]),
    (
        "a fail with its comment glued on",
        &["Authentication-Results: mx.shop.test; spf=fail(not permitted) smtp.mailfrom=example.cn"],
    ),
    (
        "a fail spaced around its equals sign",
        &["Authentication-Results: mx.shop.test; spf = fail smtp.mailfrom = example.cn"],
    ),
    (
        "a DMARC fail with its policy glued on",
        &["Authentication-Results: mx.shop.test; dmarc=fail,p=reject header.from=example.cn"],
    ),
    ("only Received-SPF", &["Received-SPF: Fail (mailfrom) identity=mailfrom"]),
    (
        "a pass from a server nobody trusts",
        &["Authentication-Results: mx.attacker.test; dmarc=pass header.from=example.cn"],
    ),
    ("the none form", &["Authentication-Results: mx.shop.test; none"]),
    (
        "a temporary error",
        &["Authentication-Results: mx.shop.test; spf=temperror smtp.mailfrom=example.cn"],
    ),
    (
        "a pass for another domain",
        &["Authentication-Results: mx.shop.test; spf=pass smtp.mailfrom=attacker.test"],
    ),
];

async fn case_of(app: &TestApp, ticket_id: &str) -> Value {
    let case_id: String = sqlx::query_scalar("SELECT id FROM cases WHERE ticket_id = $1")
        .bind(ticket_id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    app.case(&case_id).await
}

/// What went wrong with one unproven mail, if anything: it must open its ticket, and
/// its case must wait with nothing proposed and the confirmation mail written.
async fn unproven_mail_waits(app: &TestApp, raw: &[u8]) -> Result<String, String> {
    let (status, body) = inbound(app, raw).await;
    if status != StatusCode::ACCEPTED || body["outcome"] != "opened" {
        return Err(format!("not opened: {status} {body}"));
    }
    let ticket_id = body["ticket_id"].as_str().unwrap_or_default().to_string();
    app.drain().await;
    let case = case_of(app, &ticket_id).await;
    if case["status"] != "awaiting_customer" || !case["fingerprint"].is_null() {
        return Err(format!(
            "case went on: {} {}",
            case["status"], case["fingerprint"]
        ));
    }
    let rows = outbox(app).await;
    let kinds: Vec<&str> = rows
        .iter()
        .filter(|(_, _, t, _)| t.as_deref() == Some(ticket_id.as_str()))
        .map(|(k, ..)| k.as_str())
        .collect();
    if kinds != ["confirm_sender"] {
        return Err(format!("mails for the ticket: {kinds:?}"));
    }
    Ok(ticket_id)
}

/// Seen failing before the fix: each of the nine forms of [`UNPROVEN`] reached
/// `awaiting_approval` with a CN¥198 proposal and its fingerprint ("case went on"), and
/// the forged pass below the server's own fail was held with no ticket ("not opened").
#[tokio::test]
async fn a_mail_that_proves_nothing_opens_its_ticket_but_proposes_no_money() {
    let mut failures = Vec::new();
    let mut forms: Vec<(&str, Vec<u8>)> = UNPROVEN
        .iter()
        .map(|(what, headers)| (*what, in_li_weis_name(headers)))
        .collect();
    // The trusted server's own fail on top, a sender's forged pass below it.
    let forged = in_li_weis_name(&[
        "Authentication-Results: mx.shop.test; dmarc=pass header.from=example.cn",
    ]);
    forms.push((
        "a forged pass below the server's own fail",
        mail::stamped(&forged, "spf=fail smtp.mailfrom=example.cn"),
    ));
    for (what, raw) in forms {
        let app = mail_app().await;
        if let Err(why) = unproven_mail_waits(&app, &raw).await {
            failures.push(format!("{what}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Seen failing before the fix: the unproven mail's case went on to `awaiting_approval`
/// at once, no confirmation asked ("case went on: awaiting_approval").
#[tokio::test]
async fn an_unproven_mail_proceeds_once_the_customer_signs_in_through_the_mailed_link() {
    let app = mail_app().await;
    let ticket_id = unproven_mail_waits(&app, &in_li_weis_name(&[]))
        .await
        .unwrap();
    // Another sign-in confirms nothing.
    let other = app.sign_in_link("C-100", "/tickets").await;
    let other = other
        .split("link=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    sign_in(&app, other).await;
    app.drain().await;
    assert_eq!(
        case_of(&app, &ticket_id).await["status"],
        "awaiting_customer"
    );
    let link = super::confirm_link(&app).await;
    sign_in(&app, &link).await;
    app.drain().await;
    let case = case_of(&app, &ticket_id).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
}

/// A DMARC pass of the trusted server for the From domain, or its aligned SPF or DKIM
/// pass, is proof: the case goes on as a page's does (this passed before the fix too).
#[tokio::test]
async fn a_mail_the_trusted_server_proves_goes_on_to_its_proposal() {
    let app = mail_app().await;
    for (n, results) in [
        "dmarc=pass (p=reject) header.from=example.cn",
        "spf=pass smtp.mailfrom=li.wei@example.cn",
        "dkim=pass header.d=example.cn header.b=Ab/+9==",
    ]
    .iter()
    .enumerate()
    {
        let raw = mail::stamped(&in_li_weis_name(&[]), results);
        let (_, body) = inbound(&app, &raw).await;
        assert_eq!(body["outcome"], "opened", "{results}: {body}");
        app.drain().await;
        let case = case_of(&app, body["ticket_id"].as_str().unwrap()).await;
        // The second and third join the first's open case on the same order.
        if n == 0 {
            assert_eq!(case["status"], "awaiting_approval", "{results}: {case:#}");
        } else {
            assert_ne!(case["status"], "awaiting_customer", "{results}: {case:#}");
        }
    }
}

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

/// Every form above through real Postfix and Dovecot (`scripts/mail-servers`): Postfix
/// writes the receiving server's verdict for each envelope sender (`form-N@relay.test`),
/// as a border server does after its checks, above a mail in Li Wei's name; the desk takes
/// the support mailbox over IMAP. Every one opens its ticket and proposes nothing; one
/// Postfix proves (its SPF pass for example.cn) goes on to its proposal.
///
/// Seen failing before the fix: each unproven form "went on" to `awaiting_approval` (the
/// API test above); the forged pass below Postfix's own fail was held with no ticket.
#[tokio::test]
async fn every_form_of_authentication_results_through_postfix_proves_only_what_it_says() {
    let mut rules = String::new();
    let mut forms: Vec<(String, String, Vec<u8>)> = Vec::new();
    for (n, (what, headers)) in UNPROVEN.iter().enumerate() {
        let sender = format!("form-{n}@relay.test");
        // The forms' fields as Postfix's verdict: it writes the first, on top.
        let rule = match headers.first() {
            Some(field) => format!("PREPEND {field}"),
            None => "DUNNO".to_string(),
        };
        rules.push_str(&format!("/^form-{n}@relay\\.test$/ {rule}\n"));
        forms.push((what.to_string(), sender, in_li_weis_name(&[])));
    }
    rules.push_str("/^forged@relay\\.test$/ PREPEND Authentication-Results: mx.shop.test; spf=fail smtp.mailfrom=example.cn\n");
    forms.push((
        "a forged pass below Postfix's own fail".into(),
        "forged@relay.test".into(),
        in_li_weis_name(&[
            "Authentication-Results: mx.shop.test; dmarc=pass header.from=example.cn",
        ]),
    ));
    if std::env::var("TEST_MAIL_SERVERS").is_err() {
        eprintln!("\n*** NOT RUN: set TEST_MAIL_SERVERS=1 after scripts/mail-servers install (.ci/run does) ***\n");
        return;
    }
    let servers = mail::MailServers::start_with_sender_results(&rules);
    let app = crate::support::spawn_app_configured(
        std::sync::Arc::new(desk::agent::investigator::Investigator),
        |c| servers.configure(c),
    )
    .await;
    let mut failures = Vec::new();
    for (n, (what, sender, raw)) in forms.iter().enumerate() {
        // A new hour for each: under the one customer's tickets-per-hour limit.
        app.clock.advance(time::Duration::minutes(61));
        servers.send(sender, raw);
        servers.wait_for(SUPPORT, n + 1);
        let target = app
            .state
            .channels
            .mail
            .imap
            .clone()
            .expect("IMAP_URL is set");
        desk::mail::imap_watch::run_once(app.state.intake(), &target)
            .await
            .unwrap();
        app.drain().await;
        if let Err(why) = newest_ticket_waits(&app).await {
            failures.push(format!("{what}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // Postfix's SPF pass for the envelope sender's domain, aligned with the From domain.
    app.clock.advance(time::Duration::minutes(61));
    servers.send("li.wei@example.cn", &in_li_weis_name(&[]));
    servers.wait_for(SUPPORT, forms.len() + 1);
    let target = app
        .state
        .channels
        .mail
        .imap
        .clone()
        .expect("IMAP_URL is set");
    desk::mail::imap_watch::run_once(app.state.intake(), &target)
        .await
        .unwrap();
    app.drain().await;
    let ticket_id = newest_ticket(&app).await;
    let case = case_of(&app, &ticket_id).await;
    assert_ne!(case["status"], "awaiting_customer", "{case:#}");
    assert!(!case["fingerprint"].is_null(), "proven: proposed {case:#}");
}

async fn newest_ticket(app: &TestApp) -> String {
    sqlx::query_scalar("SELECT id FROM tickets ORDER BY created_at DESC, id DESC LIMIT 1")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

/// The newest ticket's case waits for the customer, nothing proposed.
async fn newest_ticket_waits(app: &TestApp) -> Result<(), String> {
    let tickets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tickets")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    let reasons: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT status, reason FROM mail_inbound ORDER BY seq DESC LIMIT 1")
            .fetch_all(app.state.db.pool())
            .await
            .unwrap();
    if reasons.first().and_then(|(_, r)| r.as_deref()) != Some("unverified_sender") {
        return Err(format!("taken as {reasons:?} ({tickets} tickets)"));
    }
    let case = case_of(app, &newest_ticket(app).await).await;
    if case["status"] != "awaiting_customer" || !case["fingerprint"].is_null() {
        return Err(format!(
            "case went on: {} {}",
            case["status"], case["fingerprint"]
        ));
    }
    Ok(())
}
