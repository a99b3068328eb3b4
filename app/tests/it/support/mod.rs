//! `spawn_app()`: a fresh database (SQLite file, or a fresh PostgreSQL database when
//! `TEST_DATABASE_URL` is set), the real payments mock on a loopback port, the policy
//! index built from `fixtures/`, the demo world loaded, and typed helpers.
//!
//! Long because it is the one place the shared test helpers live: one helper per need, no
//! copies in the test files.

#![allow(dead_code)]

pub mod browser;
pub mod idp;
pub mod logs;
pub mod mail;
pub mod pg_cluster;
pub mod serve;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::agent::investigator::Investigator;
use desk::agent::Model;
use desk::auth::{self, StaffRole};
use desk::clock::ManualClock;
use desk::config::Config;
use desk::state::Services;
use desk::world::World;
use serde_json::{json, Value};
use tower::ServiceExt;

pub const NOW: &str = "2026-11-29T10:00:00Z";

pub struct TestApp {
    pub state: Services,
    pub router: axum::Router,
    pub mock: payments_mock::RunningMock,
    pub clock: Arc<ManualClock>,
    pub agent_token: String,
    pub supervisor_token: String,
    pub dir: tempfile::TempDir,
    /// The database this app runs on (a second instance can be built on it).
    pub database_url: String,
    http: reqwest::Client,
}

pub fn demo_world_text() -> String {
    std::fs::read_to_string(desk::config::default_fixtures_dir().join("billing/demo.json"))
        .expect("the demo world ships in fixtures/")
}

/// A fresh PostgreSQL database (named `{prefix}_{random}`) under `TEST_DATABASE_URL`,
/// or `None` to use SQLite.
pub async fn fresh_postgres_url(prefix: &str) -> Option<String> {
    let base = std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())?;
    sqlx::any::install_default_drivers();
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    let admin = sqlx::AnyPool::connect(&base)
        .await
        .expect("TEST_DATABASE_URL must be reachable");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .expect("creating a test database");
    admin.close().await;
    let (prefix, _) = base
        .rsplit_once('/')
        .expect("a postgres url ends with /database");
    Some(format!("{prefix}/{name}"))
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with_model(Arc::new(Investigator)).await
}

/// The payments mock on a loopback port, its ledger under `dir/payments`.
pub async fn start_mock(dir: &std::path::Path) -> payments_mock::RunningMock {
    payments_mock::start(
        payments_mock::MockConfig::new(dir.join("payments")),
        "127.0.0.1:0".parse().expect("a socket address"),
    )
    .await
    .expect("the payments mock starts")
}

/// `spawn_app()`, on a payments mock whose configuration `edit` changed first (its
/// idempotency window, say).
pub async fn spawn_app_with_provider(edit: impl FnOnce(&mut payments_mock::MockConfig)) -> TestApp {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut config = payments_mock::MockConfig::new(dir.path().join("payments"));
    edit(&mut config);
    let mock = payments_mock::start(config, "127.0.0.1:0".parse().expect("a socket address"))
        .await
        .expect("the payments mock starts");
    spawn_app_on(dir, mock, Arc::new(Investigator), |_| {}).await
}

pub async fn spawn_app_with_model(model: Arc<dyn Model>) -> TestApp {
    spawn_app_configured(model, |_| {}).await
}

/// `spawn_app_with_model`, with the configuration changed by `edit` before the state is
/// built (the mail settings).
pub async fn spawn_app_configured(
    model: Arc<dyn Model>,
    edit: impl FnOnce(&mut Config),
) -> TestApp {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mock = start_mock(dir.path()).await;
    spawn_app_on(dir, mock, model, edit).await
}

/// The demo world loaded into `mock` and into a fresh database in `dir`, and the app on both.
async fn spawn_app_on(
    dir: tempfile::TempDir,
    mock: payments_mock::RunningMock,
    model: Arc<dyn Model>,
    edit: impl FnOnce(&mut Config),
) -> TestApp {
    desk::world::load_into_provider(&mock.base_url(), &demo_world_text())
        .await
        .expect("world loads into the mock");
    let database_url = test_database_url(dir.path()).await;
    let app = app_on(dir, mock, database_url, model, edit).await;
    World::parse(&demo_world_text())
        .unwrap()
        .load_into(&app.state.db)
        .await
        .expect("world loads into the app");
    app
}

