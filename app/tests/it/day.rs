//! A day of traffic (nothing falls through). Sixty generated customers (evals'
//! varied generator: ten languages, its own id schemes, it knows nothing of our parser)
//! write through the real HTTP API; three staff (agent, supervisor, admin) approve,
//! reject, take over and close; customers reply to resolved and closed cases, withdraw,
//! ask for a person in their words and with the button; the worker runs with
//! `run_once()` under a `ManualClock`. Then one query, `desk::cases::open_in_nobodys_queue`,
//! must find no case that needs a person and sits in nobody's queue.
//!
//! It runs on whichever database `spawn_app()` picks: SQLite, or PostgreSQL when
//! `TEST_DATABASE_URL` is set.

use axum::http::StatusCode;
use desk::auth::StaffRole;
use serde_json::{json, Value};

use crate::support::{spawn_app, TestApp};

/// One generated customer's ticket in the day.
struct Visit {
    customer_id: String,
    ticket_id: String,
    case_id: String,
}

/// What the day did, counted, so the test shows the traffic was as mixed as it claims.
#[derive(Debug, Default)]
struct Tally {
    approved: usize,
    rejected: usize,
    taken_over: usize,
    closed: usize,
    asked_for_person: usize,
    withdrawn: usize,
    wrote_after_the_end: usize,
    wrote_while_money_moved: usize,
}

const TICKETS: usize = 60;

/// Each generated ticket brings its own small billing world: into the provider and the
/// app, as a shop's records would be.
async fn load_worlds(app: &TestApp, tickets: &[shadow::replay::HistoricalTicket]) {
    for ticket in tickets {
        let text = serde_json::to_string(&ticket.world).unwrap();
        desk::world::load_into_provider(&app.mock.base_url(), &text)
            .await
            .unwrap();
        ticket.world.load_into(&app.state.db).await.unwrap();
    }
}

/// Lets the worker finish what it can, retrying runs that wait for a dependency.
async fn settle(app: &TestApp) {
    for _ in 0..3 {
        app.drain().await;
        app.clock.advance(time::Duration::milliseconds(
            desk::runs::DEPENDENCY_RETRY_MS + 1,
        ));
    }
    app.drain().await;
}

async fn as_customer(app: &TestApp, visit: &Visit, action: &str, body: Value) -> StatusCode {
    let token = app.customer_token(&visit.customer_id).await;
    let path = format!("/api/v1/tickets/{}/{action}", visit.ticket_id);
    let (status, _) = app.request("POST", &path, Some(&token), Some(body)).await;
    // Ten messages a minute per customer: the day moves on between their words.
    app.clock.advance(time::Duration::seconds(7));
    status
}

async fn as_staff(app: &TestApp, token: &str, visit: &Visit, action: &str, body: Value) -> bool {
    let path = format!("/api/v1/cases/{}/{action}", visit.case_id);
    let (status, _) = app.request("POST", &path, Some(token), Some(body)).await;
    status.is_success()
}

/// The morning: every customer writes, their follow-ups too; the worker keeps up.
async fn morning(app: &TestApp, tickets: &[shadow::replay::HistoricalTicket]) -> Vec<Visit> {
    let mut visits = Vec::new();
    for (n, ticket) in tickets.iter().enumerate() {
        let mut said = ticket.messages.iter().filter(|m| m.from == "customer");
        let first = said.next().map(|m| m.text.clone()).unwrap_or_default();
        let opened = app.post_ticket(&ticket.customer_id, &first).await;
        let visit = Visit {
            customer_id: ticket.customer_id.clone(),
            ticket_id: opened["id"].as_str().unwrap().to_string(),
            case_id: opened["case"]["id"].as_str().unwrap().to_string(),
        };
        for more in said {
            as_customer(app, &visit, "messages", json!({ "text": more.text })).await;
        }
        visits.push(visit);
        if n % 10 == 9 {
            app.clock.advance(time::Duration::minutes(10));
            app.drain().await;
        }
    }
    settle(app).await;
    visits
}

