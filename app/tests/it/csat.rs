//! Customer satisfaction: one question to the customer after resolution, its
//! refusals, and the results per person and per reason — through the API and the console.

use axum::http::StatusCode;
use desk::auth::StaffRole;
use serde_json::json;

use crate::support::spawn_app;

async fn rate(
    app: &crate::support::TestApp,
    customer: &str,
    ticket: &str,
    body: serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    let token = app.customer_token(customer).await;
    let path = format!("/api/v1/tickets/{ticket}/csat");
    app.request("POST", &path, Some(&token), Some(body)).await
}

#[tokio::test]
async fn a_customer_rates_a_resolved_case_once_and_the_report_credits_the_approver() {
    let app = spawn_app().await;
    let (ticket, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    // Not resolved yet: asked nothing, and refused with a typed error.
    let (status, body) = rate(&app, "C-100", &ticket, json!({ "rating": 5 })).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::CONFLICT, &json!("not_resolved")),
        "{body}"
    );

    let case_id = case["id"].as_str().unwrap();
    let fingerprint = case["fingerprint"].as_str().unwrap();
    let (status, body) = app
        .approve(&app.supervisor_token, case_id, fingerprint)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.drain().await;
    assert_eq!(app.case(case_id).await["status"], "refund_succeeded");

    // Bad input changes nothing; someone else's ticket is not found; staff cannot rate.
    for bad in [
        json!({ "rating": 0 }),
        json!({ "rating": 6 }),
        json!({ "rating": "5" }),
    ] {
        let (status, body) = rate(&app, "C-100", &ticket, bad.clone()).await;
        assert!(status.is_client_error(), "{bad} → {status} {body}");
    }
    let (status, _) = rate(&app, "C-200", &ticket, json!({ "rating": 1 })).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let path = format!("/api/v1/tickets/{ticket}/csat");
    let staff = app.staff_token(StaffRole::Admin).await;
    let (status, _) = app
        .request("POST", &path, Some(&staff), Some(json!({ "rating": 1 })))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(desk::csat::may_ask(&app.state.db, &ticket).await.unwrap());

    let (status, body) = rate(
        &app,
        "C-100",
        &ticket,
        json!({ "rating": 4, "comment": " quick, thanks " }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = rate(&app, "C-100", &ticket, json!({ "rating": 1 })).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::CONFLICT, &json!("already_rated")),
        "{body}"
    );
    assert!(!desk::csat::may_ask(&app.state.db, &ticket).await.unwrap());

    let (status, report) = app
        .request("GET", "/api/v1/reports/csat", Some(&app.agent_token), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["overall"]["answers"], 1);
    assert_eq!(report["overall"]["mean"], "4.00");
    assert_eq!(report["overall"]["satisfied_percent"], 100);
    assert_eq!(
        report["by_person"][0]["label"], "supervisor@test.example",
        "{report:#}"
    );
    assert_eq!(
        report["by_reason"][0]["label"], "duplicate_charge",
        "{report:#}"
    );
}

#[tokio::test]
async fn the_console_shows_satisfaction_per_person_and_reason_and_an_erasure_removes_the_comment() {
    let app = spawn_app().await;
    let (ticket, _) = app.refunded_ticket("C-100").await;
    let (status, _) = rate(
        &app,
        "C-100",
        &ticket,
        json!({ "rating": 2, "comment": "my name is Ann, too slow" }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);

    let (cookie, _) = app.staff_session("agent@test.example").await;
    let request = axum::http::Request::get("/console/csat")
        .header("cookie", cookie)
        .body(axum::body::Body::empty())
        .unwrap();
    let (status, page) = app.raw(request).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("id=\"csat-by-person\"") && page.contains("supervisor@test.example"),
        "{page}"
    );
    assert!(page.contains("2.00") && page.contains("0%"), "{page}");

    let admin = app.staff_token(StaffRole::Admin).await;
    let (status, body) = app
        .request("POST", "/api/v1/customers/C-100/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let comment: Option<String> =
        sqlx::query_scalar("SELECT comment FROM csat_answers WHERE ticket_id = $1")
            .bind(&ticket)
            .fetch_one(app.state.db.reader())
            .await
            .unwrap();
    assert_eq!(comment.as_deref(), Some(customer_data::classify::ERASED));
}

#[tokio::test]
async fn the_ticket_page_asks_once_after_resolution_and_thanks_in_the_customers_words() {
    use axum::body::Body;
    use axum::http::Request;
    let app = spawn_app().await;
    let (ticket, _) = app.refunded_ticket("C-100").await;
    let (cookie, csrf) = app.customer_cookie("C-100").await;
    let page = |cookie: String| {
        let request = Request::get(format!("/tickets/{ticket}"))
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap();
        app.raw(request)
    };
    let post = |cookie: String, body: String| {
        let request = Request::post(format!("/tickets/{ticket}/csat"))
            .header("cookie", cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "same-origin")
            .body(Body::from(body))
            .unwrap();
        app.raw(request)
    };
    let (status, html) = page(cookie.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("id=\"csat-form\"") && !html.contains("id=\"csat-thanks\""),
        "{html}"
    );

    // A forged form (another site's, without the session's token) records nothing.
    let (status, _) = post(cookie.clone(), "csrf=forged&rating=1".into()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        desk::csat::answer_of(&app.state.db, &ticket).await.unwrap(),
        None
    );
    // Out of range: refused on the page, nothing recorded.
    let (status, _) = post(cookie.clone(), format!("csrf={csrf}&rating=9")).await;
    assert!(status.is_client_error(), "{status}");
    assert_eq!(
        desk::csat::answer_of(&app.state.db, &ticket).await.unwrap(),
        None
    );

    let (status, _) = post(
        cookie.clone(),
        format!("csrf={csrf}&rating=5&comment=great"),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        desk::csat::answer_of(&app.state.db, &ticket).await.unwrap(),
        Some(5)
    );
    let (_, html) = page(cookie).await;
    assert!(
        !html.contains("id=\"csat-form\"") && html.contains("id=\"csat-thanks\""),
        "{html}"
    );
}
