//! The customer's ticket page in headless Chromium, as a customer uses it (the
//! customer is heard), each journey at a desktop width and at 390 px: the hand-over to a
//! person appears live when the agent would repeat itself, and the "Talk to a person"
//! button works by a click; the heading is the ticket's subject; money is written as the
//! customer's language writes it; the page says when we usually answer; a declined ticket
//! offers no withdrawal; the sign-in page speaks the customer's language.

use crate::browser::{mark_the_page, still_marked};
use serde_json::json;

use crate::support::browser::{serve, Browser};
use crate::support::{spawn_app, TestApp};

/// The two widths every journey is checked at: a desktop and a phone.
const WIDTHS: [(u32, u32); 2] = [(1200, 1000), (390, 844)];

/// Whether the element is drawn: present, not `hidden`, with a box on the page.
async fn shown(browser: &Browser, css: &str) -> bool {
    let script = format!(
        "const e = document.querySelector({css:?}); return !!e && !e.closest('[hidden]') && e.getClientRects().length > 0;"
    );
    browser.execute(&script).await.as_bool() == Some(true)
}

/// No sideways scrolling at this width.
async fn fits(browser: &Browser) -> bool {
    let (content, window) = browser.widths().await;
    content <= window
}

async fn open_page(app: &TestApp, base: &str, customer: &str, ticket: &str) -> Browser {
    let browser = Browser::start().await;
    let path = format!("/tickets/{ticket}");
    let link = app.sign_in_link(customer, &path).await;
    browser.sign_in(base, &link, &path).await;
    browser
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_agent_would_repeat_itself_the_open_page_shows_a_person_has_it_without_a_reload() {
    for (width, height) in WIDTHS {
        let app = spawn_app().await;
        let (ticket, first) = app.open_ticket("C-500", "Please refund me").await;
        assert_eq!(first["status"], "awaiting_customer", "{first:#}");
        let base = serve(app.router.clone()).await;
        let browser = open_page(&app, &base, "C-500", &ticket).await;
        browser.set_window_size(width, height).await;
        assert!(
            shown(&browser, "#person").await,
            "offered once the agent answered"
        );
        assert!(!shown(&browser, "#with-a-person").await);

        // The customer asks the same again, typing and sending as a person does; the
        // form's answer is a new document, which is the one marked (never the old one
        // that the redirect is about to replace).
        browser
            .execute("window.__before_send = true; return true;")
            .await;
        browser
            .type_into("#chat textarea[name=text]", "Please refund me")
            .await;
        browser.click("#send").await;
        let sent = "return window.__before_send !== true && document.readyState === 'complete' \
                    && document.querySelectorAll('#messages .msg.customer').length === 2;";
        assert!(
            browser.wait_until(sent).await,
            "{width}px: the message was sent"
        );
        mark_the_page(&browser).await;
        app.drain().await;
        let handed = "return !document.getElementById('with-a-person').hidden;";
        assert!(
            browser.wait_until(handed).await,
            "{width}px: {}",
            browser.source().await
        );
        assert!(shown(&browser, "#with-a-person").await, "{width}px");
        assert!(
            !shown(&browser, "#person").await,
            "{width}px: a person has it already"
        );
        assert_eq!(
            browser
                .attribute("#case-status", "data-status")
                .await
                .as_deref(),
            Some("escalated")
        );
        assert!(
            still_marked(&browser).await,
            "{width}px: the page was not reloaded"
        );
        assert!(fits(&browser).await, "{width}px");
        browser.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_clicks_talk_to_a_person_and_the_page_says_a_person_has_it() {
    for (width, height) in WIDTHS {
        let app = spawn_app().await;
        let (ticket, _) = app.open_ticket("C-500", "Please refund me").await;
        let base = serve(app.router.clone()).await;
        let browser = open_page(&app, &base, "C-500", &ticket).await;
        browser.set_window_size(width, height).await;
        browser.click("#person").await;
        browser.wait_until_loaded().await;
        let handed = "return !document.getElementById('with-a-person').hidden;";
        assert!(browser.wait_until(handed).await, "{width}px");
        assert!(browser
            .text("#with-a-person")
            .await
            .contains("team will take over"));
        assert!(!shown(&browser, "#person").await, "{width}px");
        assert!(fits(&browser).await, "{width}px");
        browser.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_headed_by_the_subject_says_when_we_answer_and_writes_yen_as_japanese_does() {
    for (width, height) in WIDTHS {
        let app = spawn_app().await;
        let (ticket, case) = app
            .open_ticket(
                "C-400",
                "年間プランが二重に請求されました。返金してください。",
            )
            .await;
        assert_eq!(case["status"], "awaiting_approval", "{case:#}");
        let base = serve(app.router.clone()).await;
        let browser = open_page(&app, &base, "C-400", &ticket).await;
        browser.set_window_size(width, height).await;
        let heading = browser.text("#ticket-subject").await;
        assert!(
            heading.starts_with("年間プランが二重に請求されました"),
            "{heading}"
        );
        assert!(
            !heading.contains(&ticket),
            "the subject, not the id: {heading}"
        );
        // A supervisor's approval: the supervisors' queue's target (8 hours by default).
        assert_eq!(
            browser.text("#reply-time").await,
            "通常 8 時間以内にご回答します。"
        );

        mark_the_page(&browser).await;
        let fingerprint = case["fingerprint"].as_str().unwrap();
        let case_id = case["id"].as_str().unwrap();
        let (status, _) = app
            .approve(&app.supervisor_token, case_id, fingerprint)
            .await;
        assert!(status.is_success());
        app.drain().await;
        let refunded = "return document.querySelector('#refunds td') !== null;";
        assert!(browser.wait_until(refunded).await, "{width}px");
        assert_eq!(browser.text("#refunds td").await, "¥19,800");
        assert!(
            !shown(&browser, "#reply-time").await,
            "{width}px: nothing left to answer"
        );
        assert!(
            !shown(&browser, "#withdraw").await,
            "{width}px: the refund was sent"
        );
        assert!(still_marked(&browser).await);
        assert!(fits(&browser).await, "{width}px");
        browser.close().await;
    }
}

/// A German customer charged twice for a 1,234.56 EUR order: their own small world, in
/// the provider and the app, as the shop's records would be.
async fn german_customer_charged_twice(app: &TestApp) {
    let charge = |id: &str, at: &str| {
        json!({ "id": id, "order_id": "O-DE-1", "customer_id": "C-DE-1", "amount": "1234.56",
                "currency": "EUR", "captured": true, "status": "succeeded", "created_at": at,
                "payment_method": "pm_card_visa_4242" })
    };
    let world = json!({
        "customers": [{ "id": "C-DE-1", "name": "Jonas Weber", "email": "jonas.weber@example.de", "region": "EU" }],
        "orders": [{ "id": "O-DE-1", "customer_id": "C-DE-1", "product": "annual_plan",
                     "amount": "1234.56", "currency": "EUR", "created_at": "2026-11-27T09:00:00Z" }],
        "charges": [charge("ch_de_1a", "2026-11-27T09:00:03Z"), charge("ch_de_1b", "2026-11-27T09:00:50Z")],
    })
    .to_string();
    desk::world::load_into_provider(&app.mock.base_url(), &world)
        .await
        .unwrap();
    desk::world::World::parse(&world)
        .unwrap()
        .load_into(&app.state.db)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_german_customer_sees_euros_as_german_writes_them() {
    for (width, height) in WIDTHS {
        let app = spawn_app().await;
        german_customer_charged_twice(&app).await;
        let (ticket, case) = app
            .open_ticket(
                "C-DE-1",
                "Meine Bestellung O-DE-1 wurde doppelt abgebucht, bitte erstatten Sie eine Zahlung.",
            )
            .await;
        assert_eq!(
            case["status"], "awaiting_approval",
            "{:#}",
            case["decision"]
        );
        let fingerprint = case["fingerprint"].as_str().unwrap_or_default();
        let case_id = case["id"].as_str().unwrap();
        let (status, body) = app
            .approve(&app.supervisor_token, case_id, fingerprint)
            .await;
        assert!(status.is_success(), "{body}");
        app.drain().await;
        let base = serve(app.router.clone()).await;
        let browser = open_page(&app, &base, "C-DE-1", &ticket).await;
        browser.set_window_size(width, height).await;
        // The exact characters (WebDriver's visible text would turn the no-break space
        // between number and sign into a plain one).
        let written = browser
            .execute("return document.querySelector('#refunds td').textContent;")
            .await;
        assert_eq!(written, "1.234,56\u{a0}€");
        assert!(fits(&browser).await, "{width}px");
        browser.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_ticket_offers_no_withdrawal() {
    for (width, height) in WIDTHS {
        let app = spawn_app().await;
        let (ticket, case) = app
            .open_ticket(
                "C-500",
                "Please refund order O-5001, I changed my mind about the add-on.",
            )
            .await;
        assert_eq!(case["status"], "denied", "{case:#}");
        let base = serve(app.router.clone()).await;
        let browser = open_page(&app, &base, "C-500", &ticket).await;
        browser.set_window_size(width, height).await;
        assert_eq!(
            browser
                .attribute("#case-status", "data-status")
                .await
                .as_deref(),
            Some("denied")
        );
        assert!(!shown(&browser, "#withdraw").await, "{width}px");
        assert!(
            !shown(&browser, "#reply-time").await,
            "{width}px: the next word is theirs"
        );
        assert!(
            shown(&browser, "#person").await,
            "{width}px: a person is offered instead"
        );
        assert!(fits(&browser).await, "{width}px");
        browser.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_page_speaks_the_language_the_link_asks_for() {
    for (width, height) in WIDTHS {
        let app = spawn_app().await;
        let base = serve(app.router.clone()).await;
        let browser = Browser::start().await;
        browser.set_window_size(width, height).await;
        let link = app.sign_in_link("C-300", "/tickets").await;
        browser.goto(&format!("{base}{link}&lang=de")).await;
        let german = desk::replies::page_text(desk::replies::Language::De);
        assert_eq!(browser.text("#sign-in").await, german.sign_in_continue);
        assert_eq!(
            browser.attribute("html", "lang").await.as_deref(),
            Some("de")
        );
        assert!(fits(&browser).await, "{width}px");
        // Signing in works from the translated page, by a click.
        browser.click("#sign-in").await;
        assert!(browser
            .wait_for_url_ending("/tickets")
            .await
            .ends_with("/tickets"));
        browser.close().await;
    }
}

/// Without `?lang=`, the browser's Accept-Language chooses; an unknown code is ignored.
#[tokio::test]
async fn the_sign_in_page_follows_accept_language_and_ignores_an_unknown_lang() {
    let app = spawn_app().await;
    let link = app.sign_in_link("C-400", "/tickets").await;
    let japanese = desk::replies::page_text(desk::replies::Language::Ja);
    for path in [link.clone(), format!("{link}&lang=xx")] {
        let request = axum::http::Request::get(&path)
            .header("accept-language", "ja-JP,ja;q=0.9")
            .body(axum::body::Body::empty())
            .unwrap();
        let (status, page) = app.raw(request).await;
        assert!(status.is_success(), "{page}");
        assert!(page.contains(japanese.sign_in_continue), "{path}: {page}");
    }
}
