//! Every request the payments adapter can make, sent to the Stripe-shaped server at
//! `STRIPE_MOCK_URL` (Stripe's own stripe-mock, built from Stripe's OpenAPI
//! specification, which refuses any request the specification does not allow), with the
//! adapter's own code: each one is counted accepted — answered 2xx and read back into
//! our types — or rejected, with why. Prints the counts and exits 1 on any rejection.
//! `scripts/stripe-mock-check` starts stripe-mock and runs this.
//!
//! What it deliberately does not check: behaviour (stripe-mock keeps no state, applies no
//! filter and replays nothing; the payments mock's own tests and the app's fault matrix
//! do that), or the mock's admin API, which only our payments mock has.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use payments_adapter::{PaymentsClient, ProviderError, RefundRequest};
use policy_engine::{Currency, Money};

/// Runs one request and tallies it.
struct Tally {
    accepted: usize,
    rejected: Vec<String>,
}

impl Tally {
    async fn check<T>(&mut self, what: &str, call: impl Future<Output = Result<T, ProviderError>>) {
        match call.await {
            Ok(_) => {
                self.accepted += 1;
                println!("accepted  {what}");
            }
            Err(e) => {
                println!("REJECTED  {what}: {e}");
                self.rejected.push(format!("{what}: {e}"));
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let Ok(url) = std::env::var("STRIPE_MOCK_URL") else {
        eprintln!("STRIPE_MOCK_URL is not set: nothing to check against");
        return std::process::ExitCode::from(2);
    };
    let key = std::env::var("STRIPE_MOCK_KEY").unwrap_or_else(|_| "sk_test_123".into());
    let client = match PaymentsClient::new(
        &url,
        &key,
        Duration::from_secs(10),
        Duration::from_millis(50),
    ) {
        Ok(client) => client.with_order_key("shop_order"),
        Err(e) => {
            eprintln!("cannot build the client: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut tally = Tally {
        accepted: 0,
        rejected: Vec::new(),
    };
    reads(&client, &mut tally).await;
    writes(&client, &mut tally).await;
    println!(
        "stripe-mock conformance (Stripe-Version {}): {} accepted, {} rejected",
        payments_adapter::STRIPE_VERSION,
        tally.accepted,
        tally.rejected.len()
    );
    if tally.rejected.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// Every read: one object, each list's first page and a later page (`starting_after`),
/// and each whole-list walk.
async fn reads(client: &PaymentsClient, tally: &mut Tally) {
    tally
        .check("GET /v1/charges/{id}", client.get_charge("ch_conformance"))
        .await;
    tally
        .check(
            "GET /v1/charges?customer=&limit=",
            client.customer_charges_page("cus_conformance", None),
        )
        .await;
    tally
        .check(
            "GET /v1/charges?customer=&limit=&starting_after=",
            client.customer_charges_page("cus_conformance", Some("ch_conformance")),
        )
        .await;
    tally
        .check(
            "GET /v1/charges?customer= (every page)",
            client.list_charges("cus_conformance"),
        )
        .await;
    tally
        .check("GET /v1/charges?limit=", client.charges_page(None))
        .await;
    tally
        .check(
            "GET /v1/charges?limit=&starting_after=",
            client.charges_page(Some("ch_conformance")),
        )
        .await;
    tally
        .check("GET /v1/refunds/{id}", client.get_refund("re_conformance"))
        .await;
    tally
        .check(
            "GET /v1/refunds?charge=&limit=",
            client.refunds_page("ch_conformance", None),
        )
        .await;
    tally
        .check(
            "GET /v1/refunds?charge=&limit=&starting_after=",
            client.refunds_page("ch_conformance", Some("re_conformance")),
        )
        .await;
    tally
        .check(
            "GET /v1/refunds?charge= (every page)",
            client.list_refunds("ch_conformance"),
        )
        .await;
    tally
        .check(
            "GET /v1/customers/{id}",
            client.get_customer("cus_conformance"),
        )
        .await;
    tally
        .check(
            "GET /v1/customers?email=&limit=",
            client.customers_page("someone+tag@example.com", None),
        )
        .await;
    tally
        .check(
            "GET /v1/customers?email=&limit=&starting_after=",
            client.customers_page("someone+tag@example.com", Some("cus_conformance")),
        )
        .await;
    tally
        .check(
            "GET /v1/customers?email= (every page)",
            client.customers_by_email("someone+tag@example.com"),
        )
        .await;
    tally
        .check("GET /v1/customers?limit=", client.all_customers_page(None))
        .await;
    tally
        .check(
            "GET /v1/customers?limit=&starting_after=",
            client.all_customers_page(Some("cus_conformance")),
        )
        .await;
}

/// The one write: a refund, with our metadata and an idempotency key, in a 2-decimal
/// and a 0-decimal currency.
async fn writes(client: &PaymentsClient, tally: &mut Tally) {
    for (amount, currency) in [("12.50", Currency::USD), ("1980", Currency::JPY)] {
        let Ok(amount) = Money::parse(amount, currency) else {
            tally
                .rejected
                .push(format!("a test amount {amount} does not parse"));
            continue;
        };
        let metadata: BTreeMap<String, String> = [
            ("refund_intent_id".to_string(), "ri_conformance".to_string()),
            ("case_id".to_string(), "case_conformance".to_string()),
        ]
        .into_iter()
        .collect();
        let request = RefundRequest {
            charge_id: "ch_conformance".into(),
            amount,
            idempotency_key: format!("rk_conformance_{}", currency.code()),
            metadata,
        };
        tally
            .check(
                &format!(
                    "POST /v1/refunds (charge, amount, currency {}, metadata, Idempotency-Key)",
                    currency.code()
                ),
                client.create_refund(&request),
            )
            .await;
    }
}
