//! The payments adapter under fire: every fault mode of the mock at each step of a
//! refund (first attempt, retry), crashes between storing the intent and storing the
//! answer, concurrent executions, signed webhooks (duplicate, out of order, badly
//! signed) and reconciliation — always against the real payments mock over HTTP.
//!
//! Each scenario starts from the demo's approved duplicate-charge case (C-100, refund
//! 198.00 CNY on `ch_1001b`), drains the worker and reconciles, then checks the
//! provider's ledger (exactly one refund, or none where the provider refused), the case
//! status and what the customer was told (RP-005).
//!
//! Long because it is the fault matrix of the payment boundary (docs/spec/payments.md),
//! one case a test, one binary.

use std::time::Duration;

use crate::support::{spawn_app, TestApp};
use axum::http::StatusCode;
use desk::reconcile;
use desk::refunds::{self, Intent};
use desk::state::Services;
use payments_adapter::PaymentsClient;
use serde_json::{json, Value};

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";
const CHARGE: &str = "ch_1001b";
const SECRET: &str = desk::config::DEFAULT_WEBHOOK_SECRET;

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

struct Approved {
    app: TestApp,
    ticket_id: String,
    case_id: String,
}

/// The demo's duplicate charge, investigated and approved by an agent; nothing sent yet.
async fn approved_case() -> Approved {
    let app = spawn_app().await;
    approve_in(app).await
}