/// The token of whoever may approve a case that needs `role`.
fn approver<'a>(role: &str, agent: &'a str, supervisor: &'a str, admin: &'a str) -> &'a str {
    match role {
        "agent" => agent,
        "supervisor" => supervisor,
        _ => admin,
    }
}

/// The staff's pass over the queue: approvals and rejections by whoever may, escalations
/// taken over or closed by the supervisor.
async fn staff_pass(app: &TestApp, admin: &str, visits: &[Visit], tally: &mut Tally) {
    for (n, visit) in visits.iter().enumerate() {
        let case = app.case(&visit.case_id).await;
        let role = case["required_role"].as_str().unwrap_or("supervisor");
        let fingerprint = case["fingerprint"].as_str().unwrap_or_default();
        let who = approver(role, &app.agent_token, &app.supervisor_token, admin);
        match case["status"].as_str().unwrap() {
            "awaiting_approval" if n % 5 == 0 => {
                let body =
                    json!({ "fingerprint": fingerprint, "reason": "not what the order shows" });
                tally.rejected += as_staff(app, who, visit, "reject", body).await as usize;
            }
            "awaiting_approval" => {
                let body = json!({ "fingerprint": fingerprint });
                tally.approved += as_staff(app, who, visit, "approve", body).await as usize;
            }
            "escalated" if n % 2 == 0 => {
                let sup = &app.supervisor_token;
                tally.taken_over += as_staff(app, sup, visit, "takeover", json!({})).await as usize;
            }
            "escalated" => {
                let body = json!({ "reason": "answered by phone" });
                let sup = &app.supervisor_token;
                tally.closed += as_staff(app, sup, visit, "close", body).await as usize;
            }
            _ => {}
        }
    }
}

/// How customers ask for a person, in their own words and with the page's button.
const PERSON: [&str; 4] = [
    "I'd like to talk to a real person please",
    "请转人工客服",
    "担当者と話したいです",
    "Ich möchte bitte mit einem Menschen sprechen",
];

/// The afternoon: customers answer what they were told, whatever state it left.
async fn afternoon(app: &TestApp, visits: &[Visit], tally: &mut Tally) {
    for (n, visit) in visits.iter().enumerate() {
        let case = app.case(&visit.case_id).await;
        let status = case["status"].as_str().unwrap().to_string();
        let ok = |s: StatusCode| s.is_success() as usize;
        match status.as_str() {
            "awaiting_approval" | "escalated" | "awaiting_customer" if n % 5 == 3 => {
                let s = as_customer(app, visit, "withdraw", json!({})).await;
                tally.withdrawn += ok(s);
            }
            "denied" | "awaiting_customer" if n % 3 == 0 => {
                let s = as_customer(app, visit, "person", json!({})).await;
                tally.asked_for_person += ok(s);
            }
            "denied" | "awaiting_customer" => {
                let text = PERSON[n % PERSON.len()];
                let s = as_customer(app, visit, "messages", json!({ "text": text })).await;
                tally.asked_for_person += ok(s);
            }
            "refund_succeeded" | "refund_failed" | "rejected" | "closed" | "replied" => {
                let text = "Thank you, but I still see the charge on my card statement.";
                let s = as_customer(app, visit, "messages", json!({ "text": text })).await;
                tally.wrote_after_the_end += ok(s);
            }
            _ => {}
        }
    }
}

/// A customer writes while their approved refund waits for the worker to send it.
async fn words_while_money_moves(app: &TestApp, visits: &[Visit], tally: &mut Tally) {
    for visit in visits.iter().step_by(2) {
        let case = app.case(&visit.case_id).await;
        if case["status"] != "awaiting_approval" || case["required_role"] != "agent" {
            continue;
        }
        let fingerprint = case["fingerprint"].as_str().unwrap_or_default();
        let body = json!({ "fingerprint": fingerprint });
        if as_staff(app, &app.agent_token, visit, "approve", body).await {
            let text = json!({ "text": "Has my refund been sent yet?" });
            let s = as_customer(app, visit, "messages", text).await;
            tally.wrote_while_money_moved += s.is_success() as usize;
        }
    }
}

