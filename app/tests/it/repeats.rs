//! The agent never sends the same answer twice: where its next reply would
//! repeat one it already sent on the ticket — the same text or the same policy
//! paragraph — the case goes to a person at once and the customer is told so, in their
//! language, once.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::{spawn_app, TestApp};

async fn say(app: &TestApp, token: &str, ticket: &str, text: &str) {
    let path = format!("/api/v1/tickets/{ticket}/messages");
    let (status, body) = app
        .request("POST", &path, Some(token), Some(json!({ "text": text })))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.drain().await;
}

fn agent_words(view: &Value) -> Vec<String> {
    view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["author"] == "agent")
        .map(|m| m["body"].as_str().unwrap().to_string())
        .collect()
}

async fn asks_the_same_question_three_times(customer: &str, question: &str, handed: &str) {
    let app = spawn_app().await;
    let (ticket, first) = app.open_ticket(customer, question).await;
    assert_eq!(first["status"], "awaiting_customer", "{first:#}");
    let token = app.customer_token(customer).await;
    say(&app, &token, &ticket, question).await;
    say(&app, &token, &ticket, question).await;

    let (_, view) = app.customer_ticket(customer, &ticket).await;
    let said = agent_words(&view);
    let mut distinct = said.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), said.len(), "no answer twice: {said:#?}");
    assert_eq!(said.len(), 2, "a question, then the hand-over: {said:#?}");
    assert!(said[1].contains(handed), "{said:#?}");
    let case = app.case(first["id"].as_str().unwrap()).await;
    assert_eq!(case["status"], "escalated", "{case:#}");
    // A question the assistant could not move is the agents' (docs/spec/roles.md,
    // "Where an escalation goes"), not the supervisors'.
    assert_eq!(case["queue"], "agents", "{case:#}");
    assert_eq!(view["case"]["may_ask_for_person"], false, "{view:#}");
    let lost = desk::cases::open_in_nobodys_queue(&app.state.db)
        .await
        .unwrap();
    assert!(lost.is_empty(), "{lost:?}");
}

#[tokio::test]
async fn a_customer_who_asks_the_same_question_three_times_gets_no_answer_twice_and_a_person() {
    let handed = "team will take over";
    asks_the_same_question_three_times("C-500", "Please refund me", handed).await;
}

#[tokio::test]
async fn the_hand_over_line_is_in_the_customers_language() {
    asks_the_same_question_three_times("C-500", "请给我退款", "团队成员将接手").await;
}
