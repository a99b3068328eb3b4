//! The agent harness under stress: models that misbehave on purpose, workers killed at
//! every step boundary, workers racing for one run, budgets running out, and the event
//! log that shows all of it (docs/spec/lifecycle.md; invariants 1, 4 and 7 of docs/spec/invariants.md).
//!
//! Each test drives the real loop (`worker::run_once` / `investigation::advance`) against a fresh
//! database, the real payments mock and the policy engine; faults are injected by
//! wrapping the model or the billing source in the test's own `Services` clone.
//!
//! Long because it is one area (the agent loop against misbehaving models and a kill at
//! every step): one binary, each test its own scenario.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::support::{spawn_app, spawn_app_with_model, TestApp};
use axum::http::StatusCode;
use desk::agent::investigator::Investigator;
use desk::agent::{
    BoxFuture, Model, ModelContext, ModelTurn, Proposal, Usage, MAX_STEPS, MAX_TOOL_CALLS,
    MAX_TOOL_RESULT_BYTES,
};
use desk::billing::{Answer, BillingSource, CustomerRecord, Order};
use desk::clock::ManualClock;
use desk::runs;
use desk::state::Services;
use desk::tickets::OtherTickets;
use payments_adapter::{ProviderCharge, ProviderRefund};
use refund_evals::scripted::{self, call, calls, ScriptedModel};
use serde_json::{json, Value};
use sqlx::Row;
use tokio::sync::Notify;

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// Every charge of the demo world: none of them may see a refund in these tests.
const DEMO_CHARGES: &[&str] = &[
    "ch_1001a", "ch_1001b", "ch_2001a", "ch_2001h", "ch_3001a", "ch_3001b", "ch_4001a", "ch_4001b",
    "ch_5001a", "ch_5002a", "ch_6001a", "ch_6001b", "ch_7001a", "ch_7001h", "ch_7001f", "ch_8001a",
    "ch_9001a", "ch_9001b",
];

// ---------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------

async fn run_events(app: &TestApp, run_id: &str) -> Vec<Value> {
    let (status, events) = app
        .request(
            "GET",
            &format!("/api/v1/runs/{run_id}/events"),
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{events}");
    events.as_array().cloned().unwrap_or_default()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default())
        .collect()
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind).count()
}

fn first<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event in {:?}", kinds(events)))
}

/// Posts a ticket as the customer without draining the worker; returns the case id.
async fn post_ticket(app: &TestApp, customer_id: &str, message: &str) -> String {
    let ticket = app.post_ticket(customer_id, message).await;
    ticket["case"]["id"].as_str().unwrap().to_string()
}

async fn run_id_of(app: &TestApp, case_id: &str) -> String {
    app.case(case_id).await["run_id"]
        .as_str()
        .expect("the case has a run")
        .to_string()
}

async fn count_rows(app: &TestApp, sql: &'static str) -> i64 {
    sqlx::query(sql)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
        .try_get::<i64, _>(0)
        .unwrap()
}

/// Every refund the provider holds on the demo charges (the demo world has some).
async fn provider_ledger(app: &TestApp) -> Vec<Value> {
    let mut all = Vec::new();
    for charge in DEMO_CHARGES {
        all.extend(app.provider_refunds(charge).await);
    }
    all
}

/// SPEC invariants 1 and 7: nothing new reached the provider, nobody approved anything.
async fn assert_nothing_moved(app: &TestApp, case: &Value, ledger_before: &[Value]) {
    assert_eq!(
        provider_ledger(app).await,
        ledger_before,
        "a provider refund was made"
    );
    assert_eq!(count_rows(app, "SELECT COUNT(*) FROM approvals").await, 0);
    assert_eq!(
        count_rows(app, "SELECT COUNT(*) FROM refund_intents").await,
        0
    );
    let status = case["status"].as_str().unwrap();
    assert!(
        ![
            "approved",
            "executing",
            "refund_pending",
            "refund_succeeded",
            "pending_verification"
        ]
        .contains(&status),
        "{case:#}"
    );
}

/// The log's own invariants: seqs strictly increasing from 1, every tool intent with
/// exactly one result (after it, same call id), no result without an intent, at most one
/// proposal, decision and escalation, and only the state transitions of docs/spec/lifecycle.md.
fn assert_log_consistent(events: &[Value]) {
    let seqs: Vec<i64> = events.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    let expected: Vec<i64> = (1..=events.len() as i64).collect();
    assert_eq!(seqs, expected, "seqs are dense and unique");
    for intent in events.iter().filter(|e| e["kind"] == "tool_intent") {
        let results: Vec<&Value> = events
            .iter()
            .filter(|e| e["kind"] == "tool_result" && e["call_id"] == intent["call_id"])
            .collect();
        assert_eq!(results.len(), 1, "one result for {intent}");
        assert!(results[0]["seq"].as_i64() > intent["seq"].as_i64());
    }
    for result in events.iter().filter(|e| e["kind"] == "tool_result") {
        assert!(
            events
                .iter()
                .any(|e| e["kind"] == "tool_intent" && e["call_id"] == result["call_id"]),
            "a result without an intent: {result}"
        );
    }
    for kind in ["proposal", "decision", "escalated", "handoff"] {
        assert!(
            count(events, kind) <= 1,
            "{kind} twice: {:?}",
            kinds(events)
        );
    }
    const ALLOWED: &[(&str, &str)] = &[
        ("ready", "model_running"),
        ("model_running", "tool_pending"),
        ("model_running", "ready"),
        ("tool_pending", "tool_running"),
        ("tool_pending", "ready"),
        ("tool_running", "ready"),
        // Recovery: a worker died inside a tool step; its successor resumes before it.
        ("tool_running", "tool_pending"),
        ("ready", "awaiting_approval"),
        ("ready", "awaiting_dependency"),
        ("ready", "completed"),
        ("ready", "failed"),
        ("awaiting_dependency", "awaiting_approval"),
        ("awaiting_dependency", "completed"),
        ("awaiting_dependency", "failed"),
        ("awaiting_dependency", "ready"),
        ("awaiting_approval", "completed"),
    ];
    for e in events.iter().filter(|e| e["kind"] == "state") {
        let (from, to) = (
            e["payload"]["from"].as_str().unwrap_or_default(),
            e["payload"]["to"].as_str().unwrap_or_default(),
        );
        assert!(
            ALLOWED.contains(&(from, to)) || to == "cancelled",
            "transition {from} -> {to} is not in docs/spec/lifecycle.md"
        );
    }
}

