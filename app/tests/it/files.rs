//! A customer's files on their ticket: images and PDF within a size limit,
//! the type read from the bytes, served back only as downloads (`nosniff`,
//! `Content-Disposition: attachment`), visible to staff on the case page; anything else
//! is refused with a typed error and nothing is written. The last test does it in
//! headless Chromium, as a customer would, at a desktop width and at 390 px.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};

use crate::support::browser::{serve, Browser};
use crate::support::{spawn_app, TestApp};

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

/// The customer's upload through the API with their bearer token.
async fn upload(
    app: &TestApp,
    token: &str,
    ticket: &str,
    name: &str,
    bytes: &[u8],
) -> (StatusCode, String) {
    let request = Request::post(format!("/api/v1/tickets/{ticket}/attachments?name={name}"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from(bytes.to_vec()))
        .unwrap();
    app.raw(request).await
}

async fn stored_files(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM mail_attachments")
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

/// A download's headers say: bytes, to be saved, never sniffed or rendered.
fn assert_download(response: &axum::response::Response, name: &str) {
    let headers = response.headers();
    assert_eq!(headers[header::CONTENT_TYPE], "application/octet-stream");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    let disposition = headers[header::CONTENT_DISPOSITION].to_str().unwrap();
    assert!(
        disposition.starts_with("attachment;") && disposition.contains(name),
        "{disposition}"
    );
}

#[tokio::test]
async fn a_customers_screenshot_is_kept_served_as_a_download_and_shown_to_staff_on_the_case() {
    let app = spawn_app().await;
    let (ticket, case) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let token = app.customer_token("C-100").await;
    let (status, body) = upload(&app, &token, &ticket, "bank%20statement.png", PNG).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let line: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(line["content_type"], "image/png");
    let id = line["id"].as_str().unwrap();

    // The customer gets their bytes back, as a download.
    let mine = Request::get(format!("/api/v1/tickets/{ticket}/attachments/{id}"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = app.response(mine).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_download(&response, "bank statement.png");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    assert_eq!(&bytes[..], PNG);

    // Another customer does not find it, as for an unknown file (RP-007).
    let other = app.customer_token("C-200").await;
    let theirs = Request::get(format!("/api/v1/tickets/{ticket}/attachments/{id}"))
        .header(header::AUTHORIZATION, format!("Bearer {other}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.response(theirs).await.status(), StatusCode::NOT_FOUND);

    // Staff see it beside the customer's message on the case page, and download it.
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let page = Request::get(format!("/console/cases/{}", case["id"].as_str().unwrap()))
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    let (_, html) = app.raw(page).await;
    assert!(
        html.contains(&format!("/api/v1/attachments/{id}")),
        "{html}"
    );
    assert!(html.contains("bank statement.png"), "{html}");
    let staff = Request::get(format!("/api/v1/attachments/{id}"))
        .header(header::AUTHORIZATION, format!("Bearer {}", app.agent_token))
        .body(Body::empty())
        .unwrap();
    let response = app.response(staff).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_download(&response, "bank statement.png");
}

#[tokio::test]
async fn a_file_that_is_not_an_image_or_pdf_or_is_too_large_is_refused_and_nothing_is_written() {
    let app = spawn_app().await;
    let (ticket, _) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let token = app.customer_token("C-100").await;
    let (_, before) = app.customer_ticket("C-100", &ticket).await;
    let said = before["messages"].as_array().unwrap().len();

    let svg = b"<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>";
    let (status, body) = upload(&app, &token, &ticket, "photo.png", svg).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("unsupported_media_type"), "{body}");
    let mut big = b"%PDF-1.7\n".to_vec();
    big.resize(desk::customer_files::MAX_FILE_BYTES + 1, b' ');
    let (status, body) = upload(&app, &token, &ticket, "scan.pdf", &big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");

    assert_eq!(stored_files(&app).await, 0);
    let (_, after) = app.customer_ticket("C-100", &ticket).await;
    assert_eq!(
        after["messages"].as_array().unwrap().len(),
        said,
        "no message either"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_attaches_a_screenshot_on_the_ticket_page_at_desktop_and_phone_widths() {
    for (width, height) in [(1200, 1000), (390, 844)] {
        let app = spawn_app().await;
        let (ticket, _) = app
            .open_ticket("C-100", "I was charged twice for my annual plan")
            .await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("screenshot.png");
        std::fs::write(&file, PNG).unwrap();
        let base = serve(app.router.clone()).await;
        let browser = Browser::start().await;
        let path = format!("/tickets/{ticket}");
        let link = app.sign_in_link("C-100", &path).await;
        browser.sign_in(&base, &link, &path).await;
        browser.set_window_size(width, height).await;
        browser.type_into("#file", file.to_str().unwrap()).await;
        browser.click("#upload").await;
        browser.wait_for("#files").await;
        let listed = browser.text("#files").await;
        assert!(listed.contains("screenshot.png"), "{width}px: {listed}");
        let (content, window) = browser.widths().await;
        assert!(content <= window, "{width}px: no sideways scrolling");
        browser.close().await;
        assert_eq!(stored_files(&app).await, 1);
    }
}

/// Schemathesis found it: an upload without `?name=` was answered in axum's plain text.
#[tokio::test]
async fn an_upload_without_a_file_name_is_refused_in_the_apis_error_shape() {
    let app = spawn_app().await;
    let ticket = app.post_ticket("C-100", "I was charged twice").await;
    let ticket = ticket["id"].as_str().unwrap().to_string();
    let token = app.customer_token("C-100").await;
    let request = Request::post(format!("/api/v1/tickets/{ticket}/attachments"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from(PNG.to_vec()))
        .unwrap();
    let (status, body) = app.raw(request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let body: serde_json::Value = serde_json::from_str(&body).expect("a JSON error body");
    assert_eq!(body["error"]["code"], "invalid_query", "{body}");
    assert_eq!(stored_files(&app).await, 0);
}

/// The ticket page reads its files in the view's own row (packed fields): names with
/// colons, digits and other scripts come back whole and in the order the mailbox's own
/// list gives, and only on the customer's own ticket.
#[tokio::test]
async fn the_ticket_pages_one_read_lists_the_same_files_as_the_mailbox() {
    let app = spawn_app().await;
    let (ticket, _) = app
        .open_ticket("C-100", "I was charged twice for my annual plan")
        .await;
    let token = app.customer_token("C-100").await;
    for name in ["12:3:a.png", "%E6%98%8E%E7%BB%86%20%3A1.pdf", "z.png"] {
        let bytes: &[u8] = if name.ends_with(".pdf") {
            b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n%%EOF\n"
        } else {
            PNG
        };
        let (status, body) = upload(&app, &token, &ticket, name, bytes).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {body}");
    }
    let listed = mailbox::attachments::of_ticket(&app.state.db, &ticket)
        .await
        .unwrap();
    let customer = desk::auth::Principal::Customer {
        customer_id: "C-100".into(),
    };
    let read = desk::customer::visible_ticket_page(&app.state.db, &customer, &ticket)
        .await
        .unwrap();
    let names = |files: &[mailbox::attachments::AttachmentLine]| {
        files
            .iter()
            .map(|f| {
                (
                    f.id.clone(),
                    f.message_seq,
                    f.filename.clone(),
                    f.content_type.clone(),
                    f.size,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(listed.len(), 3);
    assert_eq!(names(&read.files), names(&listed));
    assert!(
        read.files.iter().any(|f| f.filename == "明细 :1.pdf"),
        "{:?}",
        names(&read.files)
    );
    assert!(!read.csat_answered);

    let someone_else = desk::auth::Principal::Customer {
        customer_id: "C-200".into(),
    };
    let refused = desk::customer::visible_ticket_page(&app.state.db, &someone_else, &ticket).await;
    assert!(matches!(
        refused,
        Err(desk::error::DomainError::NotFound(_))
    ));
}
