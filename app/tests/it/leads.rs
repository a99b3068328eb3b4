//! Leads' tools: the approval thresholds of a draft set through a form — no
//! TOML typed — written into the draft's rules and read back through the policy
//! engine's parser; a bad amount refused beside the form with what was typed kept.

use axum::http::StatusCode;
use desk::auth::{self, StaffRole};
use desk::clock::Clock;

use crate::conversation::{console_get, console_post};
use crate::support::spawn_app;

#[tokio::test]
async fn a_policy_author_sets_approval_thresholds_through_a_form_and_a_bad_amount_is_refused_inline(
) {
    let app = spawn_app().await;
    let now = app.clock.now_ms();
    let email = "author@test.example";
    auth::upsert_staff(
        &app.state.db,
        email,
        StaffRole::PolicyAuthor,
        "correct horse battery",
        now,
    )
    .await
    .unwrap();
    let (cookie, csrf) = app.staff_session(email).await;
    let path = "/console/policies/RP-004/draft";
    let (status, page) = console_get(&app, &cookie, path).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("id=\"thresholds-form\"") && page.contains("name=\"JPY\" value=\"15000\""),
        "the form shows the thresholds in force: {page}"
    );
    let version = page
        .split("name=\"expected_version\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_string();
    let form = |jpy: &str| {
        format!(
            "csrf={csrf}&expected_version={version}&up_to_threshold=agent&above_threshold=supervisor&CNY=500.00&USD=100.00&EUR=100.00&JPY={jpy}"
        )
    };
    let submit = "/console/policies/RP-004/thresholds";

    let (status, page) = console_post(&app, &cookie, submit, &form("150.5")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let beside = page
        .split("id=\"thresholds-form\"")
        .nth(1)
        .unwrap_or_default();
    assert!(
        beside.contains("id=\"thresholds-error\"") && beside.contains("JPY: &#39;150.5&#39;"),
        "refused beside the form: {beside}"
    );
    assert!(
        beside.contains("name=\"JPY\" value=\"150.5\""),
        "what was typed is kept"
    );

    let (status, _) = console_post(&app, &cookie, submit, &form("20000")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page) = console_get(&app, &cookie, path).await;
    assert!(
        page.contains("JPY = &#34;20000&#34;"),
        "written into the rules: {page}"
    );
    // The form is drawn from the rules as `PolicyRules::parse` reads them: shown with
    // the new amount, the engine read what was written.
    assert!(
        page.contains("name=\"JPY\" value=\"20000\""),
        "read back by the engine"
    );
    assert!(
        !page.contains(".rules.toml</code>"),
        "no problem in the rules: {page}"
    );
}

#[tokio::test]
async fn a_refused_whatif_or_publish_is_told_beside_its_form_on_the_draft_page() {
    let app = spawn_app().await;
    let now = app.clock.now_ms();
    let email = "author@test.example";
    auth::upsert_staff(
        &app.state.db,
        email,
        StaffRole::PolicyAuthor,
        "correct horse battery",
        now,
    )
    .await
    .unwrap();
    let (cookie, csrf) = app.staff_session(email).await;
    // Before: a typo in the days replaced the console with a bare error page.
    let form = format!("csrf={csrf}&live_days=thirty");
    let path = "/console/policies/RP-001/whatif";
    let (status, page) = console_post(&app, &cookie, path, &form).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let whatif = page.split("id=\"whatif\"").nth(1).unwrap_or_default();
    assert!(
        whatif.contains("id=\"whatif-error\"")
            && whatif.contains("&#39;thirty&#39; is not a number of days"),
        "beside the what-if form: {page}"
    );
    assert!(
        page.contains("id=\"draft-form\""),
        "the draft page, not an error page"
    );

    let form = format!("csrf={csrf}&draft_version=7&whatif_version=7&effective_from=2027-01-15");
    let path = "/console/policies/RP-001/publish";
    // Unconfirmed, a publish is refused before anything else is looked at.
    let (status, page) = console_post(&app, &cookie, path, &form).await;
    assert!(status.is_client_error(), "{status}");
    assert!(page.contains("Tick the box to confirm"), "{page}");
    let form = format!("{form}&confirm=yes");
    let (status, page) = console_post(&app, &cookie, path, &form).await;
    assert!(status.is_client_error(), "{status}");
    assert!(!page.contains("Tick the box to confirm"), "{page}");
    let publish = page.split("id=\"publish\"").nth(1).unwrap_or_default();
    assert!(
        publish.contains("id=\"publish-error\""),
        "beside the publish form: {page}"
    );
}