/// Opens the demo ticket with a model and returns the app, the case and its run's log.
async fn investigate_with(model: Arc<dyn Model>) -> (TestApp, Value, Vec<Value>) {
    let app = spawn_app_with_model(model).await;
    let ledger = provider_ledger(&app).await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let events = run_events(&app, case["run_id"].as_str().unwrap()).await;
    assert_log_consistent(&events);
    assert_nothing_moved(&app, &case, &ledger).await;
    (app, case, events)
}

/// Asserts the case went to a human with a summary, and returns the handoff event.
fn assert_handed_over(case: &Value, events: &[Value]) -> Value {
    assert_eq!(case["status"], "escalated", "{case:#}");
    assert_eq!(count(events, "escalated"), 1, "{:?}", kinds(events));
    assert_eq!(count(events, "decision"), 0, "{:?}", kinds(events));
    let handoff = first(events, "handoff")["payload"].clone();
    assert!(handoff["reason"].as_str().is_some(), "{handoff:#}");
    assert!(handoff["verified_facts"].is_array(), "{handoff:#}");
    assert!(handoff["open_questions"].is_array(), "{handoff:#}");
    assert!(handoff["actions_taken"].is_array(), "{handoff:#}");
    let last_state = events.iter().rev().find(|e| e["kind"] == "state").unwrap();
    assert_eq!(last_state["payload"]["to"], "failed");
    handoff
}

fn budget_named(events: &[Value]) -> String {
    first(events, "budget_exhausted")["payload"]["budget"]
        .as_str()
        .unwrap()
        .to_string()
}

// ---------------------------------------------------------------------------------------
// Misbehaving models (docs/spec/interfaces.md, "The model"): no money, no approval, a clear trail.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_model_calling_an_unknown_tool_gets_a_hint_then_is_handed_to_a_human() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::calls_unknown_tool())).await;
    let result = first(&events, "tool_result");
    assert_eq!(result["payload"]["ok"], false);
    assert_eq!(result["payload"]["content"]["error"], "unknown_tool");
    assert!(result["payload"]["content"]["hint"]
        .as_str()
        .unwrap()
        .contains("list_orders"));
    assert_eq!(budget_named(&events), "invalid_tool_calls");
    assert_eq!(count(&events, "tool_intent"), 3);
    assert_handed_over(&case, &events);
}

#[tokio::test]
async fn a_model_sending_a_json_string_as_arguments_is_handed_to_a_human() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::sends_string_arguments())).await;
    let result = first(&events, "tool_result");
    assert_eq!(result["payload"]["content"]["error"], "invalid_arguments");
    assert!(result["payload"]["content"]["hint"]
        .as_str()
        .unwrap()
        .contains("JSON object"));
    assert_eq!(budget_named(&events), "invalid_tool_calls");
    assert_handed_over(&case, &events);
}

#[tokio::test]
async fn a_proposal_claiming_an_approval_is_refused_and_never_reaches_the_queue() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::claims_approval())).await;
    let violation = &first(&events, "policy_violation")["payload"];
    assert_eq!(violation["violation"], "approval_claim", "{violation}");
    // The claim was recorded as the model said it, never as a proposal.
    assert_eq!(count(&events, "proposal"), 0, "{:?}", kinds(&events));
    assert!(case["fingerprint"].is_null(), "{case:#}");
    assert_handed_over(&case, &events);
}

#[tokio::test]
async fn a_model_calling_approve_refund_is_refused_before_anything_runs() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::calls_approve_refund())).await;
    let violation = &first(&events, "policy_violation")["payload"];
    assert_eq!(violation["violation"], "approval_attempt", "{violation}");
    assert_eq!(violation["tool"], "approve_refund");
    // Only the honest first call ran; no intent was recorded for the refused turn.
    assert_eq!(count(&events, "tool_intent"), 1);
    assert!(events
        .iter()
        .all(|e| e["payload"]["name"] != "approve_refund" || e["kind"] == "model_output"));
    let handoff = assert_handed_over(&case, &events);
    assert!(
        handoff["actions_taken"]
            .to_string()
            .contains("approval_attempt"),
        "{handoff:#}"
    );
}

#[tokio::test]
async fn a_turn_with_a_write_action_is_refused_whole_even_its_read_only_calls() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::tries_write_action())).await;
    let violation = &first(&events, "policy_violation")["payload"];
    assert_eq!(violation["violation"], "write_attempt", "{violation}");
    assert_eq!(violation["tool"], "create_refund");
    assert_eq!(count(&events, "tool_intent"), 0, "{:?}", kinds(&events));
    assert_eq!(count(&events, "tool_result"), 0);
    assert_handed_over(&case, &events);
}

#[tokio::test]
async fn a_model_repeating_the_same_call_forever_exhausts_the_step_budget() {
    let model = Arc::new(scripted::loops_forever());
    let (_app, case, events) = investigate_with(model.clone()).await;
    let budget = &first(&events, "budget_exhausted")["payload"];
    assert_eq!(budget["budget"], "steps", "{budget}");
    assert_eq!(budget["used"], MAX_STEPS);
    assert_eq!(budget["limit"], MAX_STEPS);
    assert_eq!(
        model.calls(),
        MAX_STEPS as usize,
        "asked once per step, no more"
    );
    assert_eq!(count(&events, "model_output"), MAX_STEPS as usize);
    let handoff = assert_handed_over(&case, &events);
    assert!(handoff["reason"].as_str().unwrap().contains("steps"));
    assert!(
        handoff["verified_facts"].to_string().contains("O-1001"),
        "{handoff:#}"
    );
    assert!(
        case["void_reason"].as_str().unwrap().contains("steps"),
        "{case:#}"
    );
}

#[tokio::test]
async fn a_proposal_refunding_the_legitimate_charge_is_overridden_by_the_policy_engine() {
    let (_app, case, events) =
        investigate_with(Arc::new(scripted::refunds_the_wrong_charge())).await;
    let overridden = &first(&events, "proposal_overridden")["payload"];
    assert!(overridden["proposed"].to_string().contains("ch_1001a"));
    // The engine decided on the records: the duplicate, not what the model asked for.
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let refunds = case["decision"]["refunds"].as_array().unwrap();
    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0]["charge_id"], "ch_1001b");
    assert_eq!(case["refund_total"], "198.00");
    assert_eq!(count(&events, "decision"), 1);
}

#[tokio::test]
async fn a_proposal_with_an_amount_no_record_shows_is_overridden_by_the_policy_engine() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::inflates_the_amount())).await;
    let overridden = &first(&events, "proposal_overridden")["payload"];
    assert!(overridden["proposed"].to_string().contains("5000.00"));
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(case["refund_total"], "198.00");
}

