//! Staff read a customer's message in another language with the assistant's translation
//! beside it (docs/spec/interfaces.md, "Pages"): the configured model is a fake
//! OpenAI-compatible server on a loopback port that counts what it is asked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use desk::agent::llm::LlmModel;
use serde_json::{json, Value};

use crate::browser::screenshot_dir;
use crate::conversation::{console_get, console_post};
use crate::support::browser::{serve, Browser};
use crate::support::{spawn_app, spawn_app_with_model, TestApp};

const GERMAN: &str = "Meine Bestellung wurde doppelt abgebucht, bitte erstatten Sie eine Zahlung.";
const ENGLISH: &str = "My order was charged twice, please refund one payment.";

/// The fake model: answers every chat completion with `answer`, counting the calls.
struct Translator {
    calls: Arc<AtomicUsize>,
    base_url: String,
}

async fn completions(
    State((calls, answer)): State<(Arc<AtomicUsize>, String)>,
    Json(body): Json<Value>,
) -> Json<Value> {
    calls.fetch_add(1, Ordering::SeqCst);
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("`en`"), "asked for English: {system}");
    assert_eq!(
        body["messages"][1]["content"], GERMAN,
        "the original is sent"
    );
    Json(json!({
        "choices": [{ "index": 0, "finish_reason": "stop",
                      "message": { "role": "assistant", "content": answer } }]
    }))
}

