//! Who may call what (docs/spec/roles.md), tried from outside: every declared route with
//! every kind of caller, and the attacks that once got through, each named after itself.
//!
//! The expected answers come from this file's own copy of the role table ([`spec_allows`]),
//! not from the code under test, so a rule changed in `web::access` without the spec fails
//! here. Runs on PostgreSQL when `TEST_DATABASE_URL` is set.
//!
//! Long because it is the one walk of every route with every caller (docs/spec/roles.md) and
//! the attacks around it; split, the matrix would be checked in pieces.

use crate::support::{spawn_app, TestApp};
use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use desk::auth::{ServiceKind, StaffRole};
use serde_json::{json, Value};
use tower::ServiceExt;
use web::access::{Capability, Declared, RefusedByAccess, Routes, Rule};

/// The callers of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Nobody,
    Customer,
    Staff(StaffRole),
    Service(ServiceKind),
}

const EVERYONE: [Who; 8] = [
    Who::Nobody,
    Who::Customer,
    Who::Staff(StaffRole::Agent),
    Who::Staff(StaffRole::Supervisor),
    Who::Staff(StaffRole::PolicyAuthor),
    Who::Staff(StaffRole::Admin),
    Who::Service(ServiceKind::Integration),
    Who::Service(ServiceKind::Scim),
];

/// docs/spec/roles.md, written again as the test's oracle.
fn spec_allows(rule: Rule, who: Who) -> bool {
    use StaffRole::*;
    let staff_may = |capability: Capability, role: StaffRole| match capability {
        Capability::ReadPolicies => true,
        Capability::ReadCases
        | Capability::WorkCases
        | Capability::DecideRefunds
        | Capability::CloseCases => matches!(role, Agent | Supervisor | Admin),
        Capability::TakeOver
        | Capability::ManageSavedReplies
        | Capability::CorrectRecords
        | Capability::ReviewDecisions => matches!(role, Supervisor | Admin),
        Capability::AuthorPolicies | Capability::PublishPolicies => {
            matches!(role, PolicyAuthor | Admin)
        }
        Capability::Administer => role == Admin,
    };
    match (rule, who) {
        (Rule::Anyone | Rule::ProviderSigned | Rule::Metrics, _) => true,
        (Rule::Customer, Who::Customer) => true,
        (Rule::AnyStaff, Who::Staff(_)) => true,
        (Rule::Staff(c), Who::Staff(role)) => staff_may(c, role),
        (Rule::Service(k), Who::Service(kind)) => k == kind,
        (Rule::ServiceOrStaff(k, _), Who::Service(kind)) => k == kind,
        (Rule::ServiceOrStaff(_, c), Who::Staff(role)) => staff_may(c, role),
        _ => false,
    }
}

/// Every credential a caller has: an API bearer token and a browser session cookie.
struct Credentials {
    bearer: Option<String>,
    cookie: Option<String>,
}

async fn credentials(app: &TestApp, who: Who) -> Credentials {
    match who {
        Who::Nobody => Credentials {
            bearer: None,
            cookie: None,
        },
        Who::Customer => Credentials {
            bearer: Some(app.customer_token("C-100").await),
            cookie: Some(app.customer_cookie("C-100").await.0),
        },
        Who::Service(kind) => Credentials {
            bearer: Some(
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
                .0,
            ),
            cookie: None,
        },
        Who::Staff(role) => {
            let bearer = app.staff_token(role).await;
            let (cookie, _) = app
                .staff_session(&format!("{}@test.example", role.as_str()))
                .await;
            Credentials {
                bearer: Some(bearer),
                cookie: Some(cookie),
            }
        }
    }
}

/// A concrete path for a route template: every `{param}` becomes `x`.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|part| if part.starts_with('{') { "x" } else { part })
        .collect::<Vec<_>>()
        .join("/")
}