#[tokio::test]
async fn a_proposal_citing_a_tool_call_that_never_happened_is_escalated() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::invents_evidence())).await;
    let rejected = &first(&events, "evidence_rejected")["payload"];
    assert!(
        rejected.to_string().contains("statement_from_bank"),
        "{rejected}"
    );
    assert_eq!(case["status"], "escalated", "{case:#}");
    assert!(case["fingerprint"].is_null());
}

#[tokio::test]
async fn a_model_that_stops_answering_mid_task_is_handed_over_after_repeated_errors() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::stops_mid_task())).await;
    assert_eq!(count(&events, "model_error"), 3);
    assert!(first(&events, "model_error")["payload"]["error"]
        .as_str()
        .unwrap()
        .contains("connection reset"));
    assert_eq!(budget_named(&events), "model_errors");
    let handoff = assert_handed_over(&case, &events);
    // What it did verify is handed over with the call that verified it.
    assert!(
        handoff["verified_facts"].to_string().contains("C-100"),
        "{handoff:#}"
    );
}

#[tokio::test]
async fn a_model_answering_with_empty_turns_is_handed_over_after_repeated_errors() {
    let (_app, case, events) = investigate_with(Arc::new(scripted::answers_garbage())).await;
    assert_eq!(count(&events, "model_output"), 3);
    assert_eq!(count(&events, "model_error"), 3);
    assert_eq!(budget_named(&events), "model_errors");
    assert_handed_over(&case, &events);
}

// ---------------------------------------------------------------------------------------
// Budgets.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_model_asking_for_many_calls_per_turn_exhausts_the_tool_call_budget() {
    let model = Arc::new(ScriptedModel::new("scripted-wide").forever(|_| {
        Ok(calls(
            (0..6).map(|_| call("list_orders", json!({}))).collect(),
        ))
    }));
    let (app, case, events) = investigate_with(model).await;
    let budget = &first(&events, "budget_exhausted")["payload"];
    assert_eq!(budget["budget"], "tool_calls", "{budget}");
    assert_eq!(budget["used"], MAX_TOOL_CALLS);
    // Intents past the budget get a result saying so, without running.
    let skipped: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "tool_result" && e["payload"]["skipped"] == true)
        .collect();
    assert_eq!(
        skipped.len(),
        2,
        "7 turns of 6 calls against a budget of 40"
    );
    assert_eq!(
        skipped[0]["payload"]["content"]["error"],
        "budget_exhausted"
    );
    let run = runs::load_run(&app.state.db, case["run_id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.tool_calls, MAX_TOOL_CALLS);
    assert_handed_over(&case, &events);
}

#[tokio::test]
async fn a_model_spending_too_many_tokens_exhausts_the_token_budget() {
    let usage = Usage {
        prompt_tokens: 100_000,
        completion_tokens: 20_000,
    };
    let model = Arc::new(
        ScriptedModel::new("scripted-expensive")
            .turn_with_usage(calls(vec![call("get_customer", json!({}))]), usage)
            .turn_with_usage(calls(vec![call("list_orders", json!({}))]), usage),
    );
    let (_app, case, events) = investigate_with(model.clone()).await;
    let outputs: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "model_output")
        .collect();
    assert_eq!(outputs[0]["payload"]["usage"]["prompt_tokens"], 100_000);
    assert_eq!(outputs[0]["payload"]["usage"]["completion_tokens"], 20_000);
    let budget = &first(&events, "budget_exhausted")["payload"];
    assert_eq!(budget["budget"], "tokens", "{budget}");
    assert_eq!(budget["used"], 240_000);
    assert_eq!(model.calls(), 2);
    assert_handed_over(&case, &events);
}

#[tokio::test]
async fn a_run_taking_too_long_exhausts_the_wall_time_budget() {
    // Each model call takes eight minutes on the injected clock.
    let clock: Arc<OnceLock<Arc<ManualClock>>> = Arc::new(OnceLock::new());
    let slow = clock.clone();
    let model = Arc::new(ScriptedModel::new("scripted-slow").forever(move |ctx| {
        if let Some(clock) = slow.get() {
            clock.advance(time::Duration::minutes(8));
        }
        Ok(calls(vec![call(
            "search_policy",
            json!({ "query": format!("duplicate charge {}", ctx.history.len()) }),
        )]))
    }));
    let app = spawn_app_with_model(model.clone()).await;
    clock.set(app.clock.clone()).ok();
    let ledger = provider_ledger(&app).await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let events = run_events(&app, case["run_id"].as_str().unwrap()).await;
    assert_log_consistent(&events);
    let budget = &first(&events, "budget_exhausted")["payload"];
    assert_eq!(budget["budget"], "wall_time_ms", "{budget}");
    assert_eq!(budget["used"], 16 * 60_000);
    assert_eq!(model.calls(), 2);
    assert_handed_over(&case, &events);
    assert_nothing_moved(&app, &case, &ledger).await;
}

// ---------------------------------------------------------------------------------------
// Shadow replay runs the live loop (shadow mode measures the agent before it is
// trusted, so it must measure the loop production runs). Each model below runs twice on
// the demo ticket: live (`investigation::advance`, database, payments mock) and replayed in
// memory (`replay::investigate_with_clock`, on a snapshot of the same world). The two
// runs must record the same loop events in the same order — same turns, same refusals,
// same call ids, same budgets — and end the same way.
// ---------------------------------------------------------------------------------------

/// Event kinds the loop itself records (`agent::machine`). Live also logs the run's
/// states and what the workflow did with the result, which replay stops short of.
const LOOP_KINDS: &[&str] = &[
    "model_output",
    "model_error",
    "tool_intent",
    "tool_result",
    "proposal",
    "policy_violation",
    "budget_exhausted",
    "handoff",
];

/// The clock a run measures wall time on, set before its model is first asked: the
/// app's for the live run, a fresh `ManualClock` at the same instant for the replay.
type RunClock = Arc<OnceLock<Arc<ManualClock>>>;

/// Both runs of one model.
struct BothRuns {
    case: Value,
    /// The live run's loop events (`LOOP_KINDS`), in order.
    live: Vec<Value>,
    run: runs::Run,
    replay: shadow::replay::Investigation,
    verdict: shadow::replay::CaseVerdict,
    decision: Option<policy_engine::Decision>,
}

fn demo_ticket() -> shadow::replay::HistoricalTicket {
    crate::support::demo_historical(CHARGED_TWICE)
}

