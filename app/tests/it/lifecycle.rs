//! Lifecycle and configuration: `serve` drains on SIGTERM (the real binary,
//! stopped mid-work and restarted), `/readyz` names what is not ready while `/healthz`
//! only says the process is alive, and an invalid setting stops start-up naming it.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// The real binary with a clean environment: only what a test sets reaches it.
fn refund_agent(data: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refund-agent"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .arg("--data-dir")
        .arg(data);
    cmd
}

fn assert_refused(variable: &str, value: &str) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = refund_agent(&data)
        .env(variable, value)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{variable}={value}: {stderr}");
    assert!(
        stderr.contains(variable) && stderr.contains(value),
        "the message names {variable} and its value: {stderr}"
    );
    assert!(
        !data.exists(),
        "a refused start-up creates nothing (no data dir, no database)"
    );
}

#[test]
fn a_worker_concurrency_that_is_not_a_number_stops_start_up_naming_the_variable() {
    assert_refused("WORKER_CONCURRENCY", "abc");
}

#[test]
fn a_worker_concurrency_outside_one_to_sixty_four_stops_start_up() {
    assert_refused("WORKER_CONCURRENCY", "65");
}

#[test]
fn a_work_lease_under_five_seconds_stops_start_up_naming_the_variable() {
    assert_refused("WORK_LEASE_SECS", "4");
}

#[test]
fn a_negative_approval_ttl_stops_start_up_naming_the_variable() {
    assert_refused("APPROVAL_TTL_HOURS", "-1");
}

#[test]
fn an_unknown_shadow_mode_stops_start_up_naming_the_variable() {
    assert_refused("SHADOW_MODE", "maybe");
}

#[test]
fn a_public_url_that_is_not_http_stops_start_up_naming_the_variable() {
    assert_refused("PUBLIC_URL", "refunds.example.com");
}

#[test]
fn serve_help_lists_every_variable_with_its_default_and_the_version_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let help = refund_agent(dir.path())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for variable in [
        "BIND_ADDR",
        "DATA_DIR",
        "DATABASE_URL",
        "PAYMENTS_URL",
        "PAYMENTS_API_KEY",
        "PAYMENTS_WEBHOOK_SECRET",
        "FIXTURES_DIR",
        "LLM_BASE_URL",
        "LLM_API_KEY",
        "LLM_MODEL",
        "LLM_CONTEXT_TOKENS",
        "LLM_TIMEOUT_SECS",
        "APPROVAL_TTL_HOURS",
        "PUBLIC_URL",
        "SHADOW_MODE",
        "WORKER_CONCURRENCY",
        "WORK_LEASE_SECS",
    ] {
        assert!(
            help.contains(&format!("[env: {variable}")),
            "{variable} in --help:\n{help}"
        );
    }
    for default in [
        "[default: 127.0.0.1:8080]",
        "[default: 72]",
        "[default: off]",
        "[default: 4]",
    ] {
        assert!(help.contains(default), "{default} in --help:\n{help}");
    }
    let version = refund_agent(dir.path()).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("refund-agent {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn an_unknown_log_format_stops_start_up_naming_the_variable() {
    assert_refused("LOG_FORMAT", "bogus");
}

