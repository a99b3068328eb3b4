//! Headless Chromium against the real app: a support agent logs in, sees a supervisor-
//! level refund they may not approve, approves one they may, and watches the status
//! change; the customer's page then shows the refund as completed.

mod support;

use support::browser::{serve, Browser};
use support::spawn_app;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_approves_in_the_console_and_the_status_changes_but_cannot_approve_a_supervisor_refund(
) {
    let app = spawn_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let (_, big) = app
        .open_ticket("C-400", "I was charged twice for my annual plan")
        .await;
    let big_id = big["id"].as_str().unwrap().to_string();
    assert_eq!(big["required_role"], "supervisor");

    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;

    browser.goto(&format!("{base}/console/login")).await;
    browser
        .type_into("input[name=email]", "agent@test.example")
        .await;
    browser
        .type_into("input[name=password]", "correct horse battery")
        .await;
    browser.click("button[type=submit]").await;
    assert!(
        browser.url().await.ends_with("/console"),
        "logged in and sent to the queue"
    );
    let queue = browser.text("#queue").await;
    assert!(
        queue.contains(&case_id) && queue.contains(&big_id),
        "{queue}"
    );

    // The JPY case needs a supervisor: no approve button for an agent.
    browser
        .goto(&format!("{base}/console/cases/{big_id}"))
        .await;
    assert!(browser.find("#cannot-approve").await.is_some());
    assert!(browser.find("#approve").await.is_none());

    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    assert_eq!(
        browser
            .attribute("#case-status", "data-status")
            .await
            .as_deref(),
        Some("awaiting_approval")
    );
    let page = browser.source().await;
    assert!(
        page.contains("ch_1001b") && page.contains("RP-001@2"),
        "evidence and policy on the page"
    );
    browser
        .screenshot(
            &app::config::default_fixtures_dir().join("../target/screenshots/case-page.png"),
        )
        .await;
    browser.click("#approve").await;
    assert_eq!(
        browser
            .attribute("#case-status", "data-status")
            .await
            .as_deref(),
        Some("approved")
    );

    app.drain().await;
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    assert_eq!(
        browser
            .attribute("#case-status", "data-status")
            .await
            .as_deref(),
        Some("refund_succeeded")
    );
    assert_eq!(app.provider_refunds("ch_1001b").await.len(), 1);

    // The customer's page, reached through a token link, says what the provider says.
    let token = app.customer_token("C-100").await;
    browser
        .goto(&format!("{base}/tickets/{ticket_id}?token={token}"))
        .await;
    assert_eq!(
        browser
            .attribute("#case-status", "data-status")
            .await
            .as_deref(),
        Some("refund_succeeded")
    );
    assert!(browser
        .text("#case-status")
        .await
        .contains("Refund completed"));
    assert!(
        !browser.url().await.contains("token="),
        "the token leaves the address bar"
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_approval_form_without_the_session_csrf_token_is_refused() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    let staff = app::auth::staff_by_email(&app.state.db, "agent@test.example")
        .await
        .unwrap()
        .unwrap();
    let (session, _) = app::auth::issue_token(
        &app.state.db,
        "session",
        "staff",
        &staff.id,
        1_800_000_000_000,
    )
    .await
    .unwrap();
    let form = format!(
        "csrf=wrong&fingerprint={}",
        case["fingerprint"].as_str().unwrap()
    );
    let request = axum::http::Request::post(format!("/console/cases/{case_id}/approve"))
        .header("cookie", format!("rd_session={session}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(form))
        .unwrap();
    let (status, _) = app.raw(request).await;
    assert_eq!(status, axum::http::StatusCode::FORBIDDEN);
    assert_eq!(app.case(case_id).await["status"], "awaiting_approval");
}
