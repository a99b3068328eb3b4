//! After a restore (docs/spec/data.md, "Backups"): before anything is served or
//! executed, every refund the provider made on the restored charges since the backup is
//! adopted into its case and refund intents, audited as found at the provider after a
//! restore. A case whose money went out is never shown awaiting approval or denied — even
//! when the provider's idempotency window is shorter than the gap between backup and
//! restore, so a resent key would not have been recognised.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use sqlx::Row;

use super::{
    add_customers, backup_target, provider_refunds_made, refund_agent, restarted_on,
    run_for_a_minute, statuses,
};
use crate::support::{spawn_app, spawn_app_with_provider, TestApp};

/// Opens one ticket per added customer and lets the agent propose: each case awaits
/// approval.
async fn awaiting_cases(app: &TestApp, count: usize, message: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..count {
        let ticket = app.post_ticket(&format!("C-R{n:02}"), message).await;
        ids.push(ticket["case"]["id"].as_str().unwrap().to_string());
    }
    app.drain().await;
    assert_eq!(statuses(app, &ids).await, vec!["awaiting_approval"; count]);
    ids
}

/// A supervisor approves each case as it stands now.
async fn approve_all(app: &TestApp, cases: &[String]) {
    for id in cases {
        let fingerprint = app.case(id).await["fingerprint"]
            .as_str()
            .unwrap()
            .to_string();
        let (status, body) = app.approve(&app.supervisor_token, id, &fingerprint).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
}

/// C-R00's charges refund slowly at the provider: its refund stays pending.
async fn slow_refunds_for_the_first_customer(app: &TestApp) {
    let mut charges = Vec::new();
    for (i, copy) in ["a", "b"].iter().enumerate() {
        charges.push(json!({"id": format!("ch_r00{copy}"), "order_id": "O-R00",
            "customer_id": "C-R00", "amount": "49.00", "currency": "USD", "captured": true,
            "status": "succeeded", "disputed": false,
            "created_at": format!("2026-11-20T09:0{i}:00Z"), "refund_profile": "pending",
            "payment_method": "pm_card_visa", "amount_refunded": "0.00"}));
    }
    let world = json!({"customers": [{"id": "C-R00", "name": "Restored Person 0",
            "email": "restored0@example.com", "region": "US"}],
        "orders": [{"id": "O-R00", "customer_id": "C-R00", "product": "annual_plan",
            "amount": "49.00", "currency": "USD", "created_at": "2026-11-20T09:00:00Z"}],
        "charges": charges, "refunds": []});
    desk::world::load_into_provider(&app.mock.base_url(), &world.to_string())
        .await
        .unwrap();
}

/// The mock's clock moves past its idempotency window: a key sent before is forgotten.
async fn provider_forgets_its_keys(app: &TestApp, seconds: i64) {
    let resp = reqwest::Client::new()
        .post(format!("{}/__mock/clock", app.mock.base_url()))
        .json(&json!({"advance_seconds": seconds}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
}

/// Seen failing before the fix: the restore closed no gate (the backup held no refund
/// intent, so `restore_gate_closed` was false), and after the worker's pass the ten
/// cases were `awaiting_approval` again, their refunds unknown to the desk.
#[tokio::test]
async fn refunds_paid_after_the_backup_are_adopted_and_never_shown_awaiting_approval_or_denied() {
    // The provider keeps keys an hour; the restore comes two hours after the refunds.
    let app =
        spawn_app_with_provider(|mock| mock.idempotency_ttl = Duration::from_secs(3600)).await;
    add_customers(&app, 10, "49.00", "49.00", true).await;
    slow_refunds_for_the_first_customer(&app).await;
    let cases = awaiting_cases(&app, 10, "I was charged twice for my annual plan").await;
    let (file, dir, url) = backup_target(&app).await;
    customer_data::restore::backup(&app.database_url, &file)
        .await
        .unwrap();
    approve_all(&app, &cases).await;
    app.drain().await;
    let mut paid = vec!["refund_succeeded"; 10];
    paid[0] = "refund_pending";
    assert_eq!(statuses(&app, &cases).await, paid);
    assert_eq!(provider_refunds_made(&app, 10).await, 10);
    let fingerprints: Vec<String> = {
        let db = &app.state.db;
        let mut out = Vec::new();
        for id in &cases {
            let row = sqlx::query("SELECT fingerprint FROM approvals WHERE case_id = $1")
                .bind(id)
                .fetch_one(db.pool())
                .await
                .unwrap();
            out.push(row.get("fingerprint"));
        }
        out
    };
    provider_forgets_its_keys(&app, 2 * 3600).await;

    customer_data::restore::restore(&url, &file, 1)
        .await
        .unwrap();
    let restored = restarted_on(app, dir, url).await;
    let gate = desk::refunds::restore_gate_closed(&restored.state.db)
        .await
        .unwrap();
    restored.drain().await;
    let after = statuses(&restored, &cases).await;
    eprintln!("restore gate closed before the pass: {gate}; statuses after it: {after:?}");
    assert!(gate, "nothing may be executed before the adoption");
    assert_eq!(after, paid, "each case shows the provider's refund");
    for id in &cases {
        let case = restored.case(id).await;
        let refunds = case["refunds"].as_array().unwrap();
        assert_eq!(refunds.len(), 1, "{case:#}");
        assert!(
            refunds[0]["id"].as_str().unwrap().starts_with("re_"),
            "{case:#}"
        );
        assert_eq!(refunds[0]["amount"], "49.00");
        let audited = sqlx::query(
            "SELECT COUNT(*) AS n FROM audit_log WHERE subject = $1 AND detail LIKE '%found at the provider after a restore%'",
        )
        .bind(id)
        .fetch_one(restored.state.db.pool())
        .await
        .unwrap();
        assert_eq!(audited.get::<i64, _>("n"), 1, "{id} audited");
    }
    // A supervisor still holding the old page approves again: refused, nothing moves.
    for (id, fingerprint) in cases.iter().zip(&fingerprints) {
        let (status, body) = restored
            .approve(&restored.supervisor_token, id, fingerprint)
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
    }
    restored.drain().await;
    assert_eq!(statuses(&restored, &cases).await, paid, "none denied");
    assert_eq!(provider_refunds_made(&restored, 10).await, 10, "0 repeated");
    let report = desk::reconcile::run(restored.state.reconciler())
        .await
        .unwrap();
    assert!(report.is_clean(), "{}", report.summary());
}

/// Seen failing before the fix: `restore` exited 0 without asking the provider anything.
#[tokio::test]
async fn a_restore_that_cannot_reach_the_provider_says_so_and_serve_waits_for_the_adoption() {
    let app = spawn_app().await;
    if !app.database_url.starts_with("sqlite") {
        // The command line restores into a data directory here; PostgreSQL's restore is
        // `pg_restore`, driven by the test above.
        return;
    }
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let file = app.dir.path().join("before-approval.db");
    customer_data::restore::backup(&app.database_url, &file)
        .await
        .unwrap();
    let fingerprint = case["fingerprint"].as_str().unwrap();
    let (status, _) = app
        .approve(&app.supervisor_token, &case_id, fingerprint)
        .await;
    assert_eq!(status, StatusCode::OK);
    app.drain().await;
    assert_eq!(app.case(&case_id).await["status"], "refund_succeeded");

    let fresh = tempfile::tempdir().unwrap();
    let data = fresh.path().join("restored");
    let nowhere = format!("http://127.0.0.1:{}", crate::support::serve::free_port());
    let file_arg = file.to_str().unwrap();
    let out = run_for_a_minute(&data, &nowhere, &["restore", file_arg]).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("provider"), "{said}");
    assert!(
        said.contains("serve"),
        "the operator is told what happens next: {said}"
    );
    assert!(data.join("refund-desk.db").exists(), "the data is restored");

    // serve will not serve while the adoption has not run.
    let port = crate::support::serve::free_port().to_string();
    let addr = format!("127.0.0.1:{port}");
    let out = run_for_a_minute(&data, &nowhere, &["serve", "--addr", &addr]).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("restore"), "{said}");

    // With the provider in reach, serve adopts the refund first, then serves.
    let mut serve =
        crate::support::serve::start(&mut refund_agent(&data, &app.mock.base_url())).await;
    let token = super::run_ok(refund_agent(&data, &app.mock.base_url()).args([
        "staff",
        "token",
        "--email",
        "agent@test.example",
    ]));
    let shown: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/api/v1/cases/{case_id}", serve.base))
        .bearer_auth(token.trim())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    crate::support::serve::sigkill(&mut serve);
    assert_eq!(shown["status"], "refund_succeeded", "{shown:#}");
    assert_eq!(
        shown["refunds"].as_array().map(Vec::len),
        Some(1),
        "{shown:#}"
    );
}
