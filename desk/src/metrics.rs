//! Operational metrics, served as Prometheus text (version 0.0.4) at `GET /metrics`
//! (docs/spec/interfaces.md, issue 20), with the Prometheus project's own `prometheus-client` crate.
//!
//! Two kinds of figures. Events are counted in this process as they happen, through the
//! small `record_*` functions below (one line at each call site): HTTP requests by
//! matched route template and status, agent steps, tool and model calls, refund intent
//! moves, webhook outcomes, failed logins. States — cases, runs, approvals (verdicts and
//! voids) and refund intents by status, and the latest reconciliation report's
//! differences — are read from the database at scrape time, so every instance reports
//! the same shared truth, whichever code path changed it.
//!
//! What it deliberately does not do: label by anything unbounded or personal. Routes
//! are templates (`/api/v1/cases/{id}`), never raw paths (which carry ids and, on the
//! sign-in page, tokens); no case, customer or staff id, no amount, ever becomes a
//! label. Counters are per process and start at zero (Prometheus' `rate()` handles
//! restarts); a count recorded inside a transaction that later rolls back is not
//! taken back, so the refund and webhook counters are at-least figures.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use sqlx::Row;

use store::Db;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Every metric name starts with this.
const PREFIX: &str = "refund_desk";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    name: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// A row count's labels: the `status` (and, for approvals, the `verdict`) of the rows.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
    verdict: Option<String>,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Seconds, from 1 ms to about 33 s: a page answer, a provider call and a slow model
/// call all land in a bucket of their own.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

fn histograms<L: Clone + std::hash::Hash + Eq>() -> Histograms<L> {
    Family::new_with_constructor(latency_histogram)
}

/// The process's counters and histograms, registered once.
struct Metrics {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: Histograms<HttpLabels>,
    agent_steps: Histogram,
    tool_calls: Family<CallLabels, Counter>,
    tool_duration: Histograms<NameLabel>,
    model_calls: Family<CallLabels, Counter>,
    model_duration: Histograms<NameLabel>,
    model_tokens: Family<TokenLabels, Counter>,
    refunds: Family<KindLabel, Counter>,
    webhook_events: Family<KindLabel, Counter>,
    login_failures: Family<KindLabel, Counter>,
}

impl Metrics {
    fn new() -> Metrics {
        let m = Metrics {
            registry: Registry::with_prefix(PREFIX),
            http_requests: Family::default(),
            http_duration: histograms(),
            agent_steps: latency_histogram(),
            tool_calls: Family::default(),
            tool_duration: histograms(),
            model_calls: Family::default(),
            model_duration: histograms(),
            model_tokens: Family::default(),
            refunds: Family::default(),
            webhook_events: Family::default(),
            login_failures: Family::default(),
        };
        m.register()
    }

    fn register(mut self) -> Metrics {
        let r = &mut self.registry;
        r.register(
            "http_requests",
            "HTTP requests answered, by method, matched route template and status",
            self.http_requests.clone(),
        );
        r.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request",
            self.http_duration.clone(),
        );
        r.register(
            "agent_step_duration_seconds",
            "Time one agent step took, model and tool calls included",
            self.agent_steps.clone(),
        );
        r.register(
            "tool_calls",
            "Agent tool calls, by tool and outcome (ok or error)",
            self.tool_calls.clone(),
        );
        r.register(
            "tool_call_duration_seconds",
            "Time one agent tool call took, by tool",
            self.tool_duration.clone(),
        );
        r.register(
            "model_calls",
            "Model calls, by model and outcome (ok or error)",
            self.model_calls.clone(),
        );
        r.register(
            "model_call_duration_seconds",
            "Time one model call took, by model",
            self.model_duration.clone(),
        );
        r.register(
            "model_tokens",
            "Tokens sent to (prompt) and received from (completion) each model",
            self.model_tokens.clone(),
        );
        r.register(
            "refunds",
            "Refund intents submitted or moved, by kind",
            self.refunds.clone(),
        );
        r.register(
            "webhook_events",
            "Provider webhook deliveries, by outcome (invalid_signature included)",
            self.webhook_events.clone(),
        );
        r.register(
            "login_failures",
            "Failed staff logins, by reason (wrong_credentials, throttled)",
            self.login_failures.clone(),
        );
        self
    }
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

