//! What an operator scrapes and follows: `GET /metrics` read back with a real
//! Prometheus text parser after real requests, refunds, webhooks and logins; the
//! `x-request-id` every answer carries; and the app's own webhook verifier
//! agreeing with the provider mock's signer.
//!
//! Counters are per process and this binary's tests run at once, so each test reads
//! the figures before and after and checks the difference, on labels no other test
//! here touches; the states counted from the database are each test's own.

use crate::support::{spawn_app, TestApp};
use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode};
use serde_json::json;

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

type Exposition = openmetrics_parser::MetricsExposition<
    openmetrics_parser::PrometheusType,
    openmetrics_parser::PrometheusValue,
>;

/// One scrape, parsed by `openmetrics-parser`'s Prometheus text grammar, which refuses
/// the whole exposition on any line it cannot read.
struct Scrape(Exposition);

impl Scrape {
    /// The samples of family `name` whose labels include all of `labels`, each mapped
    /// by `pick` (a counter's or gauge's value, a histogram's count or sum); summed.
    fn sum_of(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        pick: impl Fn(&openmetrics_parser::PrometheusValue) -> f64,
    ) -> f64 {
        let Some(family) = self.0.families.get(name) else {
            return 0.0;
        };
        family
            .iter_samples()
            .filter(|sample| {
                let set = sample
                    .get_labelset()
                    .expect("a parsed sample has its labels");
                let pairs: Vec<(&String, &String)> = set.iter().collect();
                labels
                    .iter()
                    .all(|(k, v)| pairs.iter().any(|(pk, pv)| pk == k && pv == v))
            })
            .map(|sample| pick(&sample.value))
            .sum()
    }

    /// A counter's or gauge's value, or a histogram's observation count.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        use openmetrics_parser::PrometheusValue as V;
        self.sum_of(name, labels, |value| match value {
            V::Counter(c) => c.value.as_f64(),
            V::Gauge(n) | V::Unknown(n) => n.as_f64(),
            V::Histogram(h) => h.count.unwrap_or(0) as f64,
            V::Summary(_) => panic!("{name} is a summary"),
        })
    }

    /// A histogram's sum of observations.
    fn histogram_sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.sum_of(name, labels, |value| match value {
            openmetrics_parser::PrometheusValue::Histogram(h) => {
                h.sum.as_ref().map_or(0.0, |n| n.as_f64())
            }
            _ => panic!("{name} is not a histogram"),
        })
    }

    /// Whether any label value of any sample contains `needle`.
    fn any_label_contains(&self, needle: &str) -> bool {
        self.0.families.values().any(|family| {
            family.iter_samples().any(|sample| {
                let set = sample
                    .get_labelset()
                    .expect("a parsed sample has its labels");
                let found = set.iter().any(|(_, v)| v.contains(needle));
                found
            })
        })
    }
}

async fn scrape(app: &TestApp) -> Scrape {
    let response = app
        .response(Request::get("/metrics").body(Body::empty()).unwrap())
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 22)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    match openmetrics_parser::prometheus::parse_prometheus(&text) {
        Ok(parsed) => Scrape(parsed),
        Err(e) => panic!("not Prometheus text ({e:?}):\n{text}"),
    }
}