/// Runs a fresh model from `make` live, then another replayed, and asserts both runs
/// took the same steps and ended the same way.
async fn run_live_and_replayed(make: impl Fn(RunClock) -> Arc<dyn Model>) -> BothRuns {
    // Live. Under heavy parallel load a provider read can fail once ("unavailable");
    // that is the provider's doing, not the loop's, and the snapshot never fails, so
    // such a run is taken again rather than compared.
    let mut attempts = 0;
    let (app, case, events) = loop {
        attempts += 1;
        let clock: RunClock = Arc::new(OnceLock::new());
        let model = make(clock.clone());
        let app = spawn_app_with_model(model).await;
        clock.set(app.clock.clone()).ok();
        let ledger = provider_ledger(&app).await;
        let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
        let events = run_events(&app, case["run_id"].as_str().unwrap()).await;
        assert_log_consistent(&events);
        assert_nothing_moved(&app, &case, &ledger).await;
        let transient = events.iter().any(|e| {
            e["kind"] == "tool_result" && e["payload"]["content"]["error"] == "unavailable"
        });
        if !transient || attempts == 3 {
            break (app, case, events);
        }
    };
    let run = runs::load_run(&app.state.db, case["run_id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    let live: Vec<Value> = events
        .into_iter()
        .filter(|e| LOOP_KINDS.contains(&e["kind"].as_str().unwrap_or_default()))
        .collect();

    // Replayed, on a clock at the same instant.
    let clock = Arc::new(ManualClock::new(
        time::OffsetDateTime::parse(
            crate::support::NOW,
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap(),
    ));
    let cell: RunClock = Arc::new(OnceLock::new());
    cell.set(clock.clone()).ok();
    let model = make(cell);
    let replay = shadow::replay::investigate_with_clock(
        model.as_ref(),
        &app.state.index,
        &demo_ticket(),
        clock.as_ref(),
    )
    .await
    .unwrap();
    let decision = shadow::replay::decide(&replay, &app.state.policies, &[]).unwrap();
    let verdict = shadow::replay::verdict(&replay, decision.as_ref());

    let both = BothRuns {
        case,
        live,
        run,
        replay,
        verdict,
        decision,
    };
    assert_same_run(&both);
    both
}

/// The contract: same loop events, in order, with the same payloads where the loop's
/// rules speak; same counters; same handoff (reason and summary); same outcome.
fn assert_same_run(both: &BothRuns) {
    let BothRuns {
        case,
        live,
        run,
        replay,
        verdict,
        decision,
    } = both;
    let replayed: Vec<(&str, Option<&str>)> = replay
        .events
        .iter()
        .map(|e| (e.kind, e.call_id.as_deref()))
        .collect();
    let lived: Vec<(&str, Option<&str>)> = live
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["call_id"].as_str()))
        .collect();
    assert_eq!(replayed, lived, "replay and live recorded different steps");
    for (r, l) in replay.events.iter().zip(live) {
        let (r, l) = (&r.payload, &l["payload"]);
        if l.get("content").is_some() {
            // A tool result: the same call ran (or was skipped) with the same verdict and
            // took as long; its records come from the provider live and from the
            // snapshot in replay.
            for key in ["ok", "tool", "skipped", "duration_ms"] {
                assert_eq!(r[key], l[key], "tool_result {key}: {r} vs {l}");
            }
            assert_eq!(r["content"]["error"], l["content"]["error"], "{r} vs {l}");
        } else {
            assert_eq!(r, l, "replay and live recorded different payloads");
        }
    }
    assert_eq!(replay.steps, run.steps, "model steps");
    assert_eq!(replay.tool_calls, run.tool_calls, "tool calls run");

    let handoff = live.iter().find(|e| e["kind"] == "handoff");
    assert_eq!(
        replay.escalation.as_deref(),
        handoff.and_then(|h| h["payload"]["reason"].as_str()),
        "handoff reason"
    );
    assert_eq!(
        replay.handoff.as_ref(),
        handoff.map(|h| &h["payload"]),
        "handoff summary"
    );

    let live_outcome = match case["status"].as_str().unwrap() {
        "escalated" => shadow::replay::CaseOutcome::Escalate,
        "awaiting_approval" => shadow::replay::CaseOutcome::Refund,
        "denied" => shadow::replay::CaseOutcome::NoRefund,
        "awaiting_customer" => shadow::replay::CaseOutcome::RequestInfo,
        other => panic!("unexpected live case status {other}: {case:#}"),
    };
    assert_eq!(verdict.outcome, live_outcome, "{case:#}");
    match (decision, &case["decision"]) {
        (None, Value::Null) => {}
        (Some(d), live_decision) if !live_decision.is_null() => {
            assert_eq!(
                serde_json::to_value(d).unwrap()["hash"],
                live_decision["hash"],
                "the same facts decided under the same policy versions"
            );
        }
        (d, live_decision) => panic!("decision {d:?} in replay, {live_decision} live"),
    }
}

fn tokens_each(prompt_tokens: u64, completion_tokens: u64) -> Usage {
    Usage {
        prompt_tokens,
        completion_tokens,
    }
}

#[tokio::test]
async fn replay_of_the_built_in_investigator_reaches_the_live_decision() {
    let both = run_live_and_replayed(|_| Arc::new(Investigator)).await;
    assert_eq!(both.case["status"], "awaiting_approval");
    assert_eq!(both.verdict.refunds[0].charge_id, "ch_1001b");
}

#[tokio::test]
async fn replay_ends_a_model_burning_tokens_on_the_live_token_budget() {
    let both = run_live_and_replayed(|_| {
        Arc::new(ScriptedModel::new("scripted-expensive").forever_reply(|_| {
            Ok(desk::agent::ModelReply {
                turn: calls(vec![call("get_customer", json!({}))]),
                usage: tokens_each(100_000, 20_000),
            })
        }))
    })
    .await;
    assert_eq!(
        both.replay.escalation.as_deref(),
        Some("the run exhausted its tokens budget (240000 of 200000)")
    );
    assert_eq!(both.replay.tokens, 240_000);
}

#[tokio::test]
async fn replay_ends_a_model_calling_unknown_tools_on_the_live_invalid_call_budget() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::calls_unknown_tool())).await;
    assert_eq!(
        both.replay.budget_exhausted.as_deref(),
        Some("invalid_tool_calls")
    );
    assert_eq!(both.replay.invalid_tool_calls, 3);
}

#[tokio::test]
async fn replay_ends_a_model_sending_bad_arguments_on_the_live_invalid_call_budget() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::sends_string_arguments())).await;
    assert_eq!(
        both.replay.budget_exhausted.as_deref(),
        Some("invalid_tool_calls")
    );
}

#[tokio::test]
async fn replay_ends_a_model_that_never_finishes_on_the_live_step_budget() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::loops_forever())).await;
    assert_eq!(both.replay.budget_exhausted.as_deref(), Some("steps"));
    assert_eq!(both.replay.steps, MAX_STEPS);
}

