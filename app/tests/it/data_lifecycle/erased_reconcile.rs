//! `reconcile` after an erasure (docs/spec/data.md, "Erasure"): the provider still holds
//! its copy of the customer, the desk a tombstone (the provider's customer id under the
//! pseudonym). That is a known state, reported as erased, never as drift.

use axum::http::StatusCode;
use desk::auth::StaffRole;

use super::{refunded_customer_with_history, run_for_a_minute};
use crate::support::spawn_app;

/// Seen failing before the fix: after the erasure the report said "drift: 1 customers"
/// (C-100 `missing_at_provider`: its provider customer was no longer compared) and
/// `refund-agent reconcile` exited 1.
#[tokio::test]
async fn reconcile_reports_an_erased_customer_as_erased_not_as_drift() {
    let app = spawn_app().await;
    refunded_customer_with_history(&app).await;
    let before = desk::reconcile::run_with_drift(app.state.reconciler())
        .await
        .unwrap();
    assert!(before.is_clean(), "{}", before.summary());
    let admin = app.staff_token(StaffRole::Admin).await;
    let (status, erased) = app
        .request("POST", "/api/v1/customers/C-100/erase", Some(&admin), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{erased}");

    let after = desk::reconcile::run_with_drift(app.state.reconciler())
        .await
        .unwrap();
    assert!(after.is_clean(), "{}", after.summary());
    let drift = after.drift.as_ref().expect("a run with drift");
    assert_eq!(drift.customers.count, 0, "{}", after.summary());
    assert_eq!(drift.erased.count, 1, "{}", after.summary());
    let tombstone = &drift.erased.first[0];
    assert_eq!(tombstone.pseudonym, erased["pseudonym"].as_str().unwrap());
    assert_eq!(tombstone.provider_customer_id, "C-100");
    assert!(tombstone.at_provider, "the provider keeps its own copy");
    let written = serde_json::to_string(&after).unwrap();
    assert!(
        !written.contains("li.wei") && !written.contains("Li Wei"),
        "the report quotes nothing of the erased customer: {written}"
    );
    if app.database_url.starts_with("sqlite") {
        let out = run_for_a_minute(app.dir.path(), &app.mock.base_url(), &["reconcile"]).await;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{said}");
    }
}