/// `LOG_FORMAT=json` makes every log line one JSON object, and a request's
/// lines carry the `x-request-id` it was answered with (the request span's field). At
/// `info` a refused request has its line; a fast answered one has none (it is counted in
/// `/metrics`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_format_json_writes_json_lines_that_carry_the_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("serve.log");
    let env = [
        ("LOG_FORMAT", "json".to_string()),
        ("RUST_LOG", "info,sqlx=warn,tantivy=warn".to_string()),
    ];
    let log = std::fs::File::create(&log_path).unwrap();
    let mut serve = start_serve_logging_to(&dir.path().join("data"), &env, log.into()).await;
    let client = reqwest::Client::new();
    let response = client
        .get(format!("{}/api/v1/tickets/T-nobody", serve.base))
        .header("x-request-id", "json-log-test-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["x-request-id"], "json-log-test-1");
    let healthy = client
        .get(format!("{}/healthz", serve.base))
        .header("x-request-id", "json-log-test-2")
        .send()
        .await
        .unwrap();
    assert_eq!(healthy.status(), 200);
    // The response line is written (unbuffered) before the answer leaves the server.
    serve.child.kill().unwrap();
    serve.child.wait().unwrap();
    let text = std::fs::read_to_string(&log_path).unwrap();

    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(lines.iter().any(|l| l["fields"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("embedded payments mock started"))));
    assert!(
        lines
            .iter()
            .any(|l| l["span"]["request_id"] == "json-log-test-1"
                && l["span"]["route"] == "/api/v1/tickets/{id}"
                && l["fields"]["status"] == 401),
        "a line of the refused request names its id, route and status:\n{text}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l["span"]["request_id"] == "json-log-test-2"),
        "a fast answered request writes no line at info:\n{text}"
    );
}

#[test]
fn with_json_logs_a_refused_start_up_is_a_json_line_naming_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = refund_agent(&dir.path().join("data"))
        .env("LOG_FORMAT", "json")
        .env("PAYMENTS_URL", "http://127.0.0.1:9")
        .args(["serve", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        lines.iter().any(|l| l["level"] == "ERROR"
            && l["fields"]["error"]
                .as_str()
                .is_some_and(|e| e.contains("PAYMENTS_WEBHOOK_SECRET"))),
        "{stderr}"
    );
}

#[test]
fn staff_add_refuses_a_role_that_is_not_one_of_the_three() {
    let dir = tempfile::tempdir().unwrap();
    let out = refund_agent(&dir.path().join("data"))
        .args([
            "staff",
            "add",
            "--email",
            "a@b.test",
            "--role",
            "boss",
            "--password-stdin",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("agent, supervisor, admin"), "{stderr}");
    assert!(!dir.path().join("data").exists());
}

#[tokio::test]
async fn readyz_is_ready_when_database_migrations_and_index_are() {
    let app = crate::support::spawn_app().await;
    let (status, body) = app.request("GET", "/readyz", None, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["not_ready"], json!([]));
    assert_eq!(
        body["checks"],
        json!({"database": "ok", "migrations": "ok", "policy_index": "ok"})
    );
}

#[tokio::test]
async fn readyz_names_the_database_when_it_is_gone_while_healthz_stays_alive() {
    let app = crate::support::spawn_app().await;
    app.state.db.close().await;
    let (status, body) = app.request("GET", "/readyz", None, None).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not_ready");
    assert!(
        body["not_ready"]
            .as_array()
            .unwrap()
            .contains(&json!("database")),
        "{body}"
    );
    // Liveness asks nothing of the database: a supervisor must not restart a process
    // whose database is down.
    let (status, body) = app.request("GET", "/healthz", None, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ok");
}

#[tokio::test]
async fn readyz_names_the_migrations_when_one_is_not_applied() {
    let app = crate::support::spawn_app().await;
    sqlx::query(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
    )
    .execute(app.state.db.pool())
    .await
    .unwrap();
    let (status, body) = app.request("GET", "/readyz", None, None).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["not_ready"], json!(["migrations"]), "{body}");
}

#[tokio::test]
async fn readyz_names_the_policy_index_when_it_holds_other_policies() {
    let app = crate::support::spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let foreign =
        rag_index::PolicyIndex::open_or_build(dir.path(), &rag_index::generate::documents(1, 3))
            .unwrap();
    let mut state = app.state.clone();
    state.index = Arc::new(foreign);
    let router = web::router(state);
    let response = tower::ServiceExt::oneshot(
        router,
        axum::http::Request::get("/readyz")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 503);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["not_ready"], json!(["policy_index"]), "{body}");
}