#[tokio::test]
async fn replay_skips_calls_past_the_live_tool_call_budget() {
    let both = run_live_and_replayed(|_| {
        Arc::new(ScriptedModel::new("scripted-wide").forever(|_| {
            Ok(calls(
                (0..6).map(|_| call("list_orders", json!({}))).collect(),
            ))
        }))
    })
    .await;
    assert_eq!(both.replay.budget_exhausted.as_deref(), Some("tool_calls"));
    assert_eq!(both.replay.tool_calls, MAX_TOOL_CALLS);
}

#[tokio::test]
async fn replay_ends_a_slow_model_on_the_live_wall_time_budget() {
    // Each model call takes eight minutes on the run's clock.
    let both = run_live_and_replayed(|clock: RunClock| {
        Arc::new(ScriptedModel::new("scripted-slow").forever(move |ctx| {
            if let Some(clock) = clock.get() {
                clock.advance(time::Duration::minutes(8));
            }
            Ok(calls(vec![call(
                "search_policy",
                json!({ "query": format!("duplicate charge {}", ctx.history.len()) }),
            )]))
        }))
    })
    .await;
    assert_eq!(
        both.replay.escalation.as_deref(),
        Some("the run exhausted its wall_time_ms budget (960000 of 900000)")
    );
}

#[tokio::test]
async fn replay_ends_a_model_that_errors_on_the_live_model_error_budget() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::stops_mid_task())).await;
    assert_eq!(
        both.replay.budget_exhausted.as_deref(),
        Some("model_errors")
    );
    assert_eq!(both.replay.model_errors, 3);
}

#[tokio::test]
async fn replay_counts_empty_turns_as_model_errors_as_live_does() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::answers_garbage())).await;
    assert_eq!(
        both.replay.budget_exhausted.as_deref(),
        Some("model_errors")
    );
}

#[tokio::test]
async fn replay_refuses_a_turn_with_a_write_action_whole_as_live_does() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::tries_write_action())).await;
    assert_eq!(
        both.replay.escalation.as_deref(),
        Some("the model attempted something it may not do (write_attempt)")
    );
    assert!(
        both.replay.exchanges.is_empty(),
        "not even its read-only call ran"
    );
}

#[tokio::test]
async fn replay_refuses_a_call_to_approve_refund_as_live_does() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::calls_approve_refund())).await;
    assert_eq!(both.replay.violations[0]["violation"], "approval_attempt");
}

#[tokio::test]
async fn replay_refuses_a_proposal_claiming_an_approval_as_live_does() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::claims_approval())).await;
    assert_eq!(both.replay.violations[0]["violation"], "approval_claim");
    assert!(both.replay.proposal.is_none() && both.decision.is_none());
}

#[tokio::test]
async fn replay_hands_over_when_the_model_escalates_as_live_does() {
    let both = run_live_and_replayed(|_| {
        Arc::new(
            ScriptedModel::new("scripted-escalates")
                .turn(calls(vec![call("get_customer", json!({}))]))
                .turn(ModelTurn::HandOff {
                    reason: "the customer needs a phone call".into(),
                }),
        )
    })
    .await;
    assert_eq!(
        both.replay.escalation.as_deref(),
        Some("the model escalated: the customer needs a phone call")
    );
}

#[tokio::test]
async fn replay_escalates_a_proposal_citing_invented_evidence_as_live_does() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::invents_evidence())).await;
    assert!(!both.replay.evidence_rejected.is_empty());
    assert_eq!(both.case["status"], "escalated");
}

#[tokio::test]
async fn replay_reaches_the_live_decision_when_the_engine_overrides_the_proposal() {
    let both = run_live_and_replayed(|_| Arc::new(scripted::refunds_the_wrong_charge())).await;
    assert_eq!(both.verdict.refunds[0].charge_id, "ch_1001b");
}

