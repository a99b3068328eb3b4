//! The quality review (docs/spec/interfaces.md, "QA"): every person's approval,
//! rejection and hand decision, and every agent proposal, checked against the policy in
//! force and shown on the lead's page `/console/qa` — the decisions outside the policy
//! one click from their case, CSAT and reconcile drift beside them; empty pages that
//! say what is missing rather than a percentage of nothing.

use std::time::Instant;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;

use crate::browser::screenshot_dir;
use crate::support::browser::{serve, Browser};
use crate::support::{spawn_app, TestApp};

async fn shadow_app() -> TestApp {
    let mut app = spawn_app().await;
    app.state.shadow_mode = true;
    app.router = web::router(app.state.clone());
    app
}

/// A console page as `email` sees it.
async fn page(app: &TestApp, email: &str, path: &str) -> (StatusCode, String) {
    let (cookie, _) = app.staff_session(email).await;
    app.raw(
        Request::get(path)
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

/// The part of `html` from the element with `id` on.
fn from_id<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    &html[at..]
}

/// A reviewer's hand refund above what the policy allows, made through the API.
async fn refund_above_the_policy(app: &TestApp) -> String {
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let body = json!({"outcome": "refund", "reason": "duplicate_charge",
        "refunds": [{"charge_id": "ch_1001b", "amount": "500.00", "currency": "CNY"}]});
    let (status, decided) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/decide"),
            Some(&app.supervisor_token),
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    case_id
}

#[tokio::test]
async fn a_refund_outside_the_policy_is_on_the_qa_page_at_once_linked_to_its_case() {
    let app = shadow_app().await;
    let case_id = refund_above_the_policy(&app).await;
    let decided = Instant::now();
    let (status, html) = page(&app, "supervisor@test.example", "/console/qa").await;
    assert_eq!(status, StatusCode::OK);
    assert!(decided.elapsed().as_secs() < 60);
    let breaches = from_id(&html, "qa-breaches");
    let row = format!("<a href=\"/console/cases/{case_id}\">{case_id}</a>");
    assert!(breaches.contains(&row), "{breaches}");
    assert!(breaches.contains("supervisor@test.example"));
    assert!(
        breaches.contains("the policy allows at most 198.00"),
        "{breaches}"
    );
    // The agent's proposal on the same case was checked too, and is within the policy.
    let people = from_id(&html, "qa-by-person");
    assert!(
        people.contains("<td>the agent</td><td>1</td><td>1</td>"),
        "{people}"
    );
    assert!(people.contains("<td>supervisor@test.example</td><td>1</td><td>0</td>"));
    assert!(html.contains("2 decisions this week."), "{html}");
    // The case is one click away: its page answers.
    let (status, _) = page(
        &app,
        "supervisor@test.example",
        &format!("/console/cases/{case_id}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn rejecting_a_refund_the_policy_allows_is_outside_it_and_approving_one_within() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let case_id = case["id"].as_str().unwrap();
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/reject"),
            Some(&app.supervisor_token),
            Some(json!({ "fingerprint": case["fingerprint"], "reason": "the customer used both seats" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let now = app.state.clock.now_ms();
    let report = desk::qa::report(&app.state.db, now).await.unwrap();
    assert_eq!(report.breaches.len(), 1, "{report:#?}");
    assert_eq!(report.breaches[0].action, "reject");
    assert!(report.breaches[0]
        .why
        .starts_with("rejected a refund the policy allows"));

    let other = spawn_app().await;
    let (ticket, _) = other.refunded_ticket("C-100").await;
    // The customer's comment is read by staff beside the checks.
    let token = other.customer_token("C-100").await;
    let rating = json!({ "rating": 2, "comment": "took <b>too</b> long" });
    let path = format!("/api/v1/tickets/{ticket}/csat");
    let (status, body) = other
        .request("POST", &path, Some(&token), Some(rating))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for (path, id) in [
        ("/console/qa", "qa-comments"),
        ("/console/csat", "csat-comments"),
    ] {
        let (_, html) = page(&other, "supervisor@test.example", path).await;
        let comments = from_id(&html, id);
        assert!(
            comments
                .contains("2/5 · supervisor@test.example: took &#60;b&#62;too&#60;/b&#62; long"),
            "{comments}"
        );
    }
    let now = other.state.clock.now_ms();
    let report = desk::qa::report(&other.state.db, now).await.unwrap();
    let approve = &report.by_person["supervisor@test.example"];
    assert_eq!((approve.decisions, approve.within_policy), (1, 1));
    assert!(report.breaches.is_empty(), "{report:#?}");
}

#[tokio::test]
async fn empty_qa_and_shadow_pages_say_what_is_missing_not_zero_percent() {
    let app = shadow_app().await;
    let (status, qa) = page(&app, "supervisor@test.example", "/console/qa").await;
    assert_eq!(status, StatusCode::OK);
    assert!(qa.contains("No decisions yet in the last 12 weeks"), "{qa}");
    assert!(qa.contains("No decisions yet this week."));
    assert!(qa.contains("id=\"qa-csat-empty\"") && qa.contains("id=\"qa-drift-empty\""));
    let content = &qa[qa.find("<main").unwrap_or(0)..];
    assert!(
        !content.contains("0%") && !content.contains("0.0"),
        "{content}"
    );
    let (status, shadow) = page(&app, "supervisor@test.example", "/console/shadow").await;
    assert_eq!(status, StatusCode::OK);
    assert!(shadow.contains("No decided pairs yet"), "{shadow}");
    assert!(!shadow.contains("0.0%"), "{shadow}");
    // A lead's page: an agent is refused it, and finds no link to it.
    let (status, _) = page(&app, "agent@test.example", "/console/qa").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, queue) = page(&app, "agent@test.example", "/console").await;
    assert!(!queue.contains("href=\"/console/qa\""));
}

/// The QA page at 1280 and 390 px, with a decision outside the policy and one within.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_qa_page_at_desktop_and_phone_width() {
    let app = shadow_app().await;
    let case_id = refund_above_the_policy(&app).await;
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    let shots = screenshot_dir();
    browser.set_window_size(1280, 800).await;
    browser
        .console_login(&base, "supervisor@test.example")
        .await;
    browser.goto(&format!("{base}/console/qa")).await;
    browser.wait_for("#qa-breaches").await;
    browser.screenshot(&shots.join("qa-desktop.png")).await;
    browser.set_window_size(390, 844).await;
    browser.goto(&format!("{base}/console/qa")).await;
    let (scroll, inner) = browser.widths().await;
    browser.screenshot(&shots.join("qa-phone.png")).await;
    assert!(
        scroll <= inner,
        "the page scrolls sideways at 390 px: {scroll} > {inner}"
    );
    browser
        .click(&format!("#qa-breaches a[href='/console/cases/{case_id}']"))
        .await;
    browser
        .wait_for_url(&format!("/console/cases/{case_id}"))
        .await;
    browser.close().await;
}

/// The drift the last `refund-agent reconcile` stored is on the page, beside the checks.
#[tokio::test]
async fn the_last_reconcile_drift_is_beside_the_checks() {
    let app = spawn_app().await;
    let report = desk::reconcile::run_with_drift(app.state.reconciler())
        .await
        .expect("a reconcile");
    let drift = report.drift.expect("a drift report");
    let (_, html) = page(&app, "supervisor@test.example", "/console/qa").await;
    let shown = from_id(&html, "qa-drift");
    let counts = format!(
        "{} customers and {} orders drifted from the provider; {} charges name no order",
        drift.customers.count, drift.orders.count, drift.unlinked_charges
    );
    assert!(shown.contains(&counts), "{shown}");
    assert!(!html.contains("id=\"qa-drift-empty\""));
}