fn outcome(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "error"
    }
}

fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// One HTTP request answered. `route` is the matched template (`"unmatched"` for the
/// fallback); methods outside the standard set count as `OTHER`, so a client cannot
/// mint label values.
pub fn record_http(method: &str, route: &str, status: u16, took: Duration) {
    let method = match method {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "OTHER",
    };
    let labels = HttpLabels {
        method,
        route: route.to_string(),
        status,
    };
    let m = metrics();
    m.http_requests.get_or_create(&labels).inc();
    m.http_duration
        .get_or_create(&labels)
        .observe(took.as_secs_f64());
}

/// One agent step (a model turn and the tool calls it asked for) took `ms`.
pub fn record_step(ms: u64) {
    metrics().agent_steps.observe(seconds(ms));
}

/// One tool call by the agent: which tool, whether it succeeded, how long it took.
pub fn record_tool_call(tool: &'static str, ok: bool, ms: u64) {
    let m = metrics();
    m.tool_calls
        .get_or_create(&CallLabels {
            name: tool.to_string(),
            outcome: outcome(ok),
        })
        .inc();
    m.tool_duration
        .get_or_create(&NameLabel {
            name: tool.to_string(),
        })
        .observe(seconds(ms));
}

/// One model call: which model, whether it answered, how long it took, and the tokens
/// it was sent and gave back (0 when the server does not report usage).
pub fn record_model_call(
    model: &str,
    ok: bool,
    ms: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
) {
    let m = metrics();
    let name = model.to_string();
    m.model_calls
        .get_or_create(&CallLabels {
            name: name.clone(),
            outcome: outcome(ok),
        })
        .inc();
    m.model_duration
        .get_or_create(&NameLabel { name: name.clone() })
        .observe(seconds(ms));
    for (kind, tokens) in [("prompt", prompt_tokens), ("completion", completion_tokens)] {
        m.model_tokens
            .get_or_create(&TokenLabels {
                model: name.clone(),
                kind,
            })
            .inc_by(tokens);
    }
}

/// A refund intent was submitted to the provider (`submitted`), or moved to the intent
/// status `kind`. Only known statuses become labels; anything else counts as `other`.
pub fn record_refund(kind: &str) {
    let kind = [
        "submitted",
        "submitting",
        "pending",
        "pending_verification",
        "succeeded",
        "failed",
        "canceled",
        "needs_review",
    ]
    .into_iter()
    .find(|known| *known == kind)
    .unwrap_or("other");
    metrics().refunds.get_or_create(&KindLabel { kind }).inc();
}

/// One webhook delivery and what the receiver made of it.
pub fn record_webhook(outcome: &'static str) {
    metrics()
        .webhook_events
        .get_or_create(&KindLabel { kind: outcome })
        .inc();
}

/// One refused staff login (`wrong_credentials` or `throttled`).
pub fn record_login_failure(reason: &'static str) {
    metrics()
        .login_failures
        .get_or_create(&KindLabel { kind: reason })
        .inc();
}

