//! Nothing falls through, done as people do it in Chromium: a customer writes
//! from their phone on a ticket whose refund has settled; the case reopens into the
//! supervisors' "Needs me"; a supervisor at a desk finds it from the search box of another
//! page by name, email, order, charge, ticket id or the customer's words, and assigns it
//! from the list of staff; the agent finds it under "Mine" on a phone and closes it (it
//! moves no money) with a reply, which the customer's open page shows; a search still
//! finds the closed case, and no case that needs a person is in nobody's queue.

use crate::support::browser::{serve, Browser};
use crate::support::spawn_app;

/// WebDriver's Enter key.
const ENTER: &str = "\u{E007}";

/// The case ids of the queue's rows, top to bottom.
async fn queue_ids(browser: &Browser) -> Vec<String> {
    let script =
        "return [...document.querySelectorAll('#queue tr[data-case]')].map(r => r.dataset.case);";
    let rows = browser.execute(script).await;
    rows.as_array()
        .expect("an array of case ids")
        .iter()
        .map(|id| id.as_str().unwrap_or_default().to_string())
        .collect()
}

/// Types `words` into the console header's search box on the current page and presses
/// Enter; returns the case ids found.
async fn header_search(browser: &Browser, words: &str) -> Vec<String> {
    browser
        .type_into("#header-search input[name=q]", words)
        .await;
    browser.press_key(ENTER).await;
    browser.wait_for_url("q=").await;
    browser.wait_until_loaded().await;
    queue_ids(browser).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_a_settled_case_reaches_a_person_who_finds_assigns_and_closes_it() {
    let app = spawn_app().await;
    let (ticket, case) = app.refunded_ticket("C-100").await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let base = serve(app.router.clone()).await;

    // The customer, on a phone, writes on the settled ticket.
    let customer = Browser::start().await;
    customer.set_window_size(390, 844).await;
    let path = format!("/tickets/{ticket}");
    let link = app.sign_in_link("C-100", &path).await;
    customer.sign_in(&base, &link, &path).await;
    customer
        .type_into(
            "#chat textarea[name=text]",
            "The money never arrived on my card, can someone check?",
        )
        .await;
    customer.click("#send").await;
    let status = customer
        .wait_for_attribute("#case-status", "data-status", "escalated")
        .await;
    assert_eq!(status, "escalated", "the case reopened for a person");
    let (content, window) = customer.widths().await;
    assert!(content <= window, "the ticket page fits 390 px");
    app.drain().await;

    // A supervisor at a desk: the case waits in the agents' queue (docs/spec/roles.md,
    // "Where an escalation goes"; no agent is signed in to be given it), under
    // "Escalated".
    let supervisor = Browser::start().await;
    supervisor.set_window_size(1280, 800).await;
    supervisor
        .console_login(&base, "supervisor@test.example")
        .await;
    supervisor
        .goto(&format!("{base}/console?status=escalated"))
        .await;
    assert!(queue_ids(&supervisor).await.contains(&case_id));
    // From another page, the header's box finds it by anything the team knows it by.
    for words in [
        "Li Wei",
        "LI.WEI@example.cn",
        "O-1001",
        "ch_1001b",
        ticket.as_str(),
        "never arrived",
    ] {
        supervisor.goto(&format!("{base}/console/csat")).await;
        let found = header_search(&supervisor, words).await;
        assert!(
            found.contains(&case_id),
            "{words:?} finds the case: {found:?}"
        );
    }
    // Assigned to the agent, picked from the list of staff.
    supervisor
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    supervisor
        .click("#assign option[value='agent@test.example']")
        .await;
    supervisor.click("#assign-submit").await;
    assert!(
        supervisor.wait_until("const a = document.querySelector('#assignee'); return !!a && a.textContent === 'agent@test.example';"
        )
        .await,
        "the case page names the agent"
    );

    // The agent, on a phone, finds it under "Mine" and closes it with a reply.
    let agent = Browser::start().await;
    agent.set_window_size(390, 844).await;
    agent.console_login(&base, "agent@test.example").await;
    // On the phone the header's box finds it too, by the customer's words.
    let found = header_search(&agent, "never arrived").await;
    assert!(found.contains(&case_id), "{found:?}");
    agent.goto(&format!("{base}/console?status=all")).await;
    agent.click("#queue-filter input[name=mine]").await;
    agent.click("#filter").await;
    agent.wait_for_url("mine=1").await;
    assert_eq!(queue_ids(&agent).await, vec![case_id.clone()]);
    agent
        .click(&format!("#queue a[href^='/console/cases/{case_id}']"))
        .await;
    agent
        .wait_for_url(&format!("/console/cases/{case_id}"))
        .await;
    agent
        .type_into(
            "#close input[name=reason]",
            "refund settled; customer told when cards show it",
        )
        .await;
    let reply =
        "Your refund was completed on 4 December; card refunds take 5 to 10 business days to show.";
    agent.type_into("#close-reply", reply).await;
    agent.click("#close-case").await;
    let status = agent
        .wait_for_attribute("#case-status", "data-status", "closed")
        .await;
    assert_eq!(status, "closed");
    let (content, window) = agent.widths().await;
    assert!(content <= window, "the case page fits 390 px");

    // The customer's open page shows the reply without a reload.
    let shows_reply =
        format!("return document.querySelector('#messages').textContent.includes({reply:?});");
    assert!(
        customer.wait_until(&shows_reply).await,
        "the reply reached the page"
    );
    assert_eq!(app.case(&case_id).await["status"], "closed");
    // A search still finds the closed case, and nothing is in nobody's queue.
    supervisor.goto(&format!("{base}/console/csat")).await;
    assert!(header_search(&supervisor, &ticket).await.contains(&case_id));
    let nobodys = desk::cases::open_in_nobodys_queue(&app.state.db)
        .await
        .unwrap();
    assert!(nobodys.is_empty(), "{nobodys:?}");
    for browser in [customer, supervisor, agent] {
        browser.close().await;
    }
}
