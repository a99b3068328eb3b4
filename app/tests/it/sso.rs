//! Sign-in with the company's identity provider (OpenID Connect, authorization code with
//! PKCE), against `support::idp`, a provider the test steers: who gets in and with which
//! role, and every forged or stale answer refused with no session left behind.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use desk::auth::oidc::{Oidc, OidcSettings};
use desk::auth::provisioning::GroupRoles;
use desk::auth::StaffRole;
use desk::clock::Clock;

use crate::support::idp::{Plan, TestIdp, CLIENT_ID, CLIENT_SECRET};
use crate::support::{spawn_app, TestApp};

const DESK: &str = "http://desk.test";

async fn desk_with_idp(create_staff: bool) -> (TestApp, TestIdp) {
    let mut app = spawn_app().await;
    let now = app.clock.now_ms() / 1000;
    let idp = TestIdp::start(Plan::person("u-1", "agent@test.example", &["support"], now)).await;
    let settings = OidcSettings {
        issuer: idp.issuer.clone(),
        client_id: CLIENT_ID.into(),
        client_secret: Some(CLIENT_SECRET.into()),
        groups_claim: "groups".into(),
        create_staff,
    };
    app.state.oidc = Some(Arc::new(Oidc::new(settings).unwrap()));
    app.state.public_url = Some(DESK.into());
    app.state.group_roles = Arc::new(GroupRoles::parse("support=agent,leads=supervisor").unwrap());
    app.router = web::router(app.state.clone());
    (app, idp)
}

fn plan(app: &TestApp, sub: &str, email: &str, groups: &[&str]) -> Plan {
    Plan::person(sub, email, groups, app.clock.now_ms() / 1000)
}

mod identity;

/// What the desk answered the provider's redirect back.
struct Back {
    status: StatusCode,
    cookie: Option<String>,
    location: Option<String>,
    page: String,
    /// The callback's path and query, to replay it.
    callback: String,
}

/// Starts a sign-in at the desk, goes through the provider, and comes back in the same
/// browser (with the cookie the start set).
async fn sign_in(app: &TestApp) -> Back {
    let (callback, binding) = to_provider_and_back(app).await;
    come_back_with(app, &callback, binding.as_deref()).await
}

/// Starts a sign-in and goes through the provider: the callback's path and query, and
/// the cookie the start set (`name=value`), if any.
async fn to_provider_and_back(app: &TestApp) -> (String, Option<String>) {
    let start = app
        .response(Request::get("/console/sso").body(Body::empty()).unwrap())
        .await;
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let binding = start
        .headers()
        .get(header::SET_COOKIE)
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string());
    let to_idp = start.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        to_idp.contains("code_challenge=") && to_idp.contains("nonce="),
        "{to_idp}"
    );
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let back = client.get(&to_idp).send().await.unwrap();
    let callback = back.headers()["location"]
        .to_str()
        .unwrap()
        .trim_start_matches(DESK)
        .to_string();
    (callback, binding)
}

/// Opens a callback in a browser with no cookie of ours.
async fn come_back(app: &TestApp, callback: &str) -> Back {
    come_back_with(app, callback, None).await
}

/// Opens a callback in a browser holding `cookie` (`name=value`).
async fn come_back_with(app: &TestApp, callback: &str, cookie: Option<&str>) -> Back {
    let mut request = Request::get(callback);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    let response = app.response(request.body(Body::empty()).unwrap()).await;
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|v: &header::HeaderValue| v.to_str().unwrap().to_string())
    };
    let (status, cookie, location) = (
        response.status(),
        header(header::SET_COOKIE),
        header(header::LOCATION),
    );
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    Back {
        status,
        cookie,
        location,
        page: String::from_utf8_lossy(&bytes).into(),
        callback: callback.into(),
    }
}

async fn role_of(app: &TestApp, email: &str) -> Option<StaffRole> {
    desk::auth::staff_by_email(&app.state.db, email)
        .await
        .unwrap()
        .map(|s| s.role)
}

#[tokio::test]
async fn a_person_in_the_support_group_signs_in_as_an_agent_and_one_in_leads_as_a_supervisor() {
    let (app, idp) = desk_with_idp(false).await;
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.page);
    assert_eq!(back.location.as_deref(), Some("/console"));
    let cookie = back.cookie.expect("a console session");
    let session = cookie.split(';').next().unwrap().to_string();
    let (status, _) = app
        .raw(
            Request::get("/console")
                .header(header::COOKIE, &session)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "signed in to the console");

    // The supervisor, listed in the leads group at the provider.
    idp.plan(plan(
        &app,
        "u-2",
        "supervisor@test.example",
        &["support", "leads"],
    ));
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.page);
    assert_eq!(
        role_of(&app, "supervisor@test.example").await,
        Some(StaffRole::Supervisor)
    );
    // Moved to support only at the provider: an agent from the next sign-in on.
    idp.plan(plan(&app, "u-2", "supervisor@test.example", &["support"]));
    sign_in(&app).await;
    assert_eq!(
        role_of(&app, "supervisor@test.example").await,
        Some(StaffRole::Agent)
    );
}