/// `n` customers in CN, each charged twice (198.00 CNY) for one annual plan.
fn duplicate_charge_world(n: usize) -> Value {
    let (mut customers, mut orders, mut charges) = (vec![], vec![], vec![]);
    for i in 0..n {
        customers.push(
            json!({"id": format!("L-{i}"), "name": format!("Lifecycle {i}"),
            "email": format!("life{i}@example.test"), "region": "CN"}),
        );
        orders.push(
            json!({"id": format!("O-L{i}"), "customer_id": format!("L-{i}"),
            "product": "annual_plan", "amount": "198.00", "currency": "CNY",
            "created_at": "2026-11-20T09:00:00Z"}),
        );
        for (suffix, at) in [("a", "2026-11-20T09:00:05Z"), ("b", "2026-11-20T09:01:10Z")] {
            charges.push(
                json!({"id": format!("ch_l{i}{suffix}"), "order_id": format!("O-L{i}"),
                "customer_id": format!("L-{i}"), "amount": "198.00", "currency": "CNY",
                "captured": true, "status": "succeeded", "disputed": false, "created_at": at,
                "payment_method": "pm_card_visa_4242", "amount_refunded": "0.00"}),
            );
        }
    }
    json!({"customers": customers, "orders": orders, "charges": charges, "refunds": []})
}

struct Serve {
    child: std::process::Child,
    base: String,
}

/// A test that fails leaves no `serve` running behind it.
impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `serve` on a free port against the test's provider and database; returns once it
/// answers `/readyz`.
async fn start_serve(data: &std::path::Path, env: &[(&str, String)]) -> Serve {
    start_serve_logging_to(data, env, Stdio::null()).await
}

