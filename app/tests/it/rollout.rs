//! The rollout per scope (shadow → canary → assist), its guards, its API and
//! its audit. Real SQLite/PostgreSQL, the real payments mock, the worker run by hand on a
//! `ManualClock`.

use std::sync::Arc;

use crate::support::browser::{serve, Browser};
use crate::support::{spawn_app, TestApp};
use axum::http::StatusCode;
use desk::auth::{self, StaffRole};
use desk::clock::Clock;
use desk::rollout::{guards, in_canary};
use serde_json::{json, Value};

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// An admin's API token.
async fn admin_token(app: &TestApp) -> String {
    let now = app.clock.now_ms();
    let admin = auth::upsert_staff(
        &app.state.db,
        "admin@test.example",
        StaffRole::Admin,
        "correct horse battery",
        now,
    )
    .await
    .unwrap();
    auth::issue_token(&app.state.db, "api", "staff", &admin.id, now)
        .await
        .unwrap()
        .0
}

async fn set_rollout(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    app.request("POST", "/api/v1/rollout", Some(token), Some(body))
        .await
}

async fn rollout_status(app: &TestApp) -> Value {
    let (status, body) = app
        .request("GET", "/api/v1/rollout", Some(&app.agent_token), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn scope<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scope"] == name)
        .unwrap_or_else(|| panic!("no scope {name} in {status:#}"))
}

/// Opens a ticket through the customer API without draining the worker.
async fn post_ticket(app: &TestApp, customer_id: &str) -> String {
    let ticket = app.post_ticket(customer_id, CHARGED_TWICE).await;
    ticket["case"]["id"].as_str().unwrap().to_string()
}

fn page(path: &str, cookie: &str) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::get(path)
        .header("cookie", cookie)
        .body(axum::body::Body::empty())
        .unwrap()
}