#[tokio::test]
async fn someone_in_no_mapped_group_or_never_invited_is_refused_with_a_clear_page_and_no_session() {
    let (app, idp) = desk_with_idp(false).await;
    idp.plan(plan(&app, "u-1", "agent@test.example", &["marketing"]));
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::FORBIDDEN);
    assert!(back.cookie.is_none());
    assert!(
        back.page.contains("no group of the refund desk"),
        "{}",
        back.page
    );

    idp.plan(plan(&app, "u-9", "stranger@test.example", &["support"]));
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::FORBIDDEN);
    assert!(back.page.contains("not been invited"), "{}", back.page);
    assert_eq!(
        role_of(&app, "stranger@test.example").await,
        None,
        "nobody is created"
    );
}

#[tokio::test]
async fn an_invited_person_gets_in_once_through_the_provider_and_creation_on_first_sign_in_is_opt_in(
) {
    let (app, idp) = desk_with_idp(false).await;
    let now = app.clock.now_ms();
    desk::auth::accounts::invite(
        &app.state.db,
        "test",
        "new@test.example",
        StaffRole::Agent,
        now,
    )
    .await
    .unwrap();
    idp.plan(plan(&app, "u-3", "new@test.example", &["leads"]));
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.page);
    assert_eq!(
        role_of(&app, "new@test.example").await,
        Some(StaffRole::Supervisor),
        "the group decides"
    );

    let (app, idp) = desk_with_idp(true).await;
    idp.plan(plan(&app, "u-4", "walk.in@test.example", &["support"]));
    let back = sign_in(&app).await;
    assert_eq!(
        back.status,
        StatusCode::SEE_OTHER,
        "OIDC_CREATE_STAFF=on: {}",
        back.page
    );
    assert_eq!(
        role_of(&app, "walk.in@test.example").await,
        Some(StaffRole::Agent)
    );
}

#[tokio::test]
async fn forged_and_stale_answers_are_refused_and_leave_no_session() {
    let (app, idp) = desk_with_idp(false).await;
    let base = plan(&app, "u-1", "agent@test.example", &["support"]);
    let cases: Vec<(&str, Plan)> = vec![
        (
            "signed by another key",
            Plan {
                key: "stranger",
                ..base.clone()
            },
        ),
        (
            "for another audience",
            Plan {
                audience: "someone-else".into(),
                ..base.clone()
            },
        ),
        (
            "expired",
            Plan {
                expires_in: -60,
                ..base.clone()
            },
        ),
        (
            "with another nonce",
            Plan {
                nonce: Some("not-yours".into()),
                ..base.clone()
            },
        ),
    ];
    for (what, bad) in cases {
        idp.plan(bad);
        let back = sign_in(&app).await;
        assert_eq!(
            back.status,
            StatusCode::UNAUTHORIZED,
            "a token {what}: {}",
            back.page
        );
        assert!(back.cookie.is_none(), "a token {what} left a session");
    }
    let sessions: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM auth_tokens WHERE kind = 'session'")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(sessions, 0);
}

#[tokio::test]
async fn a_replayed_callback_and_a_made_up_state_are_refused() {
    let (app, _idp) = desk_with_idp(false).await;
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::SEE_OTHER);
    let again = come_back(&app, &back.callback).await;
    assert_eq!(
        again.status,
        StatusCode::UNAUTHORIZED,
        "replayed: {}",
        again.page
    );
    assert!(again.cookie.is_none());
    let forged = come_back(&app, "/console/sso/callback?code=anything&state=made-up").await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
    assert!(forged.cookie.is_none());
}

#[tokio::test]
async fn a_rotated_provider_key_is_fetched_again_and_accepted() {
    let (app, idp) = desk_with_idp(false).await;
    assert_eq!(
        sign_in(&app).await.status,
        StatusCode::SEE_OTHER,
        "keys read once"
    );
    idp.rotate_keys();
    let back = sign_in(&app).await;
    assert_eq!(
        back.status,
        StatusCode::SEE_OTHER,
        "after rotation: {}",
        back.page
    );
}

#[tokio::test]
async fn a_deactivated_person_is_refused_by_the_provider_route_too() {
    let (app, _idp) = desk_with_idp(false).await;
    let back = sign_in(&app).await;
    let session = back.cookie.unwrap().split(';').next().unwrap().to_string();
    let agent = desk::auth::staff_by_email(&app.state.db, "agent@test.example")
        .await
        .unwrap()
        .unwrap();
    desk::auth::accounts::deactivate(&app.state.db, "test", &agent.id, app.clock.now_ms())
        .await
        .unwrap();
    let (status, _) = app
        .raw(
            Request::get("/console")
                .header(header::COOKIE, &session)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "the open session stopped");
    let back = sign_in(&app).await;
    assert_eq!(back.status, StatusCode::FORBIDDEN, "{}", back.page);
    assert!(back.cookie.is_none());
}

