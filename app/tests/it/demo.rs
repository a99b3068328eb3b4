//! `refund-agent demo`'s traffic (the desk is never empty), stepped against a
//! real app — the real database, the payments mock over HTTP, the worker — without its
//! timer: N steps, then the records show new tickets, answers, withdrawals and requests
//! for a person, in several languages.

use std::collections::BTreeSet;

use app::cli::{DemoTraffic, TrafficStep};
use sqlx::Row;

use crate::support::spawn_app;

const STEPS: usize = 60;

#[tokio::test]
async fn the_demo_traffic_opens_tickets_answers_withdraws_and_asks_for_people_in_several_languages()
{
    let app = spawn_app().await;
    let mut traffic = DemoTraffic::new(38, "t1");
    let mut steps = Vec::new();
    for n in 0..STEPS {
        steps.push(
            traffic
                .step(&app.state, &app.mock.base_url())
                .await
                .unwrap(),
        );
        // The worker answers between customers; a minute passes every few steps.
        if n % 3 == 2 {
            app.drain().await;
            app.clock.advance(time::Duration::minutes(1));
        }
    }
    app.drain().await;
    let count = |f: fn(&TrafficStep) -> bool| steps.iter().filter(|s| f(s)).count();
    let opened = count(|s| matches!(s, TrafficStep::Opened { .. }));
    assert!(opened >= 15, "{steps:#?}");
    assert!(
        count(|s| matches!(s, TrafficStep::Replied { .. })) >= 2,
        "{steps:#?}"
    );
    assert!(
        count(|s| matches!(s, TrafficStep::Withdrew { .. })) >= 1,
        "{steps:#?}"
    );
    assert!(
        count(|s| matches!(s, TrafficStep::AskedForPerson { .. })) >= 1,
        "{steps:#?}"
    );

    // The records say the same, read from the database the product wrote.
    let pool = app.state.db.pool();
    let rows = sqlx::query(
        "SELECT t.language, c.status FROM tickets t JOIN cases c ON c.ticket_id = t.id
         WHERE t.customer_id LIKE 'C-DEMO-%'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), opened, "one case per opened ticket");
    let languages: BTreeSet<String> = rows.iter().map(|r| r.get("language")).collect();
    assert!(languages.len() >= 4, "{languages:?}");
    let statuses: Vec<String> = rows.iter().map(|r| r.get("status")).collect();
    assert!(statuses.iter().any(|s| s == "cancelled"), "{statuses:?}");
    assert!(
        statuses.iter().any(|s| s == "awaiting_approval"),
        "{statuses:?}"
    );
    assert!(statuses.iter().any(|s| s == "escalated"), "{statuses:?}");
    let (answers,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM messages m JOIN tickets t ON t.id = m.ticket_id
         WHERE t.customer_id LIKE 'C-DEMO-%' AND m.author = 'agent'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert!(
        answers as usize >= opened,
        "the agent answered each: {answers}"
    );
}

/// `demo --rate` is checked before anything starts: a rate outside 0.1 to 600 actions a
/// minute stops the command with a message naming it, and nothing is written.
#[test]
fn demo_refuses_a_rate_it_cannot_keep() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_refund-agent"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .arg("--data-dir")
        .arg(&data)
        .args(["demo", "--rate", "0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("--rate") && said.contains("0.1 to 600"),
        "{said}"
    );
    assert!(!data.exists(), "nothing was written");
}