#[tokio::test]
async fn requests_are_counted_by_route_template_and_status_with_their_latency() {
    let app = spawn_app().await;
    let route = [("route", "/api/v1/cases/{id}"), ("status", "404")];
    let before = scrape(&app).await;
    for _ in 0..2 {
        let (status, _) = app
            .request(
                "GET",
                "/api/v1/cases/case_nope",
                Some(&app.agent_token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (status, _) = app
        .request("GET", "/api/v1/no/such/route", None, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let after = scrape(&app).await;

    let requests = "refund_desk_http_requests_total";
    assert_eq!(
        after.value(requests, &route) - before.value(requests, &route),
        2.0
    );
    let latency = "refund_desk_http_request_duration_seconds";
    assert_eq!(
        after.value(latency, &route) - before.value(latency, &route),
        2.0
    );
    let unmatched = [("route", "unmatched"), ("status", "404")];
    assert!(after.value(requests, &unmatched) > before.value(requests, &unmatched));
    // The raw path (an id) never becomes a label.
    assert!(!after.any_label_contains("case_nope") && !after.any_label_contains("no/such"));
}

#[tokio::test]
async fn an_approved_refund_moves_cases_approvals_intents_and_refund_counters() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let awaiting = scrape(&app).await;
    assert_eq!(
        awaiting.value("refund_desk_cases", &[("status", "awaiting_approval")]),
        1.0
    );
    assert!(awaiting.value("refund_desk_runs", &[]) >= 1.0);

    let case_id = case["id"].as_str().unwrap();
    let fingerprint = case["fingerprint"].as_str().unwrap();
    let (status, body) = app.approve(&app.agent_token, case_id, fingerprint).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.drain().await;
    let done = scrape(&app).await;

    assert_eq!(
        done.value("refund_desk_cases", &[("status", "refund_succeeded")]),
        1.0
    );
    assert_eq!(
        done.value("refund_desk_cases", &[("status", "awaiting_approval")]),
        0.0
    );
    assert_eq!(
        done.value("refund_desk_approvals", &[("verdict", "approved")]),
        1.0
    );
    assert_eq!(
        done.value("refund_desk_refund_intents", &[("status", "succeeded")]),
        1.0
    );
    for kind in ["submitted", "succeeded"] {
        let refunds = "refund_desk_refunds_total";
        assert!(
            done.value(refunds, &[("kind", kind)])
                >= awaiting.value(refunds, &[("kind", kind)]) + 1.0,
            "{kind} counted"
        );
    }
}

#[tokio::test]
async fn a_voided_approval_and_a_reconciliation_difference_show_in_the_metrics() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let fingerprint = case["fingerprint"].as_str().unwrap();
    let (status, _) = app.approve(&app.agent_token, case_id, fingerprint).await;
    assert_eq!(status, StatusCode::OK);
    // A refund made in the provider's dashboard voids the approval at the boundary.
    app.refund_elsewhere("ch_1001b", 5000).await;
    app.drain().await;
    let (status, report) = app
        .request(
            "POST",
            "/api/v1/reconcile",
            Some(&app.supervisor_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let scraped = scrape(&app).await;

    assert_eq!(
        scraped.value(
            "refund_desk_approvals",
            &[("verdict", "approved"), ("status", "void")]
        ),
        1.0
    );
    let mut total = 0.0;
    for (field, kind) in [
        ("amount_mismatch", "amount"),
        ("status_mismatch", "status"),
        ("provider_without_intent", "provider_only"),
        ("intent_without_provider", "intent_only"),
        ("unresolved", "unresolved"),
    ] {
        let listed = report[field].as_array().map_or(0, Vec::len) as f64;
        let gauge = scraped.value("refund_desk_reconcile_mismatches", &[("kind", kind)]);
        assert_eq!(gauge, listed, "{kind} against the report: {report:#}");
        total += gauge;
    }
    assert!(
        total >= 1.0,
        "the dashboard refund is a difference: {report:#}"
    );
}

#[tokio::test]
async fn webhook_deliveries_are_counted_by_outcome_and_a_bad_signature_is_one() {
    let app = spawn_app().await;
    let metric = "refund_desk_webhook_events_total";
    let before = scrape(&app).await;
    let body =
        json!({ "id": "evt_metrics_1", "type": "customer.created", "data": { "object": {} } })
            .to_string();
    let send = |signature: Option<String>| {
        let mut request =
            Request::post("/api/v1/webhooks/payments").header("content-type", "application/json");
        if let Some(signature) = signature {
            request = request.header("stripe-signature", signature);
        }
        app.raw(request.body(Body::from(body.clone())).unwrap())
    };
    let (status, _) = send(None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let now_secs = time::OffsetDateTime::parse(
        crate::support::NOW,
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap()
    .unix_timestamp();
    let signed = payments_mock::sign_payload(
        desk::config::DEFAULT_WEBHOOK_SECRET,
        now_secs,
        body.as_bytes(),
    );
    let (status, ack) = send(Some(signed)).await;
    assert_eq!(status, StatusCode::OK, "{ack}");
    let after = scrape(&app).await;

    for kind in ["invalid_signature", "ignored"] {
        let labels = [("kind", kind)];
        assert_eq!(
            after.value(metric, &labels) - before.value(metric, &labels),
            1.0,
            "{kind}"
        );
    }
}

#[tokio::test]
async fn a_wrong_password_is_counted_as_a_login_failure() {
    let app = spawn_app().await;
    let metric = "refund_desk_login_failures_total";
    let labels = [("kind", "wrong_credentials")];
    let before = scrape(&app).await;
    let (status, _) = app
        .raw(
            Request::post("/console/login")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from("email=agent@test.example&password=wrong"))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let after = scrape(&app).await;
    assert_eq!(
        after.value(metric, &labels) - before.value(metric, &labels),
        1.0
    );
}

#[tokio::test]
async fn step_tool_and_model_figures_recorded_by_the_agent_loop_show_in_the_scrape() {
    let app = spawn_app().await;
    let before = scrape(&app).await;
    desk::metrics::record_step(40);
    desk::metrics::record_tool_call("metrics_test_tool", false, 12);
    desk::metrics::record_model_call("metrics-test-model", true, 900, 1200, 80);
    let after = scrape(&app).await;
    let delta = |metric: &str, labels: &[(&str, &str)]| {
        after.value(metric, labels) - before.value(metric, labels)
    };

    assert!(delta("refund_desk_agent_step_duration_seconds", &[]) >= 1.0);
    let tool = [("name", "metrics_test_tool"), ("outcome", "error")];
    assert_eq!(delta("refund_desk_tool_calls_total", &tool), 1.0);
    let tool_latency = [("name", "metrics_test_tool")];
    let latency = "refund_desk_tool_call_duration_seconds";
    assert_eq!(delta(latency, &tool_latency), 1.0);
    assert_eq!(
        after.histogram_sum(latency, &tool_latency) - before.histogram_sum(latency, &tool_latency),
        0.012
    );
    let model = [("name", "metrics-test-model"), ("outcome", "ok")];
    assert_eq!(delta("refund_desk_model_calls_total", &model), 1.0);
    for (kind, tokens) in [("prompt", 1200.0), ("completion", 80.0)] {
        let labels = [("model", "metrics-test-model"), ("kind", kind)];
        assert_eq!(delta("refund_desk_model_tokens_total", &labels), tokens);
    }
}

#[tokio::test]
async fn a_request_id_sent_by_the_caller_comes_back_on_the_response() {
    let app = spawn_app().await;
    let response = app
        .response(
            Request::get("/healthz")
                .header("x-request-id", "proxy-7f3a")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["x-request-id"], "proxy-7f3a");
}

#[tokio::test]
async fn a_request_id_too_long_or_not_plain_ascii_is_replaced_by_a_fresh_uuid() {
    let app = spawn_app().await;
    let longest = "r".repeat(web::router::REQUEST_ID_MAX_LEN);
    let response = app
        .response(
            Request::get("/healthz")
                .header("x-request-id", &longest)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(response.headers()["x-request-id"], longest.as_str(), "kept");
    let too_long = "r".repeat(web::router::REQUEST_ID_MAX_LEN + 1);
    let unfit: [&[u8]; 4] = [
        too_long.as_bytes(),
        b"two words",
        b"caf\xc3\xa9",
        b"tab\tinside",
    ];
    for sent in unfit {
        let response = app
            .response(
                Request::get("/healthz")
                    .header("x-request-id", HeaderValue::from_bytes(sent).unwrap())
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let id = response.headers()["x-request-id"].to_str().unwrap();
        assert!(
            uuid::Uuid::parse_str(id).is_ok(),
            "{:?} was replaced by a UUID, not echoed: {id}",
            String::from_utf8_lossy(sent)
        );
    }
}

#[tokio::test]
async fn a_request_without_an_id_gets_a_fresh_uuid_on_the_response_even_when_it_fails() {
    let app = spawn_app().await;
    let mut seen = Vec::new();
    for path in ["/healthz", "/api/v1/cases", "/no/such/page"] {
        let response = app
            .response(Request::get(path).body(Body::empty()).unwrap())
            .await;
        let id = response.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let parsed = uuid::Uuid::parse_str(&id).unwrap_or_else(|e| panic!("{path}: {id}: {e}"));
        assert_eq!(parsed.get_version_num(), 4, "{path}");
        seen.push(id);
    }
    seen.dedup();
    assert_eq!(seen.len(), 3, "each request has its own id: {seen:?}");
}

#[test]
fn the_provider_mocks_signer_and_the_apps_verifier_agree() {
    use payments_adapter::signature::{verify, SignatureError, DEFAULT_TOLERANCE_SECS};
    let body = br#"{"id":"evt_agree","type":"refund.updated"}"#;
    let now = 1_800_000_000;
    for secret in ["whsec_test_refund_desk", "whsec_another", ""] {
        let header = payments_mock::sign_payload(secret, now - 5, body);
        assert_eq!(
            verify(secret, &header, body, now, DEFAULT_TOLERANCE_SECS),
            Ok(())
        );
        assert_eq!(
            payments_mock::verify_signature(secret, &header, body, now, DEFAULT_TOLERANCE_SECS),
            Ok(())
        );
        assert_eq!(
            verify("whsec_wrong", &header, body, now, DEFAULT_TOLERANCE_SECS),
            Err(SignatureError::NoMatch)
        );
    }
    assert_eq!(
        DEFAULT_TOLERANCE_SECS,
        payments_mock::DEFAULT_TOLERANCE_SECS
    );
    let stale = payments_mock::sign_payload("whsec_x", now - 301, body);
    assert_eq!(
        verify("whsec_x", &stale, body, now, DEFAULT_TOLERANCE_SECS),
        Err(SignatureError::Stale)
    );
}
