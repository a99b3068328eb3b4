//! Live shadow mode: the agent's decision is recorded but hidden, a reviewer decides by
//! hand, the hand decision passes the same policy check and approval rules, and the
//! pairs are reported.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;
use support::{spawn_app, TestApp};

async fn shadow_app() -> TestApp {
    let mut app = spawn_app().await;
    app.state.shadow_mode = true;
    app.router = app::http::router(app.state.clone());
    app
}

async fn session(app: &TestApp, email: &str) -> (String, String) {
    app.staff_session(email).await
}

async fn decide(
    app: &TestApp,
    token: &str,
    case_id: &str,
    body: serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    app.request(
        "POST",
        &format!("/api/v1/cases/{case_id}/decide"),
        Some(token),
        Some(body),
    )
    .await
}

#[tokio::test]
async fn the_agent_decision_is_hidden_until_a_reviewer_decides_and_nothing_reaches_the_queue() {
    let app = shadow_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    assert_eq!(case["status"], "escalated", "{case:#}");
    for hidden in [
        "proposal",
        "decision",
        "fingerprint",
        "reason_code",
        "required_role",
        "refund_total",
    ] {
        assert!(
            case[hidden].is_null(),
            "{hidden} must not be shown before the human decides"
        );
    }
    assert!(
        case["evidence"]["orders"].is_array(),
        "the billing records are shown"
    );
    let (_, queue) = app
        .request(
            "GET",
            "/api/v1/cases?status=awaiting_approval",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert!(
        queue.as_array().unwrap().is_empty(),
        "nothing reaches the approval queue"
    );

    let (cookie, _) = session(&app, "agent@test.example").await;
    let run = case["run_id"].as_str().unwrap();
    let (status, _) = app
        .raw(
            Request::get(format!("/console/runs/{run}"))
                .header("cookie", cookie.clone())
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "no anchoring through the trace either"
    );
    let (_, page) = app
        .raw(
            Request::get(format!("/console/cases/{case_id}"))
                .header("cookie", cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert!(
        page.contains("hand-decision")
            && !page.contains("run-trace")
            && !page.contains("RP-001@2#2.1")
    );

    let token = app.customer_token("C-100").await;
    let (_, ticket) = app
        .request(
            "GET",
            &format!("/api/v1/tickets/{ticket_id}"),
            Some(&token),
            None,
        )
        .await;
    let reply = ticket["messages"].as_array().unwrap().last().unwrap()["body"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reply.contains("review your request") && !reply.contains("198"),
        "{reply}"
    );
}

#[tokio::test]
async fn a_hand_refund_passes_the_policy_check_and_needs_another_persons_approval() {
    let app = shadow_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();

    // More than the policy allows, or the legitimate charge: refused, nothing recorded.
    for refunds in [
        json!([{"charge_id": "ch_1001b", "amount": "250.00", "currency": "CNY"}]),
        json!([{"charge_id": "ch_1001a", "amount": "198.00", "currency": "CNY"}]),
    ] {
        let (status, body) = decide(
            &app,
            &app.supervisor_token,
            case_id,
            json!({"outcome": "refund", "reason": "duplicate_charge", "refunds": refunds}),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["error"]["code"], "policy_does_not_allow");
    }
    assert!(app::shadow_live::pending(&app.state.db, case_id)
        .await
        .unwrap());

    let (status, body) = decide(&app, &app.supervisor_token, case_id, json!({"outcome": "refund", "reason": "duplicate_charge", "refunds": [{"charge_id": "ch_1001b", "amount": "198.00", "currency": "CNY"}]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "awaiting_approval");
    let fingerprint = body["fingerprint"].as_str().unwrap();
    let (status, _) = app
        .approve(&app.supervisor_token, case_id, fingerprint)
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the reviewer who decided may not approve"
    );
    let (status, _) = app.approve(&app.agent_token, case_id, fingerprint).await;
    assert_eq!(status, StatusCode::OK);
    app.drain().await;
    assert_eq!(app.case(case_id).await["status"], "refund_succeeded");
    assert_eq!(app.provider_refunds("ch_1001b").await.len(), 1);

    let report = app::shadow_live::report(&app.state.db).await.unwrap();
    assert_eq!((report.decided, report.pending), (1, 0));
    assert_eq!(report.exact_agreement, 1.0);
    let (status, _) = decide(
        &app,
        &app.supervisor_token,
        case_id,
        json!({"outcome": "no_refund", "reason": "other"}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "one hand decision per case");
}

#[tokio::test]
async fn disagreements_are_recorded_and_shown_on_the_shadow_page() {
    let app = shadow_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let (cookie, csrf) = session(&app, "agent@test.example").await;
    let form = Request::post(format!("/console/cases/{case_id}/decide"))
        .header("cookie", cookie.clone())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(format!(
            "csrf={csrf}&outcome=no_refund&reason=not_duplicate"
        )))
        .unwrap();
    let (status, _) = app.raw(form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(app.case(&case_id).await["status"], "denied");
    assert!(app.provider_refunds("ch_1001b").await.is_empty());

    let report = app::shadow_live::report(&app.state.db).await.unwrap();
    assert_eq!(report.confusion["no_refund"]["refund"], 1);
    assert_eq!(report.disagreements.len(), 1);
    let (status, html) = app
        .raw(
            Request::get("/console/shadow")
                .header("cookie", cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains(&case_id)
            && html.contains("<svg")
            && html.contains("0.0%")
            && !html.contains("<script"),
        "{html}"
    );
}
