//! Live shadow mode: the agent's decision is recorded but hidden, a reviewer decides by
//! hand, the hand decision passes the same policy check and approval rules, and the
//! pairs are reported.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::support::{spawn_app, TestApp};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::billing::{Answer, BillingSource, CustomerRecord, Order};
use desk::tickets::OtherTickets;
use payments_adapter::{ProviderCharge, ProviderRefund};
use serde_json::json;
use tokio::sync::Notify;

async fn shadow_app() -> TestApp {
    let mut app = spawn_app().await;
    app.state.shadow_mode = true;
    app.router = web::router(app.state.clone());
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
    // The blind form anchors on nothing either — no answer is pre-selected.
    let form = &page[page.find("id=\"hand-decision\"").unwrap()..];
    for select in ["name=\"outcome\" required>", "name=\"reason\" required>"] {
        let at = form.find(select).expect(select) + select.len();
        assert!(
            form[at..].starts_with("<option value=\"\" selected disabled>"),
            "{}",
            &form[at..at + 80]
        );
    }
    assert!(!form.contains("value=\"refund\" selected"));
    // What each outcome tells the customer, with no amount to anchor on.
    let preview = &form[form.find("id=\"preview-hand\"").expect("previews")..];
    let preview = &preview[..preview.find("</details>").unwrap()];
    assert!(
        preview.contains("not eligible for a refund under our refund policy")
            && preview.contains("a refund of [amounts] is awaiting approval")
            && !preview.contains("198"),
        "{preview}"
    );

    let (_, ticket) = app.customer_ticket("C-100", &ticket_id).await;
    let reply = ticket["messages"].as_array().unwrap().last().unwrap()["body"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reply.contains("review your request") && !reply.contains("198"),
        "{reply}"
    );
}

/// A hand refund the policy does not allow (more than it allows, or on the
/// legitimate charge) is the reviewer's verdict all the same — recorded in the pair, so
/// the statistics count the disagreement — but no money moves: no proposal, nothing to
/// approve, the case stays escalated for a supervisor.
#[tokio::test]
async fn a_hand_refund_the_policy_forbids_is_recorded_as_a_disagreement_and_moves_no_money() {
    for refunds in [
        json!([{"charge_id": "ch_1001b", "amount": "250.00", "currency": "CNY"}]),
        json!([{"charge_id": "ch_1001a", "amount": "198.00", "currency": "CNY"}]),
    ] {
        let app = shadow_app().await;
        let (_, case) = app
            .open_ticket("C-100", "I was charged twice for my annual plan")
            .await;
        let case_id = case["id"].as_str().unwrap();
        let (status, body) = decide(
            &app,
            &app.supervisor_token,
            case_id,
            json!({"outcome": "refund", "reason": "duplicate_charge", "refunds": refunds}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["status"], "escalated", "{body}");
        assert!(body["fingerprint"].is_null(), "nothing to approve: {body}");
        let why = body["void_reason"].as_str().unwrap();
        assert!(why.contains("does not allow"), "{why}");
        let report = shadow::live::report(&app.state.db).await.unwrap();
        assert_eq!((report.decided, report.pending), (1, 0));
        assert_eq!(report.exact_agreement, 0.0, "counted as a disagreement");
        assert_eq!(report.disagreements.len(), 1);
        app.drain().await;
        assert!(app.provider_refunds("ch_1001a").await.is_empty());
        assert!(app.provider_refunds("ch_1001b").await.is_empty());
    }
}

#[tokio::test]
async fn a_hand_refund_passes_the_policy_check_and_needs_another_persons_approval() {
    let app = shadow_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
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

    let report = shadow::live::report(&app.state.db).await.unwrap();
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

    let report = shadow::live::report(&app.state.db).await.unwrap();
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
            // The chart is server-side SVG: no inline script (only the page's own files).
            && html.matches("<script").count() == html.matches("<script src=\"/static/").count(),
        "{html}"
    );
}

/// The billing source, with its first customer lookup held until the test releases it.
struct GatedBilling {
    inner: Arc<dyn BillingSource>,
    gated: AtomicBool,
    entered: Notify,
    release: Notify,
}

impl BillingSource for GatedBilling {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>> {
        Box::pin(async move {
            if !self.gated.swap(true, Ordering::SeqCst) {
                self.entered.notify_one();
                self.release.notified().await;
            }
            self.inner.customer(customer_id).await
        })
    }
    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>> {
        self.inner.orders(customer_id)
    }
    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool> {
        self.inner.order_exists(order_id)
    }
    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>> {
        self.inner.charges(customer)
    }
    fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>> {
        self.inner.refunds(charge_id)
    }
    fn other_tickets<'a>(
        &'a self,
        customer_id: &'a str,
        except_ticket_id: &'a str,
        limit: i64,
    ) -> Answer<'a, Option<OtherTickets>> {
        self.inner
            .other_tickets(customer_id, except_ticket_id, limit)
    }
}