// ---------------------------------------------------------------------------------------
// The state machine and the event log.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn the_run_walks_the_spec_states_and_gives_up_its_lease_when_it_waits() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let run_id = case["run_id"].as_str().unwrap();
    let events = run_events(&app, run_id).await;
    assert_log_consistent(&events);
    let transitions: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["kind"] == "state")
        .map(|e| {
            (
                e["payload"]["from"].as_str().unwrap().to_string(),
                e["payload"]["to"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for expected in [
        ("ready", "model_running"),
        ("model_running", "tool_pending"),
        ("tool_pending", "tool_running"),
        ("tool_running", "ready"),
        ("ready", "awaiting_approval"),
    ] {
        assert!(
            transitions.contains(&(expected.0.into(), expected.1.into())),
            "{expected:?} missing from {transitions:?}"
        );
    }
    assert_eq!(transitions.first().unwrap().0, "ready");
    // A step's events come before the state change they led to.
    let output = first(&events, "model_output")["seq"].as_i64().unwrap();
    let intent = first(&events, "tool_intent")["seq"].as_i64().unwrap();
    let pending = events
        .iter()
        .find(|e| e["kind"] == "state" && e["payload"]["to"] == "tool_pending")
        .unwrap()["seq"]
        .as_i64()
        .unwrap();
    assert!(
        output < intent && intent < pending,
        "{output} {intent} {pending}"
    );
    assert_eq!(transitions.last().unwrap().1, "awaiting_approval");
    // Every model call is a step (counted before the call), every result a tool call.
    let run = runs::load_run(&app.state.db, run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, "awaiting_approval");
    assert_eq!(run.steps as usize, count(&events, "model_output"));
    assert_eq!(run.tool_calls as usize, count(&events, "tool_result"));
    // A waiting run holds no worker.
    assert_eq!(run.lease_owner, None);
    assert_eq!(run.lease_expires_at, None);
    assert!(runs::claim_next(&app.state.db, "another", app.clock_ms())
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn the_events_api_links_each_tool_intent_to_its_result_by_call_id() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let events = run_events(&app, case["run_id"].as_str().unwrap()).await;
    let intents: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "tool_intent")
        .collect();
    assert!(intents.len() >= 3, "{:?}", kinds(&events));
    for intent in intents {
        let call_id = intent["call_id"].as_str().unwrap();
        assert_eq!(intent["payload"]["id"], call_id);
        let result = events
            .iter()
            .find(|e| e["kind"] == "tool_result" && e["call_id"] == call_id)
            .unwrap();
        assert_eq!(result["payload"]["tool"], intent["payload"]["name"]);
        assert!(result["payload"]["duration_ms"].is_u64(), "{result}");
        assert!(result["payload"]["bytes"].is_u64(), "{result}");
        assert!(result["at"].as_str().unwrap().starts_with("2026-"));
    }
    // Model outputs carry what they cost and how long they took.
    for output in events.iter().filter(|e| e["kind"] == "model_output") {
        assert!(
            output["payload"]["usage"]["prompt_tokens"].is_u64(),
            "{output}"
        );
        assert!(output["payload"]["latency_ms"].is_u64(), "{output}");
        assert_eq!(output["payload"]["model"], "builtin-investigator");
    }
    // Customers may not read a run's log.
    let token = app.customer_token("C-100").await;
    let (status, _) = app
        .request(
            "GET",
            &format!("/api/v1/runs/{}/events", case["run_id"].as_str().unwrap()),
            Some(&token),
            None,
        )
        .await;
    assert!(status == StatusCode::FORBIDDEN || status == StatusCode::NOT_FOUND);
}

/// A billing source that reads through to the real one, with faults switched on at will.
struct FaultyBilling {
    inner: Arc<dyn BillingSource>,
    /// Adds this many made-up orders to `orders`, to make a very large tool result.
    extra_orders: usize,
    /// When set, `charges` fails as a provider outage would.
    provider_down: Arc<std::sync::atomic::AtomicBool>,
}

impl BillingSource for FaultyBilling {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>> {
        self.inner.customer(customer_id)
    }
    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>> {
        Box::pin(async move {
            let mut orders = self.inner.orders(customer_id).await?;
            if let Some(template) = orders.first().cloned() {
                for i in 0..self.extra_orders {
                    orders.push(Order {
                        id: domain::ids::OrderId::parse(format!("O-EXTRA-{i:05}"))?,
                        ..template.clone()
                    });
                }
            }
            Ok(orders)
        })
    }
    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool> {
        self.inner.order_exists(order_id)
    }
    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>> {
        Box::pin(async move {
            if self.provider_down.load(Ordering::SeqCst) {
                anyhow::bail!("provider unavailable: 503 Service Unavailable");
            }
            self.inner.charges(customer).await
        })
    }
    fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>> {
        self.inner.refunds(charge_id)
    }
    fn other_tickets<'a>(
        &'a self,
        customer_id: &'a str,
        except_ticket_id: &'a str,
        limit: i64,
    ) -> Answer<'a, Option<OtherTickets>> {
        self.inner
            .other_tickets(customer_id, except_ticket_id, limit)
    }
}

fn with_billing(
    app: &TestApp,
    extra_orders: usize,
) -> (Services, Arc<std::sync::atomic::AtomicBool>) {
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut state = app.state.clone();
    state.billing = Arc::new(FaultyBilling {
        inner: app.state.billing.clone(),
        extra_orders,
        provider_down: down.clone(),
    });
    (state, down)
}

#[tokio::test]
async fn a_large_tool_result_is_stored_once_and_shown_truncated_to_the_model() {
    let seen: Arc<Mutex<Option<Value>>> = Arc::new(Mutex::new(None));
    let saw = seen.clone();
    let model = Arc::new(
        ScriptedModel::new("scripted-large")
            .turn(calls(vec![call("list_orders", json!({}))]))
            .step(move |ctx| {
                *saw.lock().unwrap() = Some(ctx.history[0].outcome.content.clone());
                Ok(ModelTurn::HandOff {
                    reason: "too many orders to tell".into(),
                })
            }),
    );
    let app = spawn_app_with_model(model).await;
    let (state, _) = with_billing(&app, 400);
    let case_id = post_ticket(&app, "C-100", CHARGED_TWICE).await;
    desk::worker::drain(&state).await.unwrap();
    let events = run_events(&app, &run_id_of(&app, &case_id).await).await;
    assert_log_consistent(&events);

    let result = first(&events, "tool_result");
    let stored = &result["payload"];
    assert_eq!(stored["content"]["orders"].as_array().unwrap().len(), 401);
    assert!(stored["bytes"].as_u64().unwrap() > MAX_TOOL_RESULT_BYTES as u64);
    assert_eq!(stored["truncated_for_model"], true);

    let shown = seen
        .lock()
        .unwrap()
        .clone()
        .expect("the model was asked again");
    assert_eq!(shown["truncated"], true, "{shown}");
    assert_eq!(shown["result_event_seq"], result["seq"]);
    assert_eq!(shown["bytes"], stored["bytes"]);
    assert!(shown["preview"].as_str().unwrap().len() <= MAX_TOOL_RESULT_BYTES);
    assert!(shown.to_string().len() < 2 * MAX_TOOL_RESULT_BYTES);
    // The escalation the model chose is recorded and handed over.
    let case = app.case(&case_id).await;
    assert_handed_over(&case, &events);
}

#[tokio::test]
async fn a_run_waits_for_the_provider_without_holding_a_worker_and_resumes() {
    let model = Arc::new(
        ScriptedModel::new("scripted-proposer").turn(ModelTurn::Answer {
            answer: Proposal {
                request: policy_engine::RequestKind::DuplicateCharge,
                order_id: Some("O-1001".into()),
                reason_code: "duplicate_charge".into(),
                refunds: vec![],
                evidence: vec![],
                citations: vec![],
                summary: "the customer reports a duplicate charge on O-1001".into(),
                order_source: None,
                request_source: None,
                repeat_of: None,
                other_readings: Vec::new(),
                reading: None,
            },
        }),
    );
    let app = spawn_app_with_model(model.clone()).await;
    let (state, down) = with_billing(&app, 0);
    down.store(true, Ordering::SeqCst);
    let case_id = post_ticket(&app, "C-100", CHARGED_TWICE).await;
    desk::worker::drain(&state).await.unwrap();

    let run_id = run_id_of(&app, &case_id).await;
    let run = runs::load_run(&app.state.db, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, "awaiting_dependency");
    assert_eq!(run.lease_owner, None, "a waiting run holds no worker");
    let events = run_events(&app, &run_id).await;
    let waiting = &first(&events, "dependency_unavailable")["payload"];
    assert_eq!(waiting["dependency"], "payment_provider");
    assert_eq!(app.case(&case_id).await["status"], "investigating");

    // Not retried before its time, even with the provider back.
    down.store(false, Ordering::SeqCst);
    desk::worker::run_once(&state).await.unwrap();
    let again = runs::load_run(&app.state.db, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.version, run.version);

    app.clock
        .advance(time::Duration::milliseconds(runs::DEPENDENCY_RETRY_MS + 1));
    desk::worker::drain(&state).await.unwrap();
    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(case["decision"]["refunds"][0]["charge_id"], "ch_1001b");
    assert_eq!(model.calls(), 1, "the proposal was never asked for again");
    let events = run_events(&app, &run_id).await;
    assert_log_consistent(&events);
    assert_eq!(count(&events, "decision"), 1);
}

// ---------------------------------------------------------------------------------------
// Crashes, leases and races.
// ---------------------------------------------------------------------------------------

/// Counts model and billing calls; the call numbered `trip_at` never returns, as if the
/// process had been killed there.
#[derive(Default)]
struct Tripwire {
    calls: AtomicUsize,
    trip_at: AtomicUsize,
    tripped: Notify,
    model_calls: AtomicUsize,
}

impl Tripwire {
    async fn pass(&self) {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.trip_at.load(Ordering::SeqCst) {
            self.tripped.notify_one();
            std::future::pending::<()>().await;
        }
    }
}

struct TripModel(Arc<Tripwire>);

impl desk::agent::Model for TripModel {}

impl harness::Model<desk::agent::Proposal> for TripModel {
    fn name(&self) -> String {
        "builtin-investigator".into()
    }
    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>> {
        Box::pin(async move {
            self.0.pass().await;
            self.0.model_calls.fetch_add(1, Ordering::SeqCst);
            Investigator.next_turn(ctx).await
        })
    }
}

struct TripBilling {
    inner: Arc<dyn BillingSource>,
    wire: Arc<Tripwire>,
}

impl BillingSource for TripBilling {
    fn customer<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Option<CustomerRecord>> {
        Box::pin(async move {
            self.wire.pass().await;
            self.inner.customer(customer_id).await
        })
    }
    fn orders<'a>(&'a self, customer_id: &'a str) -> Answer<'a, Vec<Order>> {
        Box::pin(async move {
            self.wire.pass().await;
            self.inner.orders(customer_id).await
        })
    }
    fn order_exists<'a>(&'a self, order_id: &'a str) -> Answer<'a, bool> {
        Box::pin(async move {
            self.wire.pass().await;
            self.inner.order_exists(order_id).await
        })
    }
    fn charges<'a>(&'a self, customer: &'a CustomerRecord) -> Answer<'a, Vec<ProviderCharge>> {
        Box::pin(async move {
            self.wire.pass().await;
            self.inner.charges(customer).await
        })
    }
    fn refunds<'a>(&'a self, charge_id: &'a str) -> Answer<'a, Vec<ProviderRefund>> {
        Box::pin(async move {
            self.wire.pass().await;
            self.inner.refunds(charge_id).await
        })
    }
    fn other_tickets<'a>(
        &'a self,
        customer_id: &'a str,
        except_ticket_id: &'a str,
        limit: i64,
    ) -> Answer<'a, Option<OtherTickets>> {
        Box::pin(async move {
            self.wire.pass().await;
            self.inner
                .other_tickets(customer_id, except_ticket_id, limit)
                .await
        })
    }
}