/// What the database holds now, counted at scrape time: `(metric, help, table, grouped
/// by verdict too, which rows)`. Approvals carry `verdict` (approved, rejected) and
/// `status` (valid, void), so rejections and voided approvals are read here, whichever
/// path voided them. Sub-agent runs are counted apart from the runs a worker claims.
const STATE_GAUGES: [(&str, &str, &str, bool, &str); 5] = [
    ("cases", "Cases by status", "cases", false, "1 = 1"),
    (
        "runs",
        "Agent runs by status (a case's own runs; sub-agents are child_runs)",
        "runs",
        false,
        "parent_run_id IS NULL",
    ),
    (
        "child_runs",
        "Sub-agent runs by status (children of an agent run)",
        "runs",
        false,
        "parent_run_id IS NOT NULL",
    ),
    (
        "approvals",
        "Approvals by verdict and status (valid or void)",
        "approvals",
        true,
        "1 = 1",
    ),
    (
        "refund_intents",
        "Refund intents by status",
        "refund_intents",
        false,
        "1 = 1",
    ),
];

/// `SELECT status[, verdict], COUNT(*)` of `table`, as a gauge family.
async fn count_by_status(
    db: &Db,
    table: &str,
    with_verdict: bool,
    rows: &str,
) -> sqlx::Result<Family<StatusLabel, Gauge>> {
    let columns = if with_verdict {
        "status, verdict"
    } else {
        "status"
    };
    // SQLite's planner, with no statistics, answers `GROUP BY status` by walking the
    // status index over every row (0.3 s at a million runs) rather than the few child
    // rows of `runs_by_parent_status`: tell it which index (PostgreSQL plans this well).
    let from = match (db.backend(), table) {
        (store::Backend::Sqlite, "runs") => "runs INDEXED BY runs_by_parent_status",
        _ => table,
    };
    // `table`, `columns` and `rows` are the constants above, never input.
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {columns}, COUNT(*) AS n FROM {from} WHERE {rows} GROUP BY {columns}"
    )))
    .fetch_all(db.reader())
    .await?;
    let family = Family::<StatusLabel, Gauge>::default();
    for row in rows {
        let labels = StatusLabel {
            status: row.try_get("status")?,
            verdict: if with_verdict {
                Some(row.try_get("verdict")?)
            } else {
                None
            },
        };
        family.get_or_create(&labels).set(row.try_get("n")?);
    }
    Ok(family)
}

/// The report lists that need a human, by the `kind` label they are counted under.
const RECONCILE_KINDS: [(&str, &str); 6] = [
    ("amount_mismatch", "amount"),
    ("status_mismatch", "status"),
    ("provider_without_intent", "provider_only"),
    ("intent_without_provider", "intent_only"),
    ("unresolved", "unresolved"),
    ("errors", "error"),
];

/// The differences in the latest stored reconciliation report (`job_runs.last_report`
/// of `job`), by kind: a gauge, since each periodic pass reports the same open
/// difference again until a human settles it.
async fn reconcile_mismatches(db: &Db, job: &str) -> anyhow::Result<Family<KindLabel, Gauge>> {
    let report: Option<Option<String>> =
        sqlx::query_scalar("SELECT last_report FROM job_runs WHERE name = $1")
            .bind(job)
            .fetch_optional(db.reader())
            .await?;
    let family = Family::<KindLabel, Gauge>::default();
    let Some(text) = report.flatten() else {
        return Ok(family);
    };
    let report: serde_json::Value = serde_json::from_str(&text)?;
    for (field, kind) in RECONCILE_KINDS {
        let n = report[field].as_array().map_or(0, Vec::len);
        family.get_or_create(&KindLabel { kind }).set(n as i64);
    }
    Ok(family)
}

