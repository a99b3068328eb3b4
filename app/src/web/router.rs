//! The router, built apart from the server so tests drive it without a socket.

use axum::extract::Request;
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::state::AppState;
use crate::web::error::AppError;

/// `GET /healthz`: the process is alive and serving. It queries nothing, so a database
/// outage does not make a supervisor restart a process that would reconnect by itself
/// (SPEC §7: `/healthz` is liveness, `/readyz` is readiness).
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
        && rag_index::policy_hash(state.policies.documents())
            .is_ok_and(|hash| hash == state.index.policy_hash())
}

/// `GET /metrics`: Prometheus text (SPEC §7). Open like `/healthz`: its labels are route
/// templates, statuses and kinds, never an id, an amount or a person (`metrics`), so it
/// tells a reader volumes, not secrets; SECURITY.md says how to keep it internal.
async fn get_metrics(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let stuck = match crate::watchdog::stuck_counts(&state.db).await {
        Ok(stuck) => stuck,
        Err(e) => return AppError::from(e).into_response(),
    };
    match crate::metrics::render(&state.db, crate::reconcile::JOB_NAME, &stuck).await {
        Ok(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                crate::metrics::CONTENT_TYPE,
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
    crate::metrics::record_http(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

async fn not_found() -> AppError {
    AppError::not_found("route")
}

pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route(
            "/tickets",
            post(crate::web::api::tickets::post_ticket).get(crate::web::api::tickets::list_tickets),
        )
        .route(
            "/tickets/{id}/withdraw",
            post(crate::web::api::tickets::post_withdraw),
        )
        .route(
            "/tickets/{id}/person",
            post(crate::web::api::tickets::post_person),
        )
        .route("/tickets/{id}", get(crate::web::api::tickets::get_ticket))
        .route(
            "/tickets/{id}/messages",
            post(crate::web::api::tickets::post_message),
        )
        .route("/cases", get(crate::web::api::cases::get_cases))
        .route("/cases/{id}", get(crate::web::api::cases::get_case))
        .route(
            "/cases/{id}/approve",
            post(crate::web::api::cases::post_approve),
        )
        .route(
            "/cases/{id}/reject",
            post(crate::web::api::cases::post_reject),
        )
        .route(
            "/cases/{id}/takeover",
            post(crate::web::api::cases::post_takeover),
        )
        .route(
            "/cases/{id}/decide",
            post(crate::web::api::cases::post_decide),
        )
        .route(
            "/cases/{id}/messages",
            post(crate::web::api::cases::post_message),
        )
        .route(
            "/cases/{id}/close",
            post(crate::web::api::cases::post_close),
        )
        .route(
            "/cases/{id}/assign",
            post(crate::web::api::cases::post_assign),
        )
        .route("/runs/{id}/events", get(crate::web::api::runs::get_events))
        .route(
            "/policies/{doc}/draft",
            get(crate::web::api::policies::get_draft).put(crate::web::api::policies::put_draft),
        )
        .route(
            "/policies/{doc}/whatif",
            post(crate::web::api::policies::post_whatif),
        )
        .route(
            "/policies/{doc}/publish",
            post(crate::web::api::policies::post_publish),
        )
        .route(
            "/webhooks/payments",
            crate::web::api::webhooks::route_with_secret(
                crate::web::api::webhooks::WebhookSecret::new(state.webhook_secret.clone()),
            ),
        )
        .route(
            "/reconcile",
            post(crate::web::api::reconcile::post_reconcile),
        )
        .route(
            "/rollout",
            get(crate::web::api::rollout::get_rollout).post(crate::web::api::rollout::post_rollout),
        )
        .route(
            "/saved-replies",
            get(crate::web::api::saved_replies::get_saved_replies)
                .post(crate::web::api::saved_replies::post_saved_reply),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/openapi.json", get(crate::web::openapi::get_openapi))
        .merge(crate::web::mcp::routes(&state))
        .fallback(not_found);
    let hsts = state.secure_cookies;
    let router = Router::new()
        .nest("/api/v1", api)
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(get_metrics))
        .merge(crate::web::mcp::routes(&state))
        .merge(crate::web::pages::routes(&state))
        .fallback(crate::web::pages::page_not_found)
        .with_state(state);
    with_request_layers(router, hsts)
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

/// Content-Security-Policy of every response: scripts only from our own files (the
/// ticket page's polling script is `/static/ticket.js`), inline styles allowed (they
/// cannot run code), and no framing: an approval console must not be clickjacked.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
     form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'";

/// What every request passes through, outermost first:
/// - issue 20: an `x-request-id` — the caller's (a proxy's) if it sent one, else a new
///   UUID — set before the `request` span is made, so each log line of the request
///   names it, and copied to the response. The span names the route template, never the
///   raw URI: sign-in links carry their token in the query;
/// - issue 16: the security headers, each set only when the handler set none (so
///   `/static/ticket.js` keeps its own `Cache-Control`), HSTS only over TLS
///   (`PUBLIC_URL` is https);
/// - the count per route and status, and the body limit.
///
/// One `ServiceBuilder`, applied once: each `Router::layer` boxes every route again, and
/// axum clones a route's boxed stack per request (issue 19: ten boxes were a measurable
/// share of a ticket page).
fn with_request_layers(router: Router, hsts: bool) -> Router {
    use axum::http::{header, HeaderName, HeaderValue};
    use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
    use tower_http::set_header::SetResponseHeaderLayer;
    use tower_http::trace::{DefaultOnResponse, TraceLayer};
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
        .on_response(DefaultOnResponse::new().level(tracing::Level::INFO));
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
            .layer(axum::extract::DefaultBodyLimit::max(64 * 1024)),
    )
}
