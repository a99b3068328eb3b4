//! One scenario's isolated environment: a temp directory with its own SQLite database
//! and payments mock (on `127.0.0.1:0`), a `ManualClock` at the scenario's date, the
//! suite's shared policy index linked in, two reviewers, and the typed requests the
//! timeline and the graders make (the router without a socket, the mock's admin API).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::agent::{BoxFuture, Model, ModelContext, ModelReply, ModelTurn};
use desk::auth::{self, StaffRole};
use desk::clock::{Clock, ManualClock};
use desk::config::Config;
use desk::state::Services;
use desk::world::World;
use serde_json::{json, Value};
use tempfile::TempDir;
use tower::ServiceExt;

use super::scenario::{FingerprintChoice, Role, Scenario};

/// What every scenario shares: the policy index, built once.
pub(crate) struct Shared {
    fixtures_dir: PathBuf,
    index_dir: PathBuf,
    _root: TempDir,
}

impl Shared {
    pub(crate) async fn build(fixtures_dir: &Path) -> anyhow::Result<Shared> {
        let root = temp_dir("suite")?;
        let index_dir = root.path().join("policy-index");
        let policies = desk::policies::load_policy_set(&fixtures_dir.join("policies"))?;
        let dir = index_dir.clone();
        tokio::task::spawn_blocking(move || desk::policies::open_index(&dir, &policies)).await??;
        Ok(Shared {
            fixtures_dir: fixtures_dir.to_path_buf(),
            index_dir,
            _root: root,
        })
    }
}

/// A temporary directory of the suite, removed when dropped.
fn temp_dir(what: &str) -> anyhow::Result<TempDir> {
    Ok(tempfile::Builder::new()
        .prefix(&format!("refund-desk-eval-{what}-"))
        .tempdir()?)
}

/// A model that never returns from its `trip_at`-th call, as if the process died there.
pub(crate) struct CrashingModel {
    inner: Arc<dyn Model>,
    calls: AtomicUsize,
    pub(crate) trip_at: AtomicUsize,
    pub(crate) tripped: tokio::sync::Notify,
}

impl desk::agent::Model for CrashingModel {}

impl harness::Model<desk::agent::Proposal> for CrashingModel {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>> {
        Box::pin(async move { Ok(self.next_reply(ctx).await?.turn) })
    }

    fn next_reply<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelReply>> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.trip_at.load(Ordering::SeqCst) {
                self.tripped.notify_one();
                std::future::pending::<()>().await;
            }
            self.inner.next_reply(ctx).await
        })
    }
}

/// What happened while the scenario ran, for the graders.
#[derive(Default)]
pub(crate) struct Trace {
    /// Refund ids the scenario itself made at the provider (dashboard refunds).
    pub(crate) made_elsewhere: BTreeSet<String>,
    /// App refunds the provider held right before the first approval that succeeded.
    pub(crate) refunds_before_first_approval: Option<BTreeSet<String>>,
    /// An approval returned 200.
    pub(crate) approved: bool,
    /// Each action's outcome against its expectation: (what, ok, detail).
    pub(crate) actions: Vec<(String, bool, String)>,
    /// Disturbances that could not be applied as written.
    pub(crate) disturbance_notes: Vec<String>,
    pub(crate) first_fingerprint: Option<String>,
    pub(crate) reconcile: Option<desk::reconcile::ReconcileReport>,
}

/// Everything one scenario runs against, and what happened to it.
pub(crate) struct Env {
    _dir: TempDir,
    pub(crate) mock: payments_mock::RunningMock,
    pub(crate) state: Services,
    pub(crate) router: axum::Router,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) agent_id: String,
    pub(crate) supervisor_id: String,
    pub(crate) http: reqwest::Client,
    pub(crate) crash: Option<Arc<CrashingModel>>,
    pub(crate) webhook_server: Option<AbortOnDrop>,
    pub(crate) world: World,
    pub(crate) ticket_id: Option<String>,
    pub(crate) case_id: Option<String>,
    pub(crate) trace: Trace,
}

/// A spawned task aborted when dropped (the webhook receiver dies with its scenario).
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) const API_KEY: &str = desk::config::DEFAULT_PAYMENTS_KEY;

