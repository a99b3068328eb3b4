//! A bulk close's reply reaches each customer in their own language
//! (docs/spec/interfaces.md, "Bulk actions"): a saved reply goes out in the version of
//! each ticket's language, its variables filled per case; a reply typed in English is
//! not sent to a customer who writes Chinese — their case is left open instead.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};

use crate::support::{spawn_app, TestApp};

fn form_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Posts the queue's bulk form as `cookie`; returns where it sends the browser.
async fn bulk(app: &TestApp, cookie: &str, form: &str) -> String {
    let request = Request::post("/console/bulk")
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(form.to_string()))
        .unwrap();
    let response = app.response(request).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    response.headers()["location"].to_str().unwrap().to_string()
}

/// What the customer was last told on their ticket, and the closing mail's language
/// and body (the outbox row the close wrote), if any.
async fn told(app: &TestApp, customer: &str, ticket: &str) -> (String, Option<(String, String)>) {
    let (status, view) = app.customer_ticket(customer, ticket).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    let last = view["messages"].as_array().unwrap().last().unwrap()["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mail: Option<(String, String)> = sqlx::query_as(
        "SELECT language, body FROM mail_outbox WHERE ticket_id = $1 AND kind = 'closed'",
    )
    .bind(ticket)
    .fetch_optional(app.state.db.pool())
    .await
    .unwrap();
    (last, mail)
}

async fn saved_reply(app: &TestApp, language: &str, text: &str) {
    let body = json!({ "name": "Closing", "language": language, "text": text });
    let (status, answer) = app
        .request(
            "POST",
            "/api/v1/saved-replies",
            Some(&app.supervisor_token),
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

fn ids(case: &Value) -> (String, String) {
    let id = |v: &Value| v.as_str().unwrap().to_string();
    (id(&case["id"]), id(&case["ticket_id"]))
}

#[tokio::test]
async fn a_bulk_close_replies_to_a_chinese_and_an_english_customer_each_in_their_language() {
    let app = spawn_app().await;
    let (_, en_case) = app
        .open_ticket("C-600", "I was charged twice for my annual plan")
        .await;
    let (_, zh_case) = app
        .open_ticket(
            "C-500",
            "请退款订单 O-5001，我改变主意了，不想要这个附加组件。",
        )
        .await;
    for case in [&en_case, &zh_case] {
        assert_ne!(case["status"], "awaiting_approval", "{case:#}");
    }
    let (en_id, en_ticket) = ids(&en_case);
    let (zh_id, zh_ticket) = ids(&zh_case);
    let (cookie, csrf) = app.staff_session("supervisor@test.example").await;

    // Typed in English: the Chinese customer is not written to in English; left open.
    let typed = "We have closed your request. Thank you for your patience.";
    let form = format!(
        "csrf={csrf}&status=all&action=close&reason=tidy&reply={}&case={zh_id}",
        form_encoded(typed)
    );
    let location = bulk(&app, &cookie, &form).await;
    assert!(
        location.ends_with("bulk=closed&n=0&skipped=1"),
        "{location}"
    );
    assert_ne!(app.case(&zh_id).await["status"], "closed");
    assert_ne!(told(&app, "C-500", &zh_ticket).await.0, typed);

    // A saved reply kept in English and Chinese: each customer gets their own version.
    let english = "Hi {first_name}, we have closed your request. Thank you.";
    let chinese = "{first_name}，您好：您的请求已关闭，谢谢。";
    saved_reply(&app, "en", english).await;
    saved_reply(&app, "zh", chinese).await;
    let form = format!(
        "csrf={csrf}&status=all&action=close&reason=tidy&saved=Closing&reply=&case={en_id}&case={zh_id}"
    );
    let location = bulk(&app, &cookie, &form).await;
    assert!(
        location.ends_with("bulk=closed&n=2&skipped=0"),
        "{location}"
    );
    for id in [&en_id, &zh_id] {
        assert_eq!(app.case(id).await["status"], "closed", "{id}");
    }
    let name = |id: &str| -> String {
        let world: Value = serde_json::from_str(&crate::support::demo_world_text()).unwrap();
        let customer = world["customers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()["name"]
            .as_str()
            .unwrap()
            .to_string();
        customer.split_whitespace().next().unwrap().to_string()
    };
    let (last, mail) = told(&app, "C-600", &en_ticket).await;
    assert_eq!(last, english.replace("{first_name}", &name("C-600")));
    let (language, body) = mail.expect("the closing mail to the English customer");
    assert_eq!((language.as_str(), body), ("en", last));
    let (last, mail) = told(&app, "C-500", &zh_ticket).await;
    assert_eq!(last, chinese.replace("{first_name}", &name("C-500")));
    let (language, body) = mail.expect("the closing mail to the Chinese customer");
    assert_eq!((language.as_str(), body), ("zh", last));
}