async fn send(app: &TestApp, route: &Declared, creds: &Credentials) -> axum::response::Response {
    let mut request = Request::builder()
        .method(route.method.clone())
        .uri(concrete(&route.path))
        .header("sec-fetch-site", "same-origin");
    if let Some(token) = &creds.bearer {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(cookie) = &creds.cookie {
        request = request.header(header::COOKIE, cookie);
    }
    let body = if route.method == Method::GET {
        Body::empty()
    } else {
        request = request.header(header::CONTENT_TYPE, "application/json");
        Body::from("{}")
    };
    app.response(request.body(body).unwrap()).await
}

#[tokio::test]
async fn every_route_answers_every_caller_as_the_role_table_says() {
    let app = spawn_app().await;
    let declared = web::routes(&app.state).declared().to_vec();
    assert!(declared.len() > 60, "{} routes declared", declared.len());
    let mut tried = 0;
    for who in EVERYONE {
        let creds = credentials(&app, who).await;
        for route in &declared {
            let response = send(&app, route, &creds).await;
            let refused = response.extensions().get::<RefusedByAccess>().is_some();
            let status = response.status();
            let what = format!(
                "{} {} as {who:?} ({:?}): {status}",
                route.method, route.path, route.rule
            );
            if spec_allows(route.rule, who) {
                assert!(!refused, "refused: {what}");
                assert_ne!(status, StatusCode::UNAUTHORIZED, "{what}");
            } else {
                assert!(refused, "let through: {what}");
                assert!(
                    matches!(
                        status,
                        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::SEE_OTHER
                    ),
                    "{what}"
                );
            }
            tried += 1;
        }
    }
    println!(
        "route x caller matrix: {tried} requests, {} routes",
        declared.len()
    );
}

#[tokio::test]
async fn a_route_added_to_the_router_without_a_rule_is_refused_to_everyone() {
    let app = spawn_app().await;
    let routes = web::routes(&app.state).map_router(|router| {
        router.route("/api/v1/sneaky", axum::routing::get(|| async { "secrets" }))
    });
    let router = web::router_from(routes, app.state.clone());
    for who in EVERYONE {
        let creds = credentials(&app, who).await;
        let mut request = Request::get("/api/v1/sneaky");
        if let Some(token) = &creds.bearer {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let response = router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{who:?}");
        assert!(response.extensions().get::<RefusedByAccess>().is_some());
    }
}

#[test]
fn a_route_cannot_be_declared_twice_with_two_rules() {
    let twice = std::panic::catch_unwind(|| {
        Routes::new()
            .get("/x", Rule::Anyone, || async { "a" })
            .get("/x", Rule::Customer, || async { "b" })
            .finish()
    });
    assert!(twice.is_err());
}

#[tokio::test]
async fn every_operation_of_the_openapi_document_has_an_access_rule() {
    let app = spawn_app().await;
    let declared = web::routes(&app.state).declared().to_vec();
    let (status, body) = app.request("GET", "/api/v1/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let paths = body["paths"].as_object().expect("the document has paths");
    let mut checked = 0;
    for (path, operations) in paths {
        for method in operations.as_object().unwrap().keys() {
            let method: Method = method.to_uppercase().parse().unwrap();
            assert!(
                declared
                    .iter()
                    .any(|d| d.path == *path && d.method == method),
                "{method} {path} is documented but has no access rule"
            );
            checked += 1;
        }
    }
    assert!(checked > 20);
}

// --- The attacks a policy author once made, each refused now. ---------------

/// A case of C-400 awaiting approval of ¥19,800, which needs a supervisor (RP-004).
async fn yen_case(app: &TestApp) -> (String, String, String) {
    let (ticket_id, case) = app
        .open_ticket("C-400", "二重に請求されました。年間プランです。")
        .await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(case["required_role"], "supervisor", "{case:#}");
    let id = case["id"].as_str().unwrap().to_string();
    let fingerprint = case["fingerprint"].as_str().unwrap().to_string();
    (ticket_id, id, fingerprint)
}

async fn post_json(app: &TestApp, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
    app.request("POST", path, Some(token), Some(body)).await
}

#[tokio::test]
async fn a_policy_author_cannot_reply_to_a_customer() {
    let app = spawn_app().await;
    let author = app.staff_token(StaffRole::PolicyAuthor).await;
    let (ticket_id, case_id, _) = yen_case(&app).await;
    let path = format!("/api/v1/cases/{case_id}/messages");
    let (status, body) = post_json(
        &app,
        &author,
        &path,
        json!({"text": "hi", "internal": false}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let token = app.customer_token("C-400").await;
    let (_, ticket) = app
        .request(
            "GET",
            &format!("/api/v1/tickets/{ticket_id}"),
            Some(&token),
            None,
        )
        .await;
    assert!(!ticket.to_string().contains("\"hi\""), "{ticket}");
}

#[tokio::test]
async fn a_policy_author_cannot_reject_a_yen_refund_that_needs_a_supervisor() {
    let app = spawn_app().await;
    let author = app.staff_token(StaffRole::PolicyAuthor).await;
    let (_, case_id, fingerprint) = yen_case(&app).await;
    let path = format!("/api/v1/cases/{case_id}/reject");
    let body = json!({"fingerprint": fingerprint, "reason": "no"});
    let (status, answer) = post_json(&app, &author, &path, body).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(app.case(&case_id).await["status"], "awaiting_approval");
}

#[tokio::test]
async fn an_agent_cannot_reject_a_refund_above_its_limit_and_hands_it_up_to_the_supervisors() {
    let app = spawn_app().await;
    let (_, case_id, fingerprint) = yen_case(&app).await;
    let path = format!("/api/v1/cases/{case_id}/reject");
    let body = json!({"fingerprint": fingerprint, "reason": "looks fine to me to refuse"});
    let (status, answer) = post_json(&app, &app.agent_token, &path, body).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("hand it up"));
    assert_eq!(app.case(&case_id).await["status"], "awaiting_approval");

    // Taken first, then handed up: unassigned, a note for the supervisor.
    let assign = format!("/api/v1/cases/{case_id}/assign");
    let (status, _) = post_json(&app, &app.agent_token, &assign, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let handup = format!("/api/v1/cases/{case_id}/handup");
    let (status, empty) = post_json(
        &app,
        &app.agent_token,
        &handup,
        json!({"fingerprint": fingerprint, "note": " "}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{empty}");
    let body = json!({"fingerprint": fingerprint, "note": "¥19,800 is above my limit"});
    let (status, case) = post_json(&app, &app.agent_token, &handup, body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{case}");
    assert_eq!(case["status"], "awaiting_approval");
    assert_eq!(case["assignee"], Value::Null, "{case}");
    // A supervisor may decide it, so may not hand it up.
    let (status, own) = post_json(&app, &app.supervisor_token, &handup, body).await;
    assert_eq!(status, StatusCode::CONFLICT, "{own}");
    // It is in the supervisors' "Needs me" queue.
    let (cookie, _) = app.staff_session("supervisor@test.example").await;
    let (status, page) = app
        .raw(
            Request::get("/console?status=needs_me")
                .header(header::COOKIE, cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains(&case_id), "not in the supervisors' queue");
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let (_, page) = app
        .raw(
            Request::get("/console?status=needs_me")
                .header(header::COOKIE, cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert!(!page.contains(&case_id), "still in the agent's queue");
}

#[tokio::test]
async fn a_policy_author_cannot_self_assign_nor_be_assigned_a_case() {
    let app = spawn_app().await;
    let author = app.staff_token(StaffRole::PolicyAuthor).await;
    let (_, case_id, _) = yen_case(&app).await;
    let path = format!("/api/v1/cases/{case_id}/assign");
    let (status, body) = post_json(&app, &author, &path, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let body = json!({"email": "policy_author@test.example"});
    let (status, answer) = post_json(&app, &app.supervisor_token, &path, body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], "assignee_cannot_work_cases");
    assert_eq!(app.case(&case_id).await["assignee"], Value::Null);
}

#[tokio::test]
async fn a_policy_author_cannot_read_cases_or_customer_emails_anywhere() {
    let app = spawn_app().await;
    let author = app.staff_token(StaffRole::PolicyAuthor).await;
    let (_, case_id, _) = yen_case(&app).await;
    for path in [
        "/api/v1/cases?status=all".to_string(),
        format!("/api/v1/cases/{case_id}"),
    ] {
        let (status, body) = app.request("GET", &path, Some(&author), None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        assert!(!body.to_string().contains("yuki.sato@example.jp"));
    }
    let (cookie, _) = app.staff_session("policy_author@test.example").await;
    for path in [
        "/console".to_string(),
        format!("/console/cases/{case_id}"),
        "/console/audit".to_string(),
        "/console/audit.csv".to_string(),
    ] {
        let (status, page) = app
            .raw(
                Request::get(&path)
                    .header(header::COOKIE, &cookie)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert!(!page.contains("yuki.sato@example.jp"), "{path}");
    }
    let (status, answer) = app
        .mcp_as(
            &author,
            "tools/call",
            json!({"name": "get_case", "arguments": {"case_id": case_id}}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert!(!answer.to_string().contains("yuki.sato@example.jp"));
}

#[tokio::test]
async fn a_policy_author_cannot_decide_a_shadow_case_by_hand() {
    let app = spawn_app().await;
    let author = app.staff_token(StaffRole::PolicyAuthor).await;
    let (_, case_id, _) = yen_case(&app).await;
    let path = format!("/api/v1/cases/{case_id}/decide");
    let body = json!({"outcome": "no_refund", "reason": "not_duplicate", "refunds": []});
    let (status, answer) = post_json(&app, &author, &path, body).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
}

#[tokio::test]
async fn a_browser_session_cookie_value_is_not_a_bearer_token() {
    let app = spawn_app().await;
    let (cookie, _) = app.staff_session("supervisor@test.example").await;
    let session = cookie.trim_start_matches("rd_session=").to_string();
    let (status, body) = app
        .request("GET", "/api/v1/cases", Some(&session), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, _) = app.mcp_as(&session, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_agent_closes_a_case_that_moves_no_money_but_not_one_awaiting_a_refund_above_its_limit()
{
    let app = spawn_app().await;
    let (_, case_id, _) = yen_case(&app).await;
    let path = format!("/api/v1/cases/{case_id}/close");
    let (status, body) =
        post_json(&app, &app.agent_token, &path, json!({"reason": "drop it"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(app.case(&case_id).await["status"], "awaiting_approval");
    let (status, body) = post_json(
        &app,
        &app.supervisor_token,
        &path,
        json!({"reason": "drop it"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

// --- Four eyes on policy publishing (docs/spec/roles.md). -------------------------------

async fn save_draft(
    app: &TestApp,
    token: &str,
    doc: &str,
    expected: i64,
    markdown: &str,
    rules: &Value,
) -> Value {
    let (status, saved) = app
        .request(
            "PUT",
            &format!("/api/v1/policies/{doc}/draft"),
            Some(token),
            Some(json!({ "expected_version": expected, "markdown": markdown, "rules": rules })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    saved
}

async fn publish_as(app: &TestApp, token: &str, doc: &str, version: i64) -> (StatusCode, Value) {
    let body = json!({ "draft_version": version, "whatif_version": version });
    post_json(app, token, &format!("/api/v1/policies/{doc}/publish"), body).await
}

#[tokio::test]
async fn a_co_authors_one_space_save_does_not_let_the_first_author_raise_the_approval_limits_alone()
{
    let mut app = spawn_app().await;
    app.state.policy_second_approver = true;
    app.router = web::router(app.state.clone());
    let first = app.staff_token(StaffRole::PolicyAuthor).await;
    let co_author = app.staff_token(StaffRole::Admin).await;
    let (_, case_id, fingerprint) = yen_case(&app).await;

    // The first author raises every RP-004 threshold to 99,999,999.
    let (_, start) = app
        .request("GET", "/api/v1/policies/RP-004/draft", Some(&first), None)
        .await;
    let rules = start["rules"].as_str().unwrap();
    let raised: String = rules
        .lines()
        .map(|line| match line.split_once(" = ") {
            Some((currency, _)) if ["CNY", "USD", "EUR", "JPY"].contains(&currency) => {
                format!("{currency} = \"99999999\"")
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(raised, rules);
    // The text's table states the rules' numbers, or publish refuses it
    // (docs/spec/policies.md, "One source of truth").
    let markdown: String = start["markdown"]
        .as_str()
        .unwrap()
        .lines()
        .map(|line| match line.split(" | ").next() {
            Some(cell) if ["| CNY", "| USD", "| EUR", "| JPY"].contains(&cell) => {
                format!("{cell} | 99,999,999 |")
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let markdown = markdown.as_str();
    let saved = save_draft(&app, &first, "RP-004", 0, markdown, &json!(raised)).await;
    assert_eq!(saved["problems"], json!([]), "{saved}");
    // The co-author saves one space.
    let spaced = format!("{markdown} ");
    let saved = save_draft(&app, &co_author, "RP-004", 1, &spaced, &json!(raised)).await;
    let version = saved["version"].as_i64().unwrap();
    let (status, checked) = post_json(
        &app,
        &first,
        "/api/v1/policies/RP-004/whatif",
        json!({"live_days": 7}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{checked}");

    for (who, token) in [("the first author", &first), ("the co-author", &co_author)] {
        let (status, refused) = publish_as(&app, token, "RP-004", version).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{who}: {refused}");
    }
    // With the switch off, the change to approval authority still needs a second person.
    app.state.policy_second_approver = false;
    app.router = web::router(app.state.clone());
    let (status, refused) = publish_as(&app, &first, "RP-004", version).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("who may approve"));

    // The agent still may not approve the ¥19,800 refund.
    let (status, answer) = app.approve(&app.agent_token, &case_id, &fingerprint).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
}

#[tokio::test]
async fn whoever_saved_the_latest_version_may_not_publish_it_and_a_publish_names_the_whatif_of_that_version(
) {
    let app = spawn_app().await;
    let alice = app.staff_token(StaffRole::PolicyAuthor).await;
    let admin = app.staff_token(StaffRole::Admin).await;
    let (_, start) = app
        .request("GET", "/api/v1/policies/RP-001/draft", Some(&alice), None)
        .await;
    let markdown = start["markdown"].as_str().unwrap();
    let saved = save_draft(&app, &alice, "RP-001", 0, markdown, &start["rules"]).await;
    let version = saved["version"].as_i64().unwrap();

    // No what-if of this version: refused, for everyone.
    let (status, refused) = publish_as(&app, &admin, "RP-001", version).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "whatif_required");
    let (status, _) = post_json(
        &app,
        &alice,
        "/api/v1/policies/RP-001/whatif",
        json!({"live_days": 7}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // A what-if of another version named: refused.
    let body = json!({ "draft_version": version, "whatif_version": version - 1 });
    let (status, refused) = post_json(&app, &admin, "/api/v1/policies/RP-001/publish", body).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");

    let (status, refused) = publish_as(&app, &alice, "RP-001", version).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    let (status, published) = publish_as(&app, &admin, "RP-001", version).await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let saves: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM policy_draft_saves WHERE doc_id = 'RP-001' AND draft_version = 1",
    )
    .fetch_one(app.state.db.pool())
    .await
    .unwrap();
    assert_eq!(saves, 1, "who saved each version is kept");
}

// --- Smaller holes. -----------------------------------------------------------

#[tokio::test]
async fn a_request_for_a_person_survives_the_customers_next_message() {
    let app = spawn_app().await;
    let (ticket, first) = app.open_ticket("C-500", "Please refund me").await;
    assert_eq!(first["status"], "awaiting_customer", "{first:#}");
    let token = app.customer_token("C-500").await;
    let path = format!("/api/v1/tickets/{ticket}");
    let (status, asked) = app
        .request("POST", &format!("{path}/person"), Some(&token), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{asked}");
    let case_id = first["id"].as_str().unwrap();
    assert_eq!(app.case(case_id).await["status"], "escalated");

    let more = json!({ "text": "Also, my order number is O-5001." });
    let (status, _) = post_json(&app, &token, &format!("{path}/messages"), more).await;
    assert_eq!(status, StatusCode::OK);
    app.drain().await;
    let after = app.case(case_id).await;
    assert_eq!(
        after["status"], "escalated",
        "still with a person: {after:#}"
    );
}

#[tokio::test]
async fn a_sign_in_next_with_a_line_break_spends_no_link_and_sets_no_cookie() {
    let app = spawn_app().await;
    let link = app.sign_in_link("C-100", "/tickets").await;
    let token = link
        .split("link=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let post = |next: &str| {
        let form = format!(
            "link={token}&next={}",
            next.replace('\r', "%0D").replace('\n', "%0A")
        );
        Request::post("/sign-in")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "same-origin")
            .body(Body::from(form))
            .unwrap()
    };
    let refused = app
        .response(post("/tickets\r\nSet-Cookie: rd_customer=evil"))
        .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(refused.headers().get(header::SET_COOKIE).is_none());
    // The link is still good.
    let signed_in = app.response(post("/tickets")).await;
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert!(signed_in.headers().get(header::SET_COOKIE).is_some());
}

#[tokio::test]
async fn no_error_answer_sets_a_cookie() {
    let app = spawn_app().await;
    // A handler that fails after setting a session cookie, behind the real layers.
    let routes = web::routes(&app.state).get("/api/v1/cookie-then-fail", Rule::Anyone, || async {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::SET_COOKIE, "rd_session=leaked; Path=/")],
            "failed",
        )
    });
    let router = web::router_from(routes, app.state.clone());
    let response = router
        .oneshot(
            Request::get("/api/v1/cookie-then-fail")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(response.headers().get(header::SET_COOKIE).is_none());
}

#[tokio::test]
async fn the_rollout_page_names_staff_by_email_not_by_id() {
    let app = spawn_app().await;
    let admin = app.staff_token(StaffRole::Admin).await;
    let body = json!({"scope": "region:EU", "mode": "shadow", "reason": "start"});
    let (status, _) = post_json(&app, &admin, "/api/v1/rollout", body).await;
    assert_eq!(status, StatusCode::OK);
    let staff = desk::auth::staff_by_email(&app.state.db, "admin@test.example")
        .await
        .unwrap()
        .unwrap();
    let (cookie, _) = app.staff_session("admin@test.example").await;
    let (status, page) = app
        .raw(
            Request::get("/console/rollout")
                .header(header::COOKIE, cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("admin@test.example"), "no email on the page");
    assert!(!page.contains(&staff.id), "a staff id on the page");
    let (_, status_json) = app
        .request("GET", "/api/v1/rollout", Some(&admin), None)
        .await;
    assert!(
        !status_json.to_string().contains(&staff.id),
        "{status_json}"
    );
}

#[tokio::test]
async fn metrics_need_the_metrics_token_when_one_is_set() {
    let mut app = spawn_app().await;
    app.state.metrics_token = Some("scrape-secret".into());
    app.router = web::router(app.state.clone());
    let (status, _) = app.request("GET", "/metrics", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.request("GET", "/metrics", Some("wrong"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, text) = app
        .request("GET", "/metrics", Some("scrape-secret"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.as_str().unwrap().contains("refund_desk_"));
}

#[tokio::test]
async fn a_tool_name_a_model_makes_up_from_customer_text_never_becomes_a_metric_label() {
    let app = spawn_app().await;
    let injected = "li.wei@example.cn 4111 1111 1111 1111";
    harness::Observer::tool_call(&desk::investigation::Metered, injected, false, 3);
    harness::Observer::tool_call(&desk::investigation::Metered, "list_orders", true, 3);
    let (status, text) = app.request("GET", "/metrics", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let text = text.as_str().unwrap();
    // Labels only: the process's counters are shared by every test of this binary, and a
    // count may well read 4111.
    let labels: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| Some(&l[l.find('{')?..=l.find('}')?]))
        .collect();
    assert!(
        labels
            .iter()
            .all(|l| !l.contains("li.wei") && !l.contains("4111")),
        "{text}"
    );
    assert!(text.contains("name=\"unknown\""), "{text}");
    assert!(text.contains("name=\"list_orders\""), "{text}");
}