impl Env {
    pub(crate) async fn start(
        shared: &Shared,
        scenario: &Scenario,
        model: Arc<dyn Model>,
    ) -> anyhow::Result<Env> {
        let dir = temp_dir("scenario")?;
        let mock = payments_mock::start(
            payments_mock::MockConfig::new(dir.path().join("payments")),
            "127.0.0.1:0".parse().expect("a literal socket address"),
        )
        .await
        .map_err(|e| anyhow!("starting the payments mock: {e}"))?;
        let world_text = scenario.world.to_string();
        desk::world::load_into_provider(&mock.base_url(), &world_text).await?;
        let world = World::parse(&world_text)?;
        let config = scenario_config(shared, scenario, dir.path(), &mock.base_url())?;
        let crash = scenario.disturbances.crash_at_model_call.map(|n| {
            Arc::new(CrashingModel {
                inner: model.clone(),
                calls: AtomicUsize::new(0),
                trip_at: AtomicUsize::new(n),
                tripped: tokio::sync::Notify::new(),
            })
        });
        let model: Arc<dyn Model> = match &crash {
            Some(c) => c.clone(),
            None => model,
        };
        let clock = Arc::new(ManualClock::new(scenario.now));
        let state = desk::build_state(&config, &mock.base_url(), clock.clone(), model).await?;
        // As `serve` registers them: the worker's pass does the customer data's chores.
        let state = customer_data::Lifecycle::register(state);
        world.load_into(&state.db).await?;
        let (agent_id, supervisor_id) = add_staff(&state.db, clock.now_ms()).await?;
        let router = web::router(state.clone());
        let mut env = Env {
            _dir: dir,
            mock,
            state,
            router,
            clock,
            agent_id,
            supervisor_id,
            http: reqwest::Client::new(),
            crash,
            webhook_server: None,
            world,
            ticket_id: None,
            case_id: None,
            trace: Trace::default(),
        };
        env.align_mock_clock(scenario).await?;
        if scenario.webhooks {
            env.serve_webhooks().await?;
        }
        Ok(env)
    }

    /// The mock signs webhooks with its own clock (wall time plus an offset) and the
    /// app checks them against its clock with a 300 s tolerance: bring the mock up to
    /// the scenario's date when that lies ahead (the mock's clock only moves forward).
    async fn align_mock_clock(&self, scenario: &Scenario) -> anyhow::Result<()> {
        let mock_now = self.ledger().await?["clock"]["now"].as_i64().unwrap_or(0);
        let ahead = scenario.now.unix_timestamp() - mock_now;
        if ahead > 0 {
            self.mock_admin("POST", "/__mock/clock", json!({ "advance_seconds": ahead }))
                .await?;
        }
        Ok(())
    }

