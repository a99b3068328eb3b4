//! Headless Chromium against the real app: a support agent logs in, sees a supervisor-
//! level refund they may not approve, approves one they may, and watches the status
//! change; the customer's page then shows the refund as completed.
//!
//! Long because one Chromium session per test is costly: each test walks a whole user
//! journey (sign in, act, watch the page change), and they share one WebDriver set-up.

use crate::support::browser::{serve, Browser};
use crate::support::{spawn_app, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_approves_in_the_console_and_the_status_changes_but_cannot_approve_a_supervisor_refund(
) {
    let app = spawn_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let (_, big) = app
        .open_ticket("C-400", "I was charged twice for my annual plan")
        .await;
    let big_id = big["id"].as_str().unwrap().to_string();
    assert_eq!(big["required_role"], "supervisor");

    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;

    browser.goto(&format!("{base}/console/login")).await;
    browser
        .type_into("input[name=email]", "agent@test.example")
        .await;
    browser
        .type_into("input[name=password]", "correct horse battery")
        .await;
    browser.click("button[type=submit]").await;
    assert!(
        browser
            .wait_for_url_ending("/console")
            .await
            .ends_with("/console"),
        "logged in and sent to the queue"
    );
    let queue = queue_case_ids(&browser).await;
    assert!(
        queue.contains(&case_id) && queue.contains(&big_id),
        "{queue}"
    );

    // The JPY case needs a supervisor: no approve button for an agent.
    browser
        .goto(&format!("{base}/console/cases/{big_id}"))
        .await;
    assert!(browser.find("#cannot-approve").await.is_some());
    assert!(browser.find("#approve").await.is_none());

    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    assert_eq!(
        browser
            .wait_for_attribute("#case-status", "data-status", "awaiting_approval")
            .await,
        "awaiting_approval"
    );
    let page = browser.source().await;
    assert!(
        page.contains("ch_1001b") && page.contains("RP-001@2"),
        "evidence and policy on the page"
    );
    browser
        .screenshot(
            &desk::config::default_fixtures_dir().join("../target/screenshots/case-page.png"),
        )
        .await;
    browser.click("#approve").await;
    assert_eq!(
        browser
            .wait_for_attribute("#case-status", "data-status", "approved")
            .await,
        "approved"
    );

    app.drain().await;
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    assert_eq!(
        browser
            .wait_for_attribute("#case-status", "data-status", "refund_succeeded")
            .await,
        "refund_succeeded"
    );
    assert_eq!(app.provider_refunds("ch_1001b").await.len(), 1);

    // The customer's page, reached through a sign-in link, says what the provider says.
    let next = format!("/tickets/{ticket_id}");
    let link = app.sign_in_link("C-100", &next).await;
    browser.sign_in(&base, &link, &next).await;
    assert_eq!(
        browser
            .wait_for_attribute("#case-status", "data-status", "refund_succeeded")
            .await,
        "refund_succeeded"
    );
    assert!(browser
        .text("#case-status")
        .await
        .contains("Refund completed"));
    assert!(
        !browser.url().await.contains("token="),
        "the token leaves the address bar"
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_approval_form_without_the_session_csrf_token_is_refused() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap();
    let staff = desk::auth::staff_by_email(&app.state.db, "agent@test.example")
        .await
        .unwrap()
        .unwrap();
    let (session, _) = desk::auth::issue_token(
        &app.state.db,
        "session",
        "staff",
        &staff.id,
        1_800_000_000_000,
    )
    .await
    .unwrap();
    let form = format!(
        "csrf=wrong&fingerprint={}",
        case["fingerprint"].as_str().unwrap()
    );
    let request = axum::http::Request::post(format!("/console/cases/{case_id}/approve"))
        .header("cookie", format!("rd_session={session}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from(form))
        .unwrap();
    let (status, _) = app.raw(request).await;
    assert_eq!(status, axum::http::StatusCode::FORBIDDEN);
    assert_eq!(app.case(case_id).await["status"], "awaiting_approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_opens_a_ticket_watches_it_go_to_review_a_second_ticket_joins_it_then_completed()
{
    let app = spawn_app().await;
    let worker = tokio::spawn(desk::worker::run_forever(app.state.clone()));
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    let link = app.sign_in_link("C-100", "/tickets").await;

    browser.sign_in(&base, &link, "/tickets").await;
    browser
        .type_into(
            "#new-ticket textarea[name=message]",
            "I was charged twice for my annual plan",
        )
        .await;
    browser.click("#open-ticket").await;
    let url = browser.wait_for_url("/tickets/tkt_").await;
    assert!(
        url.contains("/tickets/tkt_"),
        "{url}: {}",
        browser.source().await
    );

    // The worker investigates; the page polls and shows the case under review.
    let status = wait_for_case_status(&browser, "awaiting_approval").await;
    assert_eq!(status, "awaiting_approval");
    assert!(browser
        .text("#case-status")
        .await
        .contains("Refund under review"));

    // A second ticket about the same charge joins the case under review; the
    // customer is told where the work goes on, and no second refund case exists.
    let first_ticket = url.rsplit('/').next().unwrap().to_string();
    browser.goto(&format!("{base}/tickets")).await;
    browser
        .type_into(
            "#new-ticket textarea[name=message]",
            "Hello? My annual plan was billed two times",
        )
        .await;
    browser.click("#open-ticket").await;
    browser.wait_for_url("/tickets/tkt_").await;
    assert_eq!(wait_for_case_status(&browser, "closed").await, "closed");
    let said = browser.text("#messages").await;
    assert!(
        said.contains(&first_ticket),
        "names the open ticket: {said}"
    );
    browser.goto(&url).await;
    let status = wait_for_case_status(&browser, "awaiting_approval").await;
    assert_eq!(
        status, "awaiting_approval",
        "investigated again with both messages"
    );
    let (_, cases) = app
        .request(
            "GET",
            "/api/v1/cases?status=all",
            Some(&app.agent_token),
            None,
        )
        .await;
    let open: Vec<&serde_json::Value> = cases
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] != "closed")
        .collect();
    assert_eq!(open.len(), 1, "one refund case: {cases:#}");

    let code = approve_the_waiting_case(&app, &app.agent_token).await;
    assert_eq!(code, axum::http::StatusCode::OK);

    let status = wait_for_case_status(&browser, "refund_succeeded").await;
    assert_eq!(
        status, "refund_succeeded",
        "the page updated without a reload"
    );
    let text = browser.text("#case-status").await;
    assert!(text.contains("Refund completed"), "{text}");
    assert!(browser.text("#messages").await.contains("CN¥198.00"));
    browser
        .screenshot(
            &desk::config::default_fixtures_dir().join("../target/screenshots/ticket-page.png"),
        )
        .await;
    browser.close().await;
    worker.abort();
}

/// A Japanese cancellation within the JP cooling-off period (RP-002 §1: 8 days).
const JA_CANCELLATION: &str =
    "年間プランを申し込みましたが、使わないことにしました。注文の取消と返金をお願いします。";

/// Approves the (only) case awaiting approval, through the API, as `token`'s staff member.
async fn approve_the_waiting_case(app: &TestApp, token: &str) -> axum::http::StatusCode {
    let (_, cases) = app
        .request(
            "GET",
            "/api/v1/cases?status=awaiting_approval",
            Some(token),
            None,
        )
        .await;
    let case = &cases.as_array().unwrap()[0];
    let (code, _) = app
        .approve(
            token,
            case["id"].as_str().unwrap(),
            case["fingerprint"].as_str().unwrap(),
        )
        .await;
    code
}

/// Polls the page (up to 15 s) until `#case-status` has `data-status` = `status`.
async fn wait_for_case_status(browser: &Browser, status: &str) -> String {
    let mut seen = String::new();
    for _ in 0..60 {
        seen = browser
            .attribute("#case-status", "data-status")
            .await
            .unwrap_or_default();
        if seen == status {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_japanese_customer_opens_a_ticket_and_sees_the_page_and_the_agents_replies_in_japanese() {
    let app = spawn_app().await;
    let worker = tokio::spawn(desk::worker::run_forever(app.state.clone()));
    let base = serve(app.router.clone()).await;
    // A browser in a language we do not answer in (docs/spec/interfaces.md, "Pages": the
    // browser's choice comes before the region's).
    let browser = Browser::start_in_language("sv-SE,sv").await;
    // C-400 is a JP customer with no ticket yet: the list page is in Japanese already.
    let link = app.sign_in_link("C-400", "/tickets").await;
    browser.sign_in(&base, &link, "/tickets").await;
    assert_eq!(
        browser.attribute("html", "lang").await.as_deref(),
        Some("ja")
    );
    assert_eq!(browser.text("#new-ticket button").await, "送信");
    assert!(browser.text("h1").await.contains("お問い合わせを送る"));

    browser
        .type_into("#new-ticket textarea[name=message]", JA_CANCELLATION)
        .await;
    browser.click("#open-ticket").await;
    let url = browser.wait_for_url("/tickets/tkt_").await;
    assert!(
        url.contains("/tickets/tkt_"),
        "{url}: {}",
        browser.source().await
    );
    assert_eq!(
        browser.attribute("html", "lang").await.as_deref(),
        Some("ja")
    );
    assert_eq!(browser.text("#send").await, "送信");
    assert_eq!(browser.text("#withdraw").await, "お問い合わせを取り下げる");

    // The worker investigates; the page polls and shows the Japanese banner and reply.
    assert_eq!(
        wait_for_case_status(&browser, "awaiting_approval").await,
        "awaiting_approval"
    );
    assert_eq!(browser.text("#case-status").await, "返金審査中");
    let messages = browser.text("#messages").await;
    assert!(
        messages.contains("¥19,800 の返金について、担当チームが審査しています")
            && messages.contains("サポート ·"),
        "{messages}"
    );

    // A JPY refund this size needs a supervisor (RP-004).
    let code = approve_the_waiting_case(&app, &app.supervisor_token).await;
    assert_eq!(code, axum::http::StatusCode::OK);

    assert_eq!(
        wait_for_case_status(&browser, "refund_succeeded").await,
        "refund_succeeded"
    );
    assert_eq!(browser.text("#case-status").await, "返金完了");
    let messages = browser.text("#messages").await;
    assert!(
        messages.contains("¥19,800 の返金は決済事業者で完了し"),
        "the completion is said in Japanese without a reload: {messages}"
    );
    assert!(browser.text("#refunds").await.contains("完了"));
    browser
        .screenshot(
            &desk::config::default_fixtures_dir().join("../target/screenshots/ticket-page-ja.png"),
        )
        .await;
    browser.close().await;
    worker.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_replies_from_the_case_page_and_a_supervisor_closes_an_escalated_case_with_a_reply(
) {
    let app = spawn_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let (disputed_ticket, disputed) = app
        .open_ticket("C-600", "I was charged twice for my annual plan")
        .await;
    let disputed_id = disputed["id"].as_str().unwrap().to_string();
    assert_eq!(disputed["status"], "escalated");
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    // Times in the viewer's zone; this viewer is in Tokyo (UTC+9).
    browser.set_time_zone("Asia/Tokyo").await;

    // A saved reply in the ticket's language, put into the reply and edited.
    let saved = "Thank you for your patience.";
    let (status, body) = app
        .request(
            "POST",
            "/api/v1/saved-replies",
            Some(&app.supervisor_token),
            Some(serde_json::json!({ "name": "Patience", "language": "en", "text": saved })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    browser.console_login(&base, "agent@test.example").await;
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    browser
        .execute("window.__not_reloaded = true; return true;")
        .await;
    browser.type_into("textarea[name=text]", "Hello. ").await;
    browser.click("#use-saved-reply").await;
    let filled = browser
        .execute(
            "return [document.querySelector('#reply-text').value, window.__not_reloaded === true];",
        )
        .await;
    assert_eq!(
        filled,
        serde_json::json!([format!("Hello. {saved}"), true]),
        "the saved reply goes in at the cursor, the typed text stays, the page stays"
    );
    let reply = "We found the second charge and are on it.";
    browser
        .type_into("textarea[name=text]", &format!(" {reply}"))
        .await;
    browser.click("#send-reply").await;
    let landed = browser.wait_for_url("?done=reply").await;
    assert!(
        landed.ends_with(&format!("/console/cases/{case_id}?done=reply")),
        "post/redirect/get: the address is the case page, not the POST URL: {landed}"
    );
    let thread = browser.text("#thread").await;
    assert!(
        thread.contains(&format!("Hello. {saved} {reply}")),
        "{thread}"
    );
    assert!(browser.text("#notice").await.contains("Reply sent"));
    let shown = browser.text("#thread time").await;
    let utc = browser
        .attribute("#thread time", "title")
        .await
        .unwrap_or_default();
    assert!(
        shown.contains("GMT+9") && utc.ends_with("UTC"),
        "the reply's time in the viewer's zone ({shown}), UTC kept in its title ({utc})"
    );

    let next = format!("/tickets/{ticket_id}");
    let link = app.sign_in_link("C-100", &next).await;
    browser.sign_in(&base, &link, &next).await;
    assert!(
        browser.source().await.contains(reply),
        "the customer sees the reply"
    );

    browser
        .console_login(&base, "supervisor@test.example")
        .await;
    // The queue finds a case by the customer's email.
    browser.goto(&format!("{base}/console?status=all")).await;
    browser
        .type_into("#queue-filter input[name=q]", "OLIVIA.brown@example.com")
        .await;
    browser.click("#filter").await;
    browser.wait_for_url("q=OLIVIA").await;
    let found = queue_case_ids(&browser).await;
    assert!(
        found.contains(&disputed_id) && !found.contains(&case_id),
        "{found}"
    );

    browser
        .goto(&format!("{base}/console/cases/{disputed_id}"))
        .await;
    // A refused form shows its error, and the address bar is the case page again, not
    // the POST-only URL the form went to (a reload would be a 405).
    // The list offers staff only; a stale page may still name someone gone since.
    browser
        .execute(
            "const s = document.querySelector('#assign select[name=email]');
             s.add(new Option('nobody@test.example', 'nobody@test.example'));
             s.value = 'nobody@test.example'; return true;",
        )
        .await;
    browser.click("#assign-submit").await;
    // The answer is a new page: wait for it rather than read the old one.
    let class = browser
        .wait_for_attribute("#action-error", "class", "error")
        .await;
    assert_eq!(class, "error", "the refused form's page came back");
    let refused = browser.text("#action-error").await;
    assert!(!refused.is_empty(), "the error is shown");
    let address = browser.url().await;
    assert!(
        address.ends_with(&format!("/console/cases/{disputed_id}")),
        "{address}"
    );
    let answer = "Your bank is handling the dispute, so we have closed this request.";
    browser
        .type_into("#close input[name=reason]", "dispute open at the bank")
        .await;
    browser
        .type_into("#close textarea[name=reply]", answer)
        .await;
    browser.click("#close-case").await;
    assert_eq!(
        browser
            .wait_for_attribute("#case-status", "data-status", "closed")
            .await,
        "closed"
    );
    assert!(browser.url().await.ends_with("?done=closed"));
    let token = app.customer_token("C-600").await;
    let (_, ticket) = app
        .request(
            "GET",
            &format!("/api/v1/tickets/{disputed_ticket}"),
            Some(&token),
            None,
        )
        .await;
    assert!(ticket.to_string().contains(answer), "{ticket}");
    assert!(app.provider_refunds("ch_6001b").await.is_empty());
    browser.close().await;
}

/// Where `phone_and_desktop_pages` writes its PNGs: `SCREENSHOT_DIR` when set
/// (`scripts/screenshots` sets it to `docs/screenshots`), else `target/screenshots`.
pub(crate) fn screenshot_dir() -> std::path::PathBuf {
    std::env::var_os("SCREENSHOT_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| desk::config::default_fixtures_dir().join("../target/screenshots"))
}

/// Every page `path` in `pages` is visited at the current window size; returns the
/// ones that scroll sideways, with their widths, so one failure names them all.
async fn pages_wider_than_the_window(
    browser: &Browser,
    base: &str,
    pages: &[String],
) -> Vec<String> {
    let mut wide = Vec::new();
    for path in pages {
        browser.goto(&format!("{base}{path}")).await;
        let (scroll, inner) = browser.widths().await;
        if scroll > inner || inner <= 0 {
            wide.push(format!("{path}: scrollWidth {scroll} > innerWidth {inner}"));
        }
    }
    wide
}

/// The right edge of `css` lies inside the window: a phone user can tap it without
/// scrolling sideways.
async fn is_inside_the_window(browser: &Browser, css: &str) -> bool {
    let script = format!(
        "const e = document.querySelector({css:?}); if (!e) return false; \
         const r = e.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth;"
    );
    browser.execute(&script).await.as_bool().unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_and_customer_page_fits_a_390_px_phone_without_sideways_scrolling() {
    let app = spawn_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let run_id = case["run_id"].as_str().unwrap().to_string();
    // A case whose header lists the customer's history, long enough to collapse.
    app.refunded_ticket("C-400").await;
    let later = app.many_tickets("C-400", 7).await;
    let (_, later) = app.customer_ticket("C-400", later.last().unwrap()).await;
    let history_case_id = later["case"]["id"].as_str().unwrap().to_string();
    let now = desk::clock::Clock::now_ms(app.state.clock.as_ref());
    desk::auth::upsert_staff(
        &app.state.db,
        "admin@test.example",
        desk::auth::StaffRole::Admin,
        "correct horse battery",
        now,
    )
    .await
    .unwrap();
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    let shots = screenshot_dir();

    browser.set_window_size(390, 844).await;
    let mut wide =
        pages_wider_than_the_window(&browser, &base, &["/console/login".to_string()]).await;
    browser.console_login(&base, "admin@test.example").await;
    let log_out_reachable = is_inside_the_window(&browser, "#log-out").await;
    let console_pages: Vec<String> = [
        "/console".to_string(),
        format!("/console/cases/{case_id}"),
        format!("/console/cases/{history_case_id}"),
        format!("/console/runs/{run_id}"),
        "/console/policies".into(),
        "/console/policies/RP-001/2".into(),
        "/console/policies/RP-001/diff?from=1&to=2".into(),
        "/console/policies/RP-001/draft".into(),
        "/console/replies".into(),
        "/console/shadow".into(),
        "/console/reconcile".into(),
        "/console/audit".into(),
        "/console/staff".into(),
    ]
    .into();
    wide.extend(pages_wider_than_the_window(&browser, &base, &console_pages).await);
    browser.goto(&format!("{base}/console")).await;
    browser.screenshot(&shots.join("queue-phone.png")).await;
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    browser.screenshot(&shots.join("case-phone.png")).await;
    // Opened, the collapsed list of the customer's other tickets still fits.
    browser
        .goto(&format!("{base}/console/cases/{history_case_id}"))
        .await;
    browser.click("#more-tickets summary").await;
    let (scroll, inner) = browser.widths().await;
    if scroll > inner {
        wide.push(format!(
            "the opened history of {history_case_id}: scrollWidth {scroll} > innerWidth {inner}"
        ));
    }
    browser
        .screenshot(&shots.join("case-history-phone.png"))
        .await;

    let ticket = format!("/tickets/{ticket_id}");
    wide.extend(pages_wider_than_the_window(&browser, &base, &["/sign-in".to_string()]).await);
    let link = app.sign_in_link("C-100", &ticket).await;
    browser.sign_in(&base, &link, &ticket).await;
    let sign_out_reachable = is_inside_the_window(&browser, "#sign-out").await;
    wide.extend(
        pages_wider_than_the_window(&browser, &base, &["/tickets".into(), ticket.clone()]).await,
    );
    browser.screenshot(&shots.join("ticket-phone.png")).await;
    assert!(wide.is_empty(), "pages wider than a phone: {wide:#?}");
    assert!(log_out_reachable, "Log out is on screen on a phone");
    assert!(sign_out_reachable, "Sign out is on screen on a phone");

    // The same three pages at a desktop width, for the README.
    browser.set_window_size(1280, 900).await;
    browser.goto(&format!("{base}{ticket}")).await;
    browser.screenshot(&shots.join("ticket-desktop.png")).await;
    browser.goto(&format!("{base}/console")).await;
    browser.screenshot(&shots.join("queue-desktop.png")).await;
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    browser.screenshot(&shots.join("case-desktop.png")).await;
    browser.close().await;
}

/// Waits (up to 15 s) until the text of `css` contains `needle`; returns the last text.
async fn wait_for_text(browser: &Browser, css: &str, needle: &str) -> String {
    let mut seen = String::new();
    for _ in 0..60 {
        if browser.find(css).await.is_some() {
            seen = browser.text(css).await;
            if seen.contains(needle) {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    seen
}

/// Marks the open document; `still_marked` is true only if it was not reloaded since.
pub(crate) async fn mark_the_page(browser: &Browser) {
    browser
        .execute("window.__not_reloaded = true; return true;")
        .await;
}

pub(crate) async fn still_marked(browser: &Browser) -> bool {
    browser
        .execute("return window.__not_reloaded === true;")
        .await
        .as_bool()
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_reply_appears_on_the_customers_open_page_without_a_reload_and_an_internal_note_never_does(
) {
    let app = spawn_app().await;
    let (ticket_id, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    let ticket = format!("/tickets/{ticket_id}");
    let link = app.sign_in_link("C-100", &ticket).await;
    browser.sign_in(&base, &link, &ticket).await;
    mark_the_page(&browser).await;

    app.staff_message(&case_id, "Customer has called twice, be kind", true)
        .await;
    app.staff_message(&case_id, "Hello Li Wei, I am looking at it now.", false)
        .await;
    let messages = wait_for_text(&browser, "#messages", "I am looking at it now").await;
    assert!(messages.contains("I am looking at it now"), "{messages}");
    assert!(still_marked(&browser).await, "the page was not reloaded");
    assert!(
        !browser.source().await.contains("be kind"),
        "an internal note reaches no customer page"
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_case_page_and_queue_refresh_themselves_and_keep_what_the_agent_is_typing() {
    let app = spawn_app().await;
    let (_, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let case_id = case["id"].as_str().unwrap().to_string();
    let base = serve(app.router.clone()).await;
    let browser = Browser::start().await;
    browser.console_login(&base, "agent@test.example").await;

    // The queue shows a case opened after the page was loaded.
    mark_the_page(&browser).await;
    let (_, later) = app
        .open_ticket("C-400", "I was charged twice for my annual plan")
        .await;
    let later_id = later["id"].as_str().unwrap();
    let row = browser
        .wait_for(&format!("#queue tr[data-case='{later_id}']"))
        .await;
    assert!(!row.is_empty(), "the new case's row appeared");
    assert!(still_marked(&browser).await, "the queue was not reloaded");

    // Another reviewer approves: the open case page says so by itself.
    browser
        .goto(&format!("{base}/console/cases/{case_id}"))
        .await;
    mark_the_page(&browser).await;
    let (code, _) = app
        .approve(
            &app.supervisor_token,
            &case_id,
            case["fingerprint"].as_str().unwrap(),
        )
        .await;
    assert!(code.is_success());
    assert_eq!(
        browser
            .wait_for_attribute("#case-status", "data-status", "approved")
            .await,
        "approved"
    );
    assert!(
        still_marked(&browser).await,
        "the case page was not reloaded"
    );

    // Half a reply typed: a change is announced, not drawn over the reader's text.
    browser
        .type_into("#write textarea[name=text]", "Half a sentence")
        .await;
    app.staff_message(&case_id, "A colleague's reply", false)
        .await;
    assert!(
        wait_for_text(&browser, "#live-changed", "changed")
            .await
            .contains("changed"),
        "the page says it changed"
    );
    let typed = browser
        .execute("return document.querySelector('#write textarea[name=text]').value;")
        .await;
    assert_eq!(typed, "Half a sentence");
    browser.close().await;
}

/// The case ids of the queue's rows (rows link by subject; the id is the row's
/// `data-case`), space-separated.
async fn queue_case_ids(browser: &Browser) -> String {
    let script =
        "return [...document.querySelectorAll('#queue tr[data-case]')].map(r => r.dataset.case).join(' ');";
    browser
        .execute(script)
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}