/// A fresh PostgreSQL database under `TEST_DATABASE_URL`, else a SQLite file in `dir`.
pub async fn test_database_url(dir: &std::path::Path) -> String {
    match fresh_postgres_url("rd_test").await {
        Some(url) => url,
        None => store::Db::sqlite_url(dir),
    }
}

/// The app on `database_url` (whatever it already holds) and `mock`, with the test
/// settings, `configure` applied last, and two staff tokens; no world is loaded.
pub async fn app_on(
    dir: tempfile::TempDir,
    mock: payments_mock::RunningMock,
    database_url: String,
    model: Arc<dyn Model>,
    configure: impl FnOnce(&mut Config),
) -> TestApp {
    let mut config = settings::config_from_env(dir.path());
    config.database_url = database_url;
    config.payments_url = Some(mock.base_url());
    config.fixtures_dir = desk::config::default_fixtures_dir();
    config.provider_backoff = std::time::Duration::from_millis(5);
    config.provider_timeout = std::time::Duration::from_secs(5);
    // Tests read the gauges right after the change they count.
    config.metrics_cache = std::time::Duration::ZERO;
    configure(&mut config);

    let clock = Arc::new(ManualClock::new(
        time::OffsetDateTime::parse(NOW, &time::format_description::well_known::Rfc3339).unwrap(),
    ));
    let state = desk::build_state(&config, &mock.base_url(), clock.clone(), model)
        .await
        .expect("state builds");
    // As `serve` registers them: the worker's pass does the customer data's chores.
    let state = app::cli::with_chores(state);

    let now = clock_ms(&clock);
    let mut tokens = Vec::new();
    for (email, role) in [
        ("agent@test.example", StaffRole::Agent),
        ("supervisor@test.example", StaffRole::Supervisor),
    ] {
        let staff = auth::upsert_staff(&state.db, email, role, "correct horse battery", now)
            .await
            .unwrap();
        tokens.push(
            auth::issue_token(&state.db, "api", "staff", &staff.id, now)
                .await
                .unwrap()
                .0,
        );
    }
    let router = web::router(state.clone());
    TestApp {
        database_url: config.database_url.clone(),
        state,
        router,
        mock,
        clock,
        supervisor_token: tokens.pop().unwrap(),
        agent_token: tokens.pop().unwrap(),
        dir,
        http: reqwest::Client::new(),
    }
}

fn clock_ms(clock: &ManualClock) -> i64 {
    use desk::clock::Clock;
    clock.now_ms()
}

