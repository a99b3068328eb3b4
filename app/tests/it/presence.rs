//! Presence on a case: staff see who else is viewing or replying, the mark fades
//! when a page stops saying so, and bad input is refused.

use axum::http::StatusCode;
use serde_json::json;

use crate::support::spawn_app;

#[tokio::test]
async fn staff_see_who_else_views_or_replies_and_a_silent_page_fades_out() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let path = format!("/api/v1/cases/{}/presence", case["id"].as_str().unwrap());
    let mark = |token: String, activity: &'static str| {
        let path = path.clone();
        let app = &app;
        async move {
            app.request(
                "POST",
                &path,
                Some(&token),
                Some(json!({ "activity": activity })),
            )
            .await
        }
    };
    let (status, body) = mark(app.agent_token.clone(), "viewing").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["others"], json!([]));
    let (_, body) = mark(app.supervisor_token.clone(), "replying").await;
    assert_eq!(
        body["others"],
        json!([{ "name": "agent@test.example", "activity": "viewing" }])
    );
    let (_, body) = mark(app.agent_token.clone(), "viewing").await;
    assert_eq!(
        body["others"],
        json!([{ "name": "supervisor@test.example", "activity": "replying" }])
    );

    // The supervisor's page stops saying so: after the freshness window they are gone.
    app.clock
        .advance(time::Duration::milliseconds(desk::presence::FRESH_MS + 1));
    let (_, body) = mark(app.agent_token.clone(), "replying").await;
    assert_eq!(body["others"], json!([]), "{body}");

    let (status, body) = mark(app.agent_token.clone(), "typing").await;
    assert!(status.is_client_error(), "{status} {body}");
    let (status, _) = app
        .request(
            "POST",
            "/api/v1/cases/case_nope/presence",
            Some(&app.agent_token),
            Some(json!({ "activity": "viewing" })),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let customer = app.customer_token("C-100").await;
    let (status, _) = mark(customer, "viewing").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

/// The case page says who else is on the case, and tells the others its own reader is
/// there, without a reload (Chromium, at a phone's width too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_case_page_shows_who_else_is_replying_and_announces_its_reader() {
    use crate::support::browser::{serve, Browser};
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/cases/{case_id}/presence");
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    browser.set_window_size(390, 844).await;
    browser.console_login(&base, "agent@test.example").await;
    // The supervisor is writing an answer on the same case.
    let replying = json!({ "activity": "replying" });
    let (status, _) = app
        .request(
            "POST",
            &path,
            Some(&app.supervisor_token),
            Some(replying.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    let mut shown = String::new();
    for _ in 0..60 {
        if browser.find("#presence").await.is_some() {
            shown = browser.text("#presence").await;
            if shown.contains("supervisor@test.example is replying") {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert_eq!(shown, "supervisor@test.example is replying");
    // At a desktop's width the two-column page shows the same line, in view.
    browser.set_window_size(1280, 800).await;
    let visible = browser
        .execute(
            "const e = document.querySelector('#presence'); const r = e.getBoundingClientRect(); \
             return !e.hidden && r.width > 0 && r.top >= 0 && r.bottom <= window.innerHeight;",
        )
        .await;
    assert_eq!(
        visible.as_bool(),
        Some(true),
        "the presence line is in view at 1280 px"
    );
    // And the page told the server its reader is there: the supervisor sees the agent.
    let (_, body) = app
        .request("POST", &path, Some(&app.supervisor_token), Some(replying))
        .await;
    assert_eq!(
        body["others"],
        json!([{ "name": "agent@test.example", "activity": "viewing" }]),
        "{body}"
    );
}