impl Translator {
    async fn start(answer: &str) -> Translator {
        let calls = Arc::new(AtomicUsize::new(0));
        let router = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state((calls.clone(), answer.to_string()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        Translator {
            calls,
            base_url: format!("http://{addr}/v1"),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The app with this server as its configured model.
    async fn app(&self) -> TestApp {
        let model = LlmModel::new(&self.base_url, None, "tiny".into(), Duration::from_secs(5))
            .unwrap()
            .with_max_retries(0);
        spawn_app_with_model(Arc::new(model)).await
    }
}

/// A German customer's new case: its id and the console path of its page.
async fn german_case(app: &TestApp) -> (String, String) {
    let ticket = app.post_ticket("C-300", GERMAN).await;
    let case_id = ticket["case"]["id"].as_str().unwrap().to_string();
    let path = format!("/console/cases/{case_id}");
    (case_id, path)
}

/// The `seq` the page's Translate button names.
fn translate_seq(page: &str) -> String {
    let at = page.find("data-translate=\"").expect("a Translate button") + 16;
    page[at..].split('"').next().unwrap().to_string()
}

async fn stored(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM message_translations")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_read_a_german_message_with_its_translation_beside_it_asked_of_the_model_once() {
    let model = Translator::start(ENGLISH).await;
    let app = model.app().await;
    let (_, path) = german_case(&app).await;
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let (status, page) = console_get(&app, &cookie, &path).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("data-language=\"de\""),
        "the language is shown"
    );
    let seq = translate_seq(&page);
    let form = format!("csrf={csrf}&seq={seq}");
    let (status, _) = console_post(&app, &cookie, &format!("{path}/translate"), &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page) = console_get(&app, &cookie, &path).await;
    assert!(page.contains(GERMAN), "the original stays");
    assert!(page.contains(ENGLISH), "the translation is beside it");
    assert!(page.contains("Machine translation into en by the assistant"));
    assert!(
        !page.contains("data-translate="),
        "asked once, no button again"
    );
    assert_eq!(model.calls(), 1);

    // Asked again (another tab, a second person): served from the table.
    let (cookie2, csrf2) = app.staff_session("supervisor@test.example").await;
    let form = format!("csrf={csrf2}&seq={seq}");
    let (status, _) = console_post(&app, &cookie2, &format!("{path}/translate"), &form).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        model.calls(),
        1,
        "the second request never reaches the model"
    );
    assert_eq!(stored(&app).await, 1);

    screenshot(&app, &path).await;
}

/// `docs/screenshots/case-translation-{desktop,phone}.png`: the translated message at
/// 1280 and 390 px, beside its original and without sideways scrolling.
async fn screenshot(app: &TestApp, path: &str) {
    let base = serve(app.router.clone()).await;
    for (width, height, name) in [
        (1280, 800, "case-translation-desktop.png"),
        (390, 844, "case-translation-phone.png"),
    ] {
        let browser = Browser::start().await;
        browser.set_window_size(width, height).await;
        browser.console_login(&base, "agent@test.example").await;
        browser.goto(&format!("{base}{path}")).await;
        browser.wait_for(".msg .translation").await;
        browser
            .execute(
                "document.querySelector('.msg .translation').scrollIntoView({block: 'center'})",
            )
            .await;
        let (scroll, inner) = browser.widths().await;
        assert!(scroll <= inner, "{width}px: {scroll} > {inner}");
        browser.screenshot(&screenshot_dir().join(name)).await;
        browser.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_no_button_is_shown_and_the_endpoint_refuses_not_offered() {
    let app = spawn_app().await;
    let (_, path) = german_case(&app).await;
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let (_, page) = console_get(&app, &cookie, &path).await;
    assert!(page.contains("data-language=\"de\""));
    assert!(!page.contains("data-translate="), "no Translate button");
    let form = format!("csrf={csrf}&seq=1");
    let (status, page) = console_post(&app, &cookie, &format!("{path}/translate"), &form).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(page.contains("no model is configured"), "{page}");
    assert_eq!(stored(&app).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_answer_with_markup_is_shown_as_text() {
    let model = Translator::start("<script>alert('x')</script> charged twice").await;
    let app = model.app().await;
    let (_, path) = german_case(&app).await;
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let (_, page) = console_get(&app, &cookie, &path).await;
    let form = format!("csrf={csrf}&seq={}", translate_seq(&page));
    console_post(&app, &cookie, &format!("{path}/translate"), &form).await;
    let (_, page) = console_get(&app, &cookie, &path).await;
    assert!(!page.contains("<script>alert"), "never markup");
    assert!(page.contains("&#60;script&#62;alert") || page.contains("&lt;script&gt;alert"));
    assert_eq!(model.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_fails_shows_why_and_stores_nothing() {
    // A server that is not there: the call fails at once.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let model = LlmModel::new(
        &format!("http://{addr}/v1"),
        None,
        "tiny".into(),
        Duration::from_secs(2),
    )
    .unwrap()
    .with_max_retries(0);
    let app = spawn_app_with_model(Arc::new(model)).await;
    let (_, path) = german_case(&app).await;
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let (_, page) = console_get(&app, &cookie, &path).await;
    let form = format!("csrf={csrf}&seq={}", translate_seq(&page));
    let (status, page) = console_post(&app, &cookie, &format!("{path}/translate"), &form).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        page.contains("The model did not translate this message"),
        "{page}"
    );
    assert!(
        page.contains("data-translate="),
        "the button stays to try again"
    );
    assert_eq!(stored(&app).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_answer_in_time_stores_nothing() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let slow = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, slow).await });
    let model = LlmModel::new(
        &format!("http://{addr}/v1"),
        None,
        "tiny".into(),
        Duration::from_millis(500),
    )
    .unwrap();
    let app = spawn_app_with_model(Arc::new(model)).await;
    let (_, path) = german_case(&app).await;
    let (cookie, csrf) = app.staff_session("agent@test.example").await;
    let (_, page) = console_get(&app, &cookie, &path).await;
    let form = format!("csrf={csrf}&seq={}", translate_seq(&page));
    let (status, page) = console_post(&app, &cookie, &format!("{path}/translate"), &form).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(page.contains("did not answer in time"), "{page}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a timeout is not retried");
    assert_eq!(stored(&app).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_session_cannot_ask_for_a_translation() {
    let model = Translator::start(ENGLISH).await;
    let app = model.app().await;
    let (_, path) = german_case(&app).await;
    let (cookie, csrf) = app.customer_cookie("C-300").await;
    let response = app
        .response(
            axum::http::Request::post(format!("{path}/translate"))
                .header("cookie", &cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(axum::body::Body::from(format!("csrf={csrf}&seq=1")))
                .unwrap(),
        )
        .await;
    // Sent to the staff sign-in, as any console page is for someone who is not staff.
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()["location"].to_str().unwrap();
    assert!(location.starts_with("/console/login"), "{location}");
    let (_, body) = console_post(&app, &cookie, &format!("{path}/translate"), "").await;
    assert!(!body.contains(ENGLISH));
    assert_eq!(model.calls(), 0, "the model is never asked");
    assert_eq!(stored(&app).await, 0);
}
