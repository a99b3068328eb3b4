//! A desk a team can approve in. Ten queued refunds approved in Chromium with
//! at most two actions (clicks and key presses) each, counted; shortcuts that never fire
//! while typing; the two-column case page at 1280×800 with Approve on screen and one
//! column at 390 px; a rejection and a close that send the reviewer's own words in one
//! submit, signed with their name; a verdict that came too late explained in words;
//! saved replies with variables, refused when a variable is unknown, filled per case,
//! edited; a reply still holding `{name}` never sent.
//!
//! Long because each journey needs its queue of refunds built first (a world of its own
//! on the real payments mock, investigated by the real worker).

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::browser::screenshot_dir;
use crate::conversation::{console_get, console_post};
use crate::support::browser::{serve, Browser};
use crate::support::{app_on, start_mock, test_database_url, TestApp};

/// `n` customers in the US, each charged twice (49.00 USD) for one annual plan: a
/// duplicate charge an agent may refund (RP-004).
fn duplicate_charge_world(n: usize) -> String {
    let (mut customers, mut orders, mut charges) = (vec![], vec![], vec![]);
    for i in 0..n {
        customers.push(
            json!({"id": format!("A-{i}"), "name": format!("Avery{i} Stone"),
            "email": format!("avery{i}@example.test"), "region": "US"}),
        );
        orders.push(
            json!({"id": format!("O-A{i}"), "customer_id": format!("A-{i}"),
            "product": "annual_plan", "amount": "49.00", "currency": "USD",
            "created_at": "2026-11-20T09:00:00Z"}),
        );
        for (suffix, at) in [("a", "2026-11-20T09:00:05Z"), ("b", "2026-11-20T09:01:10Z")] {
            charges.push(
                json!({"id": format!("ch_a{i}{suffix}"), "order_id": format!("O-A{i}"),
                "customer_id": format!("A-{i}"), "amount": "49.00", "currency": "USD",
                "captured": true, "status": "succeeded", "disputed": false, "created_at": at,
                "payment_method": "pm_card_visa_4242", "amount_refunded": "0.00"}),
            );
        }
    }
    json!({"customers": customers, "orders": orders, "charges": charges, "refunds": []}).to_string()
}

/// An app whose queue holds `n` refunds awaiting an agent's approval, a second apart;
/// returns it with the cases' ids, oldest first.
pub(crate) async fn queue_of_refunds(n: usize) -> (TestApp, Vec<String>) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mock = start_mock(dir.path()).await;
    let world = duplicate_charge_world(n);
    desk::world::load_into_provider(&mock.base_url(), &world)
        .await
        .expect("world loads into the mock");
    let url = test_database_url(dir.path()).await;
    let model = std::sync::Arc::new(desk::agent::investigator::Investigator);
    let app = app_on(dir, mock, url, model, |_| {}).await;
    let parsed = desk::world::World::parse(&world).expect("the world parses");
    parsed.load_into(&app.state.db).await.expect("world loads");
    let mut ids = Vec::new();
    for i in 0..n {
        let ticket = app
            .post_ticket(&format!("A-{i}"), "I was charged twice for my annual plan")
            .await;
        ids.push(ticket["case"]["id"].as_str().unwrap().to_string());
        app.clock.advance(time::Duration::seconds(1));
    }
    app.drain().await;
    for id in &ids {
        let case = app.case(id).await;
        assert_eq!(case["status"], "awaiting_approval", "{case:#}");
        assert_eq!(case["required_role"], "agent", "{case:#}");
    }
    (app, ids)
}

