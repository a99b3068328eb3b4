//! Every customer-facing page in the customer's language from the first one
//! (docs/spec/interfaces.md, "The customer's language"), in headless Chromium set to
//! American English, at a desktop width and at 390 px: a German and a Korean customer,
//! whose tickets are in their language, open a sign-in link that carries no language and
//! meet their own language on its page, on their ticket list and in an upload's error.

use desk::error::ErrorCode;
use desk::replies::{page_text, upload_error, Language};

use crate::browser::screenshot_dir;
use crate::support::browser::{serve, Browser};
use crate::support::spawn_app;

/// The two widths every journey is checked at: a desktop and a phone.
const WIDTHS: [(u32, u32, &str); 2] = [(1280, 1000, ""), (390, 844, "-phone")];

/// No sideways scrolling at this width.
async fn fits(browser: &Browser) -> bool {
    let (content, window) = browser.widths().await;
    content <= window
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn german_and_korean_customers_meet_their_language_first_in_an_english_browser() {
    let app = spawn_app().await;
    // EU and US regions: only the tickets say German and Korean.
    let customers = [
        (
            "C-300",
            Language::De,
            "Meine Bestellung wurde doppelt abgebucht, bitte erstatten Sie eine Zahlung.",
        ),
        (
            "C-200",
            Language::Ko,
            "주문이 두 번 결제되었습니다. 한 번은 환불해 주세요.",
        ),
    ];
    for (customer, lang, text) in customers {
        let ticket = app.post_ticket(customer, text).await;
        assert_eq!(ticket["language"], lang.as_str(), "{ticket}");
    }
    let base = serve(app.router.clone()).await;
    for (width, height, suffix) in WIDTHS {
        for (customer, lang, _) in customers {
            let browser = Browser::start_in_language("en-US,en").await;
            browser.set_window_size(width, height).await;
            let said = browser.execute("return navigator.language;").await;
            assert_eq!(said, "en-US", "the browser speaks American English");
            // The link as `refund-agent customer link` prints it: no `&lang=`.
            let link = app.sign_in_link(customer, "/tickets").await;
            assert!(!link.contains("lang="), "{link}");
            browser.goto(&format!("{base}{link}")).await;
            let words = page_text(lang);
            let code = lang.as_str();
            assert_eq!(
                browser.attribute("html", "lang").await.as_deref(),
                Some(code)
            );
            assert_eq!(
                browser.text("#sign-in").await,
                words.sign_in_continue,
                "{width}px"
            );
            assert!(fits(&browser).await, "{customer} {width}px");
            let shot = format!("customer-first-page-{code}{suffix}.png");
            browser.screenshot(&screenshot_dir().join(shot)).await;
            browser.click("#sign-in").await;
            // The link's own address ends with `/tickets` too: wait for the list's.
            let list = format!("{base}/tickets");
            assert_eq!(browser.wait_for_url_to_be(&list).await, list);
            browser.wait_until_loaded().await;
            assert_eq!(
                browser.attribute("html", "lang").await.as_deref(),
                Some(code)
            );
            let list = browser.source().await;
            assert!(list.contains(words.my_tickets), "{customer}: {list}");
            assert!(fits(&browser).await, "{customer} {width}px");
            browser.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_upload_is_explained_in_the_customers_language() {
    let app = spawn_app().await;
    let text = "Meine Bestellung wurde doppelt abgebucht, bitte erstatten Sie eine Zahlung.";
    let ticket = app.post_ticket("C-300", text).await;
    let path = format!("/tickets/{}", ticket["id"].as_str().unwrap());
    let base = serve(app.router.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not an image").unwrap();
    for (width, height, _) in WIDTHS {
        let browser = Browser::start_in_language("en-US,en").await;
        browser.set_window_size(width, height).await;
        let link = app.sign_in_link("C-300", &path).await;
        browser.sign_in(&base, &link, &path).await;
        browser.type_into("#file", notes.to_str().unwrap()).await;
        browser.click("#upload").await;
        let shown = "const e = document.getElementById('upload-error'); return !!e && !e.hidden;";
        assert!(browser.wait_until(shown).await, "{width}px: no error shown");
        let german = upload_error(
            Language::De,
            ErrorCode::UnsupportedMediaType,
            desk::customer_files::MAX_FILE_BYTES,
        );
        assert_eq!(browser.text("#upload-error").await, german, "{width}px");
        browser.close().await;
    }
}

/// Times in the viewer's zone (docs/spec/interfaces.md, "Times"): the Korean customer's
/// page, in a browser in Seoul, writes the ticket's moments in Seoul's time — the UTC
/// words the server wrote stay only as the fallback without script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_customers_page_writes_times_in_the_browsers_time_zone() {
    let app = spawn_app().await;
    let ticket = app
        .post_ticket(
            "C-200",
            "주문이 두 번 결제되었습니다. 한 번은 환불해 주세요.",
        )
        .await;
    let path = format!("/tickets/{}", ticket["id"].as_str().unwrap());
    let base = serve(app.router.clone()).await;
    for (width, height, _) in WIDTHS {
        let browser = Browser::start_in_language("en-US,en").await;
        browser.set_time_zone("Asia/Seoul").await;
        browser.set_window_size(width, height).await;
        let link = app.sign_in_link("C-200", &path).await;
        browser.sign_in(&base, &link, &path).await;
        let zone = browser
            .execute("return Intl.DateTimeFormat().resolvedOptions().timeZone;")
            .await;
        assert_eq!(zone, "Asia/Seoul");
        let seen = browser
            .execute(
                "const t = document.querySelector('#messages time'); \
                 const seoul = new Intl.DateTimeFormat('ko', { year: 'numeric', month: 'short', day: 'numeric', \
                   hour: '2-digit', minute: '2-digit', timeZoneName: 'short', timeZone: 'Asia/Seoul' }); \
                 return [t.textContent, seoul.format(new Date(t.getAttribute('datetime'))), t.title];",
            )
            .await;
        let [shown, in_seoul, utc] =
            [0, 1, 2].map(|i| seen[i].as_str().unwrap_or_default().to_string());
        assert_eq!(shown, in_seoul, "{width}px: the moment in Seoul's time");
        assert!(
            utc.ends_with("UTC") && shown != utc,
            "{width}px: {shown} / {utc}"
        );
        browser.close().await;
    }
}

/// Staff see the language of each customer message on the case (docs/spec/interfaces.md,
/// "A customer's language on the case"): a German and a Korean message, each named.
#[tokio::test]
async fn staff_see_the_language_each_customer_message_is_written_in() {
    let app = spawn_app().await;
    let (cookie, _) = app.staff_session("supervisor@test.example").await;
    for (customer, code, text) in [
        (
            "C-300",
            "de",
            "Meine Bestellung wurde doppelt abgebucht, bitte erstatten Sie eine Zahlung.",
        ),
        (
            "C-200",
            "ko",
            "주문이 두 번 결제되었습니다. 한 번은 환불해 주세요.",
        ),
    ] {
        let ticket = app.post_ticket(customer, text).await;
        let case = ticket["case"]["id"].as_str().unwrap();
        let path = format!("/console/cases/{case}");
        let (status, page) = crate::conversation::console_get(&app, &cookie, &path).await;
        assert_eq!(status, axum::http::StatusCode::OK);
        let thread = page.split("id=\"thread\"").nth(1).unwrap_or_default();
        let marked = format!("<span class=\"lang\" data-language=\"{code}\"");
        assert!(thread.contains(&marked), "{code}: {thread}");
    }
}

/// A customer's form refused before the customer is known — an expired form (its token
/// not the session's) or no session at all — answers in the browser's language, not in
/// English.
#[tokio::test]
async fn a_refused_customer_form_speaks_the_browsers_language() {
    use axum::body::Body;
    use axum::http::{header, Request, StatusCode};
    let app = spawn_app().await;
    let (cookie, _) = app.customer_cookie("C-100").await;
    let post = |cookie: Option<&str>| {
        let mut request = Request::post("/tickets")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT_LANGUAGE, "de-DE,de;q=0.9")
            .header("sec-fetch-site", "same-origin");
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        request
            .body(Body::from("csrf=not-the-sessions&message=hallo"))
            .unwrap()
    };
    let (status, page) = app.raw(post(Some(&cookie))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(
        page.contains(&desk::replies::form_expired(Language::De)),
        "an expired form in German: {page}"
    );
    assert!(page.contains("lang=\"de\""), "{page}");
    let (status, page) = app.raw(post(None)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{page}");
    assert!(
        page.contains(page_text(Language::De).open_from_link),
        "no session, in German: {page}"
    );
}
