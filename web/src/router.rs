//! The router, built apart from the server so tests drive it without a socket.

use axum::extract::Request;
use axum::http::Method;
use axum::{Json, Router};

use crate::access::{self, Capability, Routes, Rule};
use desk::auth::ServiceKind;

use crate::error::AppError;
use crate::state::AppState;
use desk::state::Services;

/// `GET /healthz`: the process is alive and serving. It queries nothing, so a database
/// outage does not make a supervisor restart a process that would reconnect by itself
/// (docs/spec/interfaces.md: `/healthz` is liveness, `/readyz` is readiness).
async fn healthz(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Json<serde_json::Value> {
    Json(
        serde_json::json!({ "status": "ok", "database": format!("{:?}", state.db.backend()).to_lowercase() }),
    )
}

/// How long `/readyz` waits for the database before calling it unreachable: well under
/// a load balancer's probe timeout (sqlx's own acquire timeout is 30 s).
const READY_DATABASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `GET /readyz`: 200 when this instance can do its work — the database answers, every
/// migration of this build is applied, and the policy index holds the loaded policies —
/// else 503 with `not_ready` naming each failed check. Details go to the log, not the
/// (unauthenticated) body.
async fn readyz(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> (axum::http::StatusCode, Json<serde_json::Value>) {
    let (database, migrations) =
        match tokio::time::timeout(READY_DATABASE_TIMEOUT, state.db.missing_migrations()).await {
            Ok(Ok(missing)) if missing.is_empty() => ("ok", "ok"),
            Ok(Ok(missing)) => {
                tracing::warn!(?missing, "readyz: migrations not applied");
                ("ok", "not applied")
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "readyz: database query failed");
                ("unreachable", "unknown")
            }
            Err(_) => {
                tracing::warn!("readyz: database did not answer in time");
                ("unreachable", "unknown")
            }
        };
    let index = if index_matches_policies(&state) {
        "ok"
    } else {
        "not loaded"
    };
    let checks = [
        ("database", database),
        ("migrations", migrations),
        ("policy_index", index),
    ];
    let not_ready: Vec<&str> = checks
        .iter()
        .filter(|(_, status)| *status != "ok")
        .map(|(name, _)| *name)
        .collect();
    let status = if not_ready.is_empty() {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    let checks: serde_json::Map<String, serde_json::Value> = checks
        .iter()
        .map(|(name, status)| (name.to_string(), (*status).into()))
        .collect();
    let body = serde_json::json!({
        "status": if not_ready.is_empty() { "ready" } else { "not_ready" },
        "not_ready": not_ready,
        "checks": checks,
    });
    (status, Json(body))
}

/// The index is loaded and was built from the policies this instance decides with (an
/// index of other policies would cite passages the engine does not apply).
fn index_matches_policies(state: &AppState) -> bool {
    state.index.section_count() > 0
        && state
            .policies
            .index_hash()
            .is_some_and(|hash| hash == state.index.policy_hash())
}

/// `GET /metrics`: Prometheus text (docs/spec/interfaces.md). Open like `/healthz` unless
/// `METRICS_TOKEN` is set (the access layer's `Rule::Metrics`): its labels are route
/// templates, statuses, declared tool names and kinds, never an id, an amount or a
/// person (`metrics`). The database gauges come from the read-only connections, cached
/// for `METRICS_CACHE_SECS` with one computation in flight (`gauges::GaugeCache`).
async fn get_metrics(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let cache = &state.metrics_cache;
    match desk::gauges::render(&state.db, desk::reconcile::JOB_NAME, cache).await {
        Ok(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                desk::metrics::CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        Err(e) => AppError::from(e).into_response(),
    }
}

/// Counts every answered request by its matched route template and status. It runs
/// inside the router (a `Router::layer`), where axum has already put `MatchedPath` in
/// the request; the fallback has none and counts as `unmatched`.
async fn count_request(request: Request, next: axum::middleware::Next) -> axum::response::Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let method = request.method().clone();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    desk::metrics::record_http(
        method.as_str(),
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

async fn not_found() -> AppError {
    AppError::not_found("route")
}

/// Every route of the app with its access rule (docs/spec/roles.md), the router built
/// from them, and the table the access layer reads. Tests walk the same table.
pub fn routes(services: &Services) -> Routes {
    routes_of(&AppState::new(services.clone()))
}

fn routes_of(state: &AppState) -> Routes {
    let mcp = || {
        Routes::new().service(
            "/mcp",
            &[
                (Method::GET, Rule::Staff(Capability::ReadCases)),
                (Method::POST, Rule::Staff(Capability::ReadCases)),
                (Method::DELETE, Rule::Staff(Capability::ReadCases)),
            ],
            crate::mcp::service(state),
        )
    };
    let api = api_routes(state)
        .merge(mcp())
        .map_router(|r| r.fallback(not_found));
    Routes::new()
        .nest("/api/v1", api)
        .get("/healthz", Rule::Anyone, healthz)
        .get("/readyz", Rule::Anyone, readyz)
        .get("/metrics", Rule::Metrics, get_metrics)
        .merge(mcp())
        .merge(crate::scim::routes())
        .merge(crate::pages::routes(state))
}

/// The JSON API under `/api/v1`.
fn api_routes(state: &AppState) -> Routes {
    use crate::api::{
        cases, customer_data, policies, reconcile, records, rollout, runs, saved_replies, tickets,
    };
    let shop = Rule::ServiceOrStaff(ServiceKind::Integration, Capability::Administer);
    let customer = Rule::Customer;
    let read = Rule::Staff(Capability::ReadCases);
    let work = Rule::Staff(Capability::WorkCases);
    let decide = Rule::Staff(Capability::DecideRefunds);
    let author = Rule::Staff(Capability::AuthorPolicies);
    let webhook = crate::api::webhooks::route_with_secret(
        crate::api::webhooks::WebhookSecret::new(state.webhook_secret.clone()),
    );
    Routes::new()
        .post("/tickets", customer, tickets::post_ticket)
        .get("/tickets", customer, tickets::list_tickets)
        .post("/tickets/{id}/withdraw", customer, tickets::post_withdraw)
        .post("/tickets/{id}/person", customer, tickets::post_person)
        .post("/tickets/{id}/csat", customer, crate::api::csat::post_csat)
        .get("/reports/csat", read, crate::api::csat::get_csat_report)
        .get("/tickets/{id}", customer, tickets::get_ticket)
        .post("/tickets/{id}/messages", customer, tickets::post_message)
        // A customer's images and PDFs on their ticket, served back as downloads.
        .method_router(
            "/tickets/{id}/attachments",
            &[(Method::POST, customer)],
            tickets::attachment_upload_route(),
        )
        .get(
            "/tickets/{id}/attachments/{file}",
            customer,
            tickets::get_attachment,
        )
        .get("/cases", read, cases::get_cases)
        .get("/cases/{id}", read, cases::get_case)
        .post("/cases/{id}/approve", decide, cases::post_approve)
        .post("/cases/{id}/reject", decide, cases::post_reject)
        .post("/cases/{id}/handup", work, cases::post_handup)
        .post("/cases/{id}/presence", read, cases::post_presence)
        .post(
            "/cases/{id}/takeover",
            Rule::Staff(Capability::TakeOver),
            cases::post_takeover,
        )
        .post("/cases/{id}/decide", work, cases::post_decide)
        .post("/cases/{id}/messages", work, cases::post_message)
        .post(
            "/cases/{id}/close",
            Rule::Staff(Capability::CloseCases),
            cases::post_close,
        )
        .post("/cases/{id}/assign", work, cases::post_assign)
        .get("/runs/{id}/events", read, runs::get_events)
        .get("/policies/{doc}/draft", author, policies::get_draft)
        .put("/policies/{doc}/draft", author, policies::put_draft)
        .post("/policies/{doc}/whatif", author, policies::post_whatif)
        .post(
            "/policies/{doc}/publish",
            Rule::Staff(Capability::PublishPolicies),
            policies::post_publish,
        )
        .method_router(
            "/webhooks/payments",
            &[(Method::POST, Rule::ProviderSigned)],
            webhook,
        )
        .post("/reconcile", work, reconcile::post_reconcile)
        .get("/rollout", read, rollout::get_rollout)
        .post(
            "/rollout",
            Rule::Staff(Capability::Administer),
            rollout::post_rollout,
        )
        // Mail from a mail server (its own token), and attachments as downloads.
        .method_router(
            "/inbound/email",
            &[(Method::POST, Rule::InboundMail)],
            crate::api::mail::inbound_route(),
        )
        .get("/attachments/{id}", read, crate::api::mail::get_attachment)
        // docs/spec/email.md: staff see and clear a customer's undeliverable mark.
        .get(
            "/customers/{id}/mail",
            read,
            crate::api::mail::get_customer_mail,
        )
        .delete(
            "/customers/{id}/mail/undeliverable",
            work,
            crate::api::mail::delete_undeliverable,
        )
        .get("/saved-replies", read, saved_replies::get_saved_replies)
        .post(
            "/saved-replies",
            Rule::Staff(Capability::ManageSavedReplies),
            saved_replies::post_saved_reply,
        )
        .put("/customers/{id}", shop, records::put_customer)
        .get(
            "/customers/{id}/export",
            Rule::Staff(Capability::Administer),
            customer_data::get_export,
        )
        .post(
            "/customers/{id}/erase",
            Rule::Staff(Capability::Administer),
            customer_data::post_erase,
        )
        .put("/orders/{id}", shop, records::put_order)
        .get("/charges/unlinked", read, records::get_unlinked)
        .post(
            "/charges/unlinked/sync",
            Rule::Staff(Capability::Administer),
            records::post_sync,
        )
        .post(
            "/charges/{id}/link",
            Rule::Staff(Capability::CorrectRecords),
            records::post_link,
        )
        .get("/healthz", Rule::Anyone, healthz)
        .get("/readyz", Rule::Anyone, readyz)
        .get("/openapi.json", Rule::Anyone, crate::openapi::get_openapi)
}

/// The product's router over the process's services (its `AppState` is made here).
pub fn router(services: Services) -> Router {
    router_from(routes(&services), services)
}

/// The router of `routes`, behind the request layers and the access layer that reads
/// their rules.
pub fn router_from(routes: Routes, services: Services) -> Router {
    let state = AppState::new(services);
    let hsts = state.secure_cookies;
    let (router, table) = routes
        .map_router(|r| r.fallback(crate::pages::page_not_found))
        .finish();
    with_request_layers(router.with_state(state.clone()), hsts, state, table)
}

/// The header that names one request in the logs and in the answer.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The longest caller-sent `x-request-id` kept.
pub const REQUEST_ID_MAX_LEN: usize = 128;

/// A caller's `x-request-id` goes into every log line of its request and back on the
/// answer, so one that is empty, longer than [`REQUEST_ID_MAX_LEN`] or not plain
/// visible ASCII (no spaces) is dropped, and the request gets a fresh UUID instead:
/// no one can stretch or garble our logs through it.
async fn drop_unfit_request_id(mut request: Request) -> Request {
    let fits = |v: &axum::http::HeaderValue| {
        let bytes = v.as_bytes();
        (1..=REQUEST_ID_MAX_LEN).contains(&bytes.len()) && bytes.iter().all(u8::is_ascii_graphic)
    };
    if request
        .headers()
        .get(REQUEST_ID_HEADER)
        .is_some_and(|v| !fits(v))
    {
        request.headers_mut().remove(REQUEST_ID_HEADER);
    }
    request
}

/// No error answer ever sets a cookie: a session is started only by a request that
/// succeeded (a sign-in whose redirect failed must not leave a session behind).
async fn no_cookie_on_errors<B>(mut response: axum::http::Response<B>) -> axum::http::Response<B> {
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        response
            .headers_mut()
            .remove(axum::http::header::SET_COOKIE);
    }
    response
}

/// Content-Security-Policy of every response: scripts only from our own files (the
/// ticket page's polling script is `/static/ticket.js`), inline styles allowed (they
/// cannot run code), and no framing: an approval console must not be clickjacked.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
     form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'";

/// A request slower than this is logged at `info` whatever its status.
pub const SLOW_REQUEST: std::time::Duration = std::time::Duration::from_millis(500);

/// A request's line in the log: at `info` when it was refused or failed (4xx, 5xx) or
/// took longer than [`SLOW_REQUEST`], else at `debug`. Every request is already counted
/// by route, status and latency (`count_request`, `/metrics`); a line per answered read
/// at the default `info` cost more than the read (a formatted line and a write to
/// stderr per request: docs/configuration.md says how to see them all again).
fn log_response<B>(
    response: &axum::http::Response<B>,
    latency: std::time::Duration,
    _span: &tracing::Span,
) {
    let status = response.status().as_u16();
    let latency_ms = latency.as_secs_f64() * 1000.0;
    if status >= 400 || latency >= SLOW_REQUEST {
        tracing::info!(status, latency_ms, "finished processing request");
    } else {
        tracing::debug!(status, latency_ms, "finished processing request");
    }
}

/// What every request passes through, outermost first:
/// - An `x-request-id` — the caller's (a proxy's) if it sent one, else a new
///   UUID — set before the `request` span is made, so each log line of the request
///   names it, and copied to the response. The span names the route template, never the
///   raw URI: sign-in links carry their token in the query;
/// - The security headers, each set only when the handler set none (so
///   `/static/ticket.js` keeps its own `Cache-Control`), HSTS only over TLS
///   (`PUBLIC_URL` is https);
/// - the count per route and status, and the body limit.
///
/// One `ServiceBuilder`, applied once: each `Router::layer` boxes every route again, and
/// axum clones a route's boxed stack per request (ten boxes were a measurable
/// share of a ticket page).
fn with_request_layers(
    router: Router,
    hsts: bool,
    state: AppState,
    table: access::AccessTable,
) -> Router {
    use axum::http::{header, HeaderName, HeaderValue};
    use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
    use tower_http::set_header::SetResponseHeaderLayer;
    use tower_http::trace::TraceLayer;
    let id = HeaderName::from_static(REQUEST_ID_HEADER);
    let trace = TraceLayer::new_for_http()
        .make_span_with(|request: &Request| {
            let route = request
                .extensions()
                .get::<axum::extract::MatchedPath>()
                .map_or("unmatched", |p| p.as_str());
            let request_id = request
                .headers()
                .get(REQUEST_ID_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            tracing::info_span!("request", method = %request.method(), route, request_id)
        })
        .on_response(log_response);
    let set = |name, value: &'static str| {
        SetResponseHeaderLayer::if_not_present(name, HeaderValue::from_static(value))
    };
    let hsts = hsts.then(|| {
        let value = "max-age=31536000; includeSubDomains";
        set(header::STRICT_TRANSPORT_SECURITY, value)
    });
    router.layer(
        tower::ServiceBuilder::new()
            .layer(axum::middleware::map_request(drop_unfit_request_id))
            .layer(axum::middleware::map_response(no_cookie_on_errors))
            .layer(SetRequestIdLayer::new(id.clone(), MakeRequestUuid))
            .layer(trace)
            .layer(PropagateRequestIdLayer::new(id))
            .option_layer(hsts)
            .layer(set(header::CACHE_CONTROL, "no-store"))
            .layer(set(header::REFERRER_POLICY, "no-referrer"))
            .layer(set(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .layer(set(header::X_FRAME_OPTIONS, "DENY"))
            .layer(set(
                header::CONTENT_SECURITY_POLICY,
                CONTENT_SECURITY_POLICY,
            ))
            .layer(axum::middleware::from_fn(count_request))
            .layer(axum::middleware::from_fn_with_state(
                (state, table),
                crate::gate::check,
            ))
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024)),
    )
}