fn decision_digest(case: &Value) -> Value {
    json!({
        "status": case["status"],
        "outcome": case["decision"]["outcome"],
        "reason_code": case["decision"]["reason_code"],
        "refunds": case["decision"]["refunds"],
        "refund_total": case["refund_total"],
        "required_role": case["required_role"],
    })
}

#[tokio::test]
async fn a_worker_killed_at_every_step_boundary_resumes_to_the_same_decision() {
    let wire = Arc::new(Tripwire::default());
    let app = spawn_app_with_model(Arc::new(TripModel(wire.clone()))).await;
    let mut state = app.state.clone();
    state.billing = Arc::new(TripBilling {
        inner: app.state.billing.clone(),
        wire: wire.clone(),
    });

    // The uninterrupted run: its decision, and how many calls it makes.
    let case_id = post_ticket(&app, "C-100", CHARGED_TWICE).await;
    desk::worker::drain(&state).await.unwrap();
    let baseline = app.case(&case_id).await;
    assert_eq!(baseline["status"], "awaiting_approval", "{baseline:#}");
    let expected = decision_digest(&baseline);
    let total_calls = wire.calls.load(Ordering::SeqCst);
    assert!(total_calls >= 5, "{total_calls}");
    app.close_case(&case_id).await;

    let mut crashes = 0;
    for n in 1.. {
        wire.calls.store(0, Ordering::SeqCst);
        wire.trip_at.store(n, Ordering::SeqCst);
        let case_id = post_ticket(&app, "C-100", CHARGED_TWICE).await;
        let mut doomed = state.clone();
        doomed.instance_id = format!("doomed-{n}");
        let finished = tokio::select! {
            result = desk::worker::run_once(&doomed) => { result.unwrap(); true }
            _ = wire.tripped.notified() => false,
        };
        // The select dropped the worker's future mid-step: what it committed stands,
        // any open transaction is rolled back, its lease is held until it expires.
        if finished {
            assert_eq!(
                n,
                total_calls + 1,
                "every call up to the last was a crash point"
            );
            break;
        }
        crashes += 1;
        let run_id = run_id_of(&app, &case_id).await;
        let at_crash = run_events(&app, &run_id).await;
        let proposal_recorded = count(&at_crash, "proposal") == 1;

        // No other worker takes the run while the dead one's lease lasts.
        let mut healthy = state.clone();
        healthy.instance_id = format!("healthy-{n}");
        wire.trip_at.store(0, Ordering::SeqCst);
        desk::worker::run_once(&healthy).await.unwrap();
        assert_eq!(run_events(&app, &run_id).await.len(), at_crash.len());

        // Past the dead worker's lease, and past the customer's hourly ticket limit for
        // the next round.
        app.clock.advance(time::Duration::hours(1));
        assert!(3_600_000 > desk::lease::ms());
        let model_calls_before = wire.model_calls.load(Ordering::SeqCst);
        desk::worker::drain(&healthy).await.unwrap();

        let case = app.case(&case_id).await;
        assert_eq!(
            decision_digest(&case),
            expected,
            "crash at call {n}: {case:#}"
        );
        let events = run_events(&app, &run_id).await;
        assert_log_consistent(&events);
        assert_eq!(count(&events, "proposal"), 1, "crash at call {n}");
        assert_eq!(count(&events, "decision"), 1, "crash at call {n}");
        if proposal_recorded {
            assert_eq!(
                wire.model_calls.load(Ordering::SeqCst),
                model_calls_before,
                "crash at call {n}: the model was asked again after its proposal"
            );
        }
        let run = runs::load_run(&app.state.db, &run_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(run.status, "awaiting_approval");
        assert_eq!(run.lease_owner, None);
        app.close_case(&case_id).await;
    }
    assert_eq!(crashes, total_calls);
    eprintln!("killed and resumed at each of {crashes} model/billing call boundaries");
    assert!(app.provider_refunds("ch_1001b").await.is_empty());
}

/// A model that blocks on its `gate_at`-th call until released.
struct GatedModel {
    calls: AtomicUsize,
    gate_at: usize,
    entered: Notify,
    release: Notify,
}

impl desk::agent::Model for GatedModel {}

impl harness::Model<desk::agent::Proposal> for GatedModel {
    fn name(&self) -> String {
        "builtin-investigator".into()
    }
    fn next_turn<'a>(
        &'a self,
        ctx: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<ModelTurn>> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.gate_at {
                self.entered.notify_one();
                self.release.notified().await;
            }
            Investigator.next_turn(ctx).await
        })
    }
}

