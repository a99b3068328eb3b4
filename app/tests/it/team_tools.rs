//! "Done when": the team's tools driven in Chromium as a person would — clicks
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

/// A desktop window and a phone's ("at desktop and at 390 px").
const DESKTOP: (u32, u32) = (1280, 800);
const PHONE: (u32, u32) = (390, 844);

/// Replaces what a field holds with `text` as a person does at the keyboard: select all
/// (Control+A), then type over it. `\u{E009}` is WebDriver's Control key, `\u{E000}`
/// releases every key held.
pub(crate) async fn retype(browser: &Browser, css: &str, text: &str) {
    browser.click(css).await;
    browser
        .type_into(css, &format!("\u{E009}a\u{E000}{text}"))
        .await;
}

/// Fails, naming the page, when the page scrolls sideways at the window's width.
pub(crate) async fn assert_fits(browser: &Browser, what: &str) {
    let (scroll, inner) = browser.widths().await;
    assert!(
        inner > 0 && scroll <= inner,
        "{what} scrolls sideways at {inner} px: scrollWidth {scroll}"
    );
}

/// The value of the field `css` as the page holds it now.
pub(crate) async fn value_of(browser: &Browser, css: &str) -> String {
    let script = format!("return document.querySelector({css:?}).value;");
    browser
        .execute(&script)
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Waits (up to 10 s) until the element `css` exists and its text holds `needle`;
/// returns the last text seen.
pub(crate) async fn text_with(browser: &Browser, css: &str, needle: &str) -> String {
    // Found and read in one script: a page replaced between a find and a read would
    // leave the read without its element.
    let script =
        format!("const e = document.querySelector({css:?}); return e ? e.innerText : null;");
    let mut seen = String::new();
    for _ in 0..100 {
        if let Some(text) = browser.execute(&script).await.as_str() {
            seen = text.to_string();
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

/// Li Wei (C-100 of the demo world) was charged twice, CN¥198.00 each, for one annual
/// plan: a refund the supervisor may decide.
const DUPLICATE: &str = "I was charged twice for my annual plan";

/// Picks the saved reply named `name` in the picker `choice` (a select) and presses its
/// "Use" button `use_button`.
async fn use_saved_reply(browser: &Browser, choice: &str, name: &str, use_button: &str) {
    let script = format!(
        "return [...document.querySelectorAll('{choice} option')].find(o => o.textContent.startsWith({name:?}))?.value ?? '';"
    );
    let id = browser.execute(&script).await;
    let id = id.as_str().unwrap_or_default();
    assert!(!id.is_empty(), "{name} is offered in {choice}");
    browser
        .click(&format!("{choice} option[value='{id}']"))
        .await;
    browser.click(use_button).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_reply_refused_for_an_unknown_variable_is_fixed_edited_and_fills_itself_in_three_forms(
) {
    let app = crate::support::spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-100", DUPLICATE).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let case_id = case["id"].as_str().unwrap().to_string();
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;

    // At a desk the supervisor writes a reply with a typo in a variable: refused beside
    // the form, everything typed kept.
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser
        .console_login(&base, "supervisor@test.example")
        .await;
    browser.click("nav a[href='/console/replies']").await;
    browser.wait_for_url("/console/replies").await;
    browser.wait_until_loaded().await;
    browser
        .type_into("#reply-form input[name=name]", "Refund note")
        .await;
    browser
        .click("#reply-form select[name=language] option[value=en]")
        .await;
    let typo = "Hi {nmae}, we refund {refund_amount}.";
    browser.type_into("#saved-reply-text", typo).await;
    browser.click("#add-reply-submit").await;
    let error = text_with(&browser, "#reply-form #action-error", "{nmae}").await;
    assert!(error.contains("unknown variable {nmae}"), "{error}");
    assert_eq!(value_of(&browser, "#saved-reply-text").await, typo);
    assert_eq!(
        value_of(&browser, "#reply-form input[name=name]").await,
        "Refund note"
    );
    assert_eq!(
        value_of(&browser, "#reply-form select[name=language]").await,
        "en",
        "the language picked is kept too"
    );

    retype(
        &browser,
        "#saved-reply-text",
        "Hi {first_name}, we refund {refund_amount}.",
    )
    .await;
    browser.click("#add-reply-submit").await;
    assert!(text_with(&browser, "#notice", "added")
        .await
        .contains("Saved reply added."));

    // Edited: the form opens with the stored text; the change replaces it.
    browser.click("#saved-replies .edit-reply").await;
    browser.wait_for_url("edit=").await;
    browser.wait_until_loaded().await;
    assert!(browser.text("#add-reply h2").await.contains("Edit"));
    let text = "Hi {first_name}, about your refund of {refund_amount}:";
    retype(&browser, "#saved-reply-text", text).await;
    browser.click("#add-reply-submit").await;
    assert!(text_with(&browser, "#notice", "changed")
        .await
        .contains("Saved reply changed."));
    let listed = browser.text("#saved-replies").await;
    assert!(
        listed.contains(text) && !listed.contains("we refund"),
        "{listed}"
    );
    let (_, stored) = app
        .request(
            "GET",
            "/api/v1/saved-replies?language=en",
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(stored.as_array().map(Vec::len), Some(1), "{stored}");
    assert_eq!(stored[0]["text"], text, "{stored}");

    // On a phone, on the case: the reply form, filled for Li in the ticket's way of
    // writing money; what is typed after it stays.
    browser.set_window_size(PHONE.0, PHONE.1).await;
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    browser.wait_until_loaded().await;
    assert_fits(&browser, "the case page").await;
    let filled = "Hi Li, about your refund of CN¥198.00:";
    use_saved_reply(
        &browser,
        "#use-saved-reply-choice",
        "Refund note",
        "#use-saved-reply",
    )
    .await;
    browser
        .type_into("#reply-text", " we are checking it today.")
        .await;
    let reply = format!("{filled} we are checking it today.");
    assert_eq!(value_of(&browser, "#reply-text").await, reply);
    browser.click("#send-reply").await;
    text_with(&browser, "#thread", "checking it today").await;

    // The rejection: its message starts as the standard one; the saved reply chosen
    // replaces it (it was put in front of it, the two sent glued together).
    browser.click("#reject-details summary").await;
    let standard = browser.text("#preview-reject").await;
    assert_eq!(value_of(&browser, "#reject-reply").await.trim(), standard);
    use_saved_reply(
        &browser,
        "#use-saved-reply-reject-choice",
        "Refund note",
        "#use-saved-reply-reject",
    )
    .await;
    assert_eq!(value_of(&browser, "#reject-reply").await, filled);
    browser
        .type_into("#reject-reply", " your bank reversed the second charge.")
        .await;
    let rejection = format!("{filled} your bank reversed the second charge.");
    assert_eq!(value_of(&browser, "#reject-reply").await, rejection);
    browser
        .type_into("#reject-reason", "bank reversed it")
        .await;
    assert_fits(&browser, "the case page with the rejection open").await;
    browser.click("#reject").await;
    text_with(&browser, "#thread", "reversed the second").await;
    assert_eq!(app.case(&case_id).await["status"], "rejected");

    // The close form: the same reply, filled again.
    browser.wait_for("#close-reply").await;
    use_saved_reply(
        &browser,
        "#use-saved-reply-close-choice",
        "Refund note",
        "#use-saved-reply-close",
    )
    .await;
    browser
        .type_into("#close-reply", " This closes the case.")
        .await;
    let closing = format!("{filled} This closes the case.");
    assert_eq!(value_of(&browser, "#close-reply").await, closing);
    browser
        .type_into("#close input[name=reason]", "settled")
        .await;
    browser.click("#close-case").await;
    text_with(&browser, "#close-reason", "settled").await;
    assert_eq!(app.case(&case_id).await["status"], "closed");

    // Li, on his phone, reads the three messages filled for him.
    let ticket = format!("/tickets/{ticket_id}");
    let link = app.sign_in_link("C-100", &ticket).await;
    browser.sign_in(&base, &link, &ticket).await;
    let messages = text_with(&browser, "#messages", "closes the case").await;
    for sent in [&reply, &rejection, &closing] {
        assert!(messages.contains(sent.as_str()), "{sent} in {messages}");
    }
    assert!(
        !messages.contains('{'),
        "no variable reached him: {messages}"
    );
    assert_fits(&browser, "the customer's ticket page").await;
    browser.close().await;
    let said = bodies(&ticket_of(&app, "C-100", &ticket_id).await);
    for sent in [&reply, &rejection, &closing] {
        assert!(said.contains(sent), "{sent} in {said:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_rates_a_resolved_ticket_on_a_phone_and_the_console_reports_it_per_person_and_reason(
) {
    let app = crate::support::spawn_app().await;
    let (ticket_id, case) = app.refunded_ticket("C-100").await;
    assert_eq!(case["status"], "refund_succeeded");
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;

    // Li, on a phone: the resolved ticket asks once; a rating, a few words, send.
    browser.set_window_size(PHONE.0, PHONE.1).await;
    let ticket = format!("/tickets/{ticket_id}");
    let link = app.sign_in_link("C-100", &ticket).await;
    browser.sign_in(&base, &link, &ticket).await;
    assert_fits(&browser, "the resolved ticket page").await;
    let question = browser.text("#csat-form legend").await;
    assert!(question.contains("1 is very unhappy"), "{question}");
    // The comment box says what it is for: a label a person (and a screen reader) reads.
    let label = browser
        .execute(
            "const t = document.querySelector('#csat-form textarea[name=comment]'); \
             return t.labels.length ? t.labels[0].textContent.trim() : '';",
        )
        .await;
    assert!(
        label
            .as_str()
            .is_some_and(|l| l.contains("Anything to add")),
        "the comment box is labelled: {label}"
    );
    browser
        .click("#csat-form input[name=rating][value='4']")
        .await;
    let comment = "Quick and clear, thank you";
    browser
        .type_into("#csat-form textarea[name=comment]", comment)
        .await;
    browser.click("#csat-send").await;
    let thanks = text_with(&browser, "#csat-thanks", "Thank you").await;
    assert_eq!(thanks, "Thank you for rating us.");
    assert!(browser.find("#csat-form").await.is_none(), "asked once");
    browser.goto(&format!("{base}{ticket}")).await;
    browser.wait_until_loaded().await;
    assert!(
        browser.find("#csat-form").await.is_none() && browser.find("#csat-thanks").await.is_some(),
        "and never again"
    );
    assert_fits(&browser, "the ticket page, thanked").await;

    // At a desk, the agent opens Satisfaction from the console's menu.
    browser.set_window_size(DESKTOP.0, DESKTOP.1).await;
    browser.console_login(&base, "agent@test.example").await;
    browser.click("#console-nav a[href='/console/csat']").await;
    browser.wait_for_url("/console/csat").await;
    browser.wait_until_loaded().await;
    let overall = browser.text("#csat-overall").await;
    assert!(
        overall.contains("1 answers") && overall.contains("mean 4.00") && overall.contains("100%"),
        "{overall}"
    );
    let person = browser.text("#csat-by-person").await;
    assert!(
        person.contains("supervisor@test.example 1 4.00 100%"),
        "credited to who approved: {person}"
    );
    let reason = browser.text("#csat-by-reason").await;
    assert!(reason.contains("duplicate_charge 1 4.00 100%"), "{reason}");
    browser.set_window_size(PHONE.0, PHONE.1).await;
    assert_fits(&browser, "the satisfaction report").await;
    browser.close().await;

    let (_, report) = app
        .request("GET", "/api/v1/reports/csat", Some(&app.agent_token), None)
        .await;
    assert_eq!(report["overall"]["answers"], 1, "{report}");
    assert_eq!(report["overall"]["mean"], "4.00", "{report}");
    let stored: (i64, Option<String>) =
        sqlx::query_as("SELECT rating, comment FROM csat_answers WHERE ticket_id = $1")
            .bind(&ticket_id)
            .fetch_one(app.state.db.reader())
            .await
            .unwrap();
    assert_eq!(stored, (4, Some(comment.to_string())));
}
