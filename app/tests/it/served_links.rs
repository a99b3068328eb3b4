//! Onboarding (docs/spec/interfaces.md, "CLI" and "Pages"): a sign-in link printed while `serve`
//! listens elsewhere than the default points where it listens; a staff invitation's link
//! is absolute and mailed to the invitee; `seed` writes no colour codes into a redirected
//! stderr.

use std::process::{Command, Stdio};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::support::spawn_app;

/// The real binary on `data`, with a clean environment (no `BIND_ADDR`, no `PUBLIC_URL`).
fn refund_agent(data: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refund-agent"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .arg("--data-dir")
        .arg(data);
    cmd
}

#[test]
fn seed_writes_no_colour_codes_into_a_redirected_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let out = refund_agent(&dir.path().join("data"))
        .env("RUST_LOG", "info")
        .arg("seed")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("INFO"), "log lines were written: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "no ANSI escape: {stderr:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_link_printed_while_serve_listens_elsewhere_points_where_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let seeded = refund_agent(&data).arg("seed").output().unwrap();
    assert!(
        seeded.status.success(),
        "{}",
        String::from_utf8_lossy(&seeded.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert_ne!(port, 8080);
    let mut serve = refund_agent(&data)
        .env("RUST_LOG", "warn")
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let mut ready = false;
    for _ in 0..600 {
        if reqwest::get(format!("{base}/readyz"))
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = refund_agent(&data)
        .args(["customer", "link", "C-100"])
        .output()
        .unwrap();
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let opened = reqwest::get(&link).await.map(|r| r.status());
    serve.kill().unwrap();
    serve.wait().unwrap();
    assert!(ready, "serve became ready");
    assert!(
        link.starts_with(&format!("{base}/sign-in?link=")),
        "the link names where serve listens: {link}"
    );
    assert_eq!(opened.ok(), Some(reqwest::StatusCode::OK), "{link}");
}

#[tokio::test]
async fn a_staff_invitation_link_is_absolute() {
    let app = spawn_app().await;
    app.staff_token(desk::auth::StaffRole::Admin).await;
    let (cookie, csrf) = app.staff_session("admin@test.example").await;
    let form = format!("csrf={csrf}&email=new.agent%40test.example&role=agent");
    let request = Request::post("/console/staff/invite")
        .header("cookie", cookie)
        .header("host", "desk.example.test:9090")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(form))
        .unwrap();
    let (status, page) = app.raw(request).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let expected = match app.state.public_url.as_deref() {
        Some(url) => format!("{}/console/invite?token=", url.trim_end_matches('/')),
        None => "http://desk.example.test:9090/console/invite?token=".to_string(),
    };
    assert!(page.contains(&expected), "{expected} in {page}");
    // And mailed to the invitee, the same absolute link in the mail's words.
    let mailed: Vec<(String, String)> =
        sqlx::query_as("SELECT address, body FROM mail_outbox WHERE kind = 'staff_invited'")
            .fetch_all(app.state.db.pool())
            .await
            .unwrap();
    assert_eq!(mailed.len(), 1, "{mailed:?}");
    let (address, body) = &mailed[0];
    assert_eq!(address, "new.agent@test.example");
    let token = page.split(&expected).nth(1).unwrap_or_default();
    let token: String = token
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    assert!(
        !token.is_empty() && body.contains(&format!("{expected}{token}")),
        "{body}"
    );
}
