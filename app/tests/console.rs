//! The support console's rules: login rate limiting, approval expiry, takeover of
//! escalated cases (and nobody approving what they took over), the audit log, and the
//! policy pages.

mod support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use support::spawn_app;

fn login_request(email: &str, password: &str) -> Request<Body> {
    Request::post("/console/login")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(format!(
            "email={email}&password={}",
            password.replace(' ', "+")
        )))
        .unwrap()
}

async fn session_cookie(app: &support::TestApp, email: &str) -> String {
    app.staff_session(email).await.0
}

#[tokio::test]
async fn logins_are_refused_after_five_failures_even_with_the_right_password() {
    let app = spawn_app().await;
    let (status, _) = app
        .raw(login_request("agent@test.example", "correct horse battery"))
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "the right password logs in");
    for _ in 0..5 {
        let (status, html) = app
            .raw(login_request("agent@test.example", "wrong password"))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(html.contains("Wrong email or password"));
    }
    let (status, html) = app
        .raw(login_request("agent@test.example", "correct horse battery"))
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{html}");
    // The window passes.
    app.clock.advance(time::Duration::minutes(16));
    let (status, _) = app
        .raw(login_request("agent@test.example", "correct horse battery"))
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn an_approval_request_older_than_its_ttl_expires_and_the_case_is_reinvestigated() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    let old = case["fingerprint"].as_str().unwrap().to_string();
    app.clock.advance(time::Duration::hours(71));
    app.drain().await;
    assert_eq!(
        app.case(case_id).await["fingerprint"],
        old.as_str(),
        "not yet expired"
    );
    app.clock.advance(time::Duration::hours(2));
    app.drain().await;
    let case = app.case(case_id).await;
    assert_eq!(case["status"], "awaiting_approval");
    assert_ne!(case["fingerprint"].as_str().unwrap(), old);
    assert_eq!(case["void_reason"], "approval request expired");
    let (status, _) = app.approve(&app.agent_token, case_id, &old).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_supervisor_takes_over_an_outside_window_case_and_another_supervisor_approves_it() {
    let mut app = spawn_app().await;
    // 130 days after the charges: outside RP-001 v2's 120-day window → escalated.
    app.clock.advance(time::Duration::days(121));
    app.renew_tokens().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    assert_eq!(case["status"], "escalated", "{case:#}");
    assert_eq!(case["reason_code"], "outside_window");

    let (status, _) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/takeover"),
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "agents do not take over");
    let (status, taken) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/takeover"),
            Some(&app.supervisor_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{taken}");
    assert_eq!(taken["status"], "awaiting_approval");
    assert_eq!(taken["required_role"], "supervisor");
    let fingerprint = taken["fingerprint"].as_str().unwrap();

    let (status, body) = app
        .approve(&app.supervisor_token, case_id, fingerprint)
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "nobody approves what they took over: {body}"
    );
    let (status, _) = app.approve(&app.agent_token, case_id, fingerprint).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "outside-window refunds need a supervisor"
    );

    use app::clock::Clock;
    let second = app::auth::upsert_staff(
        &app.state.db,
        "second@test.example",
        app::auth::StaffRole::Supervisor,
        "another long password",
        app.clock.now_ms(),
    )
    .await
    .unwrap();
    let (token, _) = app::auth::issue_token(
        &app.state.db,
        "api",
        "staff",
        &second.id,
        app.clock.now_ms(),
    )
    .await
    .unwrap();
    let (status, body) = app.approve(&token, case_id, fingerprint).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.drain().await;
    assert_eq!(app.case(case_id).await["status"], "refund_succeeded");
    assert_eq!(app.provider_refunds("ch_1001b").await.len(), 1);

    // The audit log shows who did what.
    let cookie = session_cookie(&app, "agent@test.example").await;
    let (status, html) = app
        .raw(
            Request::get("/console/audit")
                .header("cookie", cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for expected in [
        "proposed_by_staff",
        "supervisor@test.example",
        "second@test.example",
        "approved",
        "refund_status",
    ] {
        assert!(html.contains(expected), "audit page lacks {expected}");
    }
}

#[tokio::test]
async fn a_takeover_is_refused_when_the_policy_allows_no_refund() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-600", "I was charged twice for my annual plan")
        .await;
    assert_eq!(case["status"], "escalated", "{case:#}");
    assert_eq!(case["reason_code"], "dispute_open");
    let case_id = case["id"].as_str().unwrap();
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/takeover"),
            Some(&app.supervisor_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "policy_allows_no_refund");
    assert!(app.provider_refunds("ch_6001b").await.is_empty());
}

