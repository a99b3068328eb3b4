//! Where an escalation goes (docs/spec/roles.md): what the policy reserves for supervisors
//! waits in their queue and they are told; everything else the assistant escalates is the
//! agents', given round robin to the agents signed in (`ESCALATION_ROUTING=round_robin`,
//! the default) or left for them to take (`queue`). Seen failing before: every escalation
//! went to the supervisors (13 of 42 cases in a half hour of demo traffic, 18 waiting in
//! the supervisor's "Needs me" while the agents had little).

use std::sync::Arc;

use desk::agent::investigator::Investigator;
use desk::auth::{self, StaffRole};
use desk::cases::routing::Routing;

use crate::support::{spawn_app, spawn_app_configured, TestApp};

/// Who holds a case and the mails about it to staff: (kind, staff email).
async fn holder_and_staff_mail(
    app: &TestApp,
    case_id: &str,
) -> (Option<String>, Vec<(String, String)>) {
    let holder: Option<String> = sqlx::query_scalar(
        "SELECT s.email FROM cases c JOIN staff s ON s.id = c.assignee_id WHERE c.id = $1",
    )
    .bind(case_id)
    .fetch_optional(app.state.db.pool())
    .await
    .unwrap();
    let mails = sqlx::query_as(
        "SELECT o.kind, s.email FROM mail_outbox o JOIN staff s ON s.id = o.staff_id
         WHERE o.case_id = $1 ORDER BY o.seq",
    )
    .bind(case_id)
    .fetch_all(app.state.db.pool())
    .await
    .unwrap();
    (holder, mails)
}

/// A second agent, signed in to the console.
async fn second_agent(app: &TestApp) -> String {
    let now = desk::clock::Clock::now_ms(app.clock.as_ref());
    let email = "agent2@test.example";
    auth::upsert_staff(
        &app.state.db,
        email,
        StaffRole::Agent,
        "correct horse battery",
        now,
    )
    .await
    .unwrap();
    app.staff_session(email).await;
    email.to_string()
}

#[tokio::test]
async fn a_dispute_goes_to_the_agents_and_each_present_agent_is_given_one_in_turn() {
    let app = spawn_app().await;
    // Both agents are signed in; the supervisor too (never given an agents' case).
    app.staff_session("agent@test.example").await;
    let agent2 = second_agent(&app).await;
    app.staff_session("supervisor@test.example").await;
    let mut holders = Vec::new();
    for _ in 0..2 {
        let (_, case) = app
            .open_ticket("C-600", "I was charged twice for my annual plan")
            .await;
        let case_id = case["id"].as_str().unwrap().to_string();
        assert_eq!(case["status"], "escalated", "{case:#}");
        assert_eq!(case["reason_code"], "dispute_open", "{case:#}");
        assert_eq!(case["queue"], "agents", "{case:#}");
        app.drain().await;
        let (holder, mails) = holder_and_staff_mail(&app, &case_id).await;
        let holder = holder.expect("given to a present agent");
        assert_eq!(mails, [("staff_assigned".to_string(), holder.clone())]);
        holders.push(holder);
        // Withdrawn, so the next ticket on the same order opens its own case.
        let ticket = case["ticket_id"].as_str().unwrap();
        let token = app.customer_token("C-600").await;
        app.request(
            "POST",
            &format!("/api/v1/tickets/{ticket}/withdraw"),
            Some(&token),
            None,
        )
        .await;
    }
    holders.sort();
    assert_eq!(
        holders,
        [agent2, "agent@test.example".to_string()],
        "one each"
    );
}

#[tokio::test]
async fn another_customers_order_waits_for_the_supervisors_who_are_told() {
    let app = spawn_app().await;
    app.staff_session("agent@test.example").await;
    let (_, case) = app
        .open_ticket("C-500", "Please refund order O-2001, I was charged twice.")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    assert_eq!(case["queue"], "supervisors", "{case:#}");
    app.drain().await;
    let (holder, mails) = holder_and_staff_mail(&app, &case_id).await;
    assert_eq!(holder, None, "never given to an agent");
    assert_eq!(
        mails,
        [(
            "staff_escalation".to_string(),
            "supervisor@test.example".to_string()
        )]
    );
}