/// [`start_serve`], its log (stderr) going to `stderr`.
async fn start_serve_logging_to(
    data: &std::path::Path,
    env: &[(&str, String)],
    stderr: Stdio,
) -> Serve {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let serve = Serve {
        child: refund_agent(data)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap(),
        base: format!("http://127.0.0.1:{port}"),
    };
    for _ in 0..600 {
        if reqwest::get(format!("{}/readyz", serve.base))
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            return serve;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("serve did not become ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_work_drains_and_exits_zero_and_after_a_restart_every_case_finishes_once() {
    const APPROVED: usize = 4;
    const LATE: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let mock = crate::support::start_mock(dir.path()).await;
    let world = dir.path().join("world.json");
    std::fs::write(&world, duplicate_charge_world(APPROVED + LATE).to_string()).unwrap();
    let mut env = vec![
        ("PAYMENTS_URL", mock.base_url()),
        (
            "PAYMENTS_API_KEY",
            desk::config::DEFAULT_PAYMENTS_KEY.to_string(),
        ),
        (
            "PAYMENTS_WEBHOOK_SECRET",
            desk::config::DEFAULT_WEBHOOK_SECRET.to_string(),
        ),
    ];
    if let Some(url) = crate::support::fresh_postgres_url("rd_life").await {
        env.push(("DATABASE_URL", url));
    }
    let data = dir.path().join("app");
    let run = |args: &[&str]| {
        let out = refund_agent(&data)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let seeded = run(&["seed", "--world", world.to_str().unwrap()]);
    let agent = seeded
        .lines()
        .find(|l| l.contains("agent@refund-desk.test"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap()
        .to_string();
    let customers: Vec<String> = (0..APPROVED + LATE)
        .map(|i| {
            run(&["customer", "token", &format!("L-{i}")])
                .trim()
                .to_string()
        })
        .collect();
    let http = reqwest::Client::new();

    let mut serve = start_serve(&data, &env).await;
    let open = |serve_base: String, token: String| {
        let http = http.clone();
        async move {
            let ticket: Value = http
                .post(format!("{serve_base}/api/v1/tickets"))
                .bearer_auth(&token)
                .json(&json!({ "message": CHARGED_TWICE }))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            ticket["case"]["id"].as_str().unwrap().to_string()
        }
    };
    let mut approved_cases = Vec::new();
    for token in &customers[..APPROVED] {
        approved_cases.push(open(serve.base.clone(), token.clone()).await);
    }
    // Every refund call is held 1.5 s by the provider, so one is in flight at SIGTERM.
    let fault = http
        .post(format!("{}/__mock/faults", mock.base_url()))
        .json(&json!({ "mode": "latency", "ms": 1500, "method": "POST", "path": "/v1/refunds" }))
        .send()
        .await
        .unwrap();
    assert!(fault.status().is_success());
    for case_id in &approved_cases {
        let url = format!("{}/api/v1/cases/{case_id}", serve.base);
        let case = crate::support::poll_json(&http, &url, &agent, Duration::from_secs(60), |c| {
            c["status"] == "awaiting_approval"
        })
        .await;
        let approved = http
            .post(format!("{url}/approve"))
            .bearer_auth(&agent)
            .json(&json!({ "fingerprint": case["fingerprint"] }))
            .send()
            .await
            .unwrap();
        assert!(approved.status().is_success());
    }
    // New agent runs queued behind the refunds: work not yet claimed at SIGTERM.
    let mut late_cases = Vec::new();
    for token in &customers[APPROVED..] {
        late_cases.push(open(serve.base.clone(), token.clone()).await);
    }
    let first = format!("{}/api/v1/cases/{}", serve.base, approved_cases[0]);
    crate::support::poll_json(&http, &first, &agent, Duration::from_secs(30), |c| {
        c["refunds"][0]["status"] == "submitting"
    })
    .await;

    let signalled = Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &serve.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = loop {
        if let Some(status) = serve.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "serve did not exit within 10 s of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let stop_took = signalled.elapsed();
    assert!(status.success(), "serve exits 0 after SIGTERM: {status:?}");
    eprintln!("serve stopped {stop_took:?} after SIGTERM");

    // A graceful stop leaves no lease behind: the step in flight committed and released.
    let pool = lease_pool(&env, &data).await;
    for table in ["runs", "cases"] {
        let held: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM {table} WHERE lease_owner IS NOT NULL"
        )))
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(held, 0, "{table} leases left held after a graceful stop");
    }
    pool.close().await;

    // Restarted, everything finishes well inside the 60 s a dead process's lease lasts.
    let serve = start_serve(&data, &env).await;
    for case_id in &approved_cases {
        let url = format!("{}/api/v1/cases/{case_id}", serve.base);
        crate::support::poll_json(&http, &url, &agent, Duration::from_secs(45), |c| {
            c["status"] == "refund_succeeded"
        })
        .await;
    }
    for case_id in &late_cases {
        let url = format!("{}/api/v1/cases/{case_id}", serve.base);
        crate::support::poll_json(&http, &url, &agent, Duration::from_secs(45), |c| {
            c["status"] == "awaiting_approval"
        })
        .await;
    }
    let ledger: Value = http
        .get(format!("{}/__mock/ledger", mock.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let refunds = ledger["refunds"].as_array().unwrap();
    for i in 0..APPROVED + LATE {
        let ours = refunds
            .iter()
            .filter(|r| {
                r["charge"]
                    .as_str()
                    .is_some_and(|c| c.starts_with(&format!("ch_l{i}")))
            })
            .count();
        let expected = usize::from(i < APPROVED);
        assert_eq!(
            ours, expected,
            "customer L-{i}: {expected} provider refund(s): {ledger:#}"
        );
    }
    drop(serve);
    mock.shutdown().await;
}

/// The test's database, opened apart from `serve` to look at leases.
async fn lease_pool(env: &[(&str, String)], data: &std::path::Path) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let url = env
        .iter()
        .find(|(k, _)| *k == "DATABASE_URL")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| store::Db::sqlite_url(data));
    sqlx::AnyPool::connect(&url).await.unwrap()
}
