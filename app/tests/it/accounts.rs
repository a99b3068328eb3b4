//! Team accounts: staff invited, deactivated (every session and token of theirs gone at
//! once), tokens named, expiring and revoked by id, service tokens limited to their own
//! routes, and SCIM 2.0 provisioning with groups mapped to roles (docs/spec/roles.md).

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use desk::auth::provisioning::GroupRoles;
use desk::auth::{ServiceKind, StaffRole};
use serde_json::{json, Value};

use crate::support::{spawn_app, TestApp};

/// A console form POST with the session cookie and its CSRF token.
async fn form(
    app: &TestApp,
    session: &(String, String),
    path: &str,
    fields: &str,
) -> (StatusCode, String) {
    let (cookie, csrf) = session;
    let body = if fields.is_empty() {
        format!("csrf={csrf}")
    } else {
        format!("csrf={csrf}&{fields}")
    };
    app.raw(
        Request::post(path)
            .header(header::COOKIE, cookie)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "same-origin")
            .body(Body::from(body))
            .unwrap(),
    )
    .await
}

async fn page(app: &TestApp, cookie: &str, path: &str) -> (StatusCode, String) {
    app.raw(
        Request::get(path)
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

async fn staff_id(app: &TestApp, email: &str) -> String {
    desk::auth::staff_by_email(&app.state.db, email)
        .await
        .unwrap()
        .unwrap()
        .id
}

#[tokio::test]
async fn an_admin_deactivates_a_signed_in_agent_and_their_next_click_and_api_call_are_refused() {
    let app = spawn_app().await;
    app.staff_token(StaffRole::Admin).await;
    let admin = app.staff_session("admin@test.example").await;
    let agent = app.staff_session("agent@test.example").await;
    let (status, _) = page(&app, &agent.0, "/console").await;
    assert_eq!(status, StatusCode::OK, "the agent is signed in");
    let (status, _) = app
        .request("GET", "/api/v1/cases", Some(&app.agent_token), None)
        .await;
    assert_eq!(status, StatusCode::OK);

    let id = staff_id(&app, "agent@test.example").await;
    let (status, html) = form(&app, &admin, &format!("/console/staff/{id}/deactivate"), "").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains("deactivated"), "{html}");

    let (status, _) = page(&app, &agent.0, "/console").await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "the next click goes to sign-in"
    );
    let (status, _) = app
        .request("GET", "/api/v1/cases", Some(&app.agent_token), None)
        .await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the next API call is refused"
    );
    let login = desk::auth::login(
        &app.state.db,
        "agent@test.example",
        "correct horse battery",
        "127.0.0.9",
        0,
    )
    .await
    .unwrap();
    assert!(
        matches!(login, desk::auth::LoginResult::WrongCredentials),
        "{login:?}"
    );
    let audited: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'staff_deactivated' AND subject = $1",
    )
    .bind(&id)
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(audited, 1);
}

#[tokio::test]
async fn an_agent_may_not_deactivate_anyone_nor_see_the_staff_page() {
    let app = spawn_app().await;
    let agent = app.staff_session("agent@test.example").await;
    let id = staff_id(&app, "supervisor@test.example").await;
    let (status, _) = form(&app, &agent, &format!("/console/staff/{id}/deactivate"), "").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app
        .request("GET", "/api/v1/cases", Some(&app.supervisor_token), None)
        .await;
    assert_eq!(status, StatusCode::OK, "the supervisor still works");
}

#[tokio::test]
async fn an_invitation_makes_one_account_with_the_invited_role_and_is_spent() {
    let app = spawn_app().await;
    app.staff_token(StaffRole::Admin).await;
    let admin = app.staff_session("admin@test.example").await;
    let (status, html) = form(
        &app,
        &admin,
        "/console/staff/invite",
        "email=new.lead%40test.example&role=supervisor",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let link = html
        .split("id=\"secret-value\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .expect("the link is shown once");
    let path = link.trim_start_matches("http://127.0.0.1:8080");
    let token = path.split("token=").nth(1).unwrap().to_string();
    let (status, invite) = app
        .raw(Request::get(path).body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK, "{invite}");
    assert!(invite.contains("new.lead@test.example") && invite.contains("supervisor"));

    let accept = |password: &str| {
        Request::post("/console/invite")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "same-origin")
            .body(Body::from(format!("token={token}&password={password}")))
            .unwrap()
    };
    let (status, _) = app.raw(accept("short")).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a weak password changes nothing"
    );
    let (status, _) = app.raw(accept("a+long+enough+password")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, _) = app.raw(accept("a+long+enough+password")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "spent");
    let made = desk::auth::staff_by_email(&app.state.db, "new.lead@test.example")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(made.role, StaffRole::Supervisor);
}