#[tokio::test]
async fn with_queue_routing_or_nobody_signed_in_an_agents_case_waits_in_their_queue() {
    let queued = spawn_app_configured(Arc::new(Investigator), |c| {
        c.escalation_routing = Routing::Queue;
    })
    .await;
    queued.staff_session("agent@test.example").await;
    // Nobody signed in: round robin has no one to give it to.
    let nobody = spawn_app().await;
    for app in [&queued, &nobody] {
        let (_, case) = app
            .open_ticket("C-600", "I was charged twice for my annual plan")
            .await;
        let case_id = case["id"].as_str().unwrap().to_string();
        app.drain().await;
        let (holder, mails) = holder_and_staff_mail(app, &case_id).await;
        assert_eq!((holder, mails), (None, vec![]));
        let agent = app.staff_session("agent@test.example").await.0;
        let (_, page) =
            crate::conversation::console_get(app, &agent, "/console?status=needs_me").await;
        assert!(page.contains(&case_id), "in the agents' Needs me");
        let waiting = desk::cases::open_in_nobodys_queue(&app.state.db)
            .await
            .unwrap();
        assert!(waiting.is_empty(), "{waiting:?}");
    }
    // Once an agent signs in, round robin gives it to them on the next pass.
    nobody.drain().await;
    let case_id: String = sqlx::query_scalar("SELECT id FROM cases LIMIT 1")
        .fetch_one(nobody.state.db.pool())
        .await
        .unwrap();
    let (holder, _) = holder_and_staff_mail(&nobody, &case_id).await;
    assert_eq!(holder.as_deref(), Some("agent@test.example"));
}

/// The case ids a signed-in browser's queue shows under `status`.
async fn rows_in(
    browser: &crate::support::browser::Browser,
    base: &str,
    status: &str,
) -> Vec<String> {
    browser
        .goto(&format!("{base}/console?status={status}"))
        .await;
    browser.wait_until_loaded().await;
    let ids = browser
        .execute("return [...document.querySelectorAll('#queue tr[data-case]')].map(r => r.dataset.case);")
        .await;
    ids.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The same journey as a person sees it, in Chromium at 1280 and 390 px: a dispute the
/// assistant escalates lands in the signed-in agent's "Needs me", not the supervisor's;
/// a case only a supervisor may decide lands in the supervisor's. Before routing, both
/// were in the supervisor's "Needs me" and the agent's was empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_browser_each_escalation_is_in_the_needs_me_of_whom_it_needs() {
    use crate::support::browser::{serve, Browser};
    for (width, height) in [(1280, 800), (390, 844)] {
        let app = spawn_app().await;
        let base = serve(app.router.clone()).await;
        let agent = Browser::start().await;
        agent.set_window_size(width, height).await;
        agent.console_login(&base, "agent@test.example").await;
        let supervisor = Browser::start().await;
        supervisor.set_window_size(width, height).await;
        supervisor
            .console_login(&base, "supervisor@test.example")
            .await;

        let (_, dispute) = app
            .open_ticket("C-600", "I was charged twice for my annual plan")
            .await;
        assert_eq!(dispute["queue"], "agents", "{dispute:#}");
        app.drain().await;
        let dispute = dispute["id"].as_str().unwrap().to_string();

        let agents_rows = rows_in(&agent, &base, "needs_me").await;
        assert!(
            agents_rows.contains(&dispute),
            "{width}px: the agent's Needs me {agents_rows:?}"
        );
        let supervisors_rows = rows_in(&supervisor, &base, "needs_me").await;
        assert!(
            !supervisors_rows.contains(&dispute),
            "{width}px: the supervisor's Needs me {supervisors_rows:?}"
        );
        let (scroll, inner) = agent.widths().await;
        assert!(scroll <= inner, "{width}px: {scroll} > {inner}");
        agent.close().await;
        supervisor.close().await;
    }
}