impl TestApp {
    /// Sends a request through the router (no socket) and returns status and JSON body.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut builder = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            builder = builder.header("authorization", format!("Bearer {t}"));
        }
        let request = match body {
            Some(b) => builder
                .header("content-type", "application/json")
                .body(Body::from(b.to_string()))
                .unwrap(),
            None => builder.body(Body::empty()).unwrap(),
        };
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 16 << 20)
            .await
            .unwrap();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    /// Sends a request through the router and returns the whole response (headers too).
    pub async fn response(&self, request: Request<Body>) -> axum::response::Response {
        self.router.clone().oneshot(request).await.unwrap()
    }

    pub async fn raw(&self, request: Request<Body>) -> (StatusCode, String) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 16 << 20)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Issues fresh staff tokens (after moving the clock past their 30-day life).
    pub async fn renew_tokens(&mut self) {
        let now = clock_ms(&self.clock);
        for (email, slot) in [
            ("agent@test.example", &mut self.agent_token),
            ("supervisor@test.example", &mut self.supervisor_token),
        ] {
            let staff = auth::staff_by_email(&self.state.db, email)
                .await
                .unwrap()
                .unwrap();
            *slot = auth::issue_token(&self.state.db, "api", "staff", &staff.id, now)
                .await
                .unwrap()
                .0;
        }
    }

    /// A staff member with `role` (`{role}@test.example`, made on first use) and a fresh
    /// API token of theirs.
    #[allow(dead_code)] // Used by some test binaries.
    pub async fn staff_token(&self, role: StaffRole) -> String {
        let now = clock_ms(&self.clock);
        let email = format!("{}@test.example", role.as_str());
        let staff = match auth::staff_by_email(&self.state.db, &email).await.unwrap() {
            Some(staff) => staff,
            None => auth::upsert_staff(&self.state.db, &email, role, "correct horse battery", now)
                .await
                .unwrap(),
        };
        auth::issue_token(&self.state.db, "api", "staff", &staff.id, now)
            .await
            .unwrap()
            .0
    }

    /// A console session for a staff member: the `rd_session=…` cookie and its CSRF token.
    pub async fn staff_session(&self, email: &str) -> (String, String) {
        let staff = auth::staff_by_email(&self.state.db, email)
            .await
            .unwrap()
            .unwrap();
        let (token, csrf) = auth::issue_token(
            &self.state.db,
            "session",
            "staff",
            &staff.id,
            clock_ms(&self.clock),
        )
        .await
        .unwrap();
        (format!("rd_session={token}"), csrf.unwrap())
    }

    /// A single-use sign-in link's path for a customer (`/sign-in?link=…`), as
    /// `refund-agent customer link` prints it, leading to `next` once used.
    pub async fn sign_in_link(&self, customer_id: &str, next: &str) -> String {
        let token = auth::issue_sign_in_link(&self.state.db, customer_id, clock_ms(&self.clock))
            .await
            .unwrap();
        format!("/sign-in?link={token}&next={next}")
    }

    /// Signs in through a link as a browser would (the page, then its form's POST) and
    /// returns the session cookie (`rd_customer=…`) it sets, and the CSRF token of that
    /// session.
    pub async fn customer_cookie(&self, customer_id: &str) -> (String, String) {
        let link = self.sign_in_link(customer_id, "/tickets").await;
        let (status, page) = self
            .raw(Request::get(&link).body(Body::empty()).unwrap())
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let token = link
            .split("link=")
            .nth(1)
            .and_then(|rest| rest.split('&').next())
            .unwrap();
        assert!(page.contains(token), "the page posts the link back: {page}");
        let response = self
            .router
            .clone()
            .oneshot(
                Request::post("/sign-in")
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(Body::from(format!("link={token}&next=/tickets")))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let set_cookie = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Lax"),
            "{set_cookie}"
        );
        let cookie = set_cookie.split(';').next().unwrap().to_string();
        let session = cookie.trim_start_matches("rd_customer=");
        let resolved = auth::resolve(&self.state.db, session, clock_ms(&self.clock))
            .await
            .unwrap()
            .unwrap();
        (cookie, resolved.csrf_token.unwrap())
    }

    /// `GET /api/v1/tickets/{ticket_id}` with a fresh API token of `customer_id`.
    pub async fn customer_ticket(
        &self,
        customer_id: &str,
        ticket_id: &str,
    ) -> (axum::http::StatusCode, serde_json::Value) {
        let token = self.customer_token(customer_id).await;
        let path = format!("/api/v1/tickets/{ticket_id}");
        self.request("GET", &path, Some(&token), None).await
    }

    pub async fn customer_token(&self, customer_id: &str) -> String {
        auth::issue_token(
            &self.state.db,
            "api",
            "customer",
            customer_id,
            clock_ms(&self.clock),
        )
        .await
        .unwrap()
        .0
    }

    /// Opens a ticket as the customer through the API, leaving the worker alone;
    /// returns the ticket as the API answered it (with its case).
    pub async fn post_ticket(&self, customer_id: &str, message: &str) -> Value {
        let token = self.customer_token(customer_id).await;
        let (status, ticket) = self
            .request(
                "POST",
                "/api/v1/tickets",
                Some(&token),
                Some(json!({ "message": message })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{ticket}");
        ticket
    }

    /// Opens a ticket as the customer and lets the worker finish the investigation.
    pub async fn open_ticket(&self, customer_id: &str, message: &str) -> (String, Value) {
        let ticket = self.post_ticket(customer_id, message).await;
        self.drain().await;
        let id = ticket["id"].as_str().unwrap().to_string();
        let case_id = ticket["case"]["id"].as_str().unwrap().to_string();
        let mut case = self.case(&case_id).await;
        // Under heavy parallel load a provider read can fail once; the run then waits
        // for its dependency (runs::DEPENDENCY_RETRY_MS) and is retried, as in production.
        for _ in 0..3 {
            if case["status"] != "investigating" {
                break;
            }
            self.clock.advance(time::Duration::milliseconds(
                desk::runs::DEPENDENCY_RETRY_MS + 1,
            ));
            self.drain().await;
            case = self.case(&case_id).await;
        }
        (id, case)
    }

    /// An earlier ticket of `customer_id` whose duplicate charge was refunded
    /// through the desk (the supervisor approves, the worker sends); then an hour passes,
    /// so the customer may open more. Returns the ticket id and its case.
    #[allow(dead_code)] // Used by the binaries that show a customer's history.
    pub async fn refunded_ticket(&self, customer_id: &str) -> (String, Value) {
        let (ticket_id, case) = self
            .open_ticket(customer_id, "I was charged twice for my annual plan")
            .await;
        assert_eq!(case["status"], "awaiting_approval", "{case:#}");
        let case_id = case["id"].as_str().unwrap().to_string();
        let fingerprint = case["fingerprint"].as_str().unwrap().to_string();
        let (status, body) = self
            .approve(&self.supervisor_token, &case_id, &fingerprint)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        self.drain().await;
        let case = self.case(&case_id).await;
        assert_eq!(case["status"], "refund_succeeded", "{case:#}");
        self.clock.advance(time::Duration::minutes(61));
        (ticket_id, case)
    }

    /// `count` more tickets of `customer_id`, an hour apart (under the tickets-
    /// per-hour limit), left for the worker; their ids, oldest first.
    #[allow(dead_code)] // Used by the binaries that show a customer's history.
    pub async fn many_tickets(&self, customer_id: &str, count: usize) -> Vec<String> {
        let mut ids = Vec::new();
        for n in 0..count {
            let ticket = self
                .post_ticket(
                    customer_id,
                    &format!("Question number {n} about my account"),
                )
                .await;
            ids.push(ticket["id"].as_str().unwrap().to_string());
            self.clock.advance(time::Duration::minutes(61));
        }
        ids
    }

    pub async fn case(&self, case_id: &str) -> Value {
        let (status, case) = self
            .request(
                "GET",
                &format!("/api/v1/cases/{case_id}"),
                Some(&self.agent_token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{case}");
        case
    }

    pub async fn approve(
        &self,
        token: &str,
        case_id: &str,
        fingerprint: &str,
    ) -> (StatusCode, Value) {
        self.request(
            "POST",
            &format!("/api/v1/cases/{case_id}/approve"),
            Some(token),
            Some(json!({ "fingerprint": fingerprint })),
        )
        .await
    }

    /// A supervisor closes a case through the API. Tests that open ticket after ticket
    /// about one order close each case first: a second ticket about an order with an
    /// open case joins that case.
    pub async fn close_case(&self, case_id: &str) {
        let (code, body) = self
            .request(
                "POST",
                &format!("/api/v1/cases/{case_id}/close"),
                Some(&self.supervisor_token),
                Some(json!({ "reason": "done with this round of the test" })),
            )
            .await;
        assert_eq!(code, StatusCode::OK, "{body}");
    }

    /// The agent writes on a case through the API: a reply, or an internal note.
    pub async fn staff_message(&self, case_id: &str, text: &str, internal: bool) {
        let (code, body) = self
            .request(
                "POST",
                &format!("/api/v1/cases/{case_id}/messages"),
                Some(&self.agent_token),
                Some(json!({ "text": text, "internal": internal })),
            )
            .await;
        assert!(code.is_success(), "{code}: {body}");
    }

    pub async fn drain(&self) {
        desk::worker::drain(&self.state)
            .await
            .expect("the worker drains without error");
    }

    /// The provider's refunds on a charge, read over HTTP from the mock.
    pub async fn provider_refunds(&self, charge_id: &str) -> Vec<Value> {
        let resp: Value = self
            .http
            .get(format!(
                "{}/v1/refunds?charge={charge_id}&limit=100",
                self.mock.base_url()
            ))
            .bearer_auth("sk_test_refund_desk")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        resp["data"].as_array().cloned().unwrap_or_default()
    }

    /// Makes a refund at the provider directly, as a dashboard user would.
    pub async fn refund_elsewhere(&self, charge_id: &str, amount_minor: i64) {
        let resp = self
            .http
            .post(format!("{}/v1/refunds", self.mock.base_url()))
            .bearer_auth("sk_test_refund_desk")
            .form(&[("charge", charge_id), ("amount", &amount_minor.to_string())])
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
    }
}

/// Polls `url` (a bearer-authenticated JSON endpoint of a real `serve` process) until `ok`
/// holds of its JSON, for at most `limit`.
pub async fn poll_json(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    limit: std::time::Duration,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let started = std::time::Instant::now();
    let mut last = Value::Null;
    while started.elapsed() < limit {
        if let Ok(r) = http.get(url).bearer_auth(token).send().await {
            if let Ok(v) = r.json::<Value>().await {
                if ok(&v) {
                    return v;
                }
                last = v;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("condition never held within {limit:?} at {url}; last: {last:#}");
}

/// `message` from the demo customer C-100 as a historical ticket: the date of the live
/// tests' tickets, and the demo world (the one loaded into the app and the mock) as its
/// snapshot, so a replay and a live run read the same records.
#[allow(dead_code)] // Used by the test binaries that replay (harness, subagents).
pub fn demo_historical(message: &str) -> shadow::replay::HistoricalTicket {
    let now = time::OffsetDateTime::parse(NOW, &time::format_description::well_known::Rfc3339)
        .expect("NOW is RFC 3339");
    shadow::replay::HistoricalTicket {
        id: "H-DEMO".into(),
        created_at: now,
        customer_id: "C-100".into(),
        order_id: None,
        messages: vec![shadow::replay::HistoricalMessage {
            from: "customer".into(),
            text: message.into(),
            at: now,
            extra: Default::default(),
        }],
        world: desk::world::World::parse(&demo_world_text()).expect("the demo world parses"),
        human: shadow::replay::HumanDecision {
            outcome: shadow::replay::CaseOutcome::Refund,
            reason: policy_engine::ReasonCode::DuplicateCharge,
            refunds: vec![],
            decided_by: "agent:test".into(),
            extra: Default::default(),
        },
        extra: Default::default(),
    }
}

impl TestApp {
    /// One JSON-RPC request to `POST /mcp` with `token` as the bearer.
    #[allow(dead_code)] // Used by some test binaries.
    pub async fn mcp_as(&self, token: &str, method: &str, params: Value) -> (StatusCode, Value) {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let request = Request::post("/mcp")
            .header("host", "refunds.example.com")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, text) = self.raw(request).await;
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// One MCP tool call as the supervisor over stdio (`web::mcp::call`, as `refund-agent
    /// mcp` makes it), its outcome and the staff member who made it.
    #[allow(dead_code)] // Used by the MCP and sub-agent test binaries.
    pub async fn mcp_as_supervisor(
        &self,
        tool: &str,
        arguments: Value,
    ) -> (desk::agent::ToolOutcome, desk::auth::Staff) {
        let staff = desk::auth::staff_by_email(&self.state.db, "supervisor@test.example")
            .await
            .expect("staff lookup")
            .expect("the supervisor is seeded");
        let surface = web::mcp::Surface::Stdio;
        let called = web::mcp::call(&self.state, &staff, surface, tool, arguments)
            .await
            .expect("the call is answered");
        let web::mcp::Called::Outcome(outcome) = called else {
            panic!("{tool} is a tool: {called:?}");
        };
        (outcome, staff)
    }
}

/// What a test model does before each turn of the built-in investigator: wait a while,
/// count, stop at a gate. [`BeforeTurns`] makes it a model.
pub trait BeforeTurn: Send + Sync {
    fn before<'a>(
        &'a self,
        ctx: &'a desk::agent::ModelContext<'a>,
    ) -> desk::agent::BoxFuture<'a, ()>;
}

/// The built-in investigator, with `B::before` awaited ahead of each of its turns.
pub struct BeforeTurns<B>(pub B);

impl<B: BeforeTurn> Model for BeforeTurns<B> {}

impl<B: BeforeTurn> harness::Model<desk::agent::Proposal> for BeforeTurns<B> {
    fn name(&self) -> String {
        "builtin-investigator".into()
    }
    fn next_turn<'a>(
        &'a self,
        ctx: &'a desk::agent::ModelContext<'a>,
    ) -> desk::agent::BoxFuture<'a, anyhow::Result<desk::agent::ModelTurn>> {
        Box::pin(async move {
            self.0.before(ctx).await;
            harness::Model::next_turn(&Investigator, ctx).await
        })
    }
}