async fn approve_in(app: TestApp) -> Approved {
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let case_id = case["id"].as_str().unwrap().to_string();
    let (status, body) = app
        .approve(
            &app.agent_token,
            &case_id,
            case["fingerprint"].as_str().unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    Approved {
        app,
        ticket_id,
        case_id,
    }
}

impl Approved {
    async fn intent(&self) -> Intent {
        let mut all = refunds::intents(&self.app.state.db, &self.case_id)
            .await
            .unwrap();
        assert_eq!(all.len(), 1, "one refund intent: {all:?}");
        all.remove(0)
    }

    /// Settles a pending refund at the provider (the mock's admin endpoint), as the
    /// bank eventually does; returns the mock's answer.
    async fn settle(&self, refund_id: &str, outcome: Value) -> StatusCode {
        let resp = reqwest::Client::new()
            .post(format!(
                "{}/__mock/refunds/{refund_id}/settle",
                self.app.mock.base_url()
            ))
            .json(&outcome)
            .send()
            .await
            .unwrap();
        StatusCode::from_u16(resp.status().as_u16()).unwrap()
    }

    async fn case_status(&self) -> String {
        self.app.case(&self.case_id).await["status"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Every message the customer sees on their ticket.
    async fn messages(&self) -> Vec<String> {
        let token = self.app.customer_token("C-100").await;
        let (status, ticket) = self
            .app
            .request(
                "GET",
                &format!("/api/v1/tickets/{}", self.ticket_id),
                Some(&token),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{ticket}");
        ticket["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["body"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    async fn last_reply(&self) -> String {
        self.messages().await.pop().unwrap_or_default()
    }

    async fn install_faults(&self, rules: Value) {
        let resp = reqwest::Client::new()
            .post(format!("{}/__mock/faults", self.app.mock.base_url()))
            .json(&rules)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
    }

    async fn clear_faults(&self) {
        reqwest::Client::new()
            .delete(format!("{}/__mock/faults", self.app.mock.base_url()))
            .send()
            .await
            .unwrap();
    }

    async fn ledger(&self) -> Value {
        reqwest::Client::new()
            .get(format!("{}/__mock/ledger", self.app.mock.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Refunds the provider created through its API on the charge.
    async fn provider_refunds(&self) -> Vec<Value> {
        self.ledger().await["refunds"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["charge"] == CHARGE && r["origin"] == "api")
            .cloned()
            .collect()
    }

    /// Drains the worker, then reconciles, until nothing moves.
    async fn drain_and_reconcile(&self, state: &Services) -> reconcile::ReconcileReport {
        desk::worker::drain(state)
            .await
            .expect("the worker drains without error");
        let report = reconcile::run(state.reconciler())
            .await
            .expect("reconciliation runs");
        desk::worker::drain(state)
            .await
            .expect("the worker drains without error");
        report
    }
}

/// A copy of the app's state whose provider client gives up after `timeout` (the test
/// default is 5 s; latency faults use a shorter one to keep the suite fast).
fn with_timeout(app: &TestApp, timeout: Duration) -> Services {
    let mut state = app.state.clone();
    state.payments = PaymentsClient::new(
        &app.mock.base_url(),
        desk::config::DEFAULT_PAYMENTS_KEY,
        timeout,
        Duration::from_millis(5),
    )
    .unwrap();
    state
}

fn on_refund_create(mut rule: Value) -> Value {
    rule["method"] = json!("POST");
    rule["path"] = json!("/v1/refunds");
    if rule.get("times").is_none() {
        rule["times"] = json!(1);
    }
    rule
}

// ---------------------------------------------------------------------------------
// The fault matrix
// ---------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The fault hits the first `POST /v1/refunds`.
    FirstAttempt,
    /// The first attempt commits and its answer is lost (`drop_response_after_commit`);
    /// the fault hits the retry.
    Retry,
}

#[derive(Clone, Copy, Debug)]
enum Final {
    /// One provider refund; the case `refund_succeeded`; the customer told "completed".
    Refunded,
    /// No provider refund; the case `refund_failed`; the customer not told "completed".
    Refused,
}

struct Scenario {
    fault: Value,
    step: Step,
    /// Whether one execution leaves the case `pending_verification` (and the customer
    /// told "being verified") until reconciliation resolves it.
    unknown_first: bool,
    outcome: Final,
    /// Client timeout, when the fault is about timeouts.
    timeout: Option<Duration>,
}

async fn run_scenario(s: Scenario) {
    let case = approved_case().await;
    let state = match s.timeout {
        Some(t) => with_timeout(&case.app, t),
        None => case.app.state.clone(),
    };
    let mut rules = Vec::new();
    if s.step == Step::Retry {
        rules.push(on_refund_create(
            json!({"mode": "drop_response_after_commit", "drop_mode": "close"}),
        ));
    }
    rules.push(on_refund_create(s.fault.clone()));
    case.install_faults(Value::Array(rules)).await;
    let intent = case.intent().await;
    assert_eq!(intent.status, "created");
    assert_eq!(
        intent.idempotency_key,
        refunds::idempotency_key(&case.case_id, CHARGE, refunds::KIND_POLICY_REFUND),
        "the key is derived from the business action and stored before any call"
    );

    refunds::execute_case(state.executor(), &case.case_id)
        .await
        .unwrap();
    if s.unknown_first {
        assert_eq!(
            case.case_status().await,
            "pending_verification",
            "{:?}",
            case.intent().await
        );
        let reply = case.last_reply().await;
        assert!(reply.contains("being verified"), "{reply}");
        assert!(
            !reply.contains("has been completed") && !reply.contains("fail"),
            "{reply}"
        );
        let report = reconcile::run(state.reconciler()).await.unwrap();
        let resolved = report
            .resolved
            .iter()
            .find(|r| intent.id == r.intent_id.as_str())
            .unwrap_or_else(|| panic!("reconciliation resolves the intent: {report:#?}"));
        assert_eq!(resolved.from, "pending_verification");
    }
    let report = case.drain_and_reconcile(&state).await;

    let provider = case.provider_refunds().await;
    let intent = case.intent().await;
    let status = case.case_status().await;
    let reply = case.last_reply().await;
    // Every request used the one stored key: the provider never saw another.
    let ledger = case.ledger().await;
    for key in ledger["idempotency_keys"].as_array().unwrap() {
        assert_eq!(key["idempotency_key"], intent.idempotency_key.as_str());
    }
    match s.outcome {
        Final::Refunded => {
            assert_eq!(
                provider.len(),
                1,
                "exactly one provider refund: {provider:#?}"
            );
            assert_eq!(provider[0]["amount"], 19800);
            assert_eq!(
                provider[0]["metadata"]["refund_intent_id"],
                intent.id.as_str()
            );
            assert_eq!(
                intent.provider_refund_id.as_deref(),
                provider[0]["id"].as_str()
            );
            assert_eq!(intent.status, "succeeded");
            assert_eq!(status, "refund_succeeded");
            assert!(
                reply.contains("CN¥198.00") && reply.contains("completed"),
                "{reply}"
            );
            assert_eq!(report.matched.len(), 1, "{report:#?}");
        }
        Final::Refused => {
            assert!(provider.is_empty(), "no provider refund: {provider:#?}");
            assert_eq!(intent.status, "failed", "{intent:?}");
            assert_eq!(status, "refund_failed");
            // The provider's "no" in RP-005's words: not completed, never "being verified".
            assert!(reply.contains("could not be completed"), "{reply}");
            assert!(!reply.contains("has been completed"), "{reply}");
            assert!(report.matched.is_empty(), "{report:#?}");
        }
    }
    assert!(report.provider_without_intent.is_empty(), "{report:#?}");
    assert!(report.intent_without_provider.is_empty(), "{report:#?}");
    assert!(report.amount_mismatch.is_empty(), "{report:#?}");
    assert!(report.unresolved.is_empty(), "{report:#?}");
}

/// One test per (fault, step): `matrix!(name, step, fault, unknown_first, outcome[, timeout_ms])`.
macro_rules! matrix {
    ($($name:ident: $step:ident, $fault:expr, $unknown:expr, $outcome:ident $(, $timeout:expr)?;)*) => {
        $(
            #[tokio::test]
            async fn $name() {
                #[allow(unused_mut, unused_assignments)]
                let mut timeout = None;
                $( timeout = Some(Duration::from_millis($timeout)); )?
                run_scenario(Scenario {
                    fault: $fault,
                    step: Step::$step,
                    unknown_first: $unknown,
                    outcome: Final::$outcome,
                    timeout,
                })
                .await;
            }
        )*
        /// The matrix's size, for the report.
        const MATRIX_SIZE: usize = [$(stringify!($name)),*].len();
    };
}

matrix! {
    // The first attempt.
    first_attempt_fail_before_commit_is_retried_with_the_same_key:
        FirstAttempt, json!({"mode": "fail_before_commit", "status": 503}), false, Refunded;
    first_attempt_reset_before_commit_is_retried_with_the_same_key:
        FirstAttempt, json!({"mode": "reset_before_commit"}), false, Refunded;
    first_attempt_connect_refused_is_retried_with_the_same_key:
        FirstAttempt, json!({"mode": "connect_refused"}), false, Refunded;
    first_attempt_stored_500_after_commit_is_verified_and_adopted:
        FirstAttempt, json!({"mode": "server_error_after_begin", "commit": true}), true, Refunded;
    first_attempt_stored_500_after_commit_with_should_retry_false_is_verified_and_adopted:
        FirstAttempt, json!({"mode": "server_error_after_begin", "commit": true, "should_retry": false}), true, Refunded;
    first_attempt_stored_500_without_commit_is_verified_as_no_refund:
        FirstAttempt, json!({"mode": "server_error_after_begin", "commit": false}), true, Refused;
    first_attempt_dropped_response_is_replayed_not_repeated:
        FirstAttempt, json!({"mode": "drop_response_after_commit", "drop_mode": "close"}), false, Refunded;
    first_attempt_hung_response_past_the_timeout_is_replayed_not_repeated:
        FirstAttempt, json!({"mode": "drop_response_after_commit", "drop_mode": "hang", "ms": 2500}), false, Refunded, 1000;
    first_attempt_plain_rate_limit_is_not_retried_at_once_but_sent_later:
        FirstAttempt, json!({"mode": "rate_limit", "code": "rate_limit"}), false, Refunded;
    first_attempt_lock_timeout_is_retried:
        FirstAttempt, json!({"mode": "rate_limit", "code": "lock_timeout"}), false, Refunded;
    first_attempt_conflict_in_flight_is_retried:
        FirstAttempt, json!({"mode": "conflict_in_flight"}), false, Refunded;
    first_attempt_charge_already_refunded_elsewhere_is_a_final_refusal:
        FirstAttempt, json!({"mode": "business_error", "code": "charge_already_refunded"}), false, Refused;
    first_attempt_charge_disputed_is_a_final_refusal:
        FirstAttempt, json!({"mode": "business_error", "code": "charge_disputed"}), false, Refused;
    first_attempt_amount_exceeds_is_a_final_refusal:
        FirstAttempt, json!({"mode": "business_error", "code": "amount_exceeds"}), false, Refused;
    first_attempt_expire_key_changes_nothing:
        FirstAttempt, json!({"mode": "expire_key"}), false, Refunded;
    first_attempt_latency_past_the_timeout_is_retried_with_the_same_key:
        FirstAttempt, json!({"mode": "latency", "ms": 2500}), false, Refunded, 1000;

    // The retry, after the first attempt committed and its answer was lost.
    retry_fail_before_commit_then_replay:
        Retry, json!({"mode": "fail_before_commit", "status": 500}), false, Refunded;
    retry_reset_before_commit_then_replay:
        Retry, json!({"mode": "reset_before_commit"}), false, Refunded;
    retry_connect_refused_then_replay:
        Retry, json!({"mode": "connect_refused"}), false, Refunded;
    retry_server_error_after_begin_commit_is_masked_by_the_stored_answer:
        Retry, json!({"mode": "server_error_after_begin", "commit": true}), false, Refunded;
    retry_server_error_after_begin_no_commit_is_masked_by_the_stored_answer:
        Retry, json!({"mode": "server_error_after_begin", "commit": false}), false, Refunded;
    retry_dropped_again_then_replay:
        Retry, json!({"mode": "drop_response_after_commit", "drop_mode": "close"}), false, Refunded;
    retry_hung_past_the_timeout_then_replay:
        Retry, json!({"mode": "drop_response_after_commit", "drop_mode": "hang", "ms": 2500}), false, Refunded, 1000;
    retry_plain_rate_limit_after_a_lost_answer_is_verified_and_adopted:
        Retry, json!({"mode": "rate_limit", "code": "rate_limit"}), true, Refunded;
    retry_lock_timeout_then_replay:
        Retry, json!({"mode": "rate_limit", "code": "lock_timeout"}), false, Refunded;
    retry_conflict_in_flight_then_replay:
        Retry, json!({"mode": "conflict_in_flight"}), false, Refunded;
    retry_business_error_is_masked_by_the_stored_answer:
        Retry, json!({"mode": "business_error", "code": "charge_already_refunded"}), false, Refunded;
    retry_with_an_expired_key_gets_charge_already_refunded_and_adopts_our_refund:
        Retry, json!({"mode": "expire_key"}), false, Refunded;
    retry_latency_past_the_timeout_then_replay:
        Retry, json!({"mode": "latency", "ms": 2500}), false, Refunded, 1000;
    // Every attempt of the first pass conflicts: unknown, then resolved.
    every_attempt_conflicting_is_verified_then_resent_with_the_same_key:
        FirstAttempt, json!({"mode": "conflict_in_flight", "times": 3}), true, Refunded;
}

#[test]
fn the_fault_matrix_covers_every_mode_at_both_steps() {
    // 14 fault modes/variants × 2 steps, plus the timeout variants and the exhausted
    // conflict: 30 scenarios.
    assert_eq!(MATRIX_SIZE, 30);
}

#[tokio::test]
async fn a_provider_that_stays_down_gets_nothing_until_it_is_back_then_one_refund() {
    let case = approved_case().await;
    case.install_faults(json!([on_refund_create(
        json!({"mode": "fail_before_commit", "status": 503, "times": 1000})
    )]))
    .await;
    refunds::execute_case(case.app.state.executor(), &case.case_id)
        .await
        .unwrap();
    refunds::execute_case(case.app.state.executor(), &case.case_id)
        .await
        .unwrap();
    let intent = case.intent().await;
    // A 5xx may come from after execution began (the client cannot tell a gateway's 503
    // from a stored one): unknown, being verified; resending the same key is safe.
    assert_eq!(intent.status, "pending_verification", "{intent:?}");
    assert_eq!(case.case_status().await, "pending_verification");
    assert!(case.last_reply().await.contains("being verified"));
    assert!(case.provider_refunds().await.is_empty());
    case.clear_faults().await;
    case.drain_and_reconcile(&case.app.state).await;
    assert_eq!(case.provider_refunds().await.len(), 1);
    assert_eq!(case.case_status().await, "refund_succeeded");
}

// ---------------------------------------------------------------------------------
// Crashes between storing the intent and storing the answer
// ---------------------------------------------------------------------------------

/// Leaves the case as a process killed mid-call would: boundary check passed, intent
/// `submitting`, one attempt counted, no provider answer stored.
async fn kill_mid_call(case: &Approved, provider_committed: bool) -> Intent {
    let intent = case.intent().await;
    if provider_committed {
        // The call the dead process made, exactly as the adapter makes it.
        case.app
            .state
            .payments
            .create_refund(&refunds::refund_request(&intent))
            .await
            .expect("the provider commits the refund");
    }
    let now = {
        use desk::clock::Clock;
        case.app.clock.now_ms()
    };
    let db = case.app.state.db.pool();
    sqlx::query("UPDATE refund_intents SET status = 'submitting', attempts = 1, first_submitted_at = $1, version = version + 1 WHERE id = $2")
        .bind(now)
        .bind(intent.id.as_str())
        .execute(db)
        .await
        .unwrap();
    sqlx::query("UPDATE approvals SET status = 'used' WHERE case_id = $1")
        .bind(&case.case_id)
        .execute(db)
        .await
        .unwrap();
    sqlx::query("UPDATE cases SET status = 'executing', version = version + 1 WHERE id = $1")
        .bind(&case.case_id)
        .execute(db)
        .await
        .unwrap();
    intent
}

#[tokio::test]
async fn killed_after_the_provider_committed_recovers_with_exactly_one_refund() {
    let case = approved_case().await;
    let intent = kill_mid_call(&case, true).await;
    case.drain_and_reconcile(&case.app.state).await;
    let provider = case.provider_refunds().await;
    assert_eq!(provider.len(), 1, "{provider:#?}");
    let after = case.intent().await;
    assert_eq!(after.status, "succeeded");
    assert_eq!(
        after.provider_refund_id.as_deref(),
        provider[0]["id"].as_str()
    );
    assert_eq!(after.idempotency_key, intent.idempotency_key);
    assert_eq!(case.case_status().await, "refund_succeeded");
    assert!(case.last_reply().await.contains("completed"));
    assert!(
        case.ledger().await["counters"]["replays"].as_u64().unwrap() >= 1,
        "the resend was a replay"
    );
}

#[tokio::test]
async fn killed_before_the_provider_committed_recovers_with_exactly_one_refund() {
    let case = approved_case().await;
    kill_mid_call(&case, false).await;
    case.drain_and_reconcile(&case.app.state).await;
    assert_eq!(case.provider_refunds().await.len(), 1);
    assert_eq!(case.intent().await.status, "succeeded");
    assert_eq!(case.case_status().await, "refund_succeeded");
}

#[tokio::test]
async fn killed_a_day_ago_after_a_commit_is_adopted_from_the_provider_without_resending() {
    let case = approved_case().await;
    kill_mid_call(&case, true).await;
    case.app.clock.advance(time::Duration::hours(24));
    let keys_before = case.ledger().await["idempotency_keys"]
        .as_array()
        .unwrap()
        .len();
    let replays_before = case.ledger().await["counters"]["replays"].as_u64().unwrap();
    case.drain_and_reconcile(&case.app.state).await;
    assert_eq!(case.provider_refunds().await.len(), 1);
    assert_eq!(case.intent().await.status, "succeeded");
    let ledger = case.ledger().await;
    assert_eq!(
        ledger["counters"]["replays"].as_u64().unwrap(),
        replays_before,
        "nothing was resent"
    );
    assert_eq!(
        ledger["idempotency_keys"].as_array().unwrap().len(),
        keys_before
    );
}

#[tokio::test]
async fn killed_a_day_ago_without_a_commit_needs_review_and_is_never_resent() {
    let case = approved_case().await;
    kill_mid_call(&case, false).await;
    case.app.clock.advance(time::Duration::hours(24));
    // The provider forgot the key too: a resend would now execute.
    reqwest::Client::new()
        .post(format!("{}/__mock/clock", case.app.mock.base_url()))
        .json(&json!({"advance_seconds": 25 * 3600}))
        .send()
        .await
        .unwrap();
    let report = case.drain_and_reconcile(&case.app.state).await;
    assert!(case.provider_refunds().await.is_empty(), "nothing was sent");
    let intent = case.intent().await;
    assert_eq!(intent.status, "needs_review", "{intent:?}");
    assert_eq!(case.case_status().await, "pending_verification");
    let reply = case.last_reply().await;
    assert!(
        reply.contains("being verified") && !reply.contains("fail"),
        "{reply}"
    );
    assert_eq!(report.unresolved.len(), 1, "{report:#?}");
}

#[tokio::test]
async fn a_changed_parameter_under_the_same_key_is_a_bug_for_review_never_a_failed_refund() {
    let case = approved_case().await;
    kill_mid_call(&case, true).await;
    // A bug changes the amount after the key was used.
    sqlx::query("UPDATE refund_intents SET amount_minor = 10000 WHERE case_id = $1")
        .bind(&case.case_id)
        .execute(case.app.state.db.pool())
        .await
        .unwrap();
    let report = case.drain_and_reconcile(&case.app.state).await;
    let intent = case.intent().await;
    assert_eq!(intent.status, "needs_review", "{intent:?}");
    assert!(intent
        .last_error
        .as_deref()
        .unwrap_or_default()
        .contains("bug"));
    assert_eq!(case.case_status().await, "pending_verification");
    assert!(!case.last_reply().await.contains("fail"));
    assert_eq!(case.provider_refunds().await.len(), 1);
    assert_eq!(report.amount_mismatch.len(), 1, "{report:#?}");
}

// ---------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn fifty_concurrent_executions_of_one_approved_refund_make_one_provider_refund() {
    let case = approved_case().await;
    let handles: Vec<_> = (0..50)
        .map(|_| {
            let state = case.app.state.clone();
            let case_id = case.case_id.clone();
            tokio::spawn(async move { refunds::execute_case(state.executor(), &case_id).await })
        })
        .collect();
    for handle in handles {
        handle
            .await
            .unwrap()
            .expect("an execution succeeds or yields");
    }
    case.drain_and_reconcile(&case.app.state).await;
    assert_eq!(case.provider_refunds().await.len(), 1);
    assert_eq!(case.case_status().await, "refund_succeeded");
    let completed = case
        .messages()
        .await
        .iter()
        .filter(|m| m.contains("has been completed"))
        .count();
    assert_eq!(completed, 1, "the customer is told once");
}

#[tokio::test]
async fn fifty_concurrent_worker_passes_make_one_provider_refund() {
    let case = approved_case().await;
    let handles: Vec<_> = (0..50)
        .map(|_| {
            let state = case.app.state.clone();
            tokio::spawn(async move { desk::worker::run_once(&state).await })
        })
        .collect();
    for handle in handles {
        handle.await.unwrap().expect("a worker pass succeeds");
    }
    case.drain_and_reconcile(&case.app.state).await;
    assert_eq!(case.provider_refunds().await.len(), 1);
    assert_eq!(case.case_status().await, "refund_succeeded");
}

// ---------------------------------------------------------------------------------
// Webhooks
// ---------------------------------------------------------------------------------

/// Serves the app's router on a loopback socket and points the mock's webhooks at it.
async fn serve_and_point_webhooks(app: &TestApp) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = app.router.clone();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    desk::webhooks::point_provider_webhooks(&app.mock.base_url(), &url)
        .await
        .unwrap();
    url
}

/// Reloads the demo world into the mock with `ch_1001b` refunds created `pending`.
async fn pending_refund_profile(app: &TestApp) {
    let path = desk::config::default_fixtures_dir().join("billing/demo.json");
    let mut world: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for charge in world["charges"].as_array_mut().unwrap() {
        if charge["id"] == CHARGE {
            charge["refund_profile"] = json!("pending");
        }
    }
    desk::world::load_into_provider(&app.mock.base_url(), &world.to_string())
        .await
        .unwrap();
}

/// Polls (bounded) until `check` holds: webhooks arrive from another task.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for: {what}");
}

async fn all_events_delivered(case: &Approved) -> bool {
    let ledger = case.ledger().await;
    ledger["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["delivery_success"] == true || e["dropped"] == true)
}

async fn webhook_event_rows(case: &Approved) -> i64 {
    use sqlx::Row;
    sqlx::query("SELECT COUNT(*) AS n FROM webhook_events")
        .fetch_one(case.app.state.db.pool())
        .await
        .unwrap()
        .try_get("n")
        .unwrap()
}

#[tokio::test]
async fn duplicate_and_out_of_order_webhooks_move_a_pending_refund_forward_once() {
    let app = spawn_app().await;
    pending_refund_profile(&app).await;
    let case = approve_in(app).await;
    serve_and_point_webhooks(&case.app).await;
    case.install_faults(json!([
        {"mode": "webhook_duplicate", "n": 3},
        {"mode": "webhook_drop", "event_type": "charge.refunded"},
        // Held until a later event is sent: it arrives after the settlement.
        {"mode": "webhook_out_of_order", "event_type": "refund.created", "max_hold_ms": 60000},
    ]))
    .await;

    refunds::execute_case(case.app.state.executor(), &case.case_id)
        .await
        .unwrap();
    let intent = case.intent().await;
    assert_eq!(intent.status, "pending");
    assert_eq!(case.case_status().await, "refund_pending");
    assert!(case.last_reply().await.contains("submitted"));

    let refund_id = intent.provider_refund_id.clone().unwrap();
    assert!(case
        .settle(&refund_id, json!({"outcome": "succeeded"}))
        .await
        .is_success());

    // No worker pass: only the webhooks move the refund.
    eventually("every event delivered", || all_events_delivered(&case)).await;
    assert_eq!(case.intent().await.status, "succeeded");
    assert_eq!(case.case_status().await, "refund_succeeded");

    let ledger = case.ledger().await;
    let deliveries = ledger["webhook_deliveries"].as_array().unwrap();
    let events = ledger["events"].as_array().unwrap();
    let first_delivery = |event_type: &str| {
        let id = events.iter().find(|e| e["type"] == event_type).unwrap()["id"].clone();
        deliveries.iter().position(|d| d["event_id"] == id).unwrap()
    };
    assert!(
        first_delivery("refund.created") > first_delivery("refund.updated"),
        "refund.created arrived after the success"
    );
    assert!(
        deliveries.iter().any(|d| d["copy"] == 3),
        "duplicates were sent"
    );
    let delivered_events = events.iter().filter(|e| e["dropped"] != true).count() as i64;
    assert_eq!(
        webhook_event_rows(&case).await,
        delivered_events,
        "each event processed once"
    );
    let messages = case.messages().await;
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.contains("has been completed"))
            .count(),
        1,
        "{messages:#?}"
    );
    assert!(
        messages.last().unwrap().contains("has been completed"),
        "never back to submitted"
    );
    assert_eq!(case.provider_refunds().await.len(), 1);
}

/// A refund the provider holds as `pending` is read again only after a wait that grows
/// with its age, not on every worker pass; without any webhook, polling still learns
/// its outcome.
#[tokio::test]
async fn a_pending_refund_is_polled_after_a_growing_wait_not_on_every_worker_pass() {
    let app = spawn_app().await;
    pending_refund_profile(&app).await;
    let case = approve_in(app).await;
    let state = case.app.state.clone();
    desk::worker::run_once(&state).await.unwrap();
    let submitted = case.intent().await;
    assert_eq!(submitted.status, "pending");
    assert_eq!(case.case_status().await, "refund_pending");

    // Within the first wait, passes leave it alone: no read (a read moves the version).
    for _ in 0..3 {
        desk::worker::run_once(&state).await.unwrap();
    }
    assert_eq!(case.intent().await.version, submitted.version);

    // Past the shortest wait: read once, still pending; the next pass waits again.
    let min_wait = refunds::PENDING_RECHECK_MIN_MS / 1000 + 1;
    case.app.clock.advance(time::Duration::seconds(min_wait));
    desk::worker::run_once(&state).await.unwrap();
    let polled = case.intent().await;
    assert_eq!(
        (polled.status.as_str(), polled.version),
        ("pending", submitted.version + 1)
    );
    desk::worker::run_once(&state).await.unwrap();
    assert_eq!(case.intent().await.version, polled.version);

    // An hour in, the wait is a quarter of the age (15 minutes) capped at 10 minutes.
    // (The periodic reconciliation also reads pending refunds, on its own schedule, so
    // the executor's queue is checked directly here.)
    case.app.clock.advance(time::Duration::hours(1));
    desk::worker::run_once(&state).await.unwrap();
    let hour_old = case.intent().await;
    assert!(
        hour_old.version > polled.version,
        "read again after an hour"
    );
    let read_at = state.clock.now_ms();
    let due = |minutes: i64| {
        let db = state.db.clone();
        let at = read_at + minutes * 60_000;
        async move { refunds::cases_to_execute(&db, at).await.unwrap() }
    };
    assert!(due(9).await.is_empty(), "not due 9 minutes after a read");
    assert_eq!(due(11).await, vec![case.case_id.clone()], "due after 10");

    // The bank settles; no webhook is configured, so the next due read learns it.
    let refund_id = hour_old.provider_refund_id.clone().unwrap();
    assert!(case
        .settle(&refund_id, json!({"outcome": "succeeded"}))
        .await
        .is_success());
    case.app.clock.advance(time::Duration::minutes(11));
    desk::worker::run_once(&state).await.unwrap();
    assert_eq!(case.intent().await.status, "succeeded");
    assert_eq!(case.case_status().await, "refund_succeeded");
    assert_eq!(case.provider_refunds().await.len(), 1);
}

#[tokio::test]
async fn a_failure_webhook_is_final_and_a_late_created_event_does_not_revive_the_refund() {
    let app = spawn_app().await;
    pending_refund_profile(&app).await;
    let case = approve_in(app).await;
    serve_and_point_webhooks(&case.app).await;
    case.install_faults(json!([
        {"mode": "webhook_drop", "event_type": "charge.refunded"},
        {"mode": "webhook_out_of_order", "event_type": "refund.created", "max_hold_ms": 60000},
    ]))
    .await;
    refunds::execute_case(case.app.state.executor(), &case.case_id)
        .await
        .unwrap();
    let refund_id = case.intent().await.provider_refund_id.unwrap();
    case.settle(
        &refund_id,
        json!({"outcome": "failed", "failure_reason": "expired_or_canceled_card"}),
    )
    .await;
    eventually("every event delivered", || all_events_delivered(&case)).await;
    assert_eq!(case.intent().await.status, "failed");
    assert_eq!(case.case_status().await, "refund_failed");
    assert!(!case.last_reply().await.contains("submitted"));
}

#[tokio::test]
async fn a_badly_signed_delivery_is_refused_and_the_providers_retry_is_applied() {
    let case = approved_case().await;
    serve_and_point_webhooks(&case.app).await;
    case.install_faults(json!([
        {"mode": "webhook_bad_signature", "kind": "wrong_secret", "times": 1, "event_type": "refund.created"},
        {"mode": "webhook_retry_policy", "attempts": 5, "backoff_ms": 50},
    ]))
    .await;
    refunds::execute_case(case.app.state.executor(), &case.case_id)
        .await
        .unwrap();
    eventually("every event delivered", || all_events_delivered(&case)).await;
    let ledger = case.ledger().await;
    let statuses: Vec<(Value, Value)> = ledger["webhook_deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["fault"].clone(), d["status"].clone()))
        .collect();
    assert!(
        statuses.contains(&(json!("wrong_secret"), json!(400))),
        "{statuses:?}"
    );
    assert_eq!(case.intent().await.status, "succeeded");
}

fn signed(body: &str, secret: &str, t: i64) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::post("/api/v1/webhooks/payments")
        .header("content-type", "application/json")
        .header(
            "stripe-signature",
            payments_mock::sign_payload(secret, t, body.as_bytes()),
        )
        .body(axum::body::Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn bad_signatures_are_rejected_with_400_and_change_nothing() {
    let case = approved_case().await;
    refunds::execute_case(case.app.state.executor(), &case.case_id)
        .await
        .unwrap();
    let intent = case.intent().await;
    let refund_id = intent.provider_refund_id.clone().unwrap();
    let body = json!({
        "id": "evt_forged", "object": "event", "type": "refund.failed",
        "data": {"object": {"id": refund_id, "object": "refund", "amount": 19800, "charge": CHARGE,
            "currency": "cny", "status": "failed", "created": 0,
            "metadata": {"refund_intent_id": intent.id}}},
        "request": {"id": null, "idempotency_key": null}
    })
    .to_string();
    let now = {
        use desk::clock::Clock;
        case.app.clock.now_ms() / 1000
    };
    let cases = [
        ("wrong secret", signed(&body, "whsec_wrong", now)),
        ("stale timestamp", signed(&body, SECRET, now - 301)),
        (
            "missing header",
            axum::http::Request::post("/api/v1/webhooks/payments")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body.clone()))
                .unwrap(),
        ),
        ("tampered body", {
            let mut request = signed(&body, SECRET, now);
            *request.body_mut() = axum::body::Body::from(body.replace("19800", "1"));
            request
        }),
    ];
    for (what, request) in cases {
        let (status, text) = case.app.raw(request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {text}");
        assert!(text.contains("invalid_signature"), "{what}: {text}");
    }
    assert_eq!(webhook_event_rows(&case).await, 0);
    assert_eq!(case.intent().await.status, "succeeded");

    // Correctly signed, but the provider says the refund succeeded: the provider's
    // record wins over the event's copy, and the event is processed once.
    let (status, text) = case.app.raw(signed(&body, SECRET, now - 10)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(case.intent().await.status, "succeeded");
    let (status, text) = case.app.raw(signed(&body, SECRET, now)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("duplicate"), "{text}");
    assert_eq!(webhook_event_rows(&case).await, 1);
}

#[tokio::test]
async fn unknown_event_types_are_acknowledged_and_ignored() {
    let case = approved_case().await;
    let now = {
        use desk::clock::Clock;
        case.app.clock.now_ms() / 1000
    };
    let body =
        json!({"id": "evt_other", "type": "customer.created", "data": {"object": {}}}).to_string();
    let (status, text) = case.app.raw(signed(&body, SECRET, now)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("ignored"), "{text}");
    assert_eq!(case.intent().await.status, "created");
}

// ---------------------------------------------------------------------------------
// Reconciliation
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn reconciliation_reports_refunds_made_elsewhere_and_is_served_to_staff_only() {
    let case = approved_case().await;
    case.drain_and_reconcile(&case.app.state).await;
    // A dashboard refund on a charge no intent names: outside the run.
    case.app.refund_elsewhere("ch_1001a", 100).await;
    let (status, _) = case
        .app
        .request("POST", "/api/v1/reconcile", None, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let customer = case.app.customer_token("C-100").await;
    let (status, _) = case
        .app
        .request("POST", "/api/v1/reconcile", Some(&customer), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, report) = case
        .app
        .request(
            "POST",
            "/api/v1/reconcile",
            Some(&case.app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["matched"].as_array().unwrap().len(), 1, "{report:#}");
    assert_eq!(report["matched"][0]["amount"], "198.00");
    // ch_1001a carries no intent, so it is outside the run; our charge is clean.
    assert!(report["provider_without_intent"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(report["intent_without_provider"]
        .as_array()
        .unwrap()
        .is_empty());
    let stored = reconcile::last_report(&case.app.state.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.matched.len(), 1);
}

#[tokio::test]
async fn reconciliation_flags_an_intent_the_provider_lacks_and_a_refund_without_intent() {
    let case = approved_case().await;
    case.drain_and_reconcile(&case.app.state).await;
    // The intent's record drifts: it points at a refund the provider never made.
    sqlx::query("UPDATE refund_intents SET provider_refund_id = 're_missing' WHERE case_id = $1")
        .bind(&case.case_id)
        .execute(case.app.state.db.pool())
        .await
        .unwrap();
    let report = reconcile::run(case.app.state.reconciler()).await.unwrap();
    assert_eq!(report.intent_without_provider.len(), 1, "{report:#?}");
    assert_eq!(
        report.intent_without_provider[0]
            .provider_refund_id
            .as_deref(),
        Some("re_missing")
    );
    // The real refund names our intent, which records another refund: flagged, since
    // one intent with two refunds is exactly what must never happen.
    assert_eq!(report.provider_without_intent.len(), 1, "{report:#?}");
    assert!(report.matched.is_empty());
    assert!(!report.is_clean());
}

/// The 30-second pass lists only charges with open or just-changed intents; the charges
/// of last week's settled refunds are listed by the hourly sweep, not every 30 s.
#[tokio::test]
async fn the_periodic_pass_lists_settled_charges_only_in_its_hourly_sweep() {
    let case = approved_case().await;
    desk::worker::drain(&case.app.state).await.unwrap();
    assert_eq!(case.intent().await.status, "succeeded");
    let pass = |minutes: i64| {
        let state = case.app.state.clone();
        let clock = case.app.clock.clone();
        async move {
            clock.advance(time::Duration::minutes(minutes));
            reconcile::run_if_due(state.reconciler())
                .await
                .unwrap()
                .expect("the pass is due")
        }
    };
    // Just settled: still in the 30-second pass's window.
    let report = pass(1).await;
    assert_eq!(
        (report.scope, report.charges_checked),
        (reconcile::Scope::Open, 1)
    );
    // Settled 11 minutes ago: the 30-second pass no longer lists its charge...
    let report = pass(10).await;
    assert_eq!(
        (report.scope, report.charges_checked),
        (reconcile::Scope::Open, 0)
    );
    // ...the hourly sweep does (last week's refunds), and finds it matched.
    let report = pass(60).await;
    assert_eq!(
        (report.scope, report.charges_checked),
        (reconcile::Scope::Recent, 1)
    );
    assert_eq!(report.matched.len(), 1, "{report:#?}");
    assert_eq!(pass(1).await.scope, reconcile::Scope::Open);
}

#[tokio::test]
async fn the_periodic_pass_runs_at_most_every_thirty_seconds_of_the_app_clock() {
    let case = approved_case().await;
    // The first drain (opening the ticket) already ran it at this instant.
    assert!(reconcile::run_if_due(case.app.state.reconciler())
        .await
        .unwrap()
        .is_none());
    case.app.clock.advance(time::Duration::seconds(29));
    assert!(reconcile::run_if_due(case.app.state.reconciler())
        .await
        .unwrap()
        .is_none());
    case.app.clock.advance(time::Duration::seconds(1));
    assert!(reconcile::run_if_due(case.app.state.reconciler())
        .await
        .unwrap()
        .is_some());
    assert!(reconcile::run_if_due(case.app.state.reconciler())
        .await
        .unwrap()
        .is_none());
}

// ---------------------------------------------------------------------------------
// A webhook never decides by its own word; no public secret in production
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn a_signed_webhook_claiming_success_while_the_provider_cannot_be_read_moves_no_money_state()
{
    let app = spawn_app().await;
    pending_refund_profile(&app).await;
    let case = approve_in(app).await;
    refunds::execute_case(case.app.state.executor(), &case.case_id)
        .await
        .unwrap();
    let intent = case.intent().await;
    assert_eq!(intent.status, "pending");
    let refund_id = intent.provider_refund_id.clone().unwrap();
    // Whoever holds the secret claims the (unsettled) refund succeeded, while reading
    // the refund back from the provider fails.
    case.install_faults(json!([{"mode": "fail_before_commit", "status": 503,
        "method": "GET", "path": "/v1/refunds/*"}]))
        .await;
    let body = json!({
        "id": "evt_forged_success", "object": "event", "type": "refund.updated",
        "data": {"object": {"id": refund_id, "object": "refund", "amount": 19800, "charge": CHARGE,
            "currency": "cny", "status": "succeeded", "created": 0,
            "metadata": {"refund_intent_id": intent.id}}},
        "request": {"id": null, "idempotency_key": null}
    })
    .to_string();
    let now = {
        use desk::clock::Clock;
        case.app.clock.now_ms() / 1000
    };
    let (status, text) = case.app.raw(signed(&body, SECRET, now)).await;
    assert!(
        !status.is_success(),
        "non-2xx, so the provider retries: {status} {text}"
    );
    assert_eq!(case.intent().await.status, "pending");
    assert_eq!(case.case_status().await, "refund_pending");
    assert!(!case.last_reply().await.contains("has been completed"));
    assert_eq!(webhook_event_rows(&case).await, 0, "left for the retry");

    // The provider's retry, once it can be read: its own record (still pending) wins.
    case.clear_faults().await;
    let (status, text) = case.app.raw(signed(&body, SECRET, now)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(case.intent().await.status, "pending");
    assert_eq!(case.case_status().await, "refund_pending");
}

#[tokio::test]
async fn serve_against_a_real_provider_refuses_to_start_with_the_public_default_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_refund-agent"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("PAYMENTS_URL", "http://127.0.0.1:9")
        .env("PAYMENTS_API_KEY", "sk_live_from_the_vault")
        .env_remove("PAYMENTS_WEBHOOK_SECRET")
        .env_remove("DATABASE_URL")
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let status = status.unwrap_or_else(|| panic!("serve started: {stderr}"));
    assert!(!status.success());
    assert!(stderr.contains("PAYMENTS_WEBHOOK_SECRET"), "{stderr}");
}

/// Before the built-in investigator's turn: a run whose customer asks us to hold on
/// stops inside its first model call until released (once).
struct Holding {
    entered: tokio::sync::Notify,
    release: tokio::sync::Notify,
    held: std::sync::atomic::AtomicBool,
}

impl crate::support::BeforeTurn for Holding {
    fn before<'a>(
        &'a self,
        ctx: &'a desk::agent::ModelContext<'a>,
    ) -> desk::agent::BoxFuture<'a, ()> {
        Box::pin(async move {
            let asked = ctx.inputs.iter().any(|m| m.contains("hold on"));
            if asked && !self.held.swap(true, std::sync::atomic::Ordering::SeqCst) {
                self.entered.notify_one();
                self.release.notified().await;
            }
        })
    }
}

/// Money a person approved is not held up by the runs a worker pass is busy
/// with. Before, a pass advanced every runnable run first and executed refunds only
/// after: under a backlog, approved refunds waited for all of it. Here one run is held
/// inside its model call for as long as the test likes; the approved refund still
/// reaches the provider, once, while it is held.
#[tokio::test]
async fn an_approved_refund_goes_out_while_the_worker_is_busy_with_runs() {
    let model = std::sync::Arc::new(crate::support::BeforeTurns(Holding {
        entered: Default::default(),
        release: Default::default(),
        held: Default::default(),
    }));
    let app = crate::support::spawn_app_with_model(model.clone()).await;
    let case = approve_in(app).await;
    let app = &case.app;
    app.post_ticket("C-200", "hold on, I think I was charged twice")
        .await;
    let state = app.state.clone();
    let pass = tokio::spawn(async move { desk::worker::run_once(&state).await });
    model.0.entered.notified().await;

    let waited = std::time::Instant::now();
    while app.case(&case.case_id).await["status"] != "refund_succeeded" {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the approved refund waited for the held run: {:#}",
            app.case(&case.case_id).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!pass.is_finished(), "the run was still held");
    assert_eq!(app.provider_refunds(CHARGE).await.len(), 1);
    model.0.release.notify_one();
    pass.await.unwrap().expect("the pass ends without error");
}
