//! Staff identity is the provider's (issuer, subject) (docs/spec/roles.md): an e-mail
//! address links it to an account once, only when verified; a second subject is refused
//! and audited; a sign-in is bound to the browser that started it; the provider's refusals
//! are 4xx pages in the console's words.

use axum::http::StatusCode;

use super::{
    come_back, come_back_with, desk_with_idp, plan, role_of, sign_in, to_provider_and_back,
};
use crate::support::idp::Plan;
use crate::support::TestApp;

async fn sessions(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM auth_tokens WHERE kind = 'session'")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

async fn linked_subject(app: &TestApp, email: &str) -> Option<String> {
    sqlx::query_scalar("SELECT oidc_subject FROM staff WHERE email = $1")
        .bind(email)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

/// Seen failing before the fix: `email_verified` was never read, so an identity claiming
/// the supervisor's address unverified signed in as the supervisor (303 and a session),
/// and an unverified address spent an invitation.
#[tokio::test]
async fn an_address_the_provider_has_not_verified_links_nothing_and_spends_no_invitation() {
    let (app, idp) = desk_with_idp(false).await;
    for verified in [Some(false), None] {
        idp.plan(Plan {
            email_verified: verified,
            ..plan(
                &app,
                "evil-1",
                "supervisor@test.example",
                &["support", "leads"],
            )
        });
        let back = sign_in(&app).await;
        assert_eq!(
            back.status,
            StatusCode::FORBIDDEN,
            "{verified:?}: {}",
            back.page
        );
        assert!(back.page.contains("not verified"), "{}", back.page);
        assert!(back.cookie.is_none());
    }
    assert_eq!(linked_subject(&app, "supervisor@test.example").await, None);
    let now = desk::clock::Clock::now_ms(app.clock.as_ref());
    desk::auth::accounts::invite(
        &app.state.db,
        "test",
        "new@test.example",
        desk::auth::StaffRole::Agent,
        now,
    )
    .await
    .unwrap();
    idp.plan(Plan {
        email_verified: Some(false),
        ..plan(&app, "evil-2", "new@test.example", &["support"])
    });
    assert_eq!(sign_in(&app).await.status, StatusCode::FORBIDDEN);
    assert_eq!(
        role_of(&app, "new@test.example").await,
        None,
        "nobody created"
    );
    // Verified, the same invitation still works: it was not spent.
    idp.plan(plan(&app, "new-1", "new@test.example", &["support"]));
    assert_eq!(sign_in(&app).await.status, StatusCode::SEE_OTHER);
    assert_eq!(sessions(&app).await, 1);
}

/// Seen failing before the fix: the second subject signed in (303 and a session) and
/// the account's link moved to it.
#[tokio::test]
async fn a_second_subject_for_a_linked_account_is_refused_audited_and_the_link_stays() {
    let (app, idp) = desk_with_idp(false).await;
    assert_eq!(sign_in(&app).await.status, StatusCode::SEE_OTHER);
    let first = linked_subject(&app, "agent@test.example").await.unwrap();
    assert!(first.ends_with(" u-1"), "{first}");
    idp.plan(plan(&app, "u-666", "agent@test.example", &["support"]));
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::FORBIDDEN, "{}", back.page);
    assert!(back.page.contains("already linked"), "{}", back.page);
    assert!(back.cookie.is_none());
    assert_eq!(
        linked_subject(&app, "agent@test.example").await.unwrap(),
        first
    );
    let audited: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'sso_second_subject_refused'",
    )
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(audited, 1);
    // The linked subject still signs in, whatever address it shows now.
    idp.plan(plan(&app, "u-1", "renamed@test.example", &["support"]));
    assert_eq!(sign_in(&app).await.status, StatusCode::SEE_OTHER);
}

/// Login CSRF: an attacker's callback (their code and state) planted on a victim's
/// browser. Seen failing before the fix at its first check: the start set no cookie, so
/// the sign-in was bound to no browser and the planted callback signed the victim in
/// (the attack as filed: 303 with a session for the attacker's account).
#[tokio::test]
async fn a_callback_opened_in_another_browser_signs_nobody_in() {
    let (app, _idp) = desk_with_idp(false).await;
    // The attacker starts in their browser and stops at the provider's redirect back.
    let (planted, attackers_cookie) = to_provider_and_back(&app).await;
    assert!(attackers_cookie.is_some(), "the start binds the browser");
    // The victim's browser, with no sign-in of its own, or with one of its own.
    let back = come_back(&app, &planted).await;
    assert_eq!(back.status, StatusCode::UNAUTHORIZED, "{}", back.page);
    assert!(back.cookie.is_none());
    let (_, victims_cookie) = to_provider_and_back(&app).await;
    let (planted, _) = to_provider_and_back(&app).await;
    let back = come_back_with(&app, &planted, victims_cookie.as_deref()).await;
    assert_eq!(back.status, StatusCode::UNAUTHORIZED, "{}", back.page);
    assert!(back.cookie.is_none());
    assert_eq!(sessions(&app).await, 0);
}

/// Seen failing before the fix: 502 Bad Gateway, the page quoting the provider's
/// `invalid_grant` answer.
#[tokio::test]
async fn a_replayed_authorization_code_is_a_4xx_in_the_consoles_words() {
    let (app, _idp) = desk_with_idp(false).await;
    let (first, cookie) = to_provider_and_back(&app).await;
    assert_eq!(
        come_back_with(&app, &first, cookie.as_deref()).await.status,
        StatusCode::SEE_OTHER
    );
    let code = first
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    // A fresh sign-in of the same browser, its state, and the spent code.
    let (fresh, cookie) = to_provider_and_back(&app).await;
    let state = fresh
        .split("state=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let replay = format!("/console/sso/callback?code={code}&state={state}");
    let back = come_back_with(&app, &replay, cookie.as_deref()).await;
    assert!(
        back.status.is_client_error(),
        "{}: {}",
        back.status,
        back.page
    );
    assert!(
        back.page.contains("did not accept this sign-in"),
        "{}",
        back.page
    );
    assert!(!back.page.contains("invalid_grant"), "{}", back.page);
    assert!(back.cookie.is_none());
}
