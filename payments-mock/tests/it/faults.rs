//! Fault injection, the refund lifecycle, events and signed webhooks, over real HTTP:
//! each test starts its own mock on port 0 (and, for webhooks, a tiny receiver).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use payments_mock::{
    sign_payload, verify_signature, MockConfig, RetryPolicy, RunningMock, SignatureError,
};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::sync::mpsc;

const API_KEY: &str = "sk_test_refund_desk";
const SECRET: &str = MockConfig::DEFAULT_WEBHOOK_SECRET;

struct TestMock {
    mock: RunningMock,
    _dir: TempDir,
    client: reqwest::Client,
}

impl TestMock {
    async fn spawn(webhook_url: Option<String>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = MockConfig::new(dir.path());
        config.webhook_url = webhook_url;
        config.webhook_retry = RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(40),
            max_backoff: Duration::from_millis(200),
        };
        config.webhook_timeout = Duration::from_secs(2);
        let addr: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let mock = payments_mock::start(config, addr)
            .await
            .expect("mock starts");
        let mock = Self {
            mock,
            _dir: dir,
            client: reqwest::Client::new(),
        };
        let response = mock.admin_post("/__mock/world", &world()).await;
        assert_eq!(response.status(), StatusCode::OK);
        mock
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.mock.base_url())
    }

    async fn admin_post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("admin request")
    }

    async fn faults(&self, rules: Value) {
        let response = self.admin_post("/__mock/faults", &rules).await;
        assert_eq!(response.status(), StatusCode::OK, "rules installed");
    }

    async fn ledger(&self) -> Value {
        self.client
            .get(self.url("/__mock/ledger"))
            .send()
            .await
            .expect("ledger")
            .json()
            .await
            .expect("ledger json")
    }

    async fn get_json(&self, path: &str) -> Value {
        let response = self
            .client
            .get(self.url(path))
            .bearer_auth(API_KEY)
            .send()
            .await
            .expect("get");
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.expect("json")
    }

    async fn try_post(
        &self,
        path: &str,
        key: Option<&str>,
        form: &[(&str, &str)],
    ) -> reqwest::Result<reqwest::Response> {
        let mut request = self
            .client
            .post(self.url(path))
            .bearer_auth(API_KEY)
            .timeout(Duration::from_secs(3))
            .form(form);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request.send().await
    }

    async fn post(
        &self,
        path: &str,
        key: Option<&str>,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        self.try_post(path, key, form).await.expect("a response")
    }

    async fn refund(&self, key: Option<&str>, form: &[(&str, &str)]) -> reqwest::Response {
        self.post("/v1/refunds", key, form).await
    }

    async fn refunds_created(&self) -> i64 {
        self.ledger().await["counters"]["refunds_created_total"]
            .as_i64()
            .unwrap_or(-1)
    }
}

fn world() -> Value {
    let charge = |id: &str, profile: &str| {
        json!({
            "id": id, "customer_id": "C-1", "amount": "100.00", "currency": "USD",
            "created_at": "2026-11-20T09:00:00Z", "refund_profile": profile
        })
    };
    json!({
        "charges": [
            charge("ch_ok", "succeeded"),
            charge("ch_pending", "pending"),
            charge("ch_action", "requires_action"),
            charge("ch_fail", "fail_later"),
        ],
        "refunds": []
    })
}

async fn json_of(response: reqwest::Response) -> Value {
    response.json().await.expect("json body")
}

fn id_of(value: &Value) -> String {
    value["id"].as_str().unwrap_or_default().to_owned()
}

// ---------------------------------------------------------------- fault modes

#[tokio::test]
async fn fail_before_commit_then_retry_with_the_same_key_makes_one_refund() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!([{"mode": "fail_before_commit", "status": 503, "path": "/v1/refunds", "one_shot": true}]))
        .await;
    let form = [("charge", "ch_ok"), ("amount", "1000")];
    let failed = mock.refund(Some("k-fbc"), &form).await;
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(json_of(failed).await["error"]["type"], "api_error");
    assert_eq!(mock.refunds_created().await, 0);
    assert_eq!(
        mock.ledger().await["idempotency_keys"],
        json!([]),
        "nothing stored"
    );

    let retry = mock.refund(Some("k-fbc"), &form).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert!(retry.headers().get("idempotent-replayed").is_none());
    let ledger = mock.ledger().await;
    assert_eq!(ledger["counters"]["refunds_created_total"], 1);
    assert_eq!(
        ledger["counters"]["faults_applied"]["fail_before_commit"],
        1
    );
}