/// Whether `css` lies wholly inside the window: seen without scrolling.
async fn on_screen(browser: &Browser, css: &str) -> bool {
    let script = format!(
        "const e = document.querySelector({css:?}); if (!e) return false; \
         const r = e.getBoundingClientRect(); \
         return r.width > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;"
    );
    browser.execute(&script).await.as_bool().unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_approves_ten_queued_refunds_with_at_most_two_actions_each() {
    let (app, ids) = queue_of_refunds(10).await;
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    let shots = screenshot_dir();

    // At 390 px the case page is one column and never scrolls sideways.
    browser.set_window_size(390, 844).await;
    browser.console_login(&base, "agent@test.example").await;
    browser
        .screenshot(&shots.join("approving-queue-phone.png"))
        .await;
    browser
        .goto(&format!("{base}/console/cases/{}?tab=needs_me", ids[0]))
        .await;
    let (scroll, inner) = browser.widths().await;
    assert!(scroll <= inner, "one column at 390 px: {scroll} > {inner}");
    let order = browser
        .execute(
            "const top = s => document.querySelector(s).getBoundingClientRect().top; \
             return [top('#thread') < top('#decide'), top('#decide') < top('#timeline')];",
        )
        .await;
    assert_eq!(
        order,
        json!([true, true]),
        "on a phone the decision follows the conversation"
    );
    browser
        .screenshot(&shots.join("approving-case-phone.png"))
        .await;

    // At 1280×800 the queue counts its tabs; the agent starts from it.
    browser.set_window_size(1280, 800).await;
    browser.goto(&format!("{base}/console")).await;
    let count = browser
        .attribute("#queue-tabs a[data-tab=needs_me] .count", "data-count")
        .await;
    assert_eq!(count.as_deref(), Some("10"), "the tab says how many wait");
    browser
        .screenshot(&shots.join("approving-queue-desktop.png"))
        .await;

    let mut actions_per_refund = Vec::new();
    // One click opens the oldest case of the queue (the default tab)...
    browser.click("#queue tr[data-case] a").await;
    let mut actions = 1;
    for (i, id) in ids.iter().enumerate() {
        let at = browser.wait_for_url(id).await;
        assert!(at.contains(id.as_str()), "case {i} is shown: {at}");
        browser.wait_until_loaded().await;
        if i == 0 {
            assert!(
                on_screen(&browser, "#approve-next").await,
                "Approve is visible without scrolling at 1280×800"
            );
            let columns = browser
                .execute("return getComputedStyle(document.querySelector('.case-grid')).gridTemplateColumns.split(' ').length;")
                .await;
            assert_eq!(columns, json!(2), "two columns at a desktop width");
            browser
                .screenshot(&shots.join("approving-case-desktop.png"))
                .await;
        }
        // ...and one key approves it and goes on to the next.
        browser.press_key("a").await;
        actions += 1;
        actions_per_refund.push(actions);
        actions = 0;
        // After the last, the (now empty) queue tab.
        let next = ids
            .get(i + 1)
            .cloned()
            .unwrap_or_else(|| "/console?status=".into());
        browser.wait_for_url(&next).await;
    }
    for id in &ids {
        assert_eq!(app.case(id).await["status"], "approved", "{id}");
    }
    println!("actions per refund: {actions_per_refund:?}");
    assert!(
        actions_per_refund.iter().all(|n| *n <= 2),
        "at most two actions per refund: {actions_per_refund:?}"
    );
    assert_eq!(actions_per_refund.iter().sum::<i32>(), 11);
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shortcuts_never_fire_while_typing_in_a_field_and_move_through_the_queue_otherwise() {
    let (app, ids) = queue_of_refunds(2).await;
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    browser.set_window_size(1280, 800).await;
    browser.console_login(&base, "agent@test.example").await;
    let first = format!("{base}/console/cases/{}?tab=needs_me", ids[0]);
    browser.goto(&first).await;
    browser.wait_until_loaded().await;

    browser.click("#reply-text").await;
    for key in ["a", "j", "n", "?"] {
        browser.press_key(key).await;
    }
    let typed = browser
        .execute("return document.querySelector('#reply-text').value;")
        .await;
    assert_eq!(typed, json!("ajn?"), "the keys went into the text");
    assert_eq!(browser.url().await, first, "no shortcut moved the page");
    assert_eq!(
        browser.attribute("#shortcuts", "hidden").await.as_deref(),
        Some("true"),
        "the help stays closed"
    );
    assert_eq!(app.case(&ids[0]).await["status"], "awaiting_approval");

    // Outside a field: `?` opens the help, `j` goes to the next case, `k` back.
    browser
        .execute("document.activeElement.blur(); document.querySelector('#reply-text').value = ''; return true;")
        .await;
    browser.press_key("?").await;
    assert_eq!(browser.attribute("#shortcuts", "hidden").await, None);
    browser.press_key("Escape").await;
    browser.press_key("j").await;
    assert!(browser.wait_for_url(&ids[1]).await.contains(&ids[1]));
    browser.wait_until_loaded().await;
    browser.press_key("k").await;
    assert!(browser.wait_for_url(&ids[0]).await.contains(&ids[0]));
    assert_eq!(app.case(&ids[0]).await["status"], "awaiting_approval");
    assert_eq!(app.case(&ids[1]).await["status"], "awaiting_approval");
    browser.close().await;
}

/// The customer's view of their ticket, through their own token.
async fn customer_ticket(app: &TestApp, customer_id: &str, ticket_id: &str) -> Value {
    let token = app.customer_token(customer_id).await;
    let path = format!("/api/v1/tickets/{ticket_id}");
    let (status, ticket) = app.request("GET", &path, Some(&token), None).await;
    assert_eq!(status, StatusCode::OK, "{ticket}");
    ticket
}

async fn name_the_agent(app: &TestApp, name: &str) {
    sqlx::query("UPDATE staff SET display_name = $1 WHERE email = 'agent@test.example'")
        .bind(name)
        .execute(app.state.db.pool())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_rejection_and_a_close_send_the_reviewers_own_words_in_one_submit_signed_with_their_name()
{
    let (app, ids) = queue_of_refunds(2).await;
    name_the_agent(&app, "Mia Chen").await;
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let case = app.case(&ids[0]).await;
    let fingerprint = case["fingerprint"].as_str().unwrap();
    let (_, page) = console_get(&app, &cookie, &format!("/console/cases/{}", ids[0])).await;
    let standard = "After review by our team, this refund was not approved.";
    assert!(
        page.contains("id=\"reject-reply\">") && page.contains(standard),
        "the rejection's message starts from the standard one, to edit"
    );

    let words = "Hello Avery, the second charge was a pre-authorisation and has dropped off.";
    let form = format!(
        "csrf={csrf}&fingerprint={fingerprint}&tab=needs_me&reason=hold+not+charge&reply={}&then=next",
        urlencoding(words)
    );
    let path = format!("/console/cases/{}/reject", ids[0]);
    let (status, _) = console_post(&app, &cookie, &path, &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(app.case(&ids[0]).await["status"], "rejected");
    let ticket_id = case["ticket_id"].as_str().unwrap();
    let ticket = customer_ticket(&app, "A-0", ticket_id).await;
    let last = ticket["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["body"], words, "one submit: the reviewer's own words");
    assert_eq!(last["author"], "staff", "{last}");
    assert_eq!(last["author_label"], "Mia Chen", "signed by the person");
    let (_, page) = console_get(&app, &cookie, &format!("/console/cases/{}", ids[0])).await;
    assert!(
        page.contains("<span class=\"author\">Mia Chen</span>"),
        "{page}"
    );
    assert!(!page.contains(standard) || !page.contains("class=\"author\">assistant<"));

    // Close (no money) with a reply: likewise one submit, likewise signed.
    let words = "We have closed this: the duplicate was refunded by your bank.";
    let form = format!(
        "csrf={csrf}&reason=bank+refunded&reply={}",
        urlencoding(words)
    );
    let path = format!("/console/cases/{}/close", ids[1]);
    let (status, _) = console_post(&app, &cookie, &path, &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let ticket_id = app.case(&ids[1]).await["ticket_id"]
        .as_str()
        .unwrap()
        .to_string();
    let ticket = customer_ticket(&app, "A-1", &ticket_id).await;
    let last = ticket["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["body"], words);
    assert_eq!(last["author_label"], "Mia Chen");
}

#[tokio::test]
async fn an_approval_after_someone_elses_is_explained_in_words_next_to_the_buttons() {
    let (app, ids) = queue_of_refunds(1).await;
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let case = app.case(&ids[0]).await;
    let fingerprint = case["fingerprint"].as_str().unwrap();
    let (status, body) = app
        .approve(&app.supervisor_token, &ids[0], fingerprint)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let form = format!("csrf={csrf}&fingerprint={fingerprint}&note=checked+twice&then=next");
    let path = format!("/console/cases/{}/approve", ids[0]);
    let (status, page) = console_post(&app, &cookie, &path, &form).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let decide = page.split("id=\"decide\"").nth(1).unwrap_or_default();
    assert!(
        decide.contains("id=\"action-error\"")
            && decide.contains("Nothing was done: supervisor@test.example approved this case"),
        "the stale verdict is explained next to the buttons: {page}"
    );
    // When, in words that name their zone (a sentence no script rewrites).
    assert!(decide.contains(" UTC — before you did."), "{decide}");
    assert!(
        !page.contains("not awaiting approval"),
        "no raw state: {page}"
    );
    assert!(
        !page.contains("data-live-url"),
        "the page does not refresh the explanation away"
    );
}

#[tokio::test]
async fn saved_replies_refuse_unknown_variables_inline_fill_themselves_for_the_case_and_edit() {
    let (app, ids) = queue_of_refunds(1).await;
    let (cookie, csrf) = app.staff_session("supervisor@test.example").await;
    let add = |text: &str| {
        format!(
            "csrf={csrf}&name=Refund+sent&language=en&text={}",
            urlencoding(text)
        )
    };
    for (typed, why) in [
        ("Hi {name}, done.", "unknown variable {name}"),
        ("Hi {first_name, done.", "is never closed"),
    ] {
        let (status, page) = console_post(&app, &cookie, "/console/replies", &add(typed)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{typed}");
        let form = page.split("id=\"reply-form\"").nth(1).unwrap_or_default();
        assert!(
            form.contains("id=\"action-error\"") && form.contains(why),
            "refused next to the form: {page}"
        );
        assert!(
            form.contains(&escaped(typed)),
            "what was typed is kept: {form}"
        );
    }
    let (status, body) = app
        .request(
            "POST",
            "/api/v1/saved-replies",
            Some(&app.supervisor_token),
            Some(json!({"name": "x", "language": "en", "text": "Hi {nme}"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "invalid_template");

    let template = "Hi {first_name}, {refund_amount} for {order_id}: {ticket_link}";
    let (status, _) = console_post(&app, &cookie, "/console/replies", &add(template)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let reply_id: String = sqlx::query_scalar("SELECT id FROM saved_replies")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap();

    let case = app.case(&ids[0]).await;
    let ticket_id = case["ticket_id"].as_str().unwrap();
    let path = format!("/console/cases/{}?saved={reply_id}&into=close", ids[0]);
    let (_, page) = console_get(&app, &cookie, &path).await;
    let filled = format!("Hi Avery0, $49.00 for O-A0: http://127.0.0.1:8080/tickets/{ticket_id}");
    assert!(
        page.contains(&format!(
            "id=\"close-reply\">{}</textarea>",
            escaped(&filled)
        )),
        "filled for the case, in the form it was chosen for: {page}"
    );
    for form in [
        "saved-replies\"",
        "saved-replies-reject\"",
        "saved-replies-close\"",
    ] {
        assert!(page.contains(&format!("id=\"{form}")), "offered in {form}");
    }

    // Edited: the stored text changes, checked again.
    let edit = format!("/console/replies/{reply_id}");
    let (status, _) = console_post(&app, &cookie, &edit, &add("Hello {first_name}.")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, page) = console_post(&app, &cookie, &edit, &add("Hello {firstname}.")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    let (_, list) = console_get(&app, &cookie, "/console/replies").await;
    assert!(
        list.contains("class=\"reply-text\">Hello {first_name}.</td>")
            && !list.contains("for {order_id}"),
        "{list}"
    );

    // A reply still holding a `{name}` is never sent; what was typed is kept.
    let typed = "Hi {name}, it is done.";
    let form = format!("csrf={csrf}&internal=false&text={}", urlencoding(typed));
    let path = format!("/console/cases/{}/messages", ids[0]);
    let (status, page) = console_post(&app, &cookie, &path, &form).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(page.contains("still holds {name}"), "{page}");
    assert!(page.contains(&format!("id=\"reply-text\">{}</textarea>", escaped(typed))));
    let ticket = customer_ticket(&app, "A-0", ticket_id).await;
    assert!(!ticket.to_string().contains("{name}"), "{ticket}");
}

/// `text` as a form field's value (`application/x-www-form-urlencoded`).
fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `text` as askama writes it into HTML.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

/// A console form post as `cookie`'s staff member; returns the status and `Location`.
async fn post_for_location(
    app: &TestApp,
    cookie: &str,
    path: &str,
    form: &str,
) -> (StatusCode, String) {
    let request = axum::http::Request::post(path)
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(form.to_string()))
        .unwrap();
    let response = app.response(request).await;
    let location = response
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (response.status(), location)
}

#[tokio::test]
async fn a_supervisor_assigns_and_closes_ticked_cases_in_bulk_and_no_refund_is_closed_that_way() {
    let (app, ids) = queue_of_refunds(3).await;
    let (cookie, csrf) = app.staff_session("supervisor@test.example").await;
    let ticked = |ids: &[&String]| {
        ids.iter()
            .map(|id| format!("&case={id}"))
            .collect::<String>()
    };
    let form = format!(
        "csrf={csrf}&status=needs_me&action=assign&email=agent%40test.example{}",
        ticked(&[&ids[0], &ids[1]])
    );
    let (status, location) = post_for_location(&app, &cookie, "/console/bulk", &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(
        location.ends_with("status=needs_me&bulk=assigned&n=2&skipped=0"),
        "{location}"
    );
    for id in &ids[..2] {
        assert_eq!(app.case(id).await["assignee"], "agent@test.example");
    }
    assert!(app.case(&ids[2]).await["assignee"].is_null());

    // Close (no money): the rejected case closes; the refund awaiting approval does not.
    let fingerprint = app.case(&ids[2]).await["fingerprint"].clone();
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/cases/{}/reject", ids[2]),
            Some(&app.supervisor_token),
            Some(json!({"fingerprint": fingerprint, "reason": "paid by bank"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let form = format!(
        "csrf={csrf}&status=all&action=close&reason=handled+by+phone&reply={}{}",
        urlencoding("We settled this by phone."),
        ticked(&[&ids[1], &ids[2]])
    );
    let (status, location) = post_for_location(&app, &cookie, "/console/bulk", &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(
        location.ends_with("bulk=closed&n=1&skipped=1"),
        "{location}"
    );
    assert_eq!(app.case(&ids[2]).await["status"], "closed");
    assert_eq!(app.case(&ids[1]).await["status"], "awaiting_approval");
    let (_, queue) = console_get(&app, &cookie, &location).await;
    assert!(
        queue.contains("Closed 1 case(s). 1 left as they were"),
        "{queue}"
    );

    // A forged bulk form without the session's CSRF token changes nothing.
    let form = format!("csrf=forged&action=assign{}", ticked(&[&ids[2]]));
    let (status, _) = post_for_location(&app, &cookie, "/console/bulk", &form).await;
    assert_ne!(status, StatusCode::SEE_OTHER);
    assert!(app.case(&ids[2]).await["assignee"].is_null());
}

#[tokio::test]
async fn the_api_sends_no_reply_or_closing_words_still_holding_a_brace_word_but_a_note_may() {
    let (app, ids) = queue_of_refunds(1).await;
    let path = format!("/api/v1/cases/{}/messages", ids[0]);
    let token = Some(app.agent_token.as_str());
    let reply = json!({"text": "Hi {first_name}, done.", "internal": false});
    let (status, body) = app.request("POST", &path, token, Some(reply)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "unfilled_variable");
    let note = json!({"text": "template said {first_name}", "internal": true});
    let (status, body) = app.request("POST", &path, token, Some(note)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let close = json!({"reason": "done", "reply": "Bye {name}"});
    let path = format!("/api/v1/cases/{}/close", ids[0]);
    let (status, body) = app.request("POST", &path, token, Some(close)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(app.case(&ids[0]).await["status"], "awaiting_approval");
}

/// docs/spec/roles.md, "A person requested", in Chromium at a desktop and a phone width: the
/// customer asks for a person while their refund awaits approval; the queue row and the
/// case say so; `a` opens the reply instead of approving; the written reply goes out with
/// the approval, signed by the agent. Seen failing before: no mark on the row or the case,
/// and `a` approved the refund without a word to the customer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_who_asked_for_a_person_is_written_to_before_the_refund_is_approved() {
    let shots = screenshot_dir();
    for (width, height, name) in [(1280, 800, "desktop"), (390, 844, "phone")] {
        let (app, ids) = queue_of_refunds(1).await;
        let case = app.case(&ids[0]).await;
        let ticket = case["ticket_id"].as_str().unwrap().to_string();
        let token = app.customer_token("A-0").await;
        let (status, body) = app
            .request(
                "POST",
                &format!("/api/v1/tickets/{ticket}/messages"),
                Some(&token),
                Some(json!({"text": "Can I speak to a human please?"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        app.drain().await;
        assert_eq!(app.case(&ids[0]).await["status"], "awaiting_approval");

        let base = serve(app.router.clone()).await;
        let browser = Browser::start().await;
        browser.set_window_size(width, height).await;
        browser.console_login(&base, "agent@test.example").await;
        let row = "#queue tr[data-case] [data-person-requested]";
        assert!(browser.find(row).await.is_some(), "{name}: the row says so");
        let page = format!("{base}/console/cases/{}?tab=needs_me", ids[0]);
        browser.goto(&page).await;
        browser.wait_until_loaded().await;
        assert!(browser.find("#person-requested").await.is_some(), "{name}");
        let (scroll, inner) = browser.widths().await;
        assert!(scroll <= inner, "{name}: no sideways scroll");
        browser
            .screenshot(&shots.join(format!("person-requested-{name}.png")))
            .await;
        // `a` asks for the reply first: nothing is approved, the reply box has the focus.
        browser.press_key("a").await;
        let focused = browser
            .execute("return document.activeElement && document.activeElement.id;")
            .await;
        assert_eq!(focused, json!("approve-reply"), "{name}");
        assert_eq!(browser.url().await, page, "{name}: still on the case");
        assert_eq!(app.case(&ids[0]).await["status"], "awaiting_approval");
        let words = "Hello, this is Avery's agent: I checked it myself, the refund is approved.";
        browser.type_into("#approve-reply", words).await;
        browser.click("#approve-next").await;
        // The only case of the view: its approval lands on the emptied queue (the case
        // page's own address holds "/console" too, so that is no sign of having left it).
        let landed = browser.wait_for_url("done=approved").await;
        assert!(landed.contains("done=approved"), "{name}: {landed}");
        browser.wait_until_loaded().await;
        assert_eq!(app.case(&ids[0]).await["status"], "approved", "{name}");
        let seen = customer_ticket(&app, "A-0", &ticket).await;
        let said = seen["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["author"] == "staff" && m["body"] == words);
        assert!(said, "{name}: {seen:#}");
        browser.close().await;
    }
}

/// On a phone the approve buttons stay on screen (a bar at the top) wherever the reviewer is on the case page
/// — at the top, and scrolled to the bottom — and the page never scrolls sideways. Seen
/// failing before: approving meant scrolling 1.4 screens down a 3,653 px page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_phone_the_approve_bar_stays_on_screen_while_the_case_is_read() {
    let (app, ids) = queue_of_refunds(1).await;
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    browser.set_window_size(390, 844).await;
    browser.console_login(&base, "agent@test.example").await;
    browser
        .goto(&format!("{base}/console/cases/{}?tab=needs_me", ids[0]))
        .await;
    browser.wait_until_loaded().await;
    for (place, scroll) in [("top", "0"), ("bottom", "document.body.scrollHeight")] {
        browser
            .execute(&format!("window.scrollTo(0, {scroll}); return true;"))
            .await;
        assert!(
            on_screen(&browser, "#approve-next").await,
            "Approve & next on screen at the {place}"
        );
        let (scroll, inner) = browser.widths().await;
        assert!(scroll <= inner, "no sideways scroll: {scroll} > {inner}");
    }
    browser
        .screenshot(&screenshot_dir().join("approve-bar-phone.png"))
        .await;
    browser.click("#approve-next").await;
    // The case page's address holds "/console" too: wait for the emptied queue.
    let landed = browser.wait_for_url("done=approved").await;
    assert!(landed.contains("done=approved"), "{landed}");
    assert_eq!(app.case(&ids[0]).await["status"], "approved");
    browser.close().await;
}