#[tokio::test]
async fn a_named_token_is_listed_without_its_secret_expires_and_is_revoked_by_id() {
    let app = spawn_app().await;
    let staff = desk::auth::staff_by_email(&app.state.db, "agent@test.example")
        .await
        .unwrap()
        .unwrap();
    let now = 1_800_000_000_000;
    let (token, token_id) = desk::auth::accounts::issue_staff_token(
        &app.state.db,
        "test",
        &staff,
        "laptop script",
        1,
        now,
    )
    .await
    .unwrap();
    let listed = desk::auth::accounts::credentials_of(&app.state.db, &staff.id, now)
        .await
        .unwrap();
    let line = listed
        .iter()
        .find(|c| c.token_id == token_id)
        .expect("listed");
    assert_eq!(line.name.as_deref(), Some("laptop script"));
    assert!(
        !serde_json::to_string(&listed).unwrap().contains(&token),
        "never the secret"
    );
    assert!(desk::auth::resolve(&app.state.db, &token, now)
        .await
        .unwrap()
        .is_some());
    let a_day_later = now + 24 * 3600 * 1000 + 1;
    assert!(
        desk::auth::resolve(&app.state.db, &token, a_day_later)
            .await
            .unwrap()
            .is_none(),
        "expired"
    );

    let bad =
        desk::auth::accounts::issue_staff_token(&app.state.db, "test", &staff, "x", 400, now).await;
    assert!(bad.is_err(), "at most 366 days");
    let (other, other_id) =
        desk::auth::accounts::issue_staff_token(&app.state.db, "test", &staff, "ci", 30, now)
            .await
            .unwrap();
    desk::auth::accounts::revoke(&app.state.db, "test", &other_id, now)
        .await
        .unwrap();
    assert!(
        desk::auth::resolve(&app.state.db, &other, now)
            .await
            .unwrap()
            .is_none(),
        "revoked"
    );
}

#[tokio::test]
async fn a_staff_member_revokes_only_their_own_credentials() {
    let app = spawn_app().await;
    let agent = app.staff_session("agent@test.example").await;
    let supervisor = desk::auth::staff_by_email(&app.state.db, "supervisor@test.example")
        .await
        .unwrap()
        .unwrap();
    let (_, theirs) = desk::auth::accounts::issue_staff_token(
        &app.state.db,
        "test",
        &supervisor,
        "theirs",
        30,
        1_800_000_000_000,
    )
    .await
    .unwrap();
    let (status, _) = form(
        &app,
        &agent,
        &format!("/console/tokens/{theirs}/revoke"),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, html) = form(&app, &agent, "/console/me/tokens", "name=mine&days=7").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains("id=\"secret-value\""), "shown once");
}

async fn service_token(app: &TestApp, kind: ServiceKind) -> String {
    desk::auth::accounts::issue_service_token(
        &app.state.db,
        "test",
        kind,
        kind.as_str(),
        30,
        1_800_000_000_000,
    )
    .await
    .unwrap()
    .0
}