#[tokio::test]
async fn server_error_after_begin_with_commit_replays_the_500_and_keeps_one_refund() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!({"mode": "server_error_after_begin", "commit": true, "should_retry": false, "one_shot": true}))
        .await;
    let form = [
        ("charge", "ch_ok"),
        ("amount", "1000"),
        ("metadata[refund_intent_id]", "ri_1"),
    ];
    let first = mock.refund(Some("k-500"), &form).await;
    assert_eq!(first.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(first.headers()["stripe-should-retry"], "false");
    let body = first.bytes().await.expect("body");
    let error: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        error,
        json!({"error": {"type": "api_error", "message": "An unknown error occurred"}})
    );

    let replay = mock.refund(Some("k-500"), &form).await;
    assert_eq!(replay.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.bytes().await.expect("body"), body);

    // Reconciliation finds the committed refund by charge and metadata.
    let list = mock.get_json("/v1/refunds?charge=ch_ok").await;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(list["data"][0]["metadata"]["refund_intent_id"], "ri_1");
    let ledger = mock.ledger().await;
    assert_eq!(ledger["counters"]["refunds_created_total"], 1);
    assert_eq!(ledger["idempotency_keys"][0]["response_status"], 500);
}

#[tokio::test]
async fn server_error_after_begin_without_commit_creates_nothing() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!({"mode": "server_error_after_begin", "commit": false}))
        .await;
    let form = [("charge", "ch_ok"), ("amount", "1000")];
    let first = mock.refund(Some("k-500-nc"), &form).await;
    assert_eq!(first.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(first.headers().get("stripe-should-retry").is_none());
    assert_eq!(mock.refunds_created().await, 0);
    assert_eq!(
        mock.get_json("/v1/charges/ch_ok").await["amount_refunded"],
        0
    );
    assert_eq!(mock.ledger().await["counters"]["events"], 0);
}

#[tokio::test]
async fn drop_response_after_commit_close_errors_then_the_retry_replays_the_success() {
    let mock = TestMock::spawn(None).await;
    mock.faults(
        json!({"mode": "drop_response_after_commit", "drop_mode": "close", "one_shot": true}),
    )
    .await;
    let form = [("charge", "ch_ok"), ("amount", "2500")];
    let dropped = mock.try_post("/v1/refunds", Some("k-drop"), &form).await;
    let error = dropped.expect_err("the client sees a connection error, not a response");
    assert!(!error.is_status());

    let retry = mock.refund(Some("k-drop"), &form).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(json_of(retry).await["amount"], 2500);
    assert_eq!(mock.refunds_created().await, 1);
    assert_eq!(
        mock.get_json("/v1/charges/ch_ok").await["amount_refunded"],
        2500
    );
}

#[tokio::test]
async fn drop_response_after_commit_hang_outlasts_the_client_timeout() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!({"mode": "drop_response_after_commit", "drop_mode": "hang", "ms": 600, "one_shot": true}))
        .await;
    let form = [("charge", "ch_ok"), ("amount", "100")];
    let hung = mock
        .client
        .post(mock.url("/v1/refunds"))
        .bearer_auth(API_KEY)
        .header("Idempotency-Key", "k-hang")
        .timeout(Duration::from_millis(150))
        .form(&form)
        .send()
        .await;
    assert!(hung.expect_err("timed out").is_timeout());
    let retry = mock.refund(Some("k-hang"), &form).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(mock.refunds_created().await, 1);
}