/// The watchdog's standing flags, one gauge per diagnosis (`stuck`: each diagnosis
/// with its count, zeros included).
fn stuck_runs(stuck: &[(&'static str, usize)]) -> Family<KindLabel, Gauge> {
    let family = Family::<KindLabel, Gauge>::default();
    for &(kind, n) in stuck {
        family.get_or_create(&KindLabel { kind }).set(n as i64);
    }
    family
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GuardLabel {
    scope: String,
    guard: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScopeLabel {
    scope: String,
}

/// The rollout's standing: each guard's latest trip (scopes and guard names are fixed
/// kinds an admin set, never ids) and the scopes a guard demoted.
async fn rollout_gauges(
    db: &Db,
) -> anyhow::Result<(Family<GuardLabel, Gauge>, Family<ScopeLabel, Gauge>)> {
    let tripped = Family::<GuardLabel, Gauge>::default();
    for (scope, guard, trip) in crate::rollout::guards::latest_trips(db).await? {
        tripped
            .get_or_create(&GuardLabel { scope, guard })
            .set(i64::from(trip));
    }
    let demoted = Family::<ScopeLabel, Gauge>::default();
    for (scope, _) in crate::rollout::guards::standing_demotions(db).await? {
        demoted.get_or_create(&ScopeLabel { scope }).set(1);
    }
    Ok((tripped, demoted))
}

/// The whole exposition: this process's counters, then the states read from `db` now
/// (`reconcile_job` names the reconciliation report's row in `job_runs`) and the
/// watchdog's standing flags by diagnosis (`stuck`, from `watchdog::stuck_counts`).
pub async fn render(
    db: &Db,
    reconcile_job: &str,
    cache: &GaugeCache,
) -> anyhow::Result<bytes::Bytes> {
    cache
        .get_or_compute(|| async {
            let states = database_gauges(db, reconcile_job).await?;
            let mut out = String::new();
            prometheus_client::encoding::prometheus_text::encode(&mut out, &metrics().registry)?;
            out.push_str(&states);
            Ok(bytes::Bytes::from(out))
        })
        .await
}

/// The gauges read from the database, as Prometheus text: every query on the read-only
/// connections (`Db::reader`), never the writer, so a scrape cannot stall a write.
async fn database_gauges(db: &Db, reconcile_job: &str) -> anyhow::Result<String> {
    let stuck = crate::watchdog::stuck_counts(db).await?;
    let mut states = Registry::with_prefix(PREFIX);
    for (name, help, table, with_verdict, rows) in STATE_GAUGES {
        let help = format!("{help}, read from the database at scrape time");
        states.register(
            name,
            help,
            count_by_status(db, table, with_verdict, rows).await?,
        );
    }
    states.register(
        "reconcile_mismatches",
        "Differences needing a human in the latest reconciliation report, by kind",
        reconcile_mismatches(db, reconcile_job).await?,
    );
    states.register(
        "stuck_runs",
        "Runs the stuck-run watchdog flags now (issue 18), by what they wait on",
        stuck_runs(&stuck),
    );
    let (tripped, demoted) = rollout_gauges(db).await?;
    states.register(
        "rollout_guard_tripped",
        "Whether each rollout guard of each scope tripped at its latest evaluation (issue 21)",
        tripped,
    );
    states.register(
        "rollout_scope_demoted",
        "Scopes a tripped guard demoted to shadow and that are still there",
        demoted,
    );
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, &states)?;
    Ok(out)
}

/// The exposition of the last scrape, kept `ttl` of real time with one computation in
/// flight: scrapers arriving meanwhile wait for it and share its answer, so any number of
/// scrapers cost at most one count of each table, and one encoding, per `ttl`
/// (`METRICS_CACHE_SECS`; Prometheus scrapes every 15 s or more, so a few seconds' age is
/// never seen). Each answer is the same shared bytes.
pub struct GaugeCache {
    ttl: std::time::Duration,
    last: tokio::sync::Mutex<Option<(std::time::Instant, bytes::Bytes)>>,
}

impl GaugeCache {
    pub fn new(ttl: std::time::Duration) -> GaugeCache {
        GaugeCache {
            ttl,
            last: tokio::sync::Mutex::new(None),
        }
    }

    async fn get_or_compute<F, Fut>(&self, compute: F) -> anyhow::Result<bytes::Bytes>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<bytes::Bytes>>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, text)) = last.as_ref() {
            if at.elapsed() < self.ttl {
                return Ok(text.clone());
            }
        }
        let text = compute().await?;
        *last = Some((std::time::Instant::now(), text.clone()));
        Ok(text)
    }
}
