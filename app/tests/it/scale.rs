//! Several instances, one database (docs/spec/interfaces.md, "Storage and scale"): each test builds a small "cluster" of
//! `Services`s — each with its own data dir and policy index, all on ONE database
//! (a fresh PostgreSQL database when `TEST_DATABASE_URL` is set, else one SQLite file
//! shared by every instance's pool) and one payments mock — and races their workers,
//! approvals and webhook receivers against each other. Instances are "killed" by
//! aborting their task mid-call; the shared `ManualClock` then moves past the lease and
//! another instance must finish the work, without a second provider refund.
//!
//! SQLite note: every instance holds its own one-connection pool on the same file, so
//! writes from different instances queue on SQLite's single writer (`busy_timeout`), and
//! a read-then-write transaction can fail with `SQLITE_BUSY` when another instance wrote
//! in between. A failed worker pass is what `serve` logs and retries on its next tick,
//! so the racing phases here count such failures (and fail on them on PostgreSQL, which
//! has none of these limits) and end with passes that must succeed.
//!
//! Long because each multi-instance scenario builds its own world and instances; one
//! area, one binary.
//!
//! Over 600 lines on purpose: the races share one cluster builder and its kill helpers,
//! and each test is a whole scenario read top to bottom.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::agent::investigator::Investigator;
use desk::auth::{self, StaffRole};
use desk::clock::{Clock, ManualClock};
use desk::state::Services;
use desk::world::World;
use futures_util::future::join_all;
use serde_json::{json, Value};
use sqlx::Row;
use tower::ServiceExt;

const NOW: &str = "2026-11-29T10:00:00Z";
const CHARGED_TWICE: &str = "I was charged twice for my annual plan";
const SECRET: &str = "whsec_test_refund_desk";

/// One instance of the app: its state (own data dir, own index, own pool) and router.
struct Instance {
    state: Services,
    router: axum::Router,
}