#[tokio::test]
async fn connect_refused_and_reset_before_commit_leave_no_trace() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!([
        {"mode": "connect_refused", "method": "POST", "path": "/v1/refunds", "one_shot": true},
        {"mode": "reset_before_commit", "method": "POST", "path": "/v1/refunds", "one_shot": true}
    ]))
    .await;
    let form = [("charge", "ch_ok"), ("amount", "100")];
    for _ in 0..2 {
        let result = mock.try_post("/v1/refunds", Some("k-conn"), &form).await;
        assert!(result.is_err(), "connection error expected");
    }
    assert_eq!(mock.refunds_created().await, 0);
    let ok = mock.refund(Some("k-conn"), &form).await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert!(ok.headers().get("idempotent-replayed").is_none());
    let ledger = mock.ledger().await;
    assert_eq!(ledger["counters"]["refunds_created_total"], 1);
    assert_eq!(ledger["counters"]["faults_applied"]["connect_refused"], 1);
    assert_eq!(
        ledger["counters"]["faults_applied"]["reset_before_commit"],
        1
    );
}

#[tokio::test]
async fn rate_limits_come_before_the_idempotency_layer_and_are_not_stored() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!([
        {"mode": "rate_limit", "one_shot": true},
        {"mode": "rate_limit", "code": "lock_timeout", "one_shot": true}
    ]))
    .await;
    let form = [("charge", "ch_ok"), ("amount", "100")];
    let limited = mock.refund(Some("k-429"), &form).await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().get("stripe-should-retry").is_none());
    assert_eq!(json_of(limited).await["error"]["code"], "rate_limit");
    let locked = mock.refund(Some("k-429"), &form).await;
    assert_eq!(locked.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(locked.headers()["stripe-should-retry"], "true");
    assert_eq!(json_of(locked).await["error"]["code"], "lock_timeout");
    assert_eq!(mock.ledger().await["idempotency_keys"], json!([]));

    let ok = mock.refund(Some("k-429"), &form).await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert!(ok.headers().get("idempotent-replayed").is_none());
}

#[tokio::test]
async fn latency_holding_the_key_makes_a_concurrent_retry_conflict() {
    let mock = Arc::new(TestMock::spawn(None).await);
    mock.faults(json!({"mode": "latency", "ms": 400, "hold_key": true, "one_shot": true}))
        .await;
    let form = [("charge", "ch_ok"), ("amount", "100")];
    let slow = {
        let mock = mock.clone();
        tokio::spawn(async move { mock.refund(Some("k-slow"), &form).await.status() })
    };
    // The slow request claims the key at once; wait until it is in flight.
    let mut conflict = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let response = mock.refund(Some("k-slow"), &form).await;
        if response.status() == StatusCode::CONFLICT {
            conflict = Some(json_of(response).await);
            break;
        }
    }
    let conflict = conflict.expect("a 409 while the first request holds the key");
    assert_eq!(conflict["error"]["code"], "idempotency_key_in_use");
    assert_eq!(slow.await.expect("task"), StatusCode::OK);
    assert_eq!(mock.refunds_created().await, 1);
}

#[tokio::test]
async fn conflict_in_flight_answers_409_for_n_attempts() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!({"mode": "conflict_in_flight", "times": 2}))
        .await;
    let form = [("charge", "ch_ok"), ("amount", "100")];
    for _ in 0..2 {
        let response = mock.refund(Some("k-409"), &form).await;
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(
            json_of(response).await["error"]["code"],
            "idempotency_key_in_use"
        );
    }
    assert_eq!(
        mock.refund(Some("k-409"), &form).await.status(),
        StatusCode::OK
    );
    assert_eq!(mock.refunds_created().await, 1);
    let faults = mock.get_json("/__mock/faults").await;
    assert_eq!(faults["rules"][0]["applied"], 2);
    assert_eq!(faults["rules"][0]["exhausted"], true);
}