#[tokio::test]
async fn a_hand_refund_on_a_case_the_customer_reopened_meanwhile_is_a_conflict_and_writes_nothing()
{
    let app = shadow_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    assert_eq!(case["status"], "escalated", "{case:#}");

    // The reviewer's refund is checked against fresh facts; while they are being read…
    let billing = Arc::new(GatedBilling {
        inner: app.state.billing.clone(),
        gated: AtomicBool::new(false),
        entered: Notify::new(),
        release: Notify::new(),
    });
    let mut reviewer_state = app.state.clone();
    reviewer_state.billing = billing.clone();
    let reviewer = desk::auth::staff_by_email(&app.state.db, "supervisor@test.example")
        .await
        .unwrap()
        .unwrap();
    let manual: shadow::live::ManualDecision = serde_json::from_value(json!({
        "outcome": "refund", "reason": "duplicate_charge",
        "refunds": [{"charge_id": "ch_1001b", "amount": "198.00", "currency": "CNY"}],
    }))
    .unwrap();
    let hand_decision = tokio::spawn({
        let case_id = case_id.clone();
        async move {
            shadow::live::decide_by_hand(reviewer_state.desk(), &reviewer, &case_id, manual).await
        }
    });
    billing.entered.notified().await;

    // …the customer writes again, and the case goes back to investigation.
    let token = app.customer_token("C-100").await;
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/tickets/{ticket_id}/messages"),
            Some(&token),
            Some(json!({ "text": "Actually, the second charge was for my partner's plan." })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let reopened = app.case(&case_id).await;
    assert_eq!(reopened["status"], "investigating", "{reopened:#}");

    billing.release.notify_one();
    let error = hand_decision.await.unwrap().unwrap_err();
    assert!(desk::cases::is_case_changed(&error), "{error:?}");
    assert_eq!(
        app.case(&case_id).await,
        reopened,
        "no proposal, fingerprint or status from the stale hand decision"
    );
    assert!(
        desk::shadow_pairs::pending(&app.state.db, &case_id)
            .await
            .unwrap(),
        "the hand verdict was rolled back with it"
    );
    let staff_writes: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE subject = $1
           AND action IN ('proposed_by_staff', 'decided_by_hand')",
    )
    .bind(&case_id)
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(staff_writes, 0);
    app.drain().await;
    assert!(app.provider_refunds("ch_1001b").await.is_empty());
}

// --- Shadow blindness everywhere. ---------------------------------------------

#[tokio::test]
async fn a_takeover_is_refused_while_a_shadow_case_waits_for_its_blind_hand_decision() {
    let app = shadow_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    assert_eq!(case["status"], "escalated");
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{case_id}/takeover"),
            Some(&app.supervisor_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "shadow_decision_pending");
    let (cookie, csrf) = session(&app, "supervisor@test.example").await;
    let (status, page) = app
        .raw(
            Request::post(format!("/console/cases/{case_id}/takeover"))
                .header("cookie", cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(format!("csrf={csrf}")))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        !page.contains("id=\"proposed-refunds\""),
        "the page reveals no decision"
    );
    let after = app.case(case_id).await;
    assert!(
        after["proposal"].is_null() && after["decision"].is_null(),
        "{after}"
    );
}

#[tokio::test]
async fn the_blind_view_hides_the_agents_reading_of_the_ticket_on_the_api_and_mcp() {
    let app = shadow_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    for view in [case.clone(), app.case(case_id).await] {
        let evidence = &view["evidence"];
        assert!(
            evidence["orders"].is_array(),
            "the records stay: {evidence}"
        );
        for derived in ["request", "order_id", "order_ownership"] {
            assert!(
                evidence.get(derived).is_none(),
                "{derived} shown: {evidence}"
            );
        }
    }
    let (outcome, _) = app
        .mcp_as_supervisor("get_case", json!({ "case_id": case_id }))
        .await;
    let evidence = &outcome.content["case"]["evidence"];
    assert!(evidence["orders"].is_array(), "{evidence}");
    assert!(evidence.get("request").is_none(), "{evidence}");

    // Once decided by hand, the whole evidence is shown again.
    let refunds = json!([{"charge_id": "ch_1001b", "amount": "198.00", "currency": "CNY"}]);
    let body = json!({"outcome": "refund", "reason": "duplicate_charge", "refunds": refunds});
    let (status, decided) = decide(&app, &app.supervisor_token, case_id, body).await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    assert_eq!(
        decided["evidence"]["request"], "duplicate_charge",
        "{decided}"
    );
}

#[tokio::test]
async fn a_customer_message_after_a_hand_decision_never_erases_it() {
    let app = shadow_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    let body = json!({"outcome": "no_refund", "reason": "not_duplicate"});
    let (status, decided) = decide(&app, &app.supervisor_token, case_id, body).await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    let token = app.customer_token("C-100").await;
    let (status, _) = app
        .request(
            "POST",
            &format!("/api/v1/tickets/{ticket_id}/messages"),
            Some(&token),
            Some(json!({"text": "But I really was charged twice, see my bank statement."})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.drain().await;
    let human: Option<String> =
        sqlx::query_scalar("SELECT human_outcome FROM shadow_pairs WHERE case_id = $1")
            .bind(case_id)
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(
        human.as_deref(),
        Some("no_refund"),
        "the hand decision stands"
    );
}