struct Cluster {
    instances: Vec<Instance>,
    mock: payments_mock::RunningMock,
    clock: Arc<ManualClock>,
    supervisor_token: String,
    customers: Vec<String>,
    postgres: bool,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// `n` customers, each charged twice for one annual plan (the demo's C-100 scenario),
/// across the four regions and their currencies.
fn duplicate_charge_world(n: usize) -> Value {
    let plans = [
        ("CN", "CNY", "198.00"),
        ("US", "USD", "120.00"),
        ("EU", "EUR", "99.00"),
        ("JP", "JPY", "12000"),
    ];
    let (mut customers, mut orders, mut charges) = (vec![], vec![], vec![]);
    for i in 0..n {
        let (region, currency, amount) = plans[i % plans.len()];
        let customer = format!("S-{i:04}");
        let order = format!("O-S{i:04}");
        customers.push(
            json!({"id": customer, "name": format!("Scale Customer {i}"),
            "email": format!("scale{i}@example.test"), "region": region}),
        );
        orders.push(
            json!({"id": order, "customer_id": customer, "product": "annual_plan",
            "amount": amount, "currency": currency, "created_at": "2026-11-20T09:00:00Z"}),
        );
        for (suffix, at) in [("a", "2026-11-20T09:00:05Z"), ("b", "2026-11-20T09:01:10Z")] {
            charges.push(
                json!({"id": format!("ch_s{i:04}{suffix}"), "order_id": order,
                "customer_id": customer, "amount": amount, "currency": currency,
                "captured": true, "status": "succeeded", "disputed": false, "created_at": at,
                "payment_method": "pm_card_visa_4242", "amount_refunded": "0.00"}),
            );
        }
    }
    json!({"customers": customers, "orders": orders, "charges": charges, "refunds": []})
}

impl Cluster {
    async fn start(instances: usize, customers: usize) -> Cluster {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mock = crate::support::start_mock(dir.path()).await;
        let world = duplicate_charge_world(customers).to_string();
        desk::world::load_into_provider(&mock.base_url(), &world)
            .await
            .expect("world loads into the mock");
        let postgres = crate::support::fresh_postgres_url("rd_scale").await;
        let is_postgres = postgres.is_some();
        let database_url =
            postgres.unwrap_or_else(|| store::Db::sqlite_url(&dir.path().join("shared")));
        std::fs::create_dir_all(dir.path().join("shared")).unwrap();
        let clock = Arc::new(ManualClock::new(
            time::OffsetDateTime::parse(NOW, &time::format_description::well_known::Rfc3339)
                .unwrap(),
        ));
        let mut built = Vec::new();
        for i in 0..instances {
            // Per instance: data dir (and so the policy index). Shared: the database,
            // the provider, the policy files, the webhook secret.
            let mut config = settings::config_from_env(&dir.path().join(format!("instance-{i}")));
            config.database_url = database_url.clone();
            config.payments_url = Some(mock.base_url());
            config.webhook_secret = SECRET.to_string();
            config.fixtures_dir = desk::config::default_fixtures_dir();
            config.provider_backoff = Duration::from_millis(5);
            config.provider_timeout = Duration::from_secs(5);
            // Every instance runs the migrations at start-up, as `serve` does.
            let mut state = desk::build_state(
                &config,
                &mock.base_url(),
                clock.clone(),
                Arc::new(Investigator),
            )
            .await
            .expect("state builds");
            state = app::cli::with_chores(state);
            state.instance_id = format!("instance-{i}");
            let router = web::router(state.clone());
            built.push(Instance { state, router });
        }
        let db = &built[0].state.db;
        let parsed = World::parse(&world).unwrap();
        parsed
            .load_into(db)
            .await
            .expect("world loads into the app");
        let now = clock.now_ms();
        let staff = auth::upsert_staff(
            db,
            "supervisor@test.example",
            StaffRole::Supervisor,
            "correct horse battery",
            now,
        )
        .await
        .unwrap();
        let supervisor_token = auth::issue_token(db, "api", "staff", &staff.id, now)
            .await
            .unwrap()
            .0;
        Cluster {
            instances: built,
            mock,
            clock,
            supervisor_token,
            customers: parsed.customers.iter().map(|c| c.id.clone()).collect(),
            postgres: is_postgres,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    fn db(&self) -> &store::Db {
        &self.instances[0].state.db
    }

    async fn request(
        &self,
        instance: usize,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        request(&self.instances[instance].router, method, path, token, body).await
    }

    async fn customer_token(&self, customer_id: &str) -> String {
        auth::issue_token(
            self.db(),
            "api",
            "customer",
            customer_id,
            self.clock.now_ms(),
        )
        .await
        .unwrap()
        .0
    }

    /// Opens one ticket per customer, concurrently, spread round-robin over instances.
    /// Returns the case ids in customer order.
    async fn open_tickets(&self) -> Vec<String> {
        let mut tokens = Vec::new();
        for customer in &self.customers {
            tokens.push(self.customer_token(customer).await);
        }
        let posts = tokens.iter().enumerate().map(|(i, token)| async move {
            let (status, ticket) = self
                .request(
                    i % self.instances.len(),
                    "POST",
                    "/api/v1/tickets",
                    token,
                    Some(json!({ "message": CHARGED_TWICE })),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{ticket}");
            ticket["case"]["id"].as_str().unwrap().to_string()
        });
        self.together(posts).await
    }

    /// Runs request-handling futures all at once on PostgreSQL. On SQLite they run one
    /// after another (still spread over instances): a request transaction that reads
    /// before it writes fails with `SQLITE_BUSY` when another instance's pool wrote in
    /// between — SQLite's single writer across processes, the reason to deploy several
    /// instances on PostgreSQL only. Worker passes race on both (see `race_workers`).
    async fn together<F: std::future::Future>(
        &self,
        futures: impl IntoIterator<Item = F>,
    ) -> Vec<F::Output> {
        if self.postgres {
            join_all(futures).await
        } else {
            let mut outputs = Vec::new();
            for future in futures {
                outputs.push(future.await);
            }
            outputs
        }
    }

    async fn case(&self, instance: usize, case_id: &str) -> Value {
        let (status, case) = self
            .request(
                instance,
                "GET",
                &format!("/api/v1/cases/{case_id}"),
                &self.supervisor_token,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{case}");
        case
    }

    async fn statuses(&self) -> BTreeMap<String, String> {
        sqlx::query("SELECT id, status FROM cases")
            .fetch_all(self.db().pool())
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get("id"), r.get("status")))
            .collect()
    }

    /// One worker pass on each of `instances`, all at once. Returns the failed passes.
    async fn race_workers(&self, instances: &[usize]) -> Vec<String> {
        let passes = instances.iter().map(|&i| {
            let state = self.instances[i].state.clone();
            async move { desk::worker::run_once(&state).await }
        });
        join_all(passes)
            .await
            .into_iter()
            .filter_map(|r| r.err().map(|e| e.to_string()))
            .collect()
    }

    /// Races the workers of `instances` until nothing changes (bounded). Failed passes
    /// are collected; on PostgreSQL there must be none.
    async fn race_until_quiet(&self, instances: &[usize]) -> Vec<String> {
        let mut failures = Vec::new();
        for _ in 0..60 {
            let before = self.progress().await;
            failures.extend(self.race_workers(instances).await);
            if self.progress().await == before {
                break;
            }
        }
        if self.postgres {
            assert!(failures.is_empty(), "worker passes failed: {failures:#?}");
        }
        failures
    }

    async fn progress(&self) -> (i64, i64, i64) {
        let row = sqlx::query(
            "SELECT (SELECT COUNT(*) FROM run_events) AS events,
                    (SELECT CAST(COALESCE(SUM(version), 0) AS BIGINT) FROM cases) AS cases,
                    (SELECT CAST(COALESCE(SUM(version), 0) AS BIGINT) FROM refund_intents) AS intents",
        )
        .fetch_one(self.db().pool())
        .await
        .unwrap();
        (row.get("events"), row.get("cases"), row.get("intents"))
    }

    async fn install_faults(&self, rules: Value) {
        let resp = self
            .http
            .post(format!("{}/__mock/faults", self.mock.base_url()))
            .json(&rules)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
    }

    async fn clear_faults(&self) {
        self.http
            .delete(format!("{}/__mock/faults", self.mock.base_url()))
            .send()
            .await
            .unwrap();
    }

    /// Waits (bounded) until an installed fault has fired: the killed instance is then
    /// known to be inside that provider call.
    async fn until_fault_fired(&self) {
        for _ in 0..1000 {
            let rules: Value = self
                .http
                .get(format!("{}/__mock/faults", self.mock.base_url()))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let rules = rules
                .as_array()
                .cloned()
                .or_else(|| rules["data"].as_array().cloned())
                .or_else(|| rules["rules"].as_array().cloned())
                .unwrap_or_default();
            if rules.iter().any(|r| r["applied"].as_u64() >= Some(1)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the fault never fired");
    }

    async fn ledger(&self) -> Value {
        self.http
            .get(format!("{}/__mock/ledger", self.mock.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Moves the shared clock past every lease (runs and cases).
    fn expire_leases(&self) {
        assert!(61_000 > desk::lease::ms());
        self.clock.advance(time::Duration::seconds(61));
    }

    /// Investigates every open ticket with all instances racing; returns each case's
    /// fingerprint and approved amount (minor units, currency).
    async fn investigate_all(&self, case_ids: &[String]) -> Vec<(String, String, i64, String)> {
        let all: Vec<usize> = (0..self.instances.len()).collect();
        let failures = self.race_until_quiet(&all).await;
        eprintln!("investigation: {} failed passes (retried)", failures.len());
        let mut approvable = Vec::new();
        for (i, case_id) in case_ids.iter().enumerate() {
            let case = self.case(i % self.instances.len(), case_id).await;
            assert_eq!(case["status"], "awaiting_approval", "{case:#}");
            let currency = case["currency"].as_str().unwrap().to_string();
            let amount = policy_engine::Money::parse(
                case["refund_total"].as_str().unwrap(),
                currency.parse().unwrap(),
            )
            .unwrap()
            .minor_units();
            approvable.push((
                case_id.clone(),
                case["fingerprint"].as_str().unwrap().to_string(),
                amount,
                currency,
            ));
        }
        approvable
    }

    /// Approves through instance `instance`.
    async fn approve(&self, instance: usize, case_id: &str, fingerprint: &str) -> StatusCode {
        self.request(
            instance,
            "POST",
            &format!("/api/v1/cases/{case_id}/approve"),
            &self.supervisor_token,
            Some(json!({ "fingerprint": fingerprint })),
        )
        .await
        .0
    }

    /// The invariants at the end of every scenario.
    async fn assert_invariants(&self, approved: &BTreeMap<String, (i64, String)>) {
        // Every approved case reached a final state: its refund succeeded.
        let statuses = self.statuses().await;
        for case_id in approved.keys() {
            assert_eq!(statuses[case_id], "refund_succeeded", "case {case_id}");
        }
        // No provider refund duplicated: ≤ 1 per charge, ≤ 1 per idempotency key.
        let ledger = self.ledger().await;
        for (charge, n) in ledger["counters"]["refunds_created"].as_object().unwrap() {
            assert!(n.as_i64().unwrap() <= 1, "{n} refunds on {charge}");
        }
        let refunds = ledger["refunds"].as_array().unwrap();
        let mut keys = BTreeSet::new();
        let mut refunded: BTreeMap<String, i64> = BTreeMap::new();
        for entry in refunds {
            let refund = if entry["refund"].is_object() {
                &entry["refund"]
            } else {
                entry
            };
            if entry["origin"] != "api" {
                continue;
            }
            let key = entry["idempotency_key"].as_str().unwrap_or_default();
            assert!(keys.insert(key.to_string()), "two refunds under key {key}");
            assert_eq!(refund["status"], "succeeded", "{entry}");
            *refunded
                .entry(refund["currency"].as_str().unwrap().to_ascii_uppercase())
                .or_default() += refund["amount"].as_i64().unwrap();
        }
        // Money refunded = money approved, per currency.
        let mut approved_money: BTreeMap<String, i64> = BTreeMap::new();
        for (amount, currency) in approved.values() {
            *approved_money.entry(currency.clone()).or_default() += amount;
        }
        assert_eq!(refunded, approved_money, "refunded vs approved");
        // One intent per approved case, succeeded, matching one provider refund.
        let intents = sqlx::query("SELECT case_id, status, provider_refund_id FROM refund_intents")
            .fetch_all(self.db().pool())
            .await
            .unwrap();
        assert_eq!(intents.len(), approved.len());
        for row in &intents {
            assert_eq!(row.get::<String, _>("status"), "succeeded");
            assert!(row.get::<Option<String>, _>("provider_refund_id").is_some());
        }
        // No event lost: every run's log is dense from 1, and every tool intent has
        // exactly one result after it.
        let events =
            sqlx::query("SELECT run_id, seq, kind, call_id FROM run_events ORDER BY run_id, seq")
                .fetch_all(self.db().pool())
                .await
                .unwrap();
        let mut by_run: BTreeMap<String, Vec<(i64, String, Option<String>)>> = BTreeMap::new();
        for r in &events {
            by_run.entry(r.get("run_id")).or_default().push((
                r.get("seq"),
                r.get("kind"),
                r.get("call_id"),
            ));
        }
        for (run_id, log) in &by_run {
            let seqs: Vec<i64> = log.iter().map(|e| e.0).collect();
            let dense: Vec<i64> = (1..=log.len() as i64).collect();
            assert_eq!(seqs, dense, "run {run_id}: seqs are dense");
            for (seq, _, call_id) in log.iter().filter(|e| e.1 == "tool_intent") {
                let results: Vec<_> = log
                    .iter()
                    .filter(|e| e.1 == "tool_result" && &e.2 == call_id)
                    .collect();
                assert_eq!(results.len(), 1, "run {run_id}: one result for {call_id:?}");
                assert!(results[0].0 > *seq);
            }
            for kind in ["proposal", "decision"] {
                assert!(
                    log.iter().filter(|e| e.1 == kind).count() <= 1,
                    "{kind} twice in {run_id}"
                );
            }
        }
        // The customer is told "completed" once per case.
        let told = sqlx::query(
            "SELECT COUNT(*) AS n FROM messages WHERE author = 'agent' AND body LIKE '%has been completed%'",
        )
        .fetch_one(self.db().pool())
        .await;
        if let Ok(row) = told {
            assert_eq!(row.get::<i64, _>("n"), approved.len() as i64);
        }
    }
}

async fn request(
    router: &axum::Router,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let builder = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"));
    let request = match body {
        Some(b) => builder
            .header("content-type", "application/json")
            .body(Body::from(b.to_string()))
            .unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    };
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

/// An approved single case on a two-instance cluster whose refund is `pending_verification`:
/// the provider made it, but answered with a stored 500 under its key.
async fn cluster_with_unknown_refund() -> (Cluster, String, (i64, String)) {
    let cluster = Cluster::start(2, 1).await;
    let case_ids = cluster.open_tickets().await;
    let approvable = cluster.investigate_all(&case_ids).await;
    let (case_id, fingerprint, amount, currency) = approvable[0].clone();
    assert_eq!(
        cluster.approve(1, &case_id, &fingerprint).await,
        StatusCode::OK
    );
    cluster
        .install_faults(json!([{"mode": "server_error_after_begin", "commit": true,
            "method": "POST", "path": "/v1/refunds"}]))
        .await;
    desk::refunds::execute_case(cluster.instances[0].state.executor(), &case_id)
        .await
        .unwrap();
    cluster.clear_faults().await;
    let intents = desk::refunds::intents(cluster.db(), &case_id)
        .await
        .unwrap();
    assert_eq!(intents[0].status, "pending_verification", "{intents:?}");
    (cluster, case_id, (amount, currency))
}

// ---------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_instances_racing_over_one_database_refund_every_approved_case_exactly_once() {
    const INSTANCES: usize = 3;
    let customers = if std::env::var("TEST_DATABASE_URL").is_ok_and(|u| !u.is_empty()) {
        48
    } else {
        24
    };
    let cluster = Cluster::start(INSTANCES, customers).await;
    let case_ids = cluster.open_tickets().await;
    let approvable = cluster.investigate_all(&case_ids).await;

    // The first refund sent hangs at the provider: whoever sends it is "killed" there.
    cluster
        .install_faults(json!([{"mode": "latency", "ms": 30000, "method": "POST",
            "path": "/v1/refunds", "times": 1}]))
        .await;

    // Concurrent approvals spread over instances; the first few double-clicked on two
    // instances at once (one wins, the other gets a conflict).
    let approvals = approvable
        .iter()
        .enumerate()
        .map(|(i, (case_id, fp, _, _))| {
            let cluster = &cluster;
            async move {
                let first = cluster.approve(i % INSTANCES, case_id, fp);
                if i < 4 {
                    let second = cluster.approve((i + 1) % INSTANCES, case_id, fp);
                    if cluster.postgres {
                        let (a, b) = tokio::join!(first, second);
                        vec![a, b]
                    } else {
                        vec![first.await, second.await]
                    }
                } else {
                    vec![first.await]
                }
            }
        });
    let results = cluster.together(approvals).await;
    for (i, statuses) in results.iter().enumerate() {
        let ok = statuses.iter().filter(|s| **s == StatusCode::OK).count();
        assert_eq!(ok, 1, "case {i}: exactly one approval wins: {statuses:?}");
    }
    let approved: BTreeMap<String, (i64, String)> = approvable
        .iter()
        .map(|(id, _, amount, currency)| (id.clone(), (*amount, currency.clone())))
        .collect();

    // Instance 0 starts executing and dies inside the hung provider call.
    let doomed = cluster.instances[0].state.clone();
    let task = tokio::spawn(async move { desk::worker::run_once(&doomed).await });
    cluster.until_fault_fired().await;
    task.abort();
    let _ = task.await;
    let held: Vec<String> = sqlx::query("SELECT id FROM cases WHERE lease_owner = 'instance-0'")
        .fetch_all(cluster.db().pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.get("id"))
        .collect();
    // It executes up to `worker_concurrency` cases at once: the hung one, and those it
    // had claimed beside it.
    let at_once = cluster.instances[0].state.worker_concurrency;
    assert!(
        (1..=at_once).contains(&held.len()),
        "the killed instance held the hung case and at most {at_once} in all: {held:?}"
    );
    let held_statuses = cluster.statuses().await;

    // The survivors race through everything else; the orphans' leases still hold.
    let failures = cluster.race_until_quiet(&[1, 2]).await;
    let statuses = cluster.statuses().await;
    for (case_id, status) in &statuses {
        if held.contains(case_id) {
            assert_eq!(status, &held_statuses[case_id], "nobody takes a live lease");
        } else {
            assert_eq!(status, "refund_succeeded", "case {case_id}");
        }
    }
    let still_held =
        sqlx::query("SELECT COUNT(*) AS n FROM cases WHERE lease_owner = 'instance-0'")
            .fetch_one(cluster.db().pool())
            .await
            .unwrap()
            .get::<i64, _>("n");
    assert_eq!(still_held as usize, held.len(), "nobody takes a live lease");

    // Past the lease, a survivor finishes the orphans, the hung one with the same key:
    // one refund each.
    cluster.expire_leases();
    let more = cluster.race_until_quiet(&[1, 2]).await;
    eprintln!(
        "{} cases over {INSTANCES} instances ({}): {} failed passes retried",
        approved.len(),
        if cluster.postgres {
            "postgres"
        } else {
            "sqlite"
        },
        failures.len() + more.len()
    );
    let mut orphans = Vec::new();
    for case_id in &held {
        orphans.extend(desk::refunds::intents(cluster.db(), case_id).await.unwrap());
    }
    assert!(
        orphans.iter().any(|intent| intent.attempts >= 2),
        "the hung orphan's key was sent again: {orphans:?}"
    );
    cluster.assert_invariants(&approved).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_many_instances_claiming_one_run_at_once_exactly_one_gets_it() {
    let cluster = Cluster::start(6, 1).await;
    cluster.open_tickets().await;
    let now = cluster.clock.now_ms();
    let claims = cluster.instances.iter().map(|i| {
        let db = i.state.db.clone();
        let owner = i.state.instance_id.clone();
        async move { desk::runs::claim_next(&db, &owner, now).await.unwrap() }
    });
    let won: Vec<_> = join_all(claims).await.into_iter().flatten().collect();
    assert_eq!(won.len(), 1, "{won:?}");
    // Nobody takes it while the lease holds; after it expires, one instance does.
    assert!(desk::runs::claim_next(cluster.db(), "late", now + 1)
        .await
        .unwrap()
        .is_none());
    cluster.expire_leases();
    let later = cluster.clock.now_ms();
    let claims = cluster.instances.iter().map(|i| {
        let db = i.state.db.clone();
        let owner = i.state.instance_id.clone();
        async move { desk::runs::claim_next(&db, &owner, later).await.unwrap() }
    });
    let taken: Vec<_> = join_all(claims).await.into_iter().flatten().collect();
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert!(
        taken[0].version > won[0].version,
        "the takeover is a versioned update"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_executions_of_one_case_on_every_instance_make_one_provider_refund() {
    let cluster = Cluster::start(4, 1).await;
    let case_ids = cluster.open_tickets().await;
    let approvable = cluster.investigate_all(&case_ids).await;
    let (case_id, fingerprint, amount, currency) = approvable[0].clone();
    assert_eq!(
        cluster.approve(2, &case_id, &fingerprint).await,
        StatusCode::OK
    );
    let runs = cluster.instances.iter().flat_map(|i| {
        let state = i.state.clone();
        let case_id = case_id.clone();
        (0..5).map(move |_| {
            let state = state.clone();
            let case_id = case_id.clone();
            async move { desk::refunds::execute_case(state.executor(), &case_id).await }
        })
    });
    let failures: Vec<_> = join_all(runs)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if cluster.postgres {
        assert!(failures.is_empty(), "{failures:?}");
    }
    cluster.race_until_quiet(&[0, 1, 2, 3]).await;
    cluster
        .assert_invariants(&BTreeMap::from([(case_id, (amount, currency))]))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reconciliation_pass_killed_mid_run_is_finished_by_another_instance_after_the_lease() {
    let (cluster, case_id, approved) = cluster_with_unknown_refund().await;
    // The periodic pass is due; instance 0 runs it and dies reading the provider.
    cluster.clock.advance(time::Duration::seconds(31));
    cluster
        .install_faults(json!([{"mode": "latency", "ms": 30000, "method": "GET",
            "path": "/v1/refunds", "times": 1}]))
        .await;
    let doomed = cluster.instances[0].state.clone();
    let task = tokio::spawn(async move { desk::reconcile::run_if_due(doomed.reconciler()).await });
    cluster.until_fault_fired().await;
    task.abort();
    let _ = task.await;

    // This period's pass is taken, and the case is leased to the dead reconciler:
    // instance 1 neither reruns the pass nor touches the case.
    let survivor = &cluster.instances[1].state;
    assert!(desk::reconcile::run_if_due(survivor.reconciler())
        .await
        .unwrap()
        .is_none());
    desk::worker::run_once(survivor).await.unwrap();
    let intent = &desk::refunds::intents(cluster.db(), &case_id)
        .await
        .unwrap()[0];
    assert_eq!(intent.status, "pending_verification");

    // Past the lease (and the period), instance 1 resolves it against the provider.
    cluster.expire_leases();
    cluster.race_until_quiet(&[1]).await;
    let report = desk::reconcile::run(survivor.reconciler()).await.unwrap();
    assert!(report.is_clean(), "{report:#?}");
    cluster
        .assert_invariants(&BTreeMap::from([(case_id, approved)]))
        .await;
}

/// A signed `refund.updated` event for the provider's refund on `charge`.
async fn refund_event(cluster: &Cluster, case_id: &str, event_id: &str) -> String {
    let intent = &desk::refunds::intents(cluster.db(), case_id).await.unwrap()[0];
    let list: Value = cluster
        .http
        .get(format!(
            "{}/v1/refunds?charge={}",
            cluster.mock.base_url(),
            intent.charge_id
        ))
        .bearer_auth("sk_test_refund_desk")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let refund = list["data"][0].clone();
    assert!(refund.is_object(), "{list}");
    json!({"id": event_id, "object": "event", "type": "refund.updated",
        "data": {"object": refund},
        "request": {"id": null, "idempotency_key": intent.idempotency_key}})
    .to_string()
}

async fn deliver(cluster: &Cluster, instance: usize, body: &str) -> (StatusCode, Value) {
    let now_secs = cluster.clock.now_ms() / 1000;
    let signature = payments_mock::sign_payload(SECRET, now_secs, body.as_bytes());
    let request = Request::post("/api/v1/webhooks/payments")
        .header("content-type", "application/json")
        .header("stripe-signature", signature)
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = cluster.instances[instance]
        .router
        .clone()
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn webhook_outcomes(cluster: &Cluster, event_id: &str) -> Vec<String> {
    sqlx::query("SELECT outcome FROM webhook_events WHERE event_id = $1")
        .bind(event_id)
        .fetch_all(cluster.db().pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.get("outcome"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_webhook_delivered_to_two_instances_at_once_is_applied_once() {
    let (cluster, case_id, approved) = cluster_with_unknown_refund().await;
    let body = refund_event(&cluster, &case_id, "evt_scale_same").await;
    // Four copies, two per instance, all at once (a duplicate delivery racing a retry).
    let deliveries = (0..4).map(|i| deliver(&cluster, i % 2, &body));
    let acks = join_all(deliveries).await;
    let mut outcomes: Vec<String> = acks
        .iter()
        .map(|(status, ack)| {
            assert_eq!(*status, StatusCode::OK, "{ack}");
            ack["outcome"].as_str().unwrap().to_string()
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        ["applied", "duplicate", "duplicate", "duplicate"],
        "processed once"
    );
    assert_eq!(
        webhook_outcomes(&cluster, "evt_scale_same").await,
        ["applied"]
    );
    cluster
        .assert_invariants(&BTreeMap::from([(case_id, approved)]))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_webhook_whose_receiver_died_mid_processing_is_applied_once_on_redelivery_elsewhere() {
    let (cluster, case_id, approved) = cluster_with_unknown_refund().await;
    let body = refund_event(&cluster, &case_id, "evt_scale_killed").await;
    // Instance 0 dies while re-reading the refund from the provider: nothing recorded.
    cluster
        .install_faults(json!([{"mode": "latency", "ms": 30000, "method": "GET",
            "path": "/v1/refunds/*", "times": 1}]))
        .await;
    let router = cluster.instances[0].router.clone();
    let signature =
        payments_mock::sign_payload(SECRET, cluster.clock.now_ms() / 1000, body.as_bytes());
    let doomed_body = body.clone();
    let task = tokio::spawn(async move {
        let request = Request::post("/api/v1/webhooks/payments")
            .header("content-type", "application/json")
            .header("stripe-signature", signature)
            .body(Body::from(doomed_body))
            .unwrap();
        router.oneshot(request).await
    });
    cluster.until_fault_fired().await;
    task.abort();
    let _ = task.await;
    assert!(webhook_outcomes(&cluster, "evt_scale_killed")
        .await
        .is_empty());

    // The provider redelivers (it got no 2xx); instance 1 applies it.
    let (status, ack) = deliver(&cluster, 1, &body).await;
    assert_eq!(status, StatusCode::OK, "{ack}");
    assert_eq!(ack["outcome"], "applied");
    let (_, again) = deliver(&cluster, 0, &body).await;
    assert_eq!(again["outcome"], "duplicate");
    assert_eq!(
        webhook_outcomes(&cluster, "evt_scale_killed").await,
        ["applied"]
    );
    cluster
        .assert_invariants(&BTreeMap::from([(case_id, approved)]))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_periodic_reconciliation_runs_on_one_instance_per_period() {
    let cluster = Cluster::start(5, 1).await;
    // Nothing ran yet on this database: of five instances at once, one runs it.
    let passes = cluster
        .instances
        .iter()
        .map(|i| desk::reconcile::run_if_due(i.state.reconciler()));
    let ran = join_all(passes)
        .await
        .into_iter()
        .filter(|r| r.as_ref().unwrap().is_some())
        .count();
    assert_eq!(ran, 1);
    cluster.clock.advance(time::Duration::seconds(30));
    let passes = cluster
        .instances
        .iter()
        .map(|i| desk::reconcile::run_if_due(i.state.reconciler()));
    let ran = join_all(passes)
        .await
        .into_iter()
        .filter(|r| r.as_ref().unwrap().is_some())
        .count();
    assert_eq!(ran, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn instances_starting_together_on_a_fresh_database_migrate_it_once() {
    let dir = tempfile::tempdir().unwrap();
    match crate::support::fresh_postgres_url("rd_scale").await {
        // sqlx's migrator holds `pg_advisory_lock` while it migrates: the first
        // instance applies the migrations, the others wait and find nothing to do.
        Some(url) => {
            let connects = (0..6).map(|_| store::Db::connect(&url));
            for db in join_all(connects).await {
                db.expect("every instance starts");
            }
        }
        // SQLite has no such lock (and is for one instance); starting one after
        // another is what is supported there.
        None => {
            let url = store::Db::sqlite_url(dir.path());
            for _ in 0..3 {
                store::Db::connect(&url)
                    .await
                    .expect("every start succeeds");
            }
        }
    }
}

/// One instance, several claim loops (`WORKER_CONCURRENCY`): every ticket is investigated
/// exactly once, in a single worker pass, with dense run logs, then refunded exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_instance_with_four_claim_loops_investigates_and_refunds_each_case_once() {
    let mut cluster = Cluster::start(1, 16).await;
    cluster.instances[0].state.worker_concurrency = 4;
    let case_ids = cluster.open_tickets().await;
    let state = cluster.instances[0].state.clone();
    // A single pass drains the queue: the loops share it instead of waiting for a tick.
    desk::worker::run_once(&state)
        .await
        .expect("a pass with four claim loops succeeds");
    let investigated: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM run_events WHERE kind = 'decision'")
            .fetch_one(cluster.db().pool())
            .await
            .unwrap()
            .get("n");
    assert_eq!(investigated, case_ids.len() as i64, "one decision per case");
    let approvable = cluster.investigate_all(&case_ids).await;
    for (case_id, fingerprint, _, _) in &approvable {
        assert_eq!(
            cluster.approve(0, case_id, fingerprint).await,
            StatusCode::OK
        );
    }
    desk::worker::run_once(&state)
        .await
        .expect("the refund pass succeeds");
    let approved: BTreeMap<String, (i64, String)> = approvable
        .iter()
        .map(|(id, _, amount, currency)| (id.clone(), (*amount, currency.clone())))
        .collect();
    cluster.race_until_quiet(&[0]).await;
    cluster.assert_invariants(&approved).await;
}
