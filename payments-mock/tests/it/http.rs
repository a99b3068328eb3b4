//! End-to-end tests over real HTTP: each test starts its own mock on port 0 with a
//! fresh data directory, exactly as the app's adapter will reach it.

use std::net::SocketAddr;

use payments_mock::{MockConfig, RunningMock};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

const API_KEY: &str = "sk_test_refund_desk";

struct TestMock {
    mock: Option<RunningMock>,
    dir: TempDir,
    client: reqwest::Client,
}

impl TestMock {
    async fn spawn() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mock = start_in(&dir).await;
        Self {
            mock: Some(mock),
            dir,
            client: reqwest::Client::new(),
        }
    }

    fn base(&self) -> String {
        self.mock.as_ref().expect("running").base_url()
    }

    async fn restart(&mut self) {
        if let Some(mock) = self.mock.take() {
            mock.shutdown().await;
        }
        self.mock = Some(start_in(&self.dir).await);
    }

    async fn load_world(&self, world: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}/__mock/world", self.base()))
            .json(world)
            .send()
            .await
            .expect("world request")
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base()))
            .bearer_auth(API_KEY)
            .send()
            .await
            .expect("get request")
    }

    async fn get_json(&self, path: &str) -> Value {
        let response = self.get(path).await;
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.expect("json body")
    }

    async fn ledger(&self) -> Value {
        self.client
            .get(format!("{}/__mock/ledger", self.base()))
            .send()
            .await
            .expect("ledger request")
            .json()
            .await
            .expect("ledger json")
    }

    async fn create_refund(&self, key: Option<&str>, form: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self
            .client
            .post(format!("{}/v1/refunds", self.base()))
            .bearer_auth(API_KEY)
            .form(form);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request.send().await.expect("refund request")
    }
}

async fn start_in(dir: &TempDir) -> RunningMock {
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    payments_mock::start(MockConfig::new(dir.path()), addr)
        .await
        .expect("mock starts")
}

/// A small world: one of each kind of charge the refund rules distinguish.
fn small_world() -> Value {
    let charge = |id: &str, amount: &str, currency: &str, extra: Value| {
        let mut charge = json!({
            "id": id, "order_id": format!("O-{id}"), "customer_id": "C-100",
            "amount": amount, "currency": currency, "captured": true, "status": "succeeded",
            "disputed": false, "created_at": "2026-11-20T09:00:05Z",
            "payment_method": "pm_card_visa_4242", "amount_refunded": "0.00"
        });
        if let (Some(charge), Some(extra)) = (charge.as_object_mut(), extra.as_object()) {
            charge.extend(extra.clone());
        }
        charge
    };
    json!({
        "customers": [{"id": "C-100", "name": "Li Wei", "email": "li@example.cn", "region": "CN"}],
        "orders": [],
        "charges": [
            charge("ch_cny", "198.00", "CNY", json!({})),
            charge("ch_usd", "12.00", "USD", json!({"created_at": "2026-11-21T09:00:00Z"})),
            charge("ch_jpy", "19800", "JPY", json!({"amount_refunded": "0"})),
            charge("ch_disputed", "99.00", "USD", json!({"disputed": true})),
            charge("ch_hold", "12.00", "USD", json!({"captured": false})),
            charge("ch_failed", "1200", "JPY", json!({"captured": false, "status": "failed", "amount_refunded": "0"})),
            charge("ch_done", "120.00", "EUR", json!({"amount_refunded": "120.00", "customer_id": "C-300"})),
        ],
        "refunds": [
            {"id": "re_done", "charge_id": "ch_done", "amount": "120.00", "currency": "EUR",
             "status": "succeeded", "created_at": "2026-11-21T09:00:00Z", "metadata": {"source": "dashboard"}}
        ]
    })
}

async fn spawn_with_world() -> TestMock {
    let mock = TestMock::spawn().await;
    let response = mock.load_world(&small_world()).await;
    assert_eq!(response.status(), StatusCode::OK);
    mock
}

async fn error_of(response: reqwest::Response) -> Value {
    let body: Value = response.json().await.expect("json error body");
    body["error"].clone()
}

