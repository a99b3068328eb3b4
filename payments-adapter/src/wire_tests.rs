//! The adapter against a Stripe-shaped server that records what it is sent: the pinned
//! `Stripe-Version` on every request, pagination by `starting_after` while `has_more`,
//! and Stripe's nullable fields read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, Uri};
use axum::routing::get;
use axum::Json;
use serde_json::{json, Value};

use super::*;

/// Every request the server saw: path and query, and its `Stripe-Version`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn record(seen: &Seen, uri: &Uri, headers: &HeaderMap) {
    let version = headers
        .get("stripe-version")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    seen.lock()
        .expect("the test's lock")
        .push((uri.to_string(), version));
}

/// Two pages of refunds for any charge (the second after `re_2`), the first refund with
/// every nullable field null.
async fn refunds(
    State(seen): State<Seen>,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Json<Value> {
    record(&seen, &uri, &headers);
    let refund = |id: &str, charge: Value| {
        json!({ "id": id, "object": "refund", "amount": 100, "charge": charge, "currency": "usd",
                "created": 1, "status": null, "metadata": null, "reason": null })
    };
    Json(match query.get("starting_after").map(String::as_str) {
        None => json!({ "object": "list", "has_more": true,
                        "data": [refund("re_1", Value::Null), refund("re_2", json!("ch_1"))] }),
        Some("re_2") => json!({ "object": "list", "has_more": false,
                                "data": [refund("re_3", json!({"id": "ch_1", "object": "charge"}))] }),
        Some(_) => json!({ "object": "list", "has_more": false, "data": [] }),
    })
}

async fn any_object(State(seen): State<Seen>, uri: Uri, headers: HeaderMap) -> Json<Value> {
    record(&seen, &uri, &headers);
    let path = uri.path();
    Json(if path.starts_with("/v1/customers") {
        json!({ "object": "list", "has_more": false,
                "data": [{ "id": "cus_1", "object": "customer", "email": null, "name": null, "created": 1 }] })
    } else {
        json!({ "object": "list", "has_more": false, "data": [{
            "id": "ch_1", "object": "charge", "amount": 100, "amount_captured": 100,
            "amount_refunded": 0, "captured": true, "currency": "usd", "customer": null,
            "status": "succeeded", "disputed": false, "created": 1, "payment_method": null,
            "metadata": { "shop_order": "O-1" } }] })
    })
}

#[tokio::test]
async fn every_request_carries_the_pinned_version_and_lists_follow_has_more() {
    let seen: Seen = Arc::default();
    let router = axum::Router::new()
        .route("/v1/refunds", get(refunds))
        .route("/v1/charges", get(any_object))
        .route("/v1/customers", get(any_object))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let client = PaymentsClient::new(
        &format!("http://{addr}"),
        "sk_test_x",
        Duration::from_secs(5),
        Duration::from_millis(1),
    )
    .expect("a client")
    .with_order_key("shop_order");

    let refunds = client.list_refunds("ch_1").await.expect("two pages");
    let ids: Vec<&str> = refunds.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["re_1", "re_2", "re_3"]);
    assert_eq!(refunds[0].charge, None);
    assert_eq!(refunds[0].status(), NULL_REFUND_STATUS);
    assert!(
        refunds[2].is_on("ch_1"),
        "an expanded charge reads as its id"
    );

    let charges = client.list_charges("cus_1").await.expect("charges");
    assert_eq!(charges[0].order_id(), Some("O-1"));
    assert_eq!(charges[0].customer, None);
    let customers = client
        .customers_by_email("a+b@example.com")
        .await
        .expect("customers");
    assert_eq!(customers[0].email, None);
    server.abort();

    let seen = seen.lock().expect("the test's lock").clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    for (uri, version) in &seen {
        assert_eq!(version.as_deref(), Some(STRIPE_VERSION), "{uri}");
    }
    assert!(seen[0].0.contains("limit=100") && !seen[0].0.contains("starting_after"));
    assert!(seen[1].0.contains("starting_after=re_2"), "{}", seen[1].0);
    assert!(
        seen[3].0.contains("email=a%2Bb%40example.com"),
        "{}",
        seen[3].0
    );
}