#[tokio::test]
async fn a_service_token_may_use_only_its_own_routes() {
    let app = spawn_app().await;
    let integration = service_token(&app, ServiceKind::Integration).await;
    let scim = service_token(&app, ServiceKind::Scim).await;
    for token in [&integration, &scim] {
        let (status, _) = app.request("GET", "/api/v1/cases", Some(token), None).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = app
            .request("GET", "/api/v1/tickets", Some(token), None)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    let (status, body) = app
        .request("GET", "/scim/v2/Users", Some(&integration), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["schemas"][0],
        "urn:ietf:params:scim:api:messages:2.0:Error"
    );
    let (status, _) = app
        .request("GET", "/scim/v2/Users", Some(&app.agent_token), None)
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "a staff token is no SCIM token"
    );
    let (status, _) = app.request("GET", "/scim/v2/Users", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app
        .request("GET", "/scim/v2/Users", Some(&scim), None)
        .await;
    assert_eq!(status, StatusCode::OK);
}

async fn scim(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {token}"));
    let body = match body {
        Some(b) => {
            request = request.header(header::CONTENT_TYPE, "application/scim+json");
            Body::from(b.to_string())
        }
        None => Body::empty(),
    };
    let (status, text) = app.raw(request.body(body).unwrap()).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn scim_creates_updates_and_deletes_staff_and_a_mapped_group_gives_its_role() {
    let mut app = spawn_app().await;
    app.state.group_roles =
        std::sync::Arc::new(GroupRoles::parse("support=agent,leads=supervisor").unwrap());
    app.router = web::router(app.state.clone());
    let token = service_token(&app, ServiceKind::Scim).await;
    let user = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                      "userName": "Dana.Lee@Test.Example", "displayName": "Dana Lee", "externalId": "okta-17"});
    let (status, created) = scim(&app, &token, "POST", "/scim/v2/Users", Some(user.clone())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["userName"], "dana.lee@test.example");
    let (status, again) = scim(&app, &token, "POST", "/scim/v2/Users", Some(user)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(again["scimType"], "uniqueness");
    let (_, found) = scim(
        &app,
        &token,
        "GET",
        "/scim/v2/Users?filter=userName%20eq%20%22dana.lee%40test.example%22",
        None,
    )
    .await;
    assert_eq!(found["totalResults"], 1, "{found}");

    let group = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                       "displayName": "Leads", "members": [{"value": id}]});
    let (status, leads) = scim(&app, &token, "POST", "/scim/v2/Groups", Some(group)).await;
    assert_eq!(status, StatusCode::CREATED, "{leads}");
    let dana = desk::auth::staff_by_email(&app.state.db, "dana.lee@test.example")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        dana.role,
        StaffRole::Supervisor,
        "the leads group gives supervisor"
    );

    // Signed in meanwhile; then the identity provider deactivates her.
    let session = app.staff_session("dana.lee@test.example").await;
    let (status, _) = page(&app, &session.0, "/console").await;
    assert_eq!(status, StatusCode::OK);
    let patch = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "replace", "path": "active", "value": false}]});
    let (status, patched) = scim(
        &app,
        &token,
        "PATCH",
        &format!("/scim/v2/Users/{id}"),
        Some(patch),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["active"], false);
    let (status, _) = page(&app, &session.0, "/console").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "her session is gone");

    // Out of the group: back to the default role.
    let leads_id = leads["id"].as_str().unwrap();
    let remove = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                        "Operations": [{"op": "remove", "path": format!("members[value eq \"{id}\"]")}]});
    let (status, _) = scim(
        &app,
        &token,
        "PATCH",
        &format!("/scim/v2/Groups/{leads_id}"),
        Some(remove),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let dana = desk::auth::staff_by_email(&app.state.db, "dana.lee@test.example")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(dana.role, StaffRole::Agent);

    let (status, _) = scim(
        &app,
        &token,
        "DELETE",
        &format!("/scim/v2/Users/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, gone) = scim(&app, &token, "GET", &format!("/scim/v2/Users/{id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{gone}");
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM staff WHERE id = $1")
        .bind(&id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(kept, 1, "the row stays for the audit trail");
}

#[tokio::test]
async fn scim_refuses_bad_input_in_its_own_words_and_changes_nothing() {
    let app = spawn_app().await;
    let token = service_token(&app, ServiceKind::Scim).await;
    let before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM staff")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    for (path, body) in [
        ("/scim/v2/Users", json!({"userName": ""})),
        ("/scim/v2/Users", json!({"userName": "x y"})),
        (
            "/scim/v2/Users",
            json!({"userName": "ok@test.example", "active": "maybe"}),
        ),
        ("/scim/v2/Groups", json!({"displayName": "", "members": []})),
    ] {
        let (status, error) = scim(&app, &token, "POST", path, Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
        assert_eq!(
            error["schemas"][0],
            "urn:ietf:params:scim:api:messages:2.0:Error"
        );
    }
    let (status, error) = scim(
        &app,
        &token,
        "GET",
        "/scim/v2/Users?filter=userName%20co%20%22a%22",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["scimType"], "invalidFilter");
    let after: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM staff")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(before, after);
}

#[tokio::test]
async fn a_group_member_the_desk_does_not_know_is_kept_and_gives_nobody_a_role() {
    let mut app = spawn_app().await;
    app.state.group_roles = std::sync::Arc::new(GroupRoles::parse("leads=supervisor").unwrap());
    app.router = web::router(app.state.clone());
    let token = service_token(&app, ServiceKind::Scim).await;
    let group =
        json!({"displayName": "Leads", "members": [{"value": "someone-not-yet-provisioned"}]});
    let (status, leads) = scim(&app, &token, "POST", "/scim/v2/Groups", Some(group)).await;
    assert_eq!(status, StatusCode::CREATED, "{leads}");
    assert_eq!(leads["members"][0]["value"], "someone-not-yet-provisioned");
    let supervisors: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM staff WHERE role = 'supervisor'")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(supervisors, 1, "only the seeded supervisor");
}