    /// Serves the router on a loopback socket and has the mock deliver its signed
    /// webhooks there, retrying patiently.
    async fn serve_webhooks(&mut self) -> anyhow::Result<()> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let router = self.router.clone();
        self.webhook_server = Some(AbortOnDrop(tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        })));
        desk::webhooks::point_provider_webhooks(&self.mock.base_url(), &url).await?;
        self.install_faults(&[
            json!({"mode": "webhook_retry_policy", "attempts": 20, "backoff_ms": 50}),
        ])
        .await
    }

    pub(crate) fn base(&self) -> String {
        self.mock.base_url()
    }

    pub(crate) async fn token(&self, kind: &str, id: &str) -> anyhow::Result<String> {
        Ok(
            auth::issue_token(&self.state.db, "api", kind, id, self.clock.now_ms())
                .await?
                .0,
        )
    }

    pub(crate) async fn staff_token(&self, role: Role) -> anyhow::Result<String> {
        let id = match role {
            Role::Agent => self.agent_id.clone(),
            Role::Supervisor => self.supervisor_id.clone(),
        };
        self.token("staff", &id).await
    }

    /// A request through the router (no socket): status and JSON body.
    pub(crate) async fn request(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(StatusCode, Value)> {
        let builder = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        let request = match body {
            Some(b) => builder
                .header("content-type", "application/json")
                .body(Body::from(b.to_string()))?,
            None => builder.body(Body::empty())?,
        };
        let response = self.router.clone().oneshot(request).await?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 4 << 20).await?;
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Ok((status, value))
    }

    pub(crate) async fn mock_admin(
        &self,
        method: &str,
        path: &str,
        body: Value,
    ) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base());
        let request = match method {
            "POST" => self.http.post(url).json(&body),
            "DELETE" => self.http.delete(url),
            _ => self.http.get(url),
        };
        let resp = request.send().await?;
        let status = resp.status();
        let text = resp.text().await?;
        if !status.is_success() {
            bail!("{method} {path}: {status} {text}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub(crate) async fn ledger(&self) -> anyhow::Result<Value> {
        self.mock_admin("GET", "/__mock/ledger", Value::Null).await
    }

    pub(crate) async fn install_faults(&self, rules: &[Value]) -> anyhow::Result<()> {
        if !rules.is_empty() {
            self.mock_admin("POST", "/__mock/faults", Value::Array(rules.to_vec()))
                .await?;
        }
        Ok(())
    }

    /// Refunds created through the provider's API that the scenario did not make itself.
    pub(crate) async fn app_refunds(&self) -> anyhow::Result<Vec<Value>> {
        let ledger = self.ledger().await?;
        Ok(ledger["refunds"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r["origin"] == "api")
            .filter(|r| {
                !self
                    .trace
                    .made_elsewhere
                    .contains(r["id"].as_str().unwrap_or_default())
            })
            .collect())
    }

    pub(crate) async fn drain(&self, state: &Services) -> anyhow::Result<()> {
        desk::worker::drain(state)
            .await
            .map_err(|e| anyhow!("the worker failed: {e}"))
    }

    pub(crate) async fn case_view(&self) -> anyhow::Result<Value> {
        let id = self.case_id.as_deref().context("no case was opened")?;
        let case = desk::cases::load_case(&self.state.db, id)
            .await?
            .context("the case vanished")?;
        Ok(serde_json::to_value(
            desk::views::case_view(&self.state.db, &case).await?,
        )?)
    }

    pub(crate) async fn ticket_view(&self) -> anyhow::Result<Value> {
        let id = self.ticket_id.as_deref().context("no ticket was opened")?;
        let ticket = desk::tickets::load_ticket(&self.state.db, id)
            .await?
            .context("the ticket vanished")?;
        Ok(serde_json::to_value(
            desk::customer::ticket_view(&self.state.db, &ticket).await?,
        )?)
    }

    pub(crate) async fn fingerprint(&self, choice: FingerprintChoice) -> anyhow::Result<String> {
        let current = self.case_view().await?["fingerprint"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Ok(match choice {
            FingerprintChoice::Current => current,
            FingerprintChoice::Stale => {
                let mut stale = current.clone();
                let flipped = if current.starts_with('0') { "1" } else { "0" };
                if stale.is_empty() {
                    stale.push_str(flipped);
                } else {
                    stale.replace_range(0..1, flipped);
                }
                stale
            }
            FingerprintChoice::First => self.trace.first_fingerprint.clone().unwrap_or(current),
        })
    }

    /// docs/spec/invariants.md #1, measured: which app refunds exist right before an approval.
    pub(crate) async fn checkpoint_before_approval(&mut self) -> anyhow::Result<()> {
        if self.trace.refunds_before_first_approval.is_none() {
            let ids = self
                .app_refunds()
                .await?
                .iter()
                .filter_map(|r| r["id"].as_str().map(str::to_string))
                .collect();
            self.trace.refunds_before_first_approval = Some(ids);
        }
        Ok(())
    }

    pub(crate) fn record(&mut self, what: String, ok: bool, detail: String) {
        self.trace.actions.push((what, ok, detail));
    }
}

/// The app's configuration for one scenario: its own SQLite file, the scenario's
/// provider and timeout, the suite's shared index, no LLM.
fn scenario_config(
    shared: &Shared,
    scenario: &Scenario,
    dir: &Path,
    provider_url: &str,
) -> anyhow::Result<Config> {
    // The shared index, linked in: opening an index reads it and writes nothing.
    #[cfg(unix)]
    std::os::unix::fs::symlink(&shared.index_dir, dir.join("policy-index"))?;
    let mut config = settings::config_from_env(dir);
    config.database_url = store::Db::sqlite_url(dir);
    config.payments_url = Some(provider_url.to_string());
    config.fixtures_dir = shared.fixtures_dir.clone();
    config.provider_backoff = Duration::from_millis(5);
    config.provider_timeout = Duration::from_millis(scenario.provider_timeout_ms.unwrap_or(1000));
    config.llm = None;
    Ok(config)
}

/// The scenario's two reviewers: an agent and a supervisor (their ids).
async fn add_staff(db: &store::Db, now: i64) -> anyhow::Result<(String, String)> {
    let agent = auth::upsert_staff(
        db,
        "agent@eval.example",
        StaffRole::Agent,
        "eval-agent-password",
        now,
    )
    .await?;
    let supervisor = auth::upsert_staff(
        db,
        "supervisor@eval.example",
        StaffRole::Supervisor,
        "eval-supervisor-password",
        now,
    )
    .await?;
    Ok((agent.id, supervisor.id))
}
