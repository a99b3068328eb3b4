//! Issue 38, "Done when": the team's tools driven in Chromium as a person would — clicks
//! and keys, part at 1280×800 and part at 390×844 on a phone, where no page may scroll
//! sideways. Bulk assign and bulk close (no money) on the queue; saved replies that
//! fill themselves, refused inline when a variable is unknown, edited, then picked in a
//! case's reply, reject and close forms; the one satisfaction question on a resolved
//! ticket and its answer in the console's report.
//!
//! Each journey then checks what the records hold through the API. The forms' refusals
//! and access rules are tested over HTTP in `approving`, `csat` and `conversation`; this
//! module does not repeat them.

use serde_json::Value;

use crate::approving::queue_of_refunds;
use crate::support::browser::{serve, Browser};
use crate::support::TestApp;

/// A desktop window and a phone's (issue 38: "at desktop and at 390 px").
const DESKTOP: (u32, u32) = (1280, 800);
const PHONE: (u32, u32) = (390, 844);

/// Fails, naming the page, when the page scrolls sideways at the window's width.
pub(crate) async fn assert_fits(browser: &Browser, what: &str) {
    let (scroll, inner) = browser.widths().await;
    assert!(
        inner > 0 && scroll <= inner,
        "{what} scrolls sideways at {inner} px: scrollWidth {scroll}"
    );
}

/// Waits (up to 10 s) until the element `css` exists and its text holds `needle`;
/// returns the last text seen.
pub(crate) async fn text_with(browser: &Browser, css: &str, needle: &str) -> String {
    let mut seen = String::new();
    for _ in 0..100 {
        if browser.find(css).await.is_some() {
            seen = browser.text(css).await;
            if seen.contains(needle) {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    seen
}

/// The customer's ticket, through their own API token.
async fn ticket_of(app: &TestApp, customer: &str, ticket_id: &str) -> Value {
    let (status, ticket) = app.customer_ticket(customer, ticket_id).await;
    assert!(status.is_success(), "{ticket}");
    ticket
}

/// The bodies of the messages the customer can read on `ticket`.
fn bodies(ticket: &Value) -> Vec<String> {
    ticket["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["body"].as_str().map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_ticks_cases_assigns_them_to_an_agent_then_closes_those_that_move_no_money() {
    let (app, ids) = queue_of_refunds(3).await;
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;

    // At a desk: tick the two oldest, pick the agent from the list, apply.
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser
        .console_login(&base, "supervisor@test.example")
        .await;
    browser.click("#queue-tabs a[data-tab=all]").await;
    browser.wait_for_url("status=all").await;
    browser.wait_until_loaded().await;
    for id in &ids[..2] {
        browser
            .click(&format!("#bulk input[name=case][value='{id}']"))
            .await;
    }
    browser
        .click("#bulk-actions select[name=email] option[value='agent@test.example']")
        .await;
    browser.click("#bulk-submit").await;
    browser.wait_for_url("bulk=assigned").await;
    let notice = text_with(&browser, "#notice", "2").await;
    assert!(notice.contains('2'), "the queue says how many: {notice}");
    for (id, expected) in [(&ids[0], "agent"), (&ids[1], "agent"), (&ids[2], "—")] {
        let cell = browser
            .text(&format!("#queue tr[data-case='{id}'] .assignee"))
            .await;
        assert!(cell.contains(expected), "{id}: {cell}");
    }
    for id in &ids[..2] {
        assert_eq!(app.case(id).await["assignee"], "agent@test.example");
    }
    assert!(app.case(&ids[2]).await["assignee"].is_null());

    // The third refund is turned down elsewhere; its case now moves no money.
    let fingerprint = app.case(&ids[2]).await["fingerprint"].clone();
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{}/reject", ids[2]),
            Some(&app.supervisor_token),
            Some(serde_json::json!({"fingerprint": fingerprint, "reason": "paid by bank"})),
        )
        .await;
    assert!(status.is_success(), "{body}");

    // On a phone: tick a refund awaiting approval and the rejected case, close both.
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser.goto(&format!("{base}/console?status=all")).await;
    browser.wait_until_loaded().await;
    assert_fits(&browser, "the queue").await;
    for id in [&ids[1], &ids[2]] {
        browser
            .click(&format!("#bulk input[name=case][value='{id}']"))
            .await;
    }
    browser
        .click("#bulk-actions input[name=action][value=close]")
        .await;
    browser
        .type_into("#bulk-actions input[name=reason]", "handled by phone")
        .await;
    let reply = "We settled this with you by phone.";
    browser
        .type_into("#bulk-actions input[name=reply]", reply)
        .await;
    assert_fits(&browser, "the queue with the bulk form filled").await;
    browser.click("#bulk-submit").await;
    browser.wait_for_url("bulk=closed").await;
    let notice = text_with(&browser, "#notice", "left as they were").await;
    assert!(
        notice.contains("Closed 1 case(s). 1 left as they were")
            && notice.contains("awaiting approval is decided on its own page"),
        "the notice says the refund was left: {notice}"
    );
    assert_fits(&browser, "the queue with the notice").await;
    browser.close().await;

    assert_eq!(app.case(&ids[2]).await["status"], "closed");
    let left = app.case(&ids[1]).await;
    assert_eq!(
        left["status"], "awaiting_approval",
        "no refund closed in bulk"
    );
    assert_eq!(
        left["assignee"], "agent@test.example",
        "and still the agent's"
    );
    let closed = app.case(&ids[2]).await;
    let ticket = ticket_of(&app, "A-2", closed["ticket_id"].as_str().unwrap()).await;
    assert_eq!(
        bodies(&ticket).last().map(String::as_str),
        Some(reply),
        "the closed case's customer has the reply"
    );
    let ticket = ticket_of(&app, "A-1", left["ticket_id"].as_str().unwrap()).await;
    assert!(
        !bodies(&ticket).iter().any(|b| b == reply),
        "the customer whose refund waits heard nothing"
    );
}
