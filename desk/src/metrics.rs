//! Operational metrics, served as Prometheus text (version 0.0.4) at `GET /metrics`
//! (docs/spec/interfaces.md), with the Prometheus project's own `prometheus-client` crate.
//!
//! Two kinds of figures. Events are counted in this process as they happen, through the
//! small `record_*` functions below (one line at each call site): HTTP requests by
//! matched route template and status, agent steps, tool and model calls, refund intent
//! moves, webhook outcomes, failed logins. States — cases, runs, approvals (verdicts and
//! voids) and refund intents by status, and the latest reconciliation report's
//! differences — are read from the database at scrape time, so every instance reports
//! the same shared truth, whichever code path changed it (`gauges`, a floor above: it reads
//! other modules' tables; this module stays low, so anything may count through it).
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
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Every metric name starts with this.
pub(crate) const PREFIX: &str = "refund_desk";

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
pub(crate) struct KindLabel {
    pub(crate) kind: &'static str,
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

/// This process's counters as Prometheus text (`gauges::render` adds the states read
/// from the database after them).
pub(crate) fn encode_counters(out: &mut String) -> std::fmt::Result {
    prometheus_client::encoding::prometheus_text::encode(out, &metrics().registry)
}