/// The evening: the admin approves what supervisors took over (nobody approves a case
/// they took over themselves), and the supervisor closes a few more.
async fn evening(app: &TestApp, admin: &str, visits: &[Visit], tally: &mut Tally) {
    for visit in visits {
        let case = app.case(&visit.case_id).await;
        let taken = case["void_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("taken over"));
        if case["status"] == "awaiting_approval" && taken {
            let body = json!({ "fingerprint": case["fingerprint"] });
            tally.approved += as_staff(app, admin, visit, "approve", body).await as usize;
        }
    }
}

/// What a case looks like when it falls through: enough to see why.
async fn describe(app: &TestApp, case_id: &str) -> String {
    let case = app.case(case_id).await;
    let ticket = case["ticket_id"].as_str().unwrap();
    let customer = case["customer_id"].as_str().unwrap();
    let (_, t) = app.customer_ticket(customer, ticket).await;
    let said: Vec<String> = t["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| format!("{}: {}", m["author"], m["body"]))
        .collect();
    format!(
        "{case_id} {} {:?}\n  {}",
        case["status"],
        case["void_reason"],
        said.join("\n  ")
    )
}

#[tokio::test]
async fn after_a_day_of_mixed_traffic_no_case_that_needs_a_person_is_in_nobodys_queue() {
    let app = spawn_app().await;
    let admin = app.staff_token(StaffRole::Admin).await;
    let tickets = refund_evals::generate::varied_history(38, TICKETS);
    load_worlds(&app, &tickets).await;
    let mut tally = Tally::default();

    let visits = morning(&app, &tickets).await;
    words_while_money_moves(&app, &visits, &mut tally).await;
    // The query is not vacuous: words nobody has answered yet, on refunds the worker has
    // not sent, are in nobody's queue until the worker settles them and says so.
    let waiting = desk::cases::open_in_nobodys_queue(&app.state.db)
        .await
        .unwrap();
    assert_eq!(waiting.len(), tally.wrote_while_money_moved, "{waiting:?}");
    settle(&app).await;
    staff_pass(&app, &admin, &visits, &mut tally).await;
    settle(&app).await;
    app.clock.advance(time::Duration::hours(2));
    afternoon(&app, &visits, &mut tally).await;
    settle(&app).await;
    evening(&app, &admin, &visits, &mut tally).await;
    staff_pass(&app, &admin, &visits, &mut tally).await;
    settle(&app).await;
    app.clock.advance(time::Duration::hours(3));
    afternoon(&app, &visits, &mut tally).await;
    settle(&app).await;

    // The day was the mix it claims to be.
    assert_eq!(visits.len(), TICKETS);
    assert!(tally.approved >= 3 && tally.rejected >= 1, "{tally:?}");
    assert!(tally.taken_over + tally.closed >= 2, "{tally:?}");
    assert!(
        tally.asked_for_person >= 2 && tally.withdrawn >= 2,
        "{tally:?}"
    );
    assert!(tally.wrote_after_the_end >= 3, "{tally:?}");
    assert!(tally.wrote_while_money_moved >= 1, "{tally:?}");

    let lost = desk::cases::open_in_nobodys_queue(&app.state.db)
        .await
        .unwrap();
    let mut seen = Vec::new();
    for case_id in &lost {
        seen.push(describe(&app, case_id.as_str()).await);
    }
    assert!(
        lost.is_empty(),
        "{} cases need a person and are in nobody's queue ({tally:?}):\n{}",
        lost.len(),
        seen.join("\n")
    );
}