fn form(path: &str, cookie: &str, body: &str) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::post(path)
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn the_console_rollout_page_is_for_admins_and_its_form_needs_the_csrf_token() {
    let app = spawn_app().await;
    admin_token(&app).await;
    let (cookie, csrf) = app.staff_session("supervisor@test.example").await;
    let (status, _) = app.raw(page("/console/rollout", &cookie)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let body = format!("csrf={csrf}&scope=all&mode=assist&percent=&reason=x");
    let (status, _) = app.raw(form("/console/rollout", &cookie, &body)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (cookie, csrf) = app.staff_session("admin@test.example").await;
    let forged = "csrf=forged&scope=all&mode=assist&percent=&reason=x";
    let (status, _) = app.raw(form("/console/rollout", &cookie, forged)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(rollout_status(&app).await["scopes"], json!([]));
    let body = format!("csrf={csrf}&scope=region%3AJP&mode=canary&percent=20&reason=start");
    let (status, _) = app.raw(form("/console/rollout", &cookie, &body)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, html) = app
        .raw(page("/console/rollout?done=changed", &cookie))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("data-scope=\"region:JP\"") && html.contains("canary 20%"),
        "{html}"
    );
    assert!(
        html.contains("region:JP default → canary 20% (start)"),
        "{html}"
    );
    assert!(
        !html.contains("id=\"rollout-banner\""),
        "no demotion, no banner"
    );
}

#[tokio::test]
async fn mode_changes_need_an_admin_are_audited_and_bad_input_changes_nothing() {
    let app = spawn_app().await;
    let admin = admin_token(&app).await;
    for token in [&app.agent_token, &app.supervisor_token] {
        let (status, body) =
            set_rollout(&app, token, json!({"scope": "all", "mode": "assist"})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }
    assert_eq!(rollout_status(&app).await["scopes"], json!([]));

    let body =
        json!({"scope": "region:EU", "mode": "canary", "percent": 10, "reason": "first canary"});
    let (status, change) = set_rollout(&app, &admin, body).await;
    assert_eq!(status, StatusCode::OK, "{change}");
    assert_eq!(change["from"], "default");
    assert_eq!(change["to"], "canary 10%");

    for (bad, code) in [
        (
            json!({"scope": "region:XX", "mode": "assist"}),
            "invalid_scope",
        ),
        (
            json!({"scope": "region:EU", "mode": "canary"}),
            "invalid_percent",
        ),
        (
            json!({"scope": "region:EU", "mode": "canary", "percent": 100}),
            "invalid_percent",
        ),
        (
            json!({"scope": "region:EU", "mode": "assist", "percent": 5}),
            "invalid_percent",
        ),
        (
            json!({"scope": "region:EU", "mode": "full"}),
            "invalid_mode",
        ),
    ] {
        let (status, body) = set_rollout(&app, &admin, bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad} → {body}");
        assert_eq!(body["error"]["code"], code, "{bad} → {body}");
    }
    let (status, _) = set_rollout(
        &app,
        &admin,
        json!({"scope": "all", "mode": "assist", "colour": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let status = rollout_status(&app).await;
    let scopes = status["scopes"].as_array().unwrap();
    assert_eq!(scopes.len(), 1, "{status:#}");
    assert_eq!(
        (scopes[0]["mode"].as_str(), scopes[0]["percent"].as_i64()),
        (Some("canary"), Some(10))
    );
    assert_eq!(scopes[0]["guards"].as_array().unwrap().len(), 6);

    let audit = desk::audit::case_timeline(&app.state.db, desk::rollout::modes::AUDIT_SUBJECT)
        .await
        .unwrap();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0].who, "admin@test.example");
    assert!(
        audit[0]
            .what
            .contains("region:EU default → canary 10% (first canary)"),
        "{audit:?}"
    );
}

#[tokio::test]
async fn the_canary_split_is_deterministic_and_the_same_on_two_instances_sharing_one_database() {
    let first = spawn_app().await;
    let admin = admin_token(&first).await;
    // A second instance: its own data dir, index and pool, on the first one's database.
    let dir = tempfile::tempdir().unwrap();
    let mut config = settings::config_from_env(dir.path());
    config.database_url = first.database_url.clone();
    config.payments_url = Some(first.mock.base_url());
    config.fixtures_dir = desk::config::default_fixtures_dir();
    let model = Arc::new(desk::agent::investigator::Investigator);
    let second = desk::build_state(&config, &first.mock.base_url(), first.clock.clone(), model)
        .await
        .unwrap();
    let second = app::cli::with_chores(second);
    let second_router = web::router(second.clone());

    let body = json!({"scope": "all", "mode": "canary", "percent": 50});
    assert_eq!(set_rollout(&first, &admin, body).await.0, StatusCode::OK);
    let mut case_ids = Vec::new();
    for (i, customer) in ["C-100", "C-300", "C-400", "C-600"].into_iter().enumerate() {
        if i % 2 == 0 {
            case_ids.push(post_ticket(&first, customer).await);
        } else {
            let token = first.customer_token(customer).await;
            let request = axum::http::Request::post("/api/v1/tickets")
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .body(axum::body::Body::from(
                    json!({"message": CHARGED_TWICE}).to_string(),
                ))
                .unwrap();
            let response = tower::ServiceExt::oneshot(second_router.clone(), request)
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::CREATED);
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            let ticket: Value = serde_json::from_slice(&bytes).unwrap();
            case_ids.push(ticket["case"]["id"].as_str().unwrap().to_string());
        }
    }
    desk::worker::drain(&second).await.unwrap();
    first.drain().await;
    for case_id in &case_ids {
        let case = first.case(case_id).await;
        let expected = in_canary(case_id, 50);
        assert_eq!(case["rollout"]["gets_proposal"], expected, "{case:#}");
        assert_eq!(case["rollout"]["mode"], "canary");
        // Both instances hold the same view of the case, whichever opened or decided it.
        let on_second = desk::rollout::modes::case_rollout(&second.db, case_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(on_second.gets_proposal, expected);
        // Canary-in: the reviewer works from the agent's proposal; canary-out: blind.
        assert_eq!(case["proposal"].is_null(), !expected, "{case:#}");
    }
    // The split is a function of the id alone: the same on any instance, any build.
    assert!(in_canary("case_0", 50));
    assert!(!in_canary("case_2", 50));
}

#[tokio::test]
async fn a_tripped_guard_demotes_its_scope_within_one_evaluation_period_and_no_proposal_is_shown_afterwards(
) {
    let mut app = spawn_app().await;
    // Two overridden proposals are enough here; the defaults need 20 (README).
    app.state.rollout_guards.override_rate.min_sample = 2;
    app.router = web::router(app.state.clone());
    let admin = admin_token(&app).await;
    let body = json!({"scope": "product:annual_plan", "mode": "assist", "reason": "go"});
    assert_eq!(set_rollout(&app, &admin, body).await.0, StatusCode::OK);

    reject_two_proposals(&app).await;
    assert_eq!(
        scope(&rollout_status(&app).await, "product:annual_plan")["mode"],
        "assist"
    );

    app.clock
        .advance(time::Duration::milliseconds(guards::EVALUATION_PERIOD_MS));
    desk::worker::run_once(&app.state).await.unwrap();

    let status = rollout_status(&app).await;
    let cn = scope(&status, "product:annual_plan");
    assert_eq!(cn["mode"], "shadow", "{status:#}");
    assert_eq!(cn["updated_by"], "guard:override_rate");
    // The evaluation that tripped is stored (the console draws it); the scope's readings
    // start afresh from the demotion, a new mode being judged on its own cases.
    let scope_name = desk::rollout::Scope::parse("product:annual_plan").unwrap();
    let points = guards::history(&app.state.db, scope_name, "override_rate", 0)
        .await
        .unwrap();
    let tripped = points.last().unwrap();
    assert!(tripped.tripped && tripped.value == Some(1.0), "{points:?}");
    let audit = desk::audit::case_timeline(&app.state.db, desk::rollout::modes::AUDIT_SUBJECT)
        .await
        .unwrap();
    let last = audit.last().unwrap();
    assert_eq!(last.who, "guard");
    assert!(
        last.what
            .contains("guard override_rate 1.00 > 0.30 over 2 cases"),
        "{audit:?}"
    );
    let (_, metrics) = app
        .raw(
            axum::http::Request::get("/metrics")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert!(
        metrics.contains("rollout_scope_demoted{scope=\"product:annual_plan\"} 1"),
        "{metrics}"
    );

    // Every console page says so, and the rollout page shows the tripped guard.
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let (_, queue) = app.raw(page("/console", &cookie)).await;
    assert!(
        queue.contains("id=\"rollout-banner\"") && queue.contains("guard override_rate"),
        "{queue}"
    );
    let (cookie, _) = app.staff_session("admin@test.example").await;
    let (_, page_html) = app.raw(page("/console/rollout", &cookie)).await;
    assert!(
        page_html.contains("tripped") && page_html.contains("<svg"),
        "{page_html}"
    );

    // Afterwards a reviewer in that scope decides blind: no proposal, no fingerprint.
    let (_, case) = app.open_ticket("C-600", CHARGED_TWICE).await;
    assert_eq!(case["status"], "escalated", "{case:#}");
    assert!(
        case["proposal"].is_null() && case["fingerprint"].is_null(),
        "{case:#}"
    );
    assert_eq!(case["rollout"]["gets_proposal"], false);
    // Another product keeps the default (assist): its reviewer sees the proposal.
    let (_, other) = app.open_ticket("C-200", CHARGED_TWICE).await;
    assert!(other["proposal"].is_object(), "{other:#}");
}

#[tokio::test]
async fn a_demotion_reaches_cases_opened_with_the_proposal_before_it() {
    let app = spawn_app().await;
    let admin = admin_token(&app).await;
    let body = json!({"scope": "all", "mode": "assist"});
    assert_eq!(set_rollout(&app, &admin, body).await.0, StatusCode::OK);
    let case_id = post_ticket(&app, "C-100").await;
    let body = json!({"scope": "request:duplicate_charge", "mode": "shadow"});
    assert_eq!(set_rollout(&app, &admin, body).await.0, StatusCode::OK);
    app.drain().await;
    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "escalated", "{case:#}");
    assert!(case["proposal"].is_null(), "{case:#}");
    assert_eq!(case["rollout"]["gets_proposal"], false);
    let note = case["rollout"]["note"].as_str().unwrap();
    assert!(
        note.contains("request:duplicate_charge is shadow"),
        "{note}"
    );
    // The case page says which mode the case was opened in and how it was decided.
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let (_, html) = app
        .raw(page(&format!("/console/cases/{case_id}"), &cookie))
        .await;
    assert!(html.contains("id=\"case-rollout\""), "{html}");
    assert!(
        html.contains("assist (all)") && html.contains("decides blind"),
        "{html}"
    );
}

/// A case waits for a human in every mode: nothing reaches the provider until somebody
/// approves the exact refund (RP-004, SPEC invariant 1). One customer, one scope, its
/// mode changed between tickets: the first two refunds are rejected, the last approved.
#[tokio::test]
async fn an_approval_is_still_required_in_every_mode() {
    let app = spawn_app().await;
    let admin = admin_token(&app).await;
    let modes = [
        json!({"scope": "region:CN", "mode": "shadow"}),
        json!({"scope": "region:CN", "mode": "canary", "percent": 50}),
        json!({"scope": "region:CN", "mode": "assist"}),
    ];
    for (i, mode) in modes.iter().enumerate() {
        assert_eq!(
            set_rollout(&app, &admin, mode.clone()).await.0,
            StatusCode::OK
        );
        let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
        let case_id = case["id"].as_str().unwrap().to_string();
        let case = if case["rollout"]["gets_proposal"] == false {
            // Blind: the reviewer decides by hand; the refund then waits for approval.
            assert_eq!(case["status"], "escalated", "{mode} {case:#}");
            let refund = json!([{"charge_id": "ch_1001b", "amount": "198.00", "currency": "CNY"}]);
            let body =
                json!({"outcome": "refund", "reason": "duplicate_charge", "refunds": refund});
            let path = format!("/api/v1/cases/{case_id}/decide");
            let (status, body) = app
                .request("POST", &path, Some(&app.agent_token), Some(body))
                .await;
            assert_eq!(status, StatusCode::OK, "{mode}: {body}");
            body
        } else {
            case
        };
        assert_eq!(case["status"], "awaiting_approval", "{mode}: {case:#}");
        app.drain().await;
        let case = app.case(&case_id).await;
        assert_eq!(
            case["status"], "awaiting_approval",
            "{mode}: nothing moves without a human"
        );
        assert_eq!(case["refunds"], json!([]), "{mode}");
        assert!(app.provider_refunds("ch_1001b").await.is_empty(), "{mode}");
        let fingerprint = case["fingerprint"].as_str().unwrap();
        if i + 1 < modes.len() {
            let body = json!({"fingerprint": fingerprint, "reason": "checked"});
            let path = format!("/api/v1/cases/{case_id}/reject");
            let (status, body) = app
                .request("POST", &path, Some(&app.supervisor_token), Some(body))
                .await;
            assert_eq!(status, StatusCode::OK, "{mode}: {body}");
            continue;
        }
        let (status, body) = app
            .approve(&app.supervisor_token, &case_id, fingerprint)
            .await;
        assert_eq!(status, StatusCode::OK, "{mode}: {body}");
        app.drain().await;
        assert_eq!(app.provider_refunds("ch_1001b").await.len(), 1, "{mode}");
    }
}

/// Opens two annual-plan tickets whose proposals a supervisor rejects: two overrides.
async fn reject_two_proposals(app: &TestApp) {
    for customer in ["C-100", "C-400"] {
        let (_, case) = app.open_ticket(customer, CHARGED_TWICE).await;
        assert_eq!(case["status"], "awaiting_approval", "{case:#}");
        assert_eq!(case["rollout"]["gets_proposal"], true);
        let path = format!("/api/v1/cases/{}/reject", case["id"].as_str().unwrap());
        let body = json!({"fingerprint": case["fingerprint"], "reason": "not a duplicate"});
        let (status, body) = app
            .request("POST", &path, Some(&app.supervisor_token), Some(body))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_promotes_a_scope_in_the_browser_and_watches_a_tripped_guard_demote_it() {
    let mut app = spawn_app().await;
    app.state.rollout_guards.override_rate.min_sample = 2;
    app.router = web::router(app.state.clone());
    admin_token(&app).await;
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    browser.console_login(&base, "admin@test.example").await;

    browser.goto(&format!("{base}/console/rollout")).await;
    browser
        .type_into("#rollout-form input[name=scope]", "product:annual_plan")
        .await;
    browser.click("#rollout-form option[value=assist]").await;
    browser
        .type_into("#rollout-form input[name=reason]", "agreement is good")
        .await;
    browser.click("#set-mode").await;
    browser.wait_for_url("done=changed").await;
    let card = "[data-scope='product:annual_plan'] [data-mode]";
    assert_eq!(browser.text(card).await, "assist");
    assert!(browser.find("#rollout-banner").await.is_none());

    reject_two_proposals(&app).await;
    app.clock
        .advance(time::Duration::milliseconds(guards::EVALUATION_PERIOD_MS));
    desk::worker::run_once(&app.state).await.unwrap();

    browser.goto(&format!("{base}/console/rollout")).await;
    assert_eq!(browser.text(card).await, "shadow");
    let banner = browser.text("#rollout-banner").await;
    assert!(
        banner.contains("product:annual_plan demoted to shadow"),
        "{banner}"
    );
    assert!(banner.contains("override_rate"), "{banner}");
    let audit = browser.text("#rollout-audit").await;
    assert!(audit.contains("assist → shadow"), "{audit}");
    browser.goto(&format!("{base}/console")).await;
    assert!(
        browser.find("#rollout-banner").await.is_some(),
        "every console page says so"
    );
    browser.close().await;
}

/// `refund-agent rollout set|status` on the command line, on a fresh SQLite data dir:
/// a bad mode is refused with the typed message and changes nothing.
#[test]
fn the_rollout_commands_set_and_show_a_scope_and_refuse_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_refund-agent"))
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env_remove("DATABASE_URL")
            .env_remove("SHADOW_MODE")
            .output()
            .unwrap()
    };
    let set = run(&["rollout", "set", "region:EU", "canary", "--percent", "10"]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let change: Value = serde_json::from_slice(&set.stdout).unwrap();
    assert_eq!(
        (change["from"].as_str(), change["to"].as_str()),
        (Some("default"), Some("canary 10%"))
    );
    let bad = run(&["rollout", "set", "region:EU", "canary", "--percent", "100"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("canary takes a percent from 1 to 99"));
    let status = run(&["rollout", "status"]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["default_mode"], "assist");
    assert_eq!(status["scopes"][0]["scope"], "region:EU");
    assert_eq!(status["scopes"][0]["percent"], 10);
}

#[tokio::test]
async fn a_typo_in_the_rollout_form_is_answered_on_the_page_with_what_was_typed_and_changes_nothing(
) {
    let app = spawn_app().await;
    admin_token(&app).await;
    let (cookie, csrf) = app.staff_session("admin@test.example").await;
    for (body, words) in [
        (
            format!("csrf={csrf}&scope=regoin%3AEU&mode=canary&percent=10&reason=first+canary"),
            "regoin:EU",
        ),
        (
            format!("csrf={csrf}&scope=region%3AEU&mode=canary&percent=ten&reason=first+canary"),
            "whole number",
        ),
    ] {
        let (status, html) = app.raw(form("/console/rollout", &cookie, &body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
        assert!(
            html.contains("id=\"action-error\""),
            "a page, not raw JSON: {html}"
        );
        assert!(html.contains(words), "{html}");
        assert!(
            html.contains("value=\"first canary\"")
                && html.contains("<option value=\"canary\" selected>"),
            "what was typed stays: {html}"
        );
    }
    assert_eq!(
        rollout_status(&app).await["scopes"],
        json!([]),
        "nothing changed"
    );
}