#[tokio::test]
async fn the_policy_pages_list_versions_show_text_and_diff_them() {
    let app = spawn_app().await;
    let cookie = session_cookie(&app, "agent@test.example").await;
    let get = |path: &str| {
        Request::get(path)
            .header("cookie", cookie.clone())
            .body(Body::empty())
            .unwrap()
    };
    let (status, html) = app.raw(get("/console/policies")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("RP-001") && html.contains("draft") && html.contains("2026-06-30"),
        "{html}"
    );
    let (status, html) = app.raw(get("/console/policies/RP-001/2")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("id=\"s3\"") && html.contains("120 days"));
    let (status, html) = app
        .raw(get("/console/policies/RP-001/diff?from=1&to=2"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("class=\"del\"")
            && html.contains("180 days")
            && html.contains("class=\"ins\"")
            && html.contains("120 days")
    );
    let (status, _) = app.raw(get("/console/policies/RP-001/9")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .raw(
            Request::get("/console/policies")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "staff only");
}

#[tokio::test]
async fn the_run_trace_page_anchors_every_tool_result_the_evidence_cites() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let cookie = session_cookie(&app, "agent@test.example").await;
    let get = |path: String| {
        Request::get(path)
            .header("cookie", cookie.clone())
            .body(Body::empty())
            .unwrap()
    };
    let (status, case_html) = app
        .raw(get(format!(
            "/console/cases/{}",
            case["id"].as_str().unwrap()
        )))
        .await;
    assert_eq!(status, StatusCode::OK);
    let run_id = case["run_id"].as_str().unwrap();
    let (status, trace) = app.raw(get(format!("/console/runs/{run_id}"))).await;
    assert_eq!(status, StatusCode::OK);
    for ev in case["proposal"]["evidence"].as_array().unwrap() {
        let call = ev["call_id"].as_str().unwrap();
        let anchor = format!("call-{call}-tool_result");
        assert!(
            case_html.contains(&format!("/console/runs/{run_id}#{anchor}")),
            "case page links {anchor}"
        );
        assert!(
            trace.contains(&format!("id=\"{anchor}\"")),
            "trace page has {anchor}"
        );
    }
    assert!(trace.contains("decision") && trace.contains("ch_1001b"));
}

#[tokio::test]
async fn the_reconcile_page_runs_a_reconciliation_and_shows_refunds_made_elsewhere() {
    let app = spawn_app().await;
    app.refund_elsewhere("ch_1001b", 1000).await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    app.approve(
        &app.agent_token,
        case["id"].as_str().unwrap(),
        case["fingerprint"].as_str().unwrap(),
    )
    .await;
    app.drain().await;
    let staff = app::auth::staff_by_email(&app.state.db, "agent@test.example")
        .await
        .unwrap()
        .unwrap();
    use app::clock::Clock;
    let (session, csrf) = app::auth::issue_token(
        &app.state.db,
        "session",
        "staff",
        &staff.id,
        app.clock.now_ms(),
    )
    .await
    .unwrap();
    let cookie = format!("rd_session={session}");
    let (status, html) = app
        .raw(
            Request::get("/console/reconcile")
                .header("cookie", cookie.clone())
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let form = |csrf: &str| {
        Request::post("/console/reconcile")
            .header("cookie", cookie.clone())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!("csrf={csrf}")))
            .unwrap()
    };
    let (status, _) = app.raw(form("forged")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, html2) = app.raw(form(&csrf.unwrap())).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(
        html2.contains("Provider refunds without an intent") && html2.contains("ch_1001b"),
        "{html2}"
    );
    assert!(html2.contains("Matched"));
}