#[tokio::test]
async fn a_worker_that_lost_its_lease_mid_step_stops_without_writing() {
    let model = Arc::new(GatedModel {
        calls: AtomicUsize::new(0),
        gate_at: 2,
        entered: Notify::new(),
        release: Notify::new(),
    });
    let app = spawn_app_with_model(model.clone()).await;
    let case_id = post_ticket(&app, "C-100", CHARGED_TWICE).await;

    // Worker A claims the run and stalls inside its second model call.
    let mut slow = app.state.clone();
    slow.instance_id = "worker-a".into();
    let stalled = tokio::spawn(async move { desk::worker::run_once(&slow).await });
    model.entered.notified().await;
    let run_id = run_id_of(&app, &case_id).await;
    let run = runs::load_run(&app.state.db, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, "model_running");
    assert_eq!(run.lease_owner.as_deref(), Some("worker-a"));

    // Its lease runs out; worker B takes the run over and finishes it.
    app.clock
        .advance(time::Duration::milliseconds(desk::lease::ms() + 1));
    let mut fast = app.state.clone();
    fast.instance_id = "worker-b".into();
    desk::worker::drain(&fast).await.unwrap();
    let finished = run_events(&app, &run_id).await;
    assert_eq!(
        first(&finished, "resumed")["payload"]["interrupted_in"],
        "model_running"
    );
    assert_eq!(app.case(&case_id).await["status"], "awaiting_approval");

    // A wakes up: its versioned update fails, it stops and writes nothing.
    model.release.notify_one();
    stalled.await.unwrap().unwrap();
    let events = run_events(&app, &run_id).await;
    assert_eq!(events, finished, "the stale worker wrote nothing");
    assert_log_consistent(&events);
    let run = runs::load_run(&app.state.db, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, "awaiting_approval");
}

#[tokio::test]
async fn two_workers_racing_on_one_run_advance_it_once() {
    let app = spawn_app().await;
    let case_id = post_ticket(&app, "C-100", CHARGED_TWICE).await;
    let mut a = app.state.clone();
    a.instance_id = "worker-a".into();
    let mut b = app.state.clone();
    b.instance_id = "worker-b".into();
    let (x, y) = tokio::join!(desk::worker::run_once(&a), desk::worker::run_once(&b));
    x.unwrap();
    y.unwrap();
    app.drain().await;

    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let events = run_events(&app, case["run_id"].as_str().unwrap()).await;
    assert_log_consistent(&events);
    assert_eq!(count(&events, "resumed"), 0, "nobody took over a live run");
}

#[tokio::test]
async fn two_workers_both_holding_a_run_cannot_both_advance_it() {
    // A claimed the run, then stalled past its lease before doing anything; B claimed
    // it. Both now advance it at once: B's claim bumped the version, so A's first
    // versioned update fails and only B writes.
    let app = spawn_app().await;
    let case_id = post_ticket(&app, "C-100", CHARGED_TWICE).await;
    let now = app.clock_ms();
    let mut run_a = runs::claim_next(&app.state.db, "worker-a", now)
        .await
        .unwrap()
        .unwrap();
    app.clock
        .advance(time::Duration::milliseconds(desk::lease::ms() + 1));
    let mut run_b = runs::claim_next(&app.state.db, "worker-b", app.clock_ms())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run_a.id, run_b.id);
    let (x, y) = tokio::join!(
        desk::investigation::advance(app.state.investigator(), &mut run_a),
        desk::investigation::advance(app.state.investigator(), &mut run_b)
    );
    x.unwrap();
    y.unwrap();

    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    let events = run_events(&app, &run_b.id).await;
    assert_log_consistent(&events);
    assert_eq!(run_b.status, "awaiting_approval");
    assert_eq!(run_a.status, "ready", "A never got to change anything");
}

#[tokio::test]
async fn a_lease_is_renewed_while_held_and_lost_once_taken_over() {
    let app = spawn_app().await;
    post_ticket(&app, "C-100", CHARGED_TWICE).await;
    let db = &app.state.db;
    let minute = |s: i64| time::Duration::seconds(s);

    let mut run = runs::claim_next(db, "worker-a", app.clock_ms())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.lease_owner.as_deref(), Some("worker-a"));
    app.clock.advance(minute(50));
    runs::renew_lease(db, &mut run, app.clock_ms())
        .await
        .unwrap();
    app.clock.advance(minute(50));
    // 100 s after the claim, 50 s after the renewal: still A's.
    assert!(runs::claim_next(db, "worker-b", app.clock_ms())
        .await
        .unwrap()
        .is_none());
    app.clock.advance(minute(11));
    let taken = runs::claim_next(db, "worker-b", app.clock_ms())
        .await
        .unwrap()
        .expect("an expired lease can be claimed");
    assert_eq!(taken.lease_owner.as_deref(), Some("worker-b"));
    let lost = runs::renew_lease(db, &mut run, app.clock_ms())
        .await
        .unwrap_err();
    assert!(runs::is_run_changed(&lost), "{lost}");
    // And A's next state change fails the same way, before it writes anything.
    let mut tx = db.begin().await.unwrap();
    let err = runs::set_status(
        &mut tx,
        &mut run,
        runs::RunStatus::ModelRunning,
        app.clock_ms(),
    )
    .await
    .unwrap_err();
    assert!(runs::is_run_changed(&err));
}

trait ClockMs {
    fn clock_ms(&self) -> i64;
}

impl ClockMs for TestApp {
    fn clock_ms(&self) -> i64 {
        use desk::clock::Clock;
        self.clock.now_ms()
    }
}

// ---------------------------------------------------------------------------------------
// What a run was made with: model, prompt version, tool schema version.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn every_run_records_its_model_prompt_version_and_tool_schema_version() {
    let model: Arc<dyn Model> = Arc::new(desk::agent::investigator::Investigator);
    let (app, _case, events) = investigate_with(model.clone()).await;
    let created = first(&events, "run_created")["payload"].clone();
    let expected = desk::agent::versions(model.as_ref());
    assert_eq!(created["model"], expected.model.as_str());
    assert_eq!(
        created["prompt_version"],
        desk::agent::prompt::PROMPT_VERSION
    );
    assert_eq!(created["tool_schema_version"], expected.tools.as_str());
    assert!(expected.tools.starts_with("tools-"), "{expected:?}");
    // The tool schema version follows the schemas: another tool set is another version.
    let fewer = &desk::agent::tools::declarations()[1..];
    assert_ne!(harness::schema_version(fewer), expected.tools);
    drop(app);
}