#[tokio::test]
async fn forced_business_errors_are_stored_under_the_key() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!([
        {"mode": "business_error", "code": "charge_already_refunded", "idempotency_key": "k-biz-1"},
        {"mode": "business_error", "code": "amount_exceeds", "idempotency_key": "k-biz-2"},
        {"mode": "business_error", "code": "charge_disputed", "idempotency_key": "k-biz-3"}
    ]))
    .await;
    let form = [("charge", "ch_ok"), ("amount", "100")];
    let expected = [
        (
            "k-biz-1",
            Some("charge_already_refunded"),
            "Charge ch_ok has already been refunded.",
        ),
        (
            "k-biz-2",
            None,
            "Refund amount ($1.00) is greater than unrefunded amount on charge ($0.99)",
        ),
        (
            "k-biz-3",
            Some("charge_disputed"),
            "Charge ch_ok has been charged back; cannot issue a refund.",
        ),
    ];
    for (key, code, message) in expected {
        let response = mock.refund(Some(key), &form).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let error = json_of(response).await["error"].clone();
        assert_eq!(error["code"].as_str(), code, "{key}");
        assert_eq!(error["message"], message);
    }
    // Replays: the stored refusal, even though the rules would fire again.
    mock.faults(json!({"mode": "fail_before_commit", "path": "/nowhere"}))
        .await;
    let replay = mock.refund(Some("k-biz-1"), &form).await;
    assert_eq!(replay.status(), StatusCode::BAD_REQUEST);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(mock.refunds_created().await, 0);
    assert_eq!(
        mock.ledger().await["idempotency_keys"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

#[tokio::test]
async fn expire_key_drops_the_stored_response_so_the_same_key_executes_again() {
    let mock = TestMock::spawn(None).await;
    let form = [("charge", "ch_ok"), ("amount", "100")];
    assert_eq!(
        mock.refund(Some("k-exp"), &form).await.status(),
        StatusCode::OK
    );
    mock.faults(json!({"mode": "expire_key", "one_shot": true}))
        .await;
    let again = mock.refund(Some("k-exp"), &form).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert!(again.headers().get("idempotent-replayed").is_none());
    // This is the duplicate the adapter must never cause by resending late.
    assert_eq!(mock.refunds_created().await, 2);
}

#[tokio::test]
async fn rules_match_on_params_and_nth_and_can_be_listed_and_removed() {
    let mock = TestMock::spawn(None).await;
    mock.faults(json!({"mode": "fail_before_commit", "status": 502, "params": {"charge": "ch_pending"}, "nth": 2}))
        .await;
    let ok = mock
        .refund(None, &[("charge", "ch_ok"), ("amount", "100")])
        .await;
    assert_eq!(ok.status(), StatusCode::OK, "other params do not match");
    let first = mock
        .refund(None, &[("charge", "ch_pending"), ("amount", "100")])
        .await;
    assert_eq!(first.status(), StatusCode::OK, "first occurrence passes");
    let second = mock
        .refund(None, &[("charge", "ch_pending"), ("amount", "100")])
        .await;
    assert_eq!(
        second.status(),
        StatusCode::BAD_GATEWAY,
        "second occurrence fails"
    );
    let third = mock
        .refund(None, &[("charge", "ch_pending"), ("amount", "100")])
        .await;
    assert_eq!(third.status(), StatusCode::OK, "nth alone fires once");

    let listed = mock.get_json("/__mock/faults").await;
    assert_eq!(listed["rules"][0]["seen"], 3);
    assert_eq!(listed["applied"]["fail_before_commit"], 1);
    let bad = mock
        .admin_post(
            "/__mock/faults",
            &json!({"mode": "latency", "ms": 1, "typo": 1}),
        )
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let cleared = mock
        .client
        .delete(mock.url("/__mock/faults"))
        .send()
        .await
        .expect("delete");
    assert_eq!(json_of(cleared).await["removed"], 1);
    assert_eq!(mock.get_json("/__mock/faults").await["rules"], json!([]));
    assert_eq!(mock.ledger().await["counters"]["faults_applied_total"], 1);
}

// ---------------------------------------------------------------- lifecycle

fn event_types(events: &Value) -> Vec<String> {
    events["data"]
        .as_array()
        .map(|data| {
            data.iter()
                .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_pending_refund_settles_as_succeeded_with_update_events() {
    let mock = TestMock::spawn(None).await;
    let refund = json_of(
        mock.refund(Some("k-p"), &[("charge", "ch_pending"), ("amount", "700")])
            .await,
    )
    .await;
    assert_eq!(refund["status"], "pending");
    let id = id_of(&refund);
    let settled = mock
        .admin_post(
            &format!("/__mock/refunds/{id}/settle"),
            &json!({"outcome": "succeeded"}),
        )
        .await;
    assert_eq!(settled.status(), StatusCode::OK);
    assert_eq!(json_of(settled).await["status"], "succeeded");
    assert_eq!(
        mock.get_json(&format!("/v1/refunds/{id}")).await["status"],
        "succeeded"
    );
    assert_eq!(
        mock.get_json("/v1/charges/ch_pending").await["amount_refunded"],
        700
    );

    let events = mock
        .get_json("/v1/events?types[]=refund.updated&types[]=charge.refund.updated")
        .await;
    assert_eq!(
        event_types(&events),
        vec!["charge.refund.updated", "refund.updated"]
    );
    let updated = &events["data"][1];
    assert_eq!(updated["data"]["object"]["status"], "succeeded");
    assert_eq!(
        updated["data"]["previous_attributes"],
        json!({"status": "pending"})
    );
    assert_eq!(
        updated["request"],
        json!({"id": null, "idempotency_key": null})
    );
    // Settling twice is refused.
    let again = mock
        .admin_post(
            &format!("/__mock/refunds/{id}/settle"),
            &json!({"outcome": "failed"}),
        )
        .await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_failed_refund_gives_the_amount_back_and_emits_refund_failed() {
    let mock = TestMock::spawn(None).await;
    let refund = json_of(
        mock.refund(Some("k-f"), &[("charge", "ch_fail"), ("amount", "10000")])
            .await,
    )
    .await;
    let id = id_of(&refund);
    assert_eq!(mock.get_json("/v1/charges/ch_fail").await["refunded"], true);
    // fail_later charges fail by default.
    let settled = mock
        .admin_post(
            &format!("/__mock/refunds/{id}/settle"),
            &json!({"failure_reason": "expired_or_canceled_card"}),
        )
        .await;
    assert_eq!(settled.status(), StatusCode::OK);
    let settled = json_of(settled).await;
    assert_eq!(settled["status"], "failed");
    assert_eq!(settled["failure_reason"], "expired_or_canceled_card");
    assert!(settled["failure_balance_transaction"]
        .as_str()
        .unwrap_or_default()
        .starts_with("txn_"));
    let charge = mock.get_json("/v1/charges/ch_fail").await;
    assert_eq!(charge["amount_refunded"], 0);
    assert_eq!(charge["refunded"], false);

    let failed = mock.get_json("/v1/events?type=refund.failed").await;
    assert_eq!(failed["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(failed["data"][0]["data"]["object"]["id"], id.as_str());
    let updated = mock.get_json("/v1/events?type=refund.updated").await;
    assert_eq!(
        updated["data"][0]["data"]["previous_attributes"],
        json!({"status": "pending", "failure_reason": null, "failure_balance_transaction": null})
    );
    // The amount is refundable again.
    let again = mock
        .refund(None, &[("charge", "ch_fail"), ("amount", "10000")])
        .await;
    assert_eq!(again.status(), StatusCode::OK);
}

#[tokio::test]
async fn only_requires_action_refunds_can_be_canceled() {
    let mock = TestMock::spawn(None).await;
    let refund = json_of(
        mock.refund(None, &[("charge", "ch_action"), ("amount", "3000")])
            .await,
    )
    .await;
    assert_eq!(refund["status"], "requires_action");
    let id = id_of(&refund);
    let canceled = mock
        .post(&format!("/v1/refunds/{id}/cancel"), Some("k-cancel"), &[])
        .await;
    assert_eq!(canceled.status(), StatusCode::OK);
    assert_eq!(json_of(canceled).await["status"], "canceled");
    assert_eq!(
        mock.get_json("/v1/charges/ch_action").await["amount_refunded"],
        0
    );
    let replay = mock
        .post(&format!("/v1/refunds/{id}/cancel"), Some("k-cancel"), &[])
        .await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let events = mock.get_json("/v1/events?type=refund.updated").await;
    assert_eq!(
        events["data"][0]["data"]["previous_attributes"],
        json!({"status": "requires_action"})
    );
    assert_eq!(events["data"][0]["request"]["idempotency_key"], "k-cancel");

    let done = json_of(
        mock.refund(None, &[("charge", "ch_ok"), ("amount", "100")])
            .await,
    )
    .await;
    let refused = mock
        .post(&format!("/v1/refunds/{}/cancel", id_of(&done)), None, &[])
        .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        json_of(refused).await["error"]["type"],
        "invalid_request_error"
    );
    let missing = mock.post("/v1/refunds/re_nope/cancel", None, &[]).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn refund_metadata_updates_merge_and_emit_previous_values() {
    let mock = TestMock::spawn(None).await;
    let refund = json_of(
        mock.refund(
            None,
            &[
                ("charge", "ch_ok"),
                ("amount", "100"),
                ("metadata[a]", "1"),
                ("metadata[b]", "2"),
            ],
        )
        .await,
    )
    .await;
    let id = id_of(&refund);
    let form = [
        ("metadata[a]", "9"),
        ("metadata[b]", ""),
        ("metadata[c]", "3"),
    ];
    let updated = mock
        .post(&format!("/v1/refunds/{id}"), Some("k-meta"), &form)
        .await;
    assert_eq!(updated.status(), StatusCode::OK);
    assert_eq!(
        json_of(updated).await["metadata"],
        json!({"a": "9", "c": "3"})
    );
    let replay = mock
        .post(&format!("/v1/refunds/{id}"), Some("k-meta"), &form)
        .await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let events = mock.get_json("/v1/events?type=refund.updated").await;
    assert_eq!(
        events["data"].as_array().map(Vec::len),
        Some(1),
        "replays emit nothing"
    );
    assert_eq!(
        events["data"][0]["data"]["previous_attributes"],
        json!({"metadata": {"a": "1", "b": "2", "c": null}})
    );
    let unknown = mock
        .post(&format!("/v1/refunds/{id}"), None, &[("amount", "5")])
        .await;
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn events_list_filters_and_pages_newest_first() {
    let mock = TestMock::spawn(None).await;
    let refund = json_of(
        mock.refund(Some("k-ev"), &[("charge", "ch_ok"), ("amount", "100")])
            .await,
    )
    .await;
    mock.refund(None, &[("charge", "ch_ok"), ("amount", "100")])
        .await;
    let all = mock.get_json("/v1/events").await;
    assert_eq!(all["object"], "list");
    assert_eq!(all["url"], "/v1/events");
    assert_eq!(
        event_types(&all),
        vec![
            "charge.refunded",
            "refund.created",
            "charge.refunded",
            "refund.created"
        ]
    );
    let created = mock
        .get_json("/v1/events?type=refund.created&limit=1")
        .await;
    assert_eq!(created["has_more"], true);
    let newest = id_of(&created["data"][0]);
    let older = mock
        .get_json(&format!(
            "/v1/events?type=refund.created&starting_after={newest}"
        ))
        .await;
    let event = &older["data"][0];
    assert_eq!(event["data"]["object"]["id"], refund["id"]);
    assert_eq!(event["request"]["idempotency_key"], "k-ev");
    assert!(event["request"]["id"]
        .as_str()
        .unwrap_or_default()
        .starts_with("req_"));
    for field in [
        "id",
        "object",
        "api_version",
        "created",
        "data",
        "livemode",
        "pending_webhooks",
        "request",
        "type",
    ] {
        assert!(event.get(field).is_some(), "event has {field}");
    }
    assert_eq!(event["object"], "event");
    assert_eq!(event["livemode"], false);
    let wildcard = mock.get_json("/v1/events?type=charge.*").await;
    assert_eq!(wildcard["data"].as_array().map(Vec::len), Some(2));
    let one = mock.get_json(&format!("/v1/events/{}", id_of(event))).await;
    assert_eq!(&one, event);
    let missing = mock
        .client
        .get(mock.url("/v1/events/evt_nope"))
        .bearer_auth(API_KEY)
        .send()
        .await
        .expect("get");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let future = mock.get_json("/v1/events?created[gt]=4000000000").await;
    assert_eq!(future["data"], json!([]));
    // Without a receiver, nothing is waiting for delivery.
    let undelivered = mock.get_json("/v1/events?delivery_success=false").await;
    assert_eq!(undelivered["data"], json!([]));
}

// ---------------------------------------------------------------- webhooks

struct Delivery {
    signature: Option<String>,
    body: String,
}

#[derive(Clone)]
struct Receiver {
    sender: mpsc::UnboundedSender<Delivery>,
    /// Statuses to answer, in order; 200 once empty.
    plan: Arc<Mutex<VecDeque<u16>>>,
}

async fn receive(
    State(receiver): State<Receiver>,
    headers: HeaderMap,
    body: String,
) -> axum::http::StatusCode {
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let _ = receiver.sender.send(Delivery { signature, body });
    let status = receiver
        .plan
        .lock()
        .map(|mut plan| plan.pop_front().unwrap_or(200))
        .unwrap_or(200);
    axum::http::StatusCode::from_u16(status).unwrap_or(axum::http::StatusCode::OK)
}

/// A tiny webhook receiver on port 0; returns its URL and the deliveries it sees.
async fn spawn_receiver(plan: &[u16]) -> (String, mpsc::UnboundedReceiver<Delivery>) {
    let (sender, deliveries) = mpsc::unbounded_channel();
    let receiver = Receiver {
        sender,
        plan: Arc::new(Mutex::new(plan.iter().copied().collect())),
    };
    let app = axum::Router::new()
        .route("/hook", post(receive))
        .with_state(receiver);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/hook"), deliveries)
}

async fn next_delivery(deliveries: &mut mpsc::UnboundedReceiver<Delivery>) -> (Value, Delivery) {
    let delivery = tokio::time::timeout(Duration::from_secs(5), deliveries.recv())
        .await
        .expect("a delivery within 5 s")
        .expect("receiver open");
    let event: Value = serde_json::from_str(&delivery.body).expect("event json");
    (event, delivery)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn verify(delivery: &Delivery) -> Result<(), SignatureError> {
    verify_signature(
        SECRET,
        delivery.signature.as_deref().unwrap_or(""),
        delivery.body.as_bytes(),
        now(),
        300,
    )
}

#[tokio::test]
async fn events_are_delivered_with_a_valid_signature() {
    let (url, mut deliveries) = spawn_receiver(&[]).await;
    let mock = TestMock::spawn(Some(url)).await;
    let refund = json_of(
        mock.refund(Some("k-hook"), &[("charge", "ch_ok"), ("amount", "100")])
            .await,
    )
    .await;
    let (first, delivery) = next_delivery(&mut deliveries).await;
    assert_eq!(verify(&delivery), Ok(()));
    assert_eq!(first["type"], "refund.created");
    assert_eq!(first["data"]["object"]["id"], refund["id"]);
    assert_eq!(first["request"]["idempotency_key"], "k-hook");
    let (second, delivery) = next_delivery(&mut deliveries).await;
    assert_eq!(verify(&delivery), Ok(()));
    assert_eq!(second["type"], "charge.refunded");

    mock.mock.deliver_webhooks_now().await.expect("drain");
    let undelivered = mock.get_json("/v1/events?delivery_success=false").await;
    assert_eq!(undelivered["data"], json!([]));
    let event = mock
        .get_json(&format!("/v1/events/{}", id_of(&first)))
        .await;
    assert_eq!(event["pending_webhooks"], 0);
    let ledger = mock.ledger().await;
    assert_eq!(ledger["counters"]["webhook_deliveries"], 2);
    assert_eq!(ledger["events"][0]["delivery_success"], true);
}

#[tokio::test]
async fn failed_deliveries_are_retried_with_backoff_until_a_2xx() {
    let (url, mut deliveries) = spawn_receiver(&[500, 400]).await;
    let mock = TestMock::spawn(Some(url)).await;
    let _ = mock
        .refund(None, &[("charge", "ch_ok"), ("amount", "100")])
        .await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        let (event, _) = next_delivery(&mut deliveries).await;
        ids.push(id_of(&event));
    }
    // refund.created: 500, then charge.refunded: 400, then both retried and accepted.
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 2);
    mock.mock.deliver_webhooks_now().await.expect("drain");
    let ledger = mock.ledger().await;
    let events = ledger["events"].as_array().cloned().unwrap_or_default();
    assert!(events
        .iter()
        .all(|e| e["delivery_success"] == true && e["attempts"] == 2));
}

#[tokio::test]
async fn duplicate_deliveries_share_one_event_id_with_fresh_signatures() {
    let (url, mut deliveries) = spawn_receiver(&[]).await;
    let mock = TestMock::spawn(Some(url)).await;
    mock.faults(json!({"mode": "webhook_duplicate", "n": 3, "event_type": "refund.created"}))
        .await;
    let _ = mock
        .refund(None, &[("charge", "ch_ok"), ("amount", "100")])
        .await;
    let mut refund_created = Vec::new();
    for _ in 0..4 {
        let (event, delivery) = next_delivery(&mut deliveries).await;
        assert_eq!(verify(&delivery), Ok(()));
        if event["type"] == "refund.created" {
            refund_created.push(id_of(&event));
        }
    }
    assert_eq!(refund_created.len(), 3);
    assert!(refund_created.iter().all(|id| *id == refund_created[0]));
    assert_eq!(
        mock.ledger().await["counters"]["faults_applied"]["webhook_duplicate"],
        1
    );
}

#[tokio::test]
async fn bad_signatures_fail_verification_and_the_retry_is_signed_properly() {
    let (url, mut deliveries) = spawn_receiver(&[400, 400, 400]).await;
    let mock = TestMock::spawn(Some(url)).await;
    mock.faults(json!([
        {"mode": "webhook_bad_signature", "kind": "wrong_secret", "event_type": "refund.created", "one_shot": true},
        {"mode": "webhook_bad_signature", "kind": "stale_ts", "event_type": "refund.created", "one_shot": true},
        {"mode": "webhook_bad_signature", "kind": "missing_header", "event_type": "refund.created", "one_shot": true},
        {"mode": "webhook_bad_signature", "kind": "two_v1", "event_type": "refund.created", "one_shot": true},
        {"mode": "webhook_drop", "event_type": "charge.refunded"}
    ]))
    .await;
    let _ = mock
        .refund(None, &[("charge", "ch_ok"), ("amount", "100")])
        .await;
    let expected = [
        Err(SignatureError::NoValidSignature),
        Err(SignatureError::TooOld),
        Err(SignatureError::NotSigned),
        Ok(()),
    ];
    for want in expected {
        let (event, delivery) = next_delivery(&mut deliveries).await;
        assert_eq!(event["type"], "refund.created");
        assert_eq!(verify(&delivery), want, "{:?}", delivery.signature);
        if want.is_ok() {
            assert_eq!(
                delivery
                    .signature
                    .as_deref()
                    .map(|s| s.matches("v1=").count()),
                Some(2)
            );
        }
    }
    mock.mock.deliver_webhooks_now().await.expect("drain");
    // charge.refunded was dropped: never sent, listed as undelivered.
    let undelivered = mock.get_json("/v1/events?delivery_success=false").await;
    assert_eq!(event_types(&undelivered), vec!["charge.refunded"]);
    assert_eq!(
        mock.ledger().await["counters"]["faults_applied"]["webhook_bad_signature"],
        4
    );
}

#[tokio::test]
async fn out_of_order_and_delayed_events_arrive_after_later_ones() {
    let (url, mut deliveries) = spawn_receiver(&[]).await;
    let mock = TestMock::spawn(Some(url)).await;
    mock.faults(json!([
        {"mode": "webhook_out_of_order", "event_type": "refund.created", "one_shot": true},
        {"mode": "webhook_delay", "s": 0.3, "event_type": "refund.updated"}
    ]))
    .await;
    let refund = json_of(
        mock.refund(None, &[("charge", "ch_pending"), ("amount", "100")])
            .await,
    )
    .await;
    let (first, _) = next_delivery(&mut deliveries).await;
    let (second, _) = next_delivery(&mut deliveries).await;
    assert_eq!(first["type"], "charge.refunded");
    assert_eq!(second["type"], "refund.created");

    let id = id_of(&refund);
    let settled = mock
        .admin_post(
            &format!("/__mock/refunds/{id}/settle"),
            &json!({"outcome": "succeeded"}),
        )
        .await;
    assert_eq!(settled.status(), StatusCode::OK);
    let (third, _) = next_delivery(&mut deliveries).await;
    let (fourth, _) = next_delivery(&mut deliveries).await;
    assert_eq!(third["type"], "charge.refund.updated");
    assert_eq!(
        fourth["type"], "refund.updated",
        "the delayed event comes last"
    );
}

#[test]
fn sign_payload_round_trips_through_verify_signature() {
    let header = sign_payload("whsec_x", 1_800_000_000, b"payload");
    assert_eq!(
        verify_signature("whsec_x", &header, b"payload", 1_800_000_299, 300),
        Ok(())
    );
    assert_eq!(
        verify_signature("whsec_x", &header, b"payload", 1_800_000_301, 300),
        Err(SignatureError::TooOld)
    );
}
