//! Conversation work: staff replies and internal notes (a note reaches no
//! customer surface), closing a case by hand (a closed case is never approved or
//! executed afterwards), the queue's `status=all` and search, assignment, saved replies
//! and the messages a decision sends, previewed — through the same API and console a
//! support team uses, on the real payments mock.
//!
//! Long because it is the one test module for the conversation and one case per
//! order: each test builds its case through the real router; splitting would add link time.

use crate::support::{spawn_app, TestApp};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::auth::StaffRole;
use serde_json::{json, Value};

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

async fn post(app: &TestApp, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
    app.request("POST", path, Some(token), Some(body)).await
}

/// A console page as the staff member of `cookie` sees it.
pub(crate) async fn console_get(app: &TestApp, cookie: &str, path: &str) -> (StatusCode, String) {
    app.raw(
        Request::get(path)
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

async fn count(app: &TestApp, sql: &'static str, key: &str) -> i64 {
    sqlx::query_scalar(sql)
        .bind(key)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

/// The customer's ticket as the ticket API shows it, and the ticket page's raw HTML.
async fn customer_surfaces(app: &TestApp, customer_id: &str, ticket_id: &str) -> (Value, String) {
    let (status, ticket) = app.customer_ticket(customer_id, ticket_id).await;
    assert_eq!(status, StatusCode::OK, "{ticket}");
    let (cookie, _) = app.customer_cookie(customer_id).await;
    let (status, page) = app
        .raw(
            Request::get(format!("/tickets/{ticket_id}"))
                .header("cookie", cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    (ticket, page)
}

#[tokio::test]
async fn a_staff_reply_reaches_the_customer_and_an_internal_note_reaches_no_customer_surface() {
    let app = spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let path = format!("/api/v1/cases/{case_id}/messages");
    let reply = "We are checking the second charge for you today.";
    let note = "Customer called twice already; VIP-NOTE-7731.";

    let (status, thread) = post(
        &app,
        &app.agent_token,
        &path,
        json!({"text": reply, "internal": false}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{thread}");
    let (status, thread) = post(
        &app,
        &app.agent_token,
        &path,
        json!({"text": note, "internal": true}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{thread}");
    assert_eq!(
        thread["notes"][0]["body"], note,
        "staff see the note: {thread:#}"
    );
    assert_eq!(thread["notes"][0]["author"], "agent@test.example");
    let last = thread["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last["author"].as_str(), last["body"].as_str()),
        (Some("staff"), Some(reply))
    );

    let (ticket, page) = customer_surfaces(&app, "C-100", &ticket_id).await;
    let json = ticket.to_string();
    assert!(
        json.contains(reply),
        "the ticket API shows the reply: {json}"
    );
    assert!(page.contains(reply), "the ticket page shows the reply");
    assert!(
        !json.contains("VIP-NOTE-7731"),
        "the note leaks into the ticket API: {json}"
    );
    assert!(
        !page.contains("VIP-NOTE-7731"),
        "the note leaks into the ticket page"
    );
    assert!(
        !json.contains("agent@test.example"),
        "no staff email reaches the customer"
    );

    // Both are in the audit log, with who wrote them.
    for action in ["staff_reply", "internal_note"] {
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM audit_log WHERE subject = $1 AND action = $2")
                .bind(case_id)
                .bind(action)
                .fetch_one(app.state.db.pool())
                .await
                .unwrap();
        assert_eq!(n, 1, "{action} audited");
    }
    // The staff reply does not void the proposal waiting for approval: facts unchanged.
    let now = app.case(case_id).await;
    assert_eq!(now["status"], "awaiting_approval");
    assert_eq!(now["fingerprint"], case["fingerprint"]);
}

#[tokio::test]
async fn a_bad_staff_message_gets_a_typed_error_and_writes_nothing() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let path = format!("/api/v1/cases/{case_id}/messages");
    let too_long = "x".repeat(desk::replies::MAX_MESSAGE_CHARS + 1);
    let cases = [
        (
            path.as_str(),
            json!({"text": "  ", "internal": false}),
            StatusCode::BAD_REQUEST,
            "empty_message",
        ),
        (
            path.as_str(),
            json!({"text": too_long, "internal": true}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
        ),
        (
            path.as_str(),
            json!({"text": "hi"}),
            StatusCode::BAD_REQUEST,
            "invalid_body",
        ),
        (
            "/api/v1/cases/case_nope/messages",
            json!({"text": "hi", "internal": true}),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
    ];
    for (path, body, expected, code) in cases {
        let (status, error) = post(&app, &app.agent_token, path, body).await;
        assert_eq!(status, expected, "{error}");
        assert_eq!(error["error"]["code"], code, "{error}");
    }
    let customer = app.customer_token("C-100").await;
    let (status, _) = post(
        &app,
        &customer,
        &path,
        json!({"text": "hi", "internal": true}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "customers write on their ticket, not here"
    );
    let notes = count(
        &app,
        "SELECT COUNT(*) FROM case_notes WHERE case_id = $1",
        case_id,
    )
    .await;
    let staff_messages = count(
        &app,
        "SELECT COUNT(*) FROM messages WHERE author = 'staff' AND ticket_id = $1",
        case["ticket_id"].as_str().unwrap(),
    )
    .await;
    assert_eq!((notes, staff_messages), (0, 0));
}

#[tokio::test]
async fn staff_close_an_escalated_case_with_a_reply_the_customer_sees_and_a_policy_author_may_not()
{
    let app = spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-600", CHARGED_TWICE).await;
    assert_eq!(case["status"], "escalated", "{case:#}");
    let case_id = case["id"].as_str().unwrap();
    let path = format!("/api/v1/cases/{case_id}/close");
    let reply = "Your bank is handling the dispute; we closed this request.";
    let body = json!({"reason": "dispute open at the bank", "reply": reply});

    let author = app.staff_token(StaffRole::PolicyAuthor).await;
    let (status, error) = post(&app, &author, &path, body.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{error}");
    assert_eq!(
        app.case(case_id).await["status"],
        "escalated",
        "nothing changed"
    );

    // docs/spec/roles.md: an agent closes a case that moves no money.
    let (status, closed) = post(&app, &app.agent_token, &path, body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{closed}");
    assert_eq!(closed["status"], "closed");
    assert_eq!(closed["close_reason"], "dispute open at the bank");
    let (ticket, page) = customer_surfaces(&app, "C-600", &ticket_id).await;
    assert!(ticket.to_string().contains(reply) && page.contains(reply));
    assert_eq!(ticket["case"]["status"], "closed");

    let (status, again) = post(&app, &app.supervisor_token, &path, body).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(again["error"]["code"], "already_closed");
    app.drain().await;
    assert!(app.provider_refunds("ch_6001b").await.is_empty());
}

#[tokio::test]
async fn an_approval_with_the_fingerprint_shown_before_a_close_is_refused_and_no_refund_is_sent() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(case["status"], "awaiting_approval");
    let case_id = case["id"].as_str().unwrap();
    let old = case["fingerprint"].as_str().unwrap();

    let (status, closed) = post(
        &app,
        &app.supervisor_token,
        &format!("/api/v1/cases/{case_id}/close"),
        json!({"reason": "customer asked us on the phone to drop it"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{closed}");
    assert_eq!(closed["fingerprint"], Value::Null);

    let (status, refused) = app.approve(&app.agent_token, case_id, old).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    app.drain().await;
    assert_eq!(app.case(case_id).await["status"], "closed");
    assert!(app.provider_refunds("ch_1001b").await.is_empty());
    let valid = count(
        &app,
        "SELECT COUNT(*) FROM approvals WHERE case_id = $1 AND status = 'valid'",
        case_id,
    )
    .await;
    assert_eq!(valid, 0);
}

#[tokio::test]
async fn closing_a_case_whose_refund_is_in_flight_is_a_conflict_and_changes_nothing() {
    let app = spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let (status, _) = app
        .approve(
            &app.agent_token,
            case_id,
            case["fingerprint"].as_str().unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // The provider answers 503 to every attempt: whether a refund was made is unknown
    // (a 5xx may come after execution began), so the case is being verified.
    let resp = reqwest::Client::new()
        .post(format!("{}/__mock/faults", app.mock.base_url()))
        .json(&json!([{"mode": "fail_before_commit", "status": 503,
                        "method": "POST", "path": "/v1/refunds", "times": 1000}]))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    desk::refunds::execute_case(app.state.executor(), case_id)
        .await
        .unwrap();
    let before = app.case(case_id).await;
    assert_eq!(before["status"], "pending_verification", "{before:#}");
    let messages_before = count(
        &app,
        "SELECT COUNT(*) FROM messages WHERE ticket_id = $1",
        &ticket_id,
    )
    .await;

    let (status, error) = post(
        &app,
        &app.supervisor_token,
        &format!("/api/v1/cases/{case_id}/close"),
        json!({"reason": "tidy up", "reply": "Closing this."}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(error["error"]["code"], "refund_in_flight");
    let after = app.case(case_id).await;
    assert_eq!(
        (&after["status"], &after["version"]),
        (&before["status"], &before["version"])
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM messages WHERE ticket_id = $1",
            &ticket_id
        )
        .await,
        messages_before,
        "no reply went out"
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM audit_log WHERE subject = $1 AND action = 'closed'",
            case_id
        )
        .await,
        0
    );
}

fn ids(cases: &Value) -> Vec<String> {
    cases
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

async fn list(app: &TestApp, query: &str) -> Vec<String> {
    let (status, cases) = app
        .request(
            "GET",
            &format!("/api/v1/cases?{query}"),
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{query}: {cases}");
    ids(&cases)
}

#[tokio::test]
async fn the_case_list_takes_all_statuses_and_searches_by_customer_and_ids_as_plain_text() {
    let app = spawn_app().await;
    let (ticket_id, awaiting) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let (_, escalated) = app.open_ticket("C-600", CHARGED_TWICE).await;
    let awaiting = awaiting["id"].as_str().unwrap().to_string();
    let escalated = escalated["id"].as_str().unwrap().to_string();

    let all = list(&app, "status=all").await;
    assert!(
        all.contains(&awaiting) && all.contains(&escalated),
        "{all:?}"
    );
    assert_eq!(
        list(&app, "status=escalated").await,
        vec![escalated.clone()]
    );

    for q in [
        "LI.WEI%40example.cn",
        "li.wei",
        "Li%20Wei",
        "O-1001",
        "o-1001",
        "ch_1001b",
        &ticket_id,
        &awaiting.to_uppercase(),
    ] {
        assert_eq!(
            list(&app, &format!("status=all&q={q}")).await,
            vec![awaiting.clone()],
            "q={q}"
        );
    }
    assert_eq!(
        list(&app, "q=olivia.brown%40example.com").await,
        vec![escalated.clone()]
    );
    for stranger in [
        "someone.else%40example.com",
        "%25",
        "_",
        "%27",
        "%27%20OR%20%271%27%3D%271",
        "ch_1001",
    ] {
        assert!(
            list(&app, &format!("status=all&q={stranger}"))
                .await
                .is_empty(),
            "q={stranger}"
        );
    }
    let (status, error) = app
        .request(
            "GET",
            "/api/v1/cases?status=nonsense",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["code"], "invalid_status");
    let (status, error) = app
        .request(
            "GET",
            "/api/v1/cases?mine=maybe",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(
        error["error"]["code"], "invalid_query",
        "the API's error shape"
    );
    let (_, views) = app
        .request(
            "GET",
            "/api/v1/cases?q=li.wei",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(views[0]["customer_name"], "Li Wei");
    assert_eq!(views[0]["subject"], CHARGED_TWICE);
}

#[tokio::test]
async fn staff_take_a_case_a_supervisor_assigns_it_to_another_and_an_agent_may_not() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let path = format!("/api/v1/cases/{case_id}/assign");

    let (status, taken) = post(&app, &app.agent_token, &path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{taken}");
    assert_eq!(taken["assignee"], "agent@test.example");
    assert_eq!(
        taken["version"], case["version"],
        "assignment is no lifecycle step"
    );
    assert_eq!(list(&app, "mine=true").await, vec![case_id.to_string()]);

    let (status, error) = post(
        &app,
        &app.agent_token,
        &path,
        json!({"email": "supervisor@test.example"}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{error}");
    assert_eq!(app.case(case_id).await["assignee"], "agent@test.example");

    let (status, error) = post(
        &app,
        &app.supervisor_token,
        &path,
        json!({"email": "nobody@test.example"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["code"], "unknown_staff");

    let (status, assigned) = post(
        &app,
        &app.supervisor_token,
        &path,
        json!({"email": "Supervisor@Test.example"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{assigned}");
    assert_eq!(assigned["assignee"], "supervisor@test.example");
    assert!(
        list(&app, "mine=true").await.is_empty(),
        "no longer the agent's"
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM audit_log WHERE subject = $1 AND action = 'assigned'",
            case_id
        )
        .await,
        2
    );
}

#[tokio::test]
async fn the_console_queue_shows_escalated_cases_by_default_with_customer_subject_and_status_in_words(
) {
    let app = spawn_app().await;
    let (_, escalated) = app.open_ticket("C-600", CHARGED_TWICE).await;
    let escalated = escalated["id"].as_str().unwrap();
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let (status, html) = console_get(&app, &cookie, "/console").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains(escalated),
        "escalated cases are shown by default"
    );
    for expected in ["Olivia Brown", CHARGED_TWICE, "Escalated to a person"] {
        assert!(html.contains(expected), "the queue lacks {expected}");
    }
    let (_, found) = console_get(&app, &cookie, "/console?status=all&q=olivia").await;
    assert!(found.contains(escalated));
    let (_, none) = console_get(
        &app,
        &cookie,
        "/console?status=all&q=stranger%40example.com",
    )
    .await;
    assert!(!none.contains(escalated));
}

#[tokio::test]
async fn a_console_reply_redirects_to_the_case_page_and_a_form_without_the_csrf_token_writes_nothing(
) {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let form = |csrf: &str| {
        Request::post(format!("/console/cases/{case_id}/messages"))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!(
                "csrf={csrf}&text=Hello+there&internal=true"
            )))
            .unwrap()
    };
    let (status, _) = app.raw(form("forged")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM case_notes WHERE case_id = $1",
            case_id
        )
        .await,
        0
    );

    let response = app.response(form(&csrf)).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        response.headers()["location"],
        format!("/console/cases/{case_id}?done=note").as_str()
    );
    let (_, page) = console_get(
        &app,
        &cookie,
        &format!("/console/cases/{case_id}?done=note"),
    )
    .await;
    assert!(page.contains("Internal note") && page.contains("Hello there"));
    assert!(
        page.contains("id=\"notice\""),
        "the result is shown at the top"
    );
}

/// The customer writes on a ticket through the ticket API.
async fn customer_writes(app: &TestApp, customer_id: &str, ticket_id: &str, text: &str) {
    let token = app.customer_token(customer_id).await;
    let path = format!("/api/v1/tickets/{ticket_id}/messages");
    let (status, body) = post(app, &token, &path, json!({ "text": text })).await;
    assert!(status.is_success(), "{status}: {body}");
}

/// SPEC invariant 2: a second ticket about the order of a case waiting for
/// approval joins that case; the new message voids the decision a reviewer was shown, so
/// an approval of the old fingerprint is refused, and the fresh one leads to one refund.
#[tokio::test]
async fn a_second_ticket_voids_the_waiting_approval_of_the_case_it_joins_and_one_refund_follows() {
    let app = spawn_app().await;
    let (_, first) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(first["status"], "awaiting_approval", "{first:#}");
    let case_id = first["id"].as_str().unwrap();
    let old = first["fingerprint"].as_str().unwrap();

    let (_, second) = app
        .open_ticket(
            "C-100",
            "Any news? The 198 for my plan is still taken two times",
        )
        .await;
    assert_eq!(second["status"], "closed", "{second:#}");
    assert_eq!(second["joined_into"], case_id);
    let now = app.case(case_id).await;
    assert_eq!(now["status"], "awaiting_approval", "{now:#}");
    assert!(now["proposal_version"].as_i64() > first["proposal_version"].as_i64());
    let fresh = now["fingerprint"].as_str().unwrap();
    assert_ne!(fresh, old, "the case changed, so its fingerprint did");

    let (status, refused) = app.approve(&app.supervisor_token, case_id, old).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    let joined_id = second["id"].as_str().unwrap();
    let (status, refused) = app.approve(&app.supervisor_token, joined_id, fresh).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a joined case is never approved: {refused}"
    );
    let (status, _) = app.approve(&app.supervisor_token, case_id, fresh).await;
    assert_eq!(status, StatusCode::OK);
    app.drain().await;
    assert_eq!(app.provider_refunds("ch_1001b").await.len(), 1);
    assert_eq!(app.provider_refunds("ch_1001a").await.len(), 0);
}

/// A message the customer writes later on the joined ticket goes on to the case doing
/// the work, and voids its waiting decision as a message written there would.
#[tokio::test]
async fn a_message_on_a_joined_ticket_goes_on_to_the_case_it_joined() {
    let app = spawn_app().await;
    let (first_ticket, first) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let (second_ticket, second) = app
        .open_ticket("C-100", "My annual plan was billed two times")
        .await;
    assert_eq!(second["joined_into"], first["id"], "{second:#}");
    let before = app.case(first["id"].as_str().unwrap()).await;

    let later = "I also checked my bank app: two payments of 198.00";
    customer_writes(&app, "C-100", &second_ticket, later).await;
    let (_, ticket) = app.customer_ticket("C-100", &first_ticket).await;
    let bodies: Vec<&str> = ticket["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    assert!(bodies.contains(&later), "{bodies:?}");
    let now = app.case(first["id"].as_str().unwrap()).await;
    assert_eq!(
        now["status"], "investigating",
        "voided and investigated again: {now:#}"
    );
    assert!(now["proposal_version"].as_i64() > before["proposal_version"].as_i64());
    assert_eq!(
        app.case(second["id"].as_str().unwrap()).await["status"],
        "closed"
    );
}

/// Once the case on an order has come to its end (here: refunded), a new ticket about
/// the order is a case of its own again, decided on the records as they now are.
#[tokio::test]
async fn a_ticket_about_an_order_whose_case_was_refunded_gets_a_case_of_its_own() {
    let app = spawn_app().await;
    let (_, first) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = first["id"].as_str().unwrap();
    let fingerprint = first["fingerprint"].as_str().unwrap();
    let (status, _) = app
        .approve(&app.supervisor_token, case_id, fingerprint)
        .await;
    assert_eq!(status, StatusCode::OK);
    app.drain().await;
    assert_eq!(app.case(case_id).await["status"], "refund_succeeded");

    let (_, again) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(again["joined_into"], Value::Null, "{again:#}");
    assert_ne!(again["status"], "closed", "{again:#}");
    assert_eq!(again["proposal"]["order_id"], "O-1001", "{again:#}");
    assert_eq!(app.provider_refunds("ch_1001b").await.len(), 1);
}

/// Two tickets of one customer about two different orders are two cases.
#[tokio::test]
async fn tickets_about_two_different_orders_of_one_customer_are_not_joined() {
    let app = spawn_app().await;
    let (_, addon) = app
        .open_ticket("C-500", "Please refund my addon, order O-5001")
        .await;
    let (_, monthly) = app
        .open_ticket("C-500", "Please refund order o-5002, the monthly plan")
        .await;
    for case in [&addon, &monthly] {
        assert_eq!(case["joined_into"], Value::Null, "{case:#}");
    }
    assert_eq!(addon["proposal"]["order_id"], "O-5001", "{addon:#}");
    assert_eq!(monthly["proposal"]["order_id"], "O-5002", "{monthly:#}");
}

/// `GET /api/v1/cases` is keyset-paged: `limit` cases an answer, the next
/// page's address in the `Link` header with every filter kept, no case twice or lost
/// across pages even when a case opens between two of them; bad paging values are
/// typed 400s.
#[tokio::test]
async fn the_case_list_pages_with_a_link_header_and_loses_no_case_between_pages() {
    let app = spawn_app().await;
    let mut opened = Vec::new();
    for customer in ["C-100", "C-200", "C-300", "C-400", "C-500"] {
        let (_, case) = app.open_ticket(customer, CHARGED_TWICE).await;
        opened.push(case["id"].as_str().unwrap().to_string());
        app.clock.advance(time::Duration::seconds(1));
    }
    let mut seen = Vec::new();
    let mut next = Some("/api/v1/cases?status=all&sort=oldest&limit=2".to_string());
    let mut pages = 0;
    while let Some(url) = next.take() {
        let response = app
            .response(
                Request::get(&url)
                    .header("authorization", format!("Bearer {}", app.agent_token))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        next = response.headers().get("link").map(|link| {
            let link = link.to_str().unwrap();
            assert!(link.ends_with(">; rel=\"next\""), "{link}");
            assert!(
                link.contains("status=all")
                    && link.contains("sort=oldest")
                    && link.contains("limit=2"),
                "{link}"
            );
            link.trim_start_matches('<')
                .split('>')
                .next()
                .unwrap()
                .to_string()
        });
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let page: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(page.as_array().unwrap().len() <= 2);
        seen.extend(ids(&page));
        pages += 1;
        if pages == 1 {
            // Opened between two pages: newer than every cursor, so it comes last.
            let (_, late) = app.open_ticket("C-600", CHARGED_TWICE).await;
            opened.push(late["id"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(seen, opened, "every case once, oldest first");
    assert_eq!(pages, 3);
    for (query, code) in [
        ("limit=0", "invalid_limit"),
        ("limit=501", "invalid_limit"),
        ("sort=sideways", "invalid_sort"),
        ("after=yesterday", "invalid_cursor"),
        ("limit=ten", "invalid_query"),
    ] {
        let (status, error) = app
            .request(
                "GET",
                &format!("/api/v1/cases?{query}"),
                Some(&app.agent_token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {error}");
        assert_eq!(error["error"]["code"], code, "{query}");
    }
}

async fn add_saved_reply(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    post(app, token, "/api/v1/saved-replies", body).await
}

#[tokio::test]
async fn saved_replies_are_kept_per_language_by_supervisors_and_bad_input_writes_nothing() {
    let app = spawn_app().await;
    let reply = |name: &str, language: &str, text: &str| json!({ "name": name, "language": language, "text": text });
    let (status, body) = add_saved_reply(
        &app,
        &app.agent_token.clone(),
        reply("Thanks", "en", "Thank you for writing."),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "agents use, never manage: {body}"
    );
    let supervisor = app.supervisor_token.clone();
    let (status, en) = add_saved_reply(
        &app,
        &supervisor,
        reply("Thanks", "en", "Thank you for writing."),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{en}");
    let (status, zh) =
        add_saved_reply(&app, &supervisor, reply("Thanks", "zh", "感谢您的来信。")).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "the same name in another language: {zh}"
    );

    for (bad, code) in [
        (reply("Thanks", "en", "Again."), "saved_reply_exists"),
        (reply("Thanks", "ru", "Спасибо."), "invalid_language"),
        (reply("  ", "en", "No name."), "invalid_name"),
        (reply("Empty", "en", "   "), "empty_message"),
        (
            json!({ "name": "X", "language": "en", "text": "x", "extra": 1 }),
            "invalid_body",
        ),
    ] {
        let (status, body) = add_saved_reply(&app, &supervisor, bad.clone()).await;
        assert!(status.is_client_error(), "{bad}: {status} {body}");
        assert_eq!(body["error"]["code"], code, "{bad}: {body}");
    }
    let (status, all) = app
        .request("GET", "/api/v1/saved-replies", Some(&app.agent_token), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(all, json!([en, zh]), "by language, nothing else written");
    let (_, only_zh) = app
        .request(
            "GET",
            "/api/v1/saved-replies?language=zh",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(only_zh, json!([zh]));
    let (status, body) = app
        .request(
            "GET",
            "/api/v1/saved-replies?language=xx",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_language"))
    );
}

#[tokio::test]
async fn the_case_page_offers_the_saved_replies_of_the_tickets_language_and_shows_the_messages_a_decision_sends(
) {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let supervisor = app.supervisor_token.clone();
    let reply = |name: &str, language: &str, text: &str| json!({ "name": name, "language": language, "text": text });
    let (_, en) = add_saved_reply(
        &app,
        &supervisor,
        reply("Checking", "en", "We are checking your charges now."),
    )
    .await;
    let (_, ja) = add_saved_reply(
        &app,
        &supervisor,
        reply("確認中", "ja", "ただいま確認しております。"),
    )
    .await;
    let (cookie, _) = app.staff_session("agent@test.example").await;

    let path = format!("/console/cases/{case_id}");
    let (status, page) = console_get(&app, &cookie, &path).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains(">Checking</option>") && !page.contains("確認中"),
        "the ticket's language only: {page}"
    );
    assert!(
        page.contains("id=\"reply-text\"></textarea>"),
        "nothing chosen, nothing filled"
    );
    // Without a script: the select's GET puts the text into the reply, to edit.
    let chosen = format!("{path}?saved={}", en["id"].as_str().unwrap());
    let (_, page) = console_get(&app, &cookie, &chosen).await;
    assert!(
        page.contains("id=\"reply-text\">We are checking your charges now.</textarea>"),
        "{page}"
    );
    let other = format!("{path}?saved={}", ja["id"].as_str().unwrap());
    let (_, page) = console_get(&app, &cookie, &other).await;
    assert!(
        page.contains("id=\"reply-text\"></textarea>"),
        "another language's reply fills nothing"
    );

    // The exact messages the customer receives on approval and on rejection.
    let approve =
        "Your refund of CN¥198.00 has been submitted to the payment provider and is pending.";
    assert!(
        page.contains("id=\"preview-approve\"") && page.contains(approve),
        "{page}"
    );
    let reject = "After review by our team, this refund was not approved.";
    assert!(
        page.contains("id=\"preview-reject\"") && page.contains(reject),
        "{page}"
    );
    let (status, body) = post(
        &app,
        &app.agent_token.clone(),
        &format!("/api/v1/cases/{case_id}/reject"),
        json!({ "fingerprint": case["fingerprint"], "reason": "customer asked to wait" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ticket_id = case["ticket_id"].as_str().unwrap();
    let (ticket, _) = customer_surfaces(&app, "C-100", ticket_id).await;
    let sent = ticket["messages"].as_array().unwrap().last().unwrap()["body"].clone();
    assert!(
        sent.as_str().unwrap().starts_with(reject),
        "what was shown is what was sent: {sent}"
    );
}

/// A console form post as the staff member of `cookie`.
pub(crate) async fn console_post(
    app: &TestApp,
    cookie: &str,
    path: &str,
    form: &str,
) -> (StatusCode, String) {
    app.raw(
        Request::post(path)
            .header("cookie", cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(form.to_string()))
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn a_supervisor_adds_and_removes_saved_replies_on_the_console_and_an_agent_only_reads_them() {
    let app = spawn_app().await;
    let (cookie, csrf) = app.staff_session("supervisor@test.example").await;
    let add = |name: &str, language: &str, text: &str| {
        format!("csrf={csrf}&name={name}&language={language}&text={text}")
    };
    let (status, _) = console_post(
        &app,
        &cookie,
        "/console/replies",
        &add("Refund+sent", "en", "Your+refund+is+on+its+way."),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    // Refused: a language we do not speak. The page keeps the typed text, nothing is written.
    let (status, page) = console_post(
        &app,
        &cookie,
        "/console/replies",
        &add("Tack", "sv", "Tack+s%C3%A5+mycket."),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(
        page.contains("id=\"action-error\"") && page.contains("Tack så mycket."),
        "{page}"
    );
    let (_, page) = console_get(&app, &cookie, "/console/replies?done=added").await;
    assert!(
        page.contains("Your refund is on its way.") && !page.contains("Merci"),
        "{page}"
    );

    let (agent, agent_csrf) = app.staff_session("agent@test.example").await;
    let (status, page) = console_get(&app, &agent, "/console/replies").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("Your refund is on its way.") && !page.contains("id=\"add-reply\""),
        "{page}"
    );
    let id: String = sqlx::query_scalar("SELECT id FROM saved_replies")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();
    let remove = format!("/console/replies/{id}/delete");
    let (status, _) = console_post(&app, &agent, &remove, &format!("csrf={agent_csrf}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "an agent may not remove one");
    let (status, _) = console_post(&app, &cookie, &remove, "csrf=wrong").await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "nor a form without the session's token"
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM saved_replies WHERE id = $1",
            &id
        )
        .await,
        1
    );
    let (status, _) = console_post(&app, &cookie, &remove, &format!("csrf={csrf}")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM saved_replies WHERE id = $1",
            &id
        )
        .await,
        0
    );
}