#[tokio::test]
async fn with_password_sign_in_off_only_the_provider_signs_staff_in() {
    let (mut app, _idp) = desk_with_idp(false).await;
    app.state.password_sign_in = false;
    app.router = web::router(app.state.clone());
    let (status, page) = app
        .raw(
            Request::post("/console/login")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header("sec-fetch-site", "same-origin")
                .body(Body::from(
                    "email=agent%40test.example&password=correct+horse+battery",
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("company account"), "{page}");
    assert_eq!(sign_in(&app).await.status, StatusCode::SEE_OTHER);
}

/// The real provider (`scripts/oidc-provider`: `oidc-provider` from npm) and headless
/// Chromium: ann (group support) signs in as an agent, lee (support and leads) as a
/// supervisor, nora (no group) is refused with a clear page, uma (invited, her address
/// not verified at the provider) is refused, and ann2 (another subject showing ann's
/// verified address) is refused once ann is linked, the link staying ann's. Needs the provider
/// installed: `TEST_OIDC_PROVIDER` names its directory (`.ci/run` sets it; otherwise
/// this test says loudly that it did not run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_through_a_real_provider_in_the_browser_and_their_groups_give_their_roles() {
    let Ok(dir) = std::env::var("TEST_OIDC_PROVIDER") else {
        eprintln!("\n*** NOT RUN: set TEST_OIDC_PROVIDER (scripts/oidc-provider --install prints it) ***\n");
        return;
    };
    let mut app = spawn_app().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let desk = format!("http://{}", listener.local_addr().unwrap());
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut provider = tokio::process::Command::new("node")
        .arg(format!("{dir}/server.mjs"))
        .arg(port.to_string())
        .arg(&desk)
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("node runs the provider");
    let issuer = format!("http://127.0.0.1:{port}");
    let discovery = format!("{issuer}/.well-known/openid-configuration");
    for _ in 0..100 {
        if reqwest::get(&discovery)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The provider dates its tokens by the real clock: so does the desk here.
    app.state.clock = Arc::new(desk::clock::SystemClock);
    let settings = OidcSettings {
        issuer,
        client_id: "refund-desk".into(),
        client_secret: Some("desk-secret".into()),
        groups_claim: "groups".into(),
        create_staff: false,
    };
    app.state.oidc = Some(Arc::new(Oidc::new(settings).unwrap()));
    app.state.public_url = Some(desk.clone());
    app.state.group_roles = Arc::new(GroupRoles::parse("support=agent,leads=supervisor").unwrap());
    let now = app.state.clock.now_ms();
    for email in [
        "ann@support.example",
        "lee@support.example",
        "nora@support.example",
        "uma@support.example",
    ] {
        desk::auth::accounts::invite(&app.state.db, "test", email, StaffRole::Agent, now)
            .await
            .unwrap();
    }
    let router = web::router(app.state.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    for (login, landing, role, refusal) in [
        ("ann", Some("/console"), Some(StaffRole::Agent), ""),
        ("lee", Some("/console"), Some(StaffRole::Supervisor), ""),
        ("nora", None, None, "no group of the refund desk"),
        ("uma", None, None, "not verified"),
        ("ann2", None, None, "already linked"),
    ] {
        let browser = crate::support::browser::Browser::start().await;
        browser.goto(&format!("{desk}/console/login")).await;
        browser.click("#sso").await;
        // The provider's own sign-in page, then its consent page, then back to the desk.
        browser.wait_for("input[name=login]").await;
        browser.type_into("input[name=login]", login).await;
        browser
            .type_into("input[name=password]", "any password")
            .await;
        browser.click("button[type=submit]").await;
        browser.wait_for("input[name=prompt][value=consent]").await;
        browser.click("button[type=submit]").await;
        let email = format!("{}@support.example", login.trim_end_matches('2'));
        match landing {
            Some(landing) => {
                let at = browser.wait_for_url_ending(landing).await;
                assert!(at.ends_with(landing), "{login} landed at {at}");
                assert_eq!(role_of(&app, &email).await, role, "{login}");
            }
            None => {
                let at = browser.wait_for_url_ending("/console/sso/callback").await;
                assert!(at.contains("/console/sso/callback"), "{login} is at {at}");
                let said = browser.text("#login-error").await;
                assert!(said.contains(refusal), "{login}: {said}");
            }
        }
    }
    let ann: Option<String> =
        sqlx::query_scalar("SELECT oidc_subject FROM staff WHERE email = 'ann@support.example'")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert!(
        ann.is_some_and(|s| s.ends_with(" ann")),
        "the link stays ann's"
    );
    assert_eq!(role_of(&app, "uma@support.example").await, None);
    provider.kill().await.ok();
}
