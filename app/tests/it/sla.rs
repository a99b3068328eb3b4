//! Reply clocks (SLA). A waiting customer's clock runs from their oldest
//! unanswered message to the target of the queue the case waits in; the queue shows
//! "first reply" and "next reply" badges, overdue ones marked, and sorts by what is due
//! first across pages; a person's reply stops the clock and the customer's next word
//! starts the next one. Driven in Chromium at a desktop width and at 390 px.

use serde_json::json;

use crate::approving::queue_of_refunds;
use crate::support::browser::{serve, Browser};
use crate::support::TestApp;

/// The customer `customer_id` writes on their ticket through the API.
async fn customer_writes(app: &TestApp, customer_id: &str, ticket_id: &str, text: &str) {
    let token = app.customer_token(customer_id).await;
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/tickets/{ticket_id}/messages"),
            Some(&token),
            Some(json!({ "text": text })),
        )
        .await;
    assert!(status.is_success(), "{status} {body}");
    // The worker reads the new message (the case goes back to the agent, then to the queue).
    app.drain().await;
}

/// The case ids of the queue's rows, top to bottom, and each row's reply badge
/// (`breached: …`, `due: …` or `none`).
async fn queue_rows(browser: &Browser) -> Vec<(String, String)> {
    let script = "return [...document.querySelectorAll('#queue tr[data-case]')].map(r => { \
        const b = r.querySelector('.reply-clock [data-sla]'); \
        return [r.dataset.case, b ? b.dataset.sla + ': ' + b.textContent : 'none']; });";
    let rows = browser.execute(script).await;
    rows.as_array()
        .expect("an array of rows")
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_shows_and_sorts_reply_clocks_and_a_reply_stops_one() {
    let (app, ids) = queue_of_refunds(3).await;
    let (a0, a1, a2) = (ids[0].clone(), ids[1].clone(), ids[2].clone());
    // A person answers the first customer at once; an hour later that customer writes
    // again: their next-reply clock starts then. The other two wait from their tickets.
    app.staff_message(&a0, "We are looking at your two charges now.", false)
        .await;
    app.clock.advance(time::Duration::hours(1));
    let ticket0 = app.case(&a0).await["ticket_id"]
        .as_str()
        .unwrap()
        .to_string();
    customer_writes(&app, "A-0", &ticket0, "Any news about my refund?").await;
    // Four and a half hours after the tickets: past the agents' 4-hour target for the
    // two unanswered ones, half an hour before it for the next reply.
    app.clock.advance(time::Duration::minutes(210));

    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    browser.set_window_size(1280, 800).await;
    browser.console_login(&base, "agent@test.example").await;
    browser
        .goto(&format!("{base}/console?status=needs_me&sort=due"))
        .await;
    let rows = queue_rows(&browser).await;
    assert_eq!(
        rows,
        vec![
            (a1.clone(), "breached: First reply overdue by 30 min".into()),
            (a2.clone(), "breached: First reply overdue by 30 min".into()),
            (a0.clone(), "due: Next reply due in 30 min".into()),
        ]
    );
    // Oldest first is still the default order.
    browser
        .goto(&format!("{base}/console?status=needs_me"))
        .await;
    let oldest: Vec<String> = queue_rows(&browser)
        .await
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(oldest, vec![a0.clone(), a1.clone(), a2.clone()]);
    // The order is chosen in the filter form, as a person would.
    browser
        .execute("document.querySelector('#queue-filter select[name=sort]').value = 'due';")
        .await;
    browser.click("#filter").await;
    browser.wait_for_url("sort=due").await;
    assert_eq!(queue_rows(&browser).await[0].0, a1);

    // One row a page: the next-page link walks the same order.
    browser
        .goto(&format!(
            "{base}/console?status=needs_me&sort=due&per_page=1"
        ))
        .await;
    let mut walked = Vec::new();
    loop {
        walked.extend(queue_rows(&browser).await.into_iter().map(|r| r.0));
        if browser.find("#next-page").await.is_none() {
            break;
        }
        let href = browser.attribute("#next-page", "href").await.unwrap();
        browser.goto(&format!("{base}{href}")).await;
    }
    assert_eq!(walked, vec![a1.clone(), a2.clone(), a0.clone()]);

    // At a phone's width the overdue case says so on its page, and the agent's reply
    // stops its clock: it sorts after every running clock.
    browser.set_window_size(390, 844).await;
    browser
        .goto(&format!("{base}/console/cases/{a1}?tab=needs_me"))
        .await;
    assert_eq!(
        browser.text("#reply-clock").await,
        "First reply overdue by 30 min"
    );
    browser
        .type_into("#reply-text", "Sorry for the wait: your refund is next.")
        .await;
    browser.click("#send-reply").await;
    // The page after the reply (its URL is the one the form was on: wait for the reply
    // itself, then look at the clock).
    assert!(
        browser
            .wait_until(
                "return document.readyState === 'complete' \
                 && document.body.innerText.includes('your refund is next') \
                 && !document.querySelector('#reply-clock')"
            )
            .await,
        "the reply is shown and the clock is gone: {}",
        browser.text("body").await
    );
    browser
        .goto(&format!("{base}/console?status=needs_me&sort=due"))
        .await;
    let rows = queue_rows(&browser).await;
    assert_eq!(rows[0].0, a2);
    assert_eq!(rows[1].0, a0);
    assert_eq!(rows[2], (a1.clone(), "none".into()));
    // The customer writes again: the next-reply clock runs from that message.
    let ticket1 = app.case(&a1).await["ticket_id"]
        .as_str()
        .unwrap()
        .to_string();
    customer_writes(&app, "A-1", &ticket1, "Thanks, and when will it arrive?").await;
    browser
        .goto(&format!("{base}/console/cases/{a1}?tab=needs_me"))
        .await;
    assert_eq!(browser.text("#reply-clock").await, "Next reply due in 4 h");
    browser.close().await;
}