#[tokio::test]
async fn demo_world_loads_with_amounts_in_minor_units() {
    let mock = TestMock::spawn().await;
    let demo = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/billing/demo.json"
    ))
    .expect("demo world");
    let world: Value = serde_json::from_str(&demo).expect("demo json");
    let response = mock.load_world(&world).await;
    assert_eq!(response.status(), StatusCode::OK);
    let counts: Value = response.json().await.expect("json");
    assert_eq!(
        counts["charges"],
        world["charges"].as_array().map(Vec::len).unwrap_or(0)
    );

    let charge = mock.get_json("/v1/charges/ch_1001a").await;
    assert_eq!(charge["amount"], 19800);
    assert_eq!(charge["currency"], "cny");
    assert_eq!(charge["customer"], "C-100");
    assert_eq!(charge["metadata"]["order_id"], "O-1001");
    let yen = mock.get_json("/v1/charges/ch_4001a").await;
    assert_eq!(yen["amount"], 19800);
    assert_eq!(yen["currency"], "jpy");
    let refunded = mock.get_json("/v1/charges/ch_3001b").await;
    assert_eq!(refunded["amount_refunded"], 12000);
    assert_eq!(refunded["refunded"], true);
    let pending = mock.get_json("/v1/refunds/re_9001b").await;
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["amount"], 29800);
    let hold = mock.get_json("/v1/charges/ch_2001h").await;
    assert_eq!(hold["captured"], false);
    assert_eq!(hold["amount_captured"], 0);

    // Loading the same world again is an upsert, not a duplicate.
    assert_eq!(mock.load_world(&world).await.status(), StatusCode::OK);
    let ledger = mock.ledger().await;
    assert_eq!(ledger["refunds"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn invalid_world_is_refused_and_writes_nothing() {
    let mock = TestMock::spawn().await;
    let mut world = small_world();
    world["charges"][1]["currency"] = json!("GBP");
    let response = mock.load_world(&world).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(error_of(response).await["message"]
        .as_str()
        .unwrap_or_default()
        .contains("unknown currency"));

    let mut world = small_world();
    world["charges"][0]["amount"] = json!("1.005");
    assert_eq!(
        mock.load_world(&world).await.status(),
        StatusCode::BAD_REQUEST
    );
    let mut world = small_world();
    world["charges"][2]["amount"] = json!("19800.5");
    assert_eq!(
        mock.load_world(&world).await.status(),
        StatusCode::BAD_REQUEST
    );

    assert_eq!(
        mock.get("/v1/charges/ch_cny").await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn charge_reads_in_the_stripe_shape() {
    let mock = spawn_with_world().await;
    let response = mock.get("/v1/charges/ch_cny").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("request-id").is_some());
    let charge: Value = response.json().await.expect("json");
    assert_eq!(
        charge,
        json!({
            "id": "ch_cny", "object": "charge", "amount": 19800, "amount_captured": 19800,
            "amount_refunded": 0, "captured": true, "refunded": false, "currency": "cny",
            "customer": "C-100", "status": "succeeded", "disputed": false,
            "created": 1_795_165_205, "payment_method": "pm_card_visa_4242",
            "payment_intent": null, "metadata": {"order_id": "O-ch_cny"}
        })
    );

    let missing = mock.get("/v1/charges/ch_x").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let error = error_of(missing).await;
    assert_eq!(error["code"], "resource_missing");
    assert_eq!(error["message"], "No such charge: 'ch_x'");

    let anonymous = mock
        .client
        .get(format!("{}/v1/charges/ch_cny", mock.base()))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let live = mock
        .client
        .get(format!("{}/v1/charges/ch_cny", mock.base()))
        .bearer_auth("sk_live_nope")
        .send()
        .await
        .expect("request");
    assert_eq!(live.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(error_of(live).await["type"], "invalid_request_error");
}

#[tokio::test]
async fn charges_list_by_customer_newest_first() {
    let mock = spawn_with_world().await;
    let page = mock.get_json("/v1/charges?customer=C-100&limit=2").await;
    assert_eq!(page["object"], "list");
    assert_eq!(page["url"], "/v1/charges");
    assert_eq!(page["has_more"], true);
    assert_eq!(page["data"][0]["id"], "ch_usd", "newest first");
    let last = page["data"][1]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let rest = mock
        .get_json(&format!(
            "/v1/charges?customer=C-100&limit=100&starting_after={last}"
        ))
        .await;
    assert_eq!(rest["has_more"], false);
    // Six C-100 charges in all; ch_done belongs to C-300.
    assert_eq!(rest["data"].as_array().map(Vec::len), Some(4));
    let bad = mock.get("/v1/charges?limit=0").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn refund_creates_and_updates_the_charge() {
    let mock = spawn_with_world().await;
    let response = mock
        .create_refund(
            Some("key-1"),
            &[
                ("charge", "ch_cny"),
                ("amount", "5000"),
                ("reason", "requested_by_customer"),
                ("metadata[refund_intent_id]", "ri_1"),
                ("currency", "cny"),
            ],
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["idempotency-key"], "key-1");
    assert!(response.headers().get("idempotent-replayed").is_none());
    let refund: Value = response.json().await.expect("json");
    let id = refund["id"].as_str().unwrap_or_default().to_owned();
    assert!(id.starts_with("re_"));
    assert_eq!(refund["object"], "refund");
    assert_eq!(refund["amount"], 5000);
    assert_eq!(refund["charge"], "ch_cny");
    assert_eq!(refund["currency"], "cny");
    assert_eq!(refund["status"], "succeeded");
    assert_eq!(refund["reason"], "requested_by_customer");
    assert_eq!(refund["metadata"], json!({"refund_intent_id": "ri_1"}));
    assert_eq!(refund["payment_intent"], Value::Null);

    let charge = mock.get_json("/v1/charges/ch_cny").await;
    assert_eq!(charge["amount_refunded"], 5000);
    assert_eq!(charge["refunded"], false);
    assert_eq!(mock.get_json(&format!("/v1/refunds/{id}")).await, refund);

    // Without an amount, the remainder is refunded.
    let rest = mock.create_refund(None, &[("charge", "ch_cny")]).await;
    assert_eq!(rest.status(), StatusCode::OK);
    let rest: Value = rest.json().await.expect("json");
    assert_eq!(rest["amount"], 14800);
    let charge = mock.get_json("/v1/charges/ch_cny").await;
    assert_eq!(charge["refunded"], true);

    let list = mock.get_json("/v1/refunds?charge=ch_cny").await;
    assert_eq!(list["url"], "/v1/refunds");
    assert_eq!(list["data"][0]["id"], rest["id"], "newest first");
    assert_eq!(list["data"][1]["id"], id.as_str());
    let page = mock.get_json("/v1/refunds?charge=ch_cny&limit=1").await;
    assert_eq!(page["has_more"], true);
    let missing = mock.get("/v1/refunds/re_nope").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        error_of(missing).await["message"],
        "No such refund: 're_nope'"
    );
}

#[tokio::test]
async fn replay_is_byte_identical_and_marked() {
    let mock = spawn_with_world().await;
    let form = [
        ("charge", "ch_usd"),
        ("amount", "500"),
        ("metadata[refund_intent_id]", "ri_7"),
    ];
    let first = mock.create_refund(Some("replay-key"), &form).await;
    assert_eq!(first.status(), StatusCode::OK);
    let first_body = first.bytes().await.expect("body");

    // Same params in another order are the same params.
    let reordered = [
        ("metadata[refund_intent_id]", "ri_7"),
        ("amount", "500"),
        ("charge", "ch_usd"),
    ];
    let second = mock.create_refund(Some("replay-key"), &reordered).await;
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    assert_eq!(second.headers()["idempotency-key"], "replay-key");
    assert_eq!(second.bytes().await.expect("body"), first_body);

    let ledger = mock.ledger().await;
    assert_eq!(ledger["counters"]["refunds_created"]["ch_usd"], 1);
    assert_eq!(ledger["counters"]["replays"], 1);
    assert_eq!(
        mock.get_json("/v1/charges/ch_usd").await["amount_refunded"],
        500
    );
}

#[tokio::test]
async fn same_key_with_other_params_is_an_idempotency_error() {
    let mock = spawn_with_world().await;
    let first = mock
        .create_refund(Some("k-params"), &[("charge", "ch_usd"), ("amount", "500")])
        .await;
    assert_eq!(first.status(), StatusCode::OK);
    let second = mock
        .create_refund(Some("k-params"), &[("charge", "ch_usd"), ("amount", "600")])
        .await;
    assert_eq!(second.status(), StatusCode::BAD_REQUEST);
    let error = error_of(second).await;
    assert_eq!(error["type"], "idempotency_error");
    assert!(error.get("code").is_none());
    assert_eq!(
        error["message"],
        "Keys for idempotent requests can only be used with the same parameters they were \
         first used with. Try using a key other than 'k-params' if you meant to execute a \
         different request."
    );
    // Metadata counts as a parameter too.
    let third = mock
        .create_refund(
            Some("k-params"),
            &[
                ("charge", "ch_usd"),
                ("amount", "500"),
                ("metadata[x]", "y"),
            ],
        )
        .await;
    assert_eq!(third.status(), StatusCode::BAD_REQUEST);
    assert_eq!(mock.ledger().await["counters"]["refunds_created_total"], 1);
}

#[tokio::test]
async fn fifty_concurrent_requests_with_one_key_make_one_refund() {
    let mock = spawn_with_world().await;
    let base = mock.base();
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let client = mock.client.clone();
        let url = format!("{base}/v1/refunds");
        tasks.push(tokio::spawn(async move {
            let response = client
                .post(url)
                .bearer_auth(API_KEY)
                .header("Idempotency-Key", "one-key")
                .form(&[("charge", "ch_jpy"), ("amount", "1000")])
                .send()
                .await
                .expect("request");
            let status = response.status();
            let replayed = response.headers().contains_key("idempotent-replayed");
            let body: Value = response.json().await.expect("json");
            (status, replayed, body)
        }));
    }
    let mut ids = std::collections::BTreeSet::new();
    let (mut fresh, mut conflicts) = (0, 0);
    for task in tasks {
        let (status, replayed, body) = task.await.expect("task");
        match status {
            StatusCode::OK => {
                ids.insert(body["id"].as_str().unwrap_or_default().to_owned());
                if !replayed {
                    fresh += 1;
                }
            }
            StatusCode::CONFLICT => {
                assert_eq!(body["error"]["code"], "idempotency_key_in_use");
                conflicts += 1;
            }
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    assert!(fresh <= 1, "at most one response is not a replay");
    assert!(ids.len() <= 1, "every success names the same refund");
    assert!(conflicts < 50 || ids.is_empty());
    let ledger = mock.ledger().await;
    assert_eq!(ledger["counters"]["refunds_created"]["ch_jpy"], 1);
    assert_eq!(
        mock.get_json("/v1/charges/ch_jpy").await["amount_refunded"],
        1000
    );
}

#[tokio::test]
async fn over_refunds_and_unrefundable_charges_are_refused() {
    let mock = spawn_with_world().await;
    let too_much = mock
        .create_refund(Some("over"), &[("charge", "ch_usd"), ("amount", "1201")])
        .await;
    assert_eq!(too_much.status(), StatusCode::BAD_REQUEST);
    let error = error_of(too_much).await;
    assert_eq!(error["param"], "amount");
    assert!(error.get("code").is_none());
    assert_eq!(
        error["message"],
        "Refund amount ($12.01) is greater than unrefunded amount on charge ($12.00)"
    );
    // A business refusal began execution, so it is stored and replayed.
    let replay = mock
        .create_refund(Some("over"), &[("charge", "ch_usd"), ("amount", "1201")])
        .await;
    assert_eq!(replay.status(), StatusCode::BAD_REQUEST);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");

    let cases = [
        (
            "ch_done",
            StatusCode::BAD_REQUEST,
            "charge_already_refunded",
        ),
        ("ch_disputed", StatusCode::BAD_REQUEST, "charge_disputed"),
        ("ch_hold", StatusCode::BAD_REQUEST, "charge_not_refundable"),
        (
            "ch_failed",
            StatusCode::BAD_REQUEST,
            "charge_not_refundable",
        ),
        ("ch_nope", StatusCode::NOT_FOUND, "resource_missing"),
    ];
    for (charge, status, code) in cases {
        let response = mock.create_refund(None, &[("charge", charge)]).await;
        assert_eq!(response.status(), status, "{charge}");
        assert_eq!(error_of(response).await["code"], code, "{charge}");
    }
    let wrong_currency = mock
        .create_refund(None, &[("charge", "ch_usd"), ("currency", "eur")])
        .await;
    assert_eq!(wrong_currency.status(), StatusCode::BAD_REQUEST);
    assert_eq!(error_of(wrong_currency).await["param"], "currency");
    assert_eq!(mock.ledger().await["counters"]["refunds_created_total"], 0);
}

#[tokio::test]
async fn validation_failures_are_not_stored() {
    let mock = spawn_with_world().await;
    let bad = mock
        .create_refund(Some("fix-me"), &[("charge", "ch_usd"), ("amount", "-5")])
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(error_of(bad).await["param"], "amount");
    let unknown = mock
        .create_refund(Some("fix-me"), &[("charge", "ch_usd"), ("colour", "red")])
        .await;
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
    let error = error_of(unknown).await;
    assert_eq!(error["code"], "parameter_unknown");
    assert_eq!(error["message"], "Received unknown parameter: colour");
    // The same key with fixed params now executes.
    let fixed = mock
        .create_refund(Some("fix-me"), &[("charge", "ch_usd"), ("amount", "100")])
        .await;
    assert_eq!(fixed.status(), StatusCode::OK);
    assert!(fixed.headers().get("idempotent-replayed").is_none());

    let long_key = "k".repeat(256);
    let too_long = mock
        .create_refund(Some(&long_key), &[("charge", "ch_usd"), ("amount", "100")])
        .await;
    assert_eq!(too_long.status(), StatusCode::BAD_REQUEST);

    let json_body = mock
        .client
        .post(format!("{}/v1/refunds", mock.base()))
        .bearer_auth(API_KEY)
        .json(&json!({"charge": "ch_usd"}))
        .send()
        .await
        .expect("request");
    assert_eq!(json_body.status(), StatusCode::BAD_REQUEST);
    let unauthorized = mock
        .client
        .post(format!("{}/v1/refunds", mock.base()))
        .form(&[("charge", "ch_usd")])
        .send()
        .await
        .expect("request");
    assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
    let ledger = mock.ledger().await;
    assert_eq!(ledger["idempotency_keys"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn keys_are_scoped_by_api_key() {
    let mock = spawn_with_world().await;
    let form = [("charge", "ch_usd"), ("amount", "100")];
    assert_eq!(
        mock.create_refund(Some("shared"), &form).await.status(),
        StatusCode::OK
    );
    let other_account = mock
        .client
        .post(format!("{}/v1/refunds", mock.base()))
        .bearer_auth("sk_test_other_account")
        .header("Idempotency-Key", "shared")
        .form(&form)
        .send()
        .await
        .expect("request");
    assert_eq!(other_account.status(), StatusCode::OK);
    assert!(other_account.headers().get("idempotent-replayed").is_none());
    assert_eq!(mock.ledger().await["counters"]["refunds_created_total"], 2);
}

#[tokio::test]
async fn state_survives_a_restart() {
    let mut mock = spawn_with_world().await;
    let form = [("charge", "ch_cny"), ("amount", "1000")];
    let first = mock.create_refund(Some("durable"), &form).await;
    assert_eq!(first.status(), StatusCode::OK);
    let first_body = first.bytes().await.expect("body");
    let refund: Value = serde_json::from_slice(&first_body).expect("json");

    mock.restart().await;

    let id = refund["id"].as_str().unwrap_or_default();
    assert_eq!(mock.get_json(&format!("/v1/refunds/{id}")).await, refund);
    assert_eq!(
        mock.get_json("/v1/charges/ch_cny").await["amount_refunded"],
        1000
    );
    let replay = mock.create_refund(Some("durable"), &form).await;
    assert_eq!(replay.status(), StatusCode::OK);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.bytes().await.expect("body"), first_body);
    assert_eq!(mock.ledger().await["counters"]["refunds_created_total"], 1);
}

#[tokio::test]
async fn unknown_routes_get_a_stripe_error() {
    let mock = TestMock::spawn().await;
    let response = mock.get("/v1/payment_intents").await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        error_of(response).await["message"],
        "Unrecognized request URL (GET: /v1/payment_intents)."
    );
}

#[tokio::test]
async fn keys_expire_after_the_ttl_on_the_mock_clock() {
    let mut mock = spawn_with_world().await;
    let form = [("charge", "ch_usd"), ("amount", "100")];
    assert_eq!(
        mock.create_refund(Some("ttl"), &form).await.status(),
        StatusCode::OK
    );
    let advance = |seconds: i64| {
        let client = mock.client.clone();
        let url = format!("{}/__mock/clock", mock.base());
        async move {
            let response = client
                .post(url)
                .json(&json!({ "advance_seconds": seconds }))
                .send()
                .await
                .expect("clock request");
            assert_eq!(response.status(), StatusCode::OK);
        }
    };
    advance(23 * 3600).await;
    let replay = mock.create_refund(Some("ttl"), &form).await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");

    advance(3600).await;
    // The clock survives a restart too.
    mock.restart().await;
    let fresh = mock.create_refund(Some("ttl"), &form).await;
    assert_eq!(fresh.status(), StatusCode::OK);
    assert!(fresh.headers().get("idempotent-replayed").is_none());
    assert_eq!(
        mock.ledger().await["counters"]["refunds_created"]["ch_usd"],
        2
    );
}

/// A world with provider customers (`cus_…`), two sharing nothing, one with no email.
fn customers_world() -> Value {
    let customer = |i: usize, email: Option<&str>| {
        json!({ "id": format!("cus_{i:03}"), "email": email, "name": format!("Customer {i}"),
                "created_at": format!("2026-11-01T00:{:02}:00Z", i % 60), "region": "US" })
    };
    let mut customers: Vec<Value> = (0..120)
        .map(|i| customer(i, Some(&format!("c{i}@example.com"))))
        .collect();
    customers.push(customer(500, Some("twice@example.com")));
    customers.push(customer(501, Some("twice@example.com")));
    customers.push(customer(502, None));
    json!({ "customers": customers, "orders": [], "charges": [], "refunds": [] })
}

#[tokio::test]
async fn customers_list_by_exact_email_and_page_by_cursor() {
    let mock = TestMock::spawn().await;
    let response = mock.load_world(&customers_world()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.expect("json")["customers"],
        123
    );

    let one = mock.get_json("/v1/customers?email=c7%40example.com").await;
    assert_eq!(one["object"], "list");
    assert_eq!(one["url"], "/v1/customers");
    assert_eq!(one["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(one["data"][0]["id"], "cus_007");
    assert_eq!(one["data"][0]["object"], "customer");
    // Stripe's email filter is exact and case-sensitive.
    let upper = mock.get_json("/v1/customers?email=C7%40example.com").await;
    assert_eq!(upper["data"].as_array().map(Vec::len), Some(0));
    let twice = mock
        .get_json("/v1/customers?email=twice%40example.com&limit=1")
        .await;
    assert_eq!(twice["has_more"], true);
    let after = twice["data"][0]["id"].as_str().expect("an id").to_string();
    let rest = mock
        .get_json(&format!(
            "/v1/customers?email=twice%40example.com&limit=1&starting_after={after}"
        ))
        .await;
    assert_eq!(rest["has_more"], false);
    assert_ne!(rest["data"][0]["id"], after.as_str());

    // Every customer, 100 a page at most.
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/customers?limit=100&starting_after={c}"),
            None => "/v1/customers?limit=100".to_string(),
        };
        let page = mock.get_json(&path).await;
        let data = page["data"].as_array().expect("data").clone();
        seen += data.len();
        cursor = data.last().and_then(|c| c["id"].as_str()).map(String::from);
        if page["has_more"] != true {
            break;
        }
    }
    assert_eq!(seen, 123);
    let none = mock.get_json("/v1/customers/cus_502").await;
    assert_eq!(none["email"], Value::Null);
    assert_eq!(
        mock.get("/v1/customers/cus_missing").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        mock.get("/v1/customers?bogus=1").await.status(),
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn a_dispute_marks_its_charge_and_emits_created_then_closed() {
    let mock = spawn_with_world().await;
    let open = |body: Value| {
        let client = mock.client.clone();
        let url = format!("{}/__mock/charges/ch_usd/dispute", mock.base());
        async move {
            client
                .post(url)
                .json(&body)
                .send()
                .await
                .expect("dispute request")
        }
    };
    let created = open(json!({})).await;
    assert_eq!(created.status(), StatusCode::OK);
    let dispute: Value = created.json().await.expect("json");
    assert_eq!(dispute["object"], "dispute");
    assert_eq!(dispute["charge"], "ch_usd");
    assert_eq!(dispute["status"], "needs_response");
    assert_eq!(mock.get_json("/v1/charges/ch_usd").await["disputed"], true);

    let closed: Value = open(json!({ "status": "won" }))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(closed["id"], dispute["id"], "the open dispute moves");
    let events = mock
        .get_json("/v1/events?type=charge.dispute.*&limit=10")
        .await;
    let kinds: Vec<&str> = events["data"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(kinds, ["charge.dispute.closed", "charge.dispute.created"]);
    assert_eq!(events["data"][0]["data"]["object"]["charge"], "ch_usd");
    assert_eq!(
        open(json!({ "status": "bogus" })).await.status(),
        StatusCode::BAD_REQUEST
    );
}
