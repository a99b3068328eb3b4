//! Sub-agents on the LLM path: a live run first spawns two read-only child
//! runs, `billing` (required) and `policy` (optional), on a budget shared out of the
//! parent's, joins them, and then proposes with their findings in its context. Driven
//! against a fake OpenAI-compatible server on a loopback port that tells the three
//! callers apart by the system prompt they send, and answers each from its own script.
//!
//! Long because the fake server telling the three callers apart and the real `serve`
//! SIGKILL scenario live beside the tests that use them; one area, one binary.

use std::collections::{HashMap, VecDeque};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::serve::{self, sigkill, start, Serve};
use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use desk::agent::llm::LlmModel;
use desk::runs::{self, RunStatus};
use serde_json::{json, Value};

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// Who sent a chat-completions request, read from its system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Caller {
    Billing,
    Policy,
    Parent,
}

fn caller(body: &Value) -> Caller {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    if system.starts_with("You are the billing evidence reader") {
        Caller::Billing
    } else if system.starts_with("You are the policy reader") {
        Caller::Policy
    } else {
        Caller::Parent
    }
}

/// One scripted answer: status, body, how long the server takes to send it, and a
/// barrier it first waits at (replies held until every caller of it has asked).
struct Reply {
    status: u16,
    body: Value,
    delay: Duration,
    gate: Option<Arc<tokio::sync::Barrier>>,
}

type Step = Box<dyn Fn(&Value) -> Reply + Send>;

#[derive(Default)]
struct Fake {
    scripts: Mutex<HashMap<Caller, VecDeque<Step>>>,
    requests: Mutex<Vec<(Caller, Value)>>,
}

struct FakeServer {
    fake: Arc<Fake>,
    base_url: String,
}

impl FakeServer {
    async fn start(scripts: Vec<(Caller, Vec<Step>)>) -> Self {
        let scripts = scripts
            .into_iter()
            .map(|(c, steps)| (c, steps.into()))
            .collect();
        let fake = Arc::new(Fake {
            scripts: Mutex::new(scripts),
            requests: Mutex::default(),
        });
        let router = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        FakeServer {
            fake,
            base_url: format!("http://{addr}/v1"),
        }
    }

    fn requests(&self, who: Caller) -> Vec<Value> {
        let requests = self.fake.requests.lock().unwrap();
        requests
            .iter()
            .filter(|(c, _)| *c == who)
            .map(|(_, body)| body.clone())
            .collect()
    }

    fn model(&self) -> LlmModel {
        LlmModel::new(&self.base_url, None, "tiny".into(), Duration::from_secs(10))
            .unwrap()
            .with_backoff(Duration::from_millis(10), Duration::from_secs(1))
    }
}

async fn chat_completions(State(fake): State<Arc<Fake>>, Json(body): Json<Value>) -> Response {
    let who = caller(&body);
    fake.requests.lock().unwrap().push((who, body.clone()));
    let step = fake
        .scripts
        .lock()
        .unwrap()
        .get_mut(&who)
        .and_then(VecDeque::pop_front);
    let reply = match step {
        Some(step) => step(&body),
        None => error_reply("fake: the script has no more replies"),
    };
    if let Some(gate) = &reply.gate {
        gate.wait().await;
    }
    tokio::time::sleep(reply.delay).await;
    (
        StatusCode::from_u16(reply.status).unwrap(),
        Json(reply.body),
    )
        .into_response()
}

/// A completion whose tool calls carry JSON-string arguments, costing `tokens`.
fn completion(calls: &[(&str, &str, Value)], tokens: u64) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments.to_string() } })
        })
        .collect();
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "tiny",
        "choices": [{ "index": 0, "finish_reason": "tool_calls",
                      "message": { "role": "assistant", "content": null, "tool_calls": calls } }],
        "usage": { "prompt_tokens": tokens - 10, "completion_tokens": 10, "total_tokens": tokens }
    })
}

/// A 400 (not retried by the client): one model error per request.
fn error_reply(message: &str) -> Reply {
    Reply {
        status: 400,
        body: json!({ "error": { "message": message, "type": "test_error", "code": null } }),
        delay: Duration::ZERO,
        gate: None,
    }
}

fn ok(calls: &[(&str, &str, Value)]) -> Step {
    let body = completion(calls, 338);
    Box::new(move |_| Reply {
        status: 200,
        body: body.clone(),
        delay: Duration::ZERO,
        gate: None,
    })
}

fn slow(delay: Duration, tokens: u64, calls: &[(&str, &str, Value)]) -> Step {
    let body = completion(calls, tokens);
    Box::new(move |_| Reply {
        status: 200,
        body: body.clone(),
        delay,
        gate: None,
    })
}

fn failing() -> Step {
    Box::new(|_| error_reply("fake: this reader's model is down"))
}

/// The billing reader: the orders, the order's charges, then its findings citing them.
fn billing_script() -> Vec<Step> {
    vec![
        ok(&[("b1", "list_orders", json!({}))]),
        ok(&[("b2", "list_charges", json!({ "order_id": "O-1001" }))]),
        ok(&[(
            "b3",
            "submit_findings",
            json!({ "summary": "O-1001 has two captured charges of 198.00 CNY a minute apart.",
                    "evidence": [{ "call_id": "s1c0:b1", "record_id": "O-1001" },
                                 { "call_id": "s2c0:b2", "record_id": "ch_1001a" },
                                 { "call_id": "s2c0:b2", "record_id": "ch_1001b" }],
                    "citations": [] }),
        )]),
    ]
}

fn policy_findings() -> Step {
    ok(&[(
        "p2",
        "submit_findings",
        json!({ "summary": "Duplicate charges are refunded in full.", "evidence": [], "citations": [] }),
    )])
}

/// The policy reader: one search, then its findings.
fn policy_script() -> Vec<Step> {
    vec![
        ok(&[(
            "p1",
            "search_policy",
            json!({ "query": "duplicate charge refund" }),
        )]),
        policy_findings(),
    ]
}

/// The parent proposes at once, citing the records its billing reader read, under the
/// ids the briefing gave them: the child's name, then the harness's `s{step}c{i}:` id.
fn parent_script() -> Vec<Step> {
    vec![ok(&[(
        "c1",
        "submit_proposal",
        json!({
            "request": "duplicate_charge", "order_id": "O-1001", "reason_code": "duplicate_charge",
            "refunds": [{ "charge_id": "ch_1001b", "amount": "198.00", "currency": "CNY" }],
            "evidence": [{ "call_id": "billing:s1c0:b1", "record_id": "O-1001" },
                         { "call_id": "billing:s2c0:b2", "record_id": "ch_1001a" },
                         { "call_id": "billing:s2c0:b2", "record_id": "ch_1001b" }],
            "citations": [],
            "summary": "Two captured charges of 198.00 CNY on O-1001; the second is a duplicate."
        }),
    )])]
}

fn scripts(billing: Vec<Step>, policy: Vec<Step>) -> Vec<(Caller, Vec<Step>)> {
    vec![
        (Caller::Billing, billing),
        (Caller::Policy, policy),
        (Caller::Parent, parent_script()),
    ]
}

/// A run's events as the harness recorded them.
async fn events(db: &store::Db, run_id: &str) -> Vec<runs::Event> {
    runs::events(db, run_id).await.unwrap()
}

fn kinds(events: &[runs::Event], kind: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.payload.clone())
        .collect()
}

/// The parent run's children by name.
async fn children(db: &store::Db, parent: &str) -> HashMap<String, runs::ChildRun> {
    let children = runs::children(db, parent).await.unwrap();
    children.into_iter().map(|c| (c.name.clone(), c)).collect()
}

/// What an uninterrupted run of the scripts comes to: the engine's refund of the
/// duplicate, awaiting approval, from exactly one proposal.
fn assert_the_duplicate_is_proposed(case: &Value, parent_events: &[runs::Event]) {
    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(case["reason_code"], "duplicate_charge");
    assert_eq!(case["refund_total"], "198.00");
    assert_eq!(case["currency"], "CNY");
    let refunds = case["decision"]["refunds"].as_array().unwrap();
    assert_eq!(refunds.len(), 1, "{case:#}");
    assert_eq!(refunds[0]["charge_id"], "ch_1001b");
    assert_eq!(
        kinds(parent_events, "proposal").len(),
        1,
        "exactly one proposal"
    );
    assert!(
        kinds(parent_events, "evidence_rejected").is_empty(),
        "the billing reader's records are evidence the proposal may cite"
    );
}

#[tokio::test]
async fn both_readers_run_as_child_runs_whose_calls_count_against_the_parent_and_the_proposal_goes_through_the_engine(
) {
    let server = FakeServer::start(scripts(billing_script(), policy_script())).await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;

    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;

    let parent_id = case["run_id"].as_str().unwrap();
    let parent_events = events(&app.state.db, parent_id).await;
    assert_the_duplicate_is_proposed(&case, &parent_events);
    let children = children(&app.state.db, parent_id).await;
    assert_eq!(children.len(), 2, "{children:?}");
    // Each reader's tool calls are recorded in its own run, with its own tools only.
    let billing = &children["billing"];
    let policy = &children["policy"];
    assert_eq!(billing.status, RunStatus::Completed);
    assert_eq!(policy.status, RunStatus::Completed);
    let billing_events = events(&app.state.db, &billing.id).await;
    let called: Vec<Value> = kinds(&billing_events, "tool_intent")
        .into_iter()
        .map(|i| i["name"].clone())
        .collect();
    assert_eq!(called, [json!("list_orders"), json!("list_charges")]);
    assert_eq!(kinds(&billing_events, "findings").len(), 1);
    let policy_events = events(&app.state.db, &policy.id).await;
    assert_eq!(kinds(&policy_events, "tool_result").len(), 1);
    assert_eq!(
        kinds(&policy_events, "tool_intent")[0]["name"],
        "search_policy"
    );
    assert!(
        kinds(&parent_events, "tool_intent").is_empty(),
        "the parent called no tool itself"
    );
    for (who, offered) in [
        (
            Caller::Billing,
            vec![
                "get_customer",
                "list_orders",
                "list_charges",
                "list_refunds",
                "submit_findings",
            ],
        ),
        (Caller::Policy, vec!["search_policy", "submit_findings"]),
    ] {
        for request in server.requests(who) {
            let names: Vec<&str> = request["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, offered, "{who:?} is offered its subset only");
        }
    }
    // The parent's counters include its children: 3 tool calls, 5 replies of 338 tokens.
    let joined = kinds(&parent_events, "children_joined");
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0]["tokens"], 5 * 338, "{:#}", joined[0]);
    assert_eq!(joined[0]["tool_calls"], 3);
    assert_eq!(joined[0]["outcome"]["complete"], true);
    let parent = runs::load_run(&app.state.db, parent_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        parent.tool_calls, 3,
        "the children's tool calls count against the parent"
    );
    // The parent's one model call carried the children's records and findings.
    let asked = server.requests(Caller::Parent);
    assert_eq!(asked.len(), 1);
    let context = asked[0]["messages"].to_string();
    for seen in [
        "billing:s2c0:b2",
        "ch_1001b",
        "policy:s1c0:p1",
        "O-1001 has two captured charges",
        "Duplicate charges are refunded",
    ] {
        assert!(
            context.contains(seen),
            "{seen} missing from the parent's context"
        );
    }
}

#[tokio::test]
async fn a_billing_reader_whose_model_keeps_failing_sends_the_case_to_a_human_as_evidence_incomplete(
) {
    let server = FakeServer::start(scripts(
        vec![failing(), failing(), failing()],
        policy_script(),
    ))
    .await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;

    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;

    assert_eq!(case["status"], "escalated", "{case:#}");
    assert!(case["decision"].is_null(), "{case:#}");
    let parent_id = case["run_id"].as_str().unwrap();
    let parent_events = events(&app.state.db, parent_id).await;
    let escalated = kinds(&parent_events, "escalated");
    assert_eq!(escalated.len(), 1);
    let reason = escalated[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("evidence incomplete") && reason.contains("billing"),
        "{reason}"
    );
    let joined = &kinds(&parent_events, "children_joined")[0];
    assert_eq!(
        joined["outcome"]["evidence_incomplete"], "billing",
        "{joined:#}"
    );
    assert_eq!(
        server.requests(Caller::Billing).len(),
        3,
        "until its model-error budget ended"
    );
    assert!(
        server.requests(Caller::Parent).is_empty(),
        "no proposal without the billing evidence"
    );
    let children = children(&app.state.db, parent_id).await;
    assert_eq!(children["billing"].status, RunStatus::Failed);
    assert_eq!(kinds(&parent_events, "proposal").len(), 0);
}

#[tokio::test]
async fn a_policy_reader_whose_model_keeps_failing_leaves_a_named_gap_and_the_parent_still_proposes(
) {
    let server = FakeServer::start(scripts(
        billing_script(),
        vec![failing(), failing(), failing()],
    ))
    .await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;

    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;

    let parent_id = case["run_id"].as_str().unwrap();
    let parent_events = events(&app.state.db, parent_id).await;
    assert_the_duplicate_is_proposed(&case, &parent_events);
    let joined = &kinds(&parent_events, "children_joined")[0];
    let gaps = joined["outcome"]["gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 1, "{joined:#}");
    assert!(
        gaps[0].as_str().unwrap().starts_with("policy: "),
        "{joined:#}"
    );
    let children = children(&app.state.db, parent_id).await;
    assert_eq!(children["policy"].status, RunStatus::Failed);
    // The gap is named in the parent's context.
    let context = server.requests(Caller::Parent)[0]["messages"].to_string();
    assert!(
        context.contains("policy:findings") && context.contains("gap"),
        "{context}"
    );
}

#[tokio::test]
async fn a_shared_budget_smaller_than_the_readers_want_stops_them_and_the_parent_counts_what_they_spent(
) {
    // Each reader's first reply costs 150,000 tokens — within its own budget — and the
    // replies are held until both readers have asked, then sent together: after them
    // the 200,000 the parent had left to share are spent and neither may ask again.
    let both_asked = Arc::new(tokio::sync::Barrier::new(2));
    let costly = |id: &'static str, tool: &'static str, args: Value| -> Step {
        let body = completion(&[(id, tool, args)], 150_000);
        let gate = both_asked.clone();
        Box::new(move |_| Reply {
            status: 200,
            body: body.clone(),
            delay: Duration::ZERO,
            gate: Some(gate.clone()),
        })
    };
    let server = FakeServer::start(scripts(
        vec![costly("b1", "list_orders", json!({})), failing()],
        vec![
            costly("p1", "search_policy", json!({ "query": "duplicate" })),
            failing(),
        ],
    ))
    .await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;

    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;

    assert_eq!(server.requests(Caller::Billing).len(), 1);
    assert_eq!(server.requests(Caller::Policy).len(), 1);
    assert!(server.requests(Caller::Parent).is_empty());
    let parent_id = case["run_id"].as_str().unwrap();
    let children = children(&app.state.db, parent_id).await;
    for name in ["billing", "policy"] {
        let child = events(&app.state.db, &children[name].id).await;
        let exhausted = kinds(&child, "budget_exhausted");
        // Billing stops on the shared budget; policy on it too, or — when billing's
        // hand-off came first — because the failed required child cancelled it.
        let cancelled = name == "policy" && kinds(&child, "cancelled").len() == 1;
        if !cancelled {
            assert_eq!(exhausted.len(), 1, "{name}: {exhausted:?}");
            assert_eq!(exhausted[0]["budget"], "shared_tokens", "{name}");
        }
        assert_eq!(
            kinds(&child, "tool_result").len(),
            1,
            "{name} ran its one call"
        );
    }
    let parent_events = events(&app.state.db, parent_id).await;
    let joined = &kinds(&parent_events, "children_joined")[0];
    assert_eq!(joined["tokens"], 300_000, "{joined:#}");
    assert_eq!(joined["outcome"]["evidence_incomplete"], "billing");
    let parent = runs::load_run(&app.state.db, parent_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(parent.tool_calls, 2);
    assert_eq!(case["status"], "escalated", "{case:#}");
}

#[tokio::test]
async fn withdrawing_while_a_readers_model_call_is_slow_makes_no_further_child_call() {
    let slow_turn = |id: &'static str, tool: &'static str, args: Value| {
        slow(Duration::from_millis(1500), 338, &[(id, tool, args)])
    };
    let server = FakeServer::start(scripts(
        vec![
            slow_turn("b1", "list_orders", json!({})),
            ok(&[("b2", "list_orders", json!({}))]),
        ],
        vec![
            slow_turn("p1", "search_policy", json!({ "query": "duplicate" })),
            policy_findings(),
        ],
    ))
    .await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;
    let token = app.customer_token("C-100").await;
    let (status, ticket) = app
        .request(
            "POST",
            "/api/v1/tickets",
            Some(&token),
            Some(json!({ "message": CHARGED_TWICE })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{ticket}");
    let state = app.state.clone();
    let worker = tokio::spawn(async move { desk::worker::drain(&state).await });
    for _ in 0..500 {
        if !server.requests(Caller::Billing).is_empty()
            && !server.requests(Caller::Policy).is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        server.requests(Caller::Billing).len(),
        1,
        "both readers are waiting on the model"
    );

    let withdraw = format!(
        "/api/v1/tickets/{}/withdraw",
        ticket["id"].as_str().unwrap()
    );
    let (status, body) = app.request("POST", &withdraw, Some(&token), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    worker
        .await
        .unwrap()
        .expect("the worker drains without error");

    assert_eq!(
        server.requests(Caller::Billing).len(),
        1,
        "no further billing call"
    );
    assert_eq!(
        server.requests(Caller::Policy).len(),
        1,
        "no further policy call"
    );
    assert!(server.requests(Caller::Parent).is_empty());
    let case = app.case(ticket["case"]["id"].as_str().unwrap()).await;
    assert_eq!(case["status"], "cancelled");
    let parent_id = case["run_id"].as_str().unwrap();
    for child in children(&app.state.db, parent_id).await.values() {
        assert_eq!(child.status, RunStatus::Cancelled, "{child:?}");
        let child_events = events(&app.state.db, &child.id).await;
        assert!(
            kinds(&child_events, "tool_result").is_empty(),
            "no tool ran after the withdrawal"
        );
    }
    assert!(kinds(&events(&app.state.db, parent_id).await, "proposal").is_empty());
}

#[tokio::test]
async fn the_trace_page_links_a_parent_run_to_its_child_runs_and_each_child_back() {
    let server = FakeServer::start(scripts(billing_script(), policy_script())).await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let parent_id = case["run_id"].as_str().unwrap();
    let children = children(&app.state.db, parent_id).await;
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let page = |path: String| {
        let request = Request::get(path)
            .header("cookie", &cookie)
            .body(Body::empty())
            .unwrap();
        app.raw(request)
    };

    let (status, parent_page) = page(format!("/console/runs/{parent_id}")).await;

    assert_eq!(status, StatusCode::OK, "{parent_page}");
    for name in ["billing", "policy"] {
        let link = format!(r#"href="/console/runs/{}">{name}</a>"#, children[name].id);
        assert!(parent_page.contains(&link), "{link} missing: {parent_page}");
        let (status, child_page) = page(format!("/console/runs/{}", children[name].id)).await;
        assert_eq!(status, StatusCode::OK);
        let back = format!(r#"href="/console/runs/{parent_id}""#);
        assert!(
            child_page.contains(&back),
            "{name}'s page links back: {child_page}"
        );
    }
}

#[tokio::test]
async fn a_replay_on_the_llm_path_runs_the_same_readers_in_memory_and_proposes_as_live() {
    let live_server = FakeServer::start(scripts(billing_script(), policy_script())).await;
    let app = crate::support::spawn_app_with_model(Arc::new(live_server.model())).await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let replay_server = FakeServer::start(scripts(billing_script(), policy_script())).await;
    let model = replay_server.model();

    let replayed = shadow::replay::investigate(
        &model,
        &app.state.index,
        &crate::support::demo_historical(CHARGED_TWICE),
    )
    .await
    .unwrap();

    // The readers ran (their calls are in the trace under their names) and were joined
    // on the parent's log before its own loop, as live.
    let kinds: Vec<&str> = replayed.events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds.first(), Some(&"children_joined"), "{kinds:?}");
    let reader_calls: Vec<&str> = replayed
        .exchanges
        .iter()
        .map(|x| x.call.id.as_str())
        .filter(|id| id.starts_with("billing:") || id.starts_with("policy:"))
        .collect();
    assert!(
        reader_calls.contains(&"billing:s2c0:b2"),
        "{reader_calls:?}"
    );
    assert!(reader_calls.contains(&"policy:s1c0:p1"), "{reader_calls:?}");
    // The proposal cites the billing reader's evidence, and none of it is rejected.
    assert!(
        replayed.evidence_rejected.is_empty(),
        "{:?}",
        replayed.evidence_rejected
    );
    let proposal = replayed
        .proposal
        .as_ref()
        .expect("the replayed parent proposes");
    assert_eq!(proposal.refunds[0].charge_id, "ch_1001b");
    assert_eq!(
        case["proposal"]["refunds"][0]["charge_id"], "ch_1001b",
        "{case}"
    );
    assert_eq!(
        replayed.tool_calls, 3,
        "the readers' calls count against the parent"
    );
}

/// What `get_run` over MCP answers for `run_id` (the supervisor's view).
async fn mcp_run(app: &crate::support::TestApp, ticket_id: &str, run_id: &str) -> Value {
    let arguments = json!({ "ticket_id": ticket_id, "run_id": run_id });
    let (outcome, _) = app.mcp_as_supervisor("get_run", arguments).await;
    assert!(outcome.ok, "{outcome:?}");
    outcome.content
}

#[tokio::test]
async fn mcp_and_metrics_tell_a_runs_sub_agents_apart_from_the_runs_workers_claim() {
    let server = FakeServer::start(scripts(billing_script(), policy_script())).await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let parent_id = case["run_id"].as_str().unwrap();
    let children = children(&app.state.db, parent_id).await;

    let parent = mcp_run(&app, &ticket_id, parent_id).await;
    let listed: HashMap<&str, &str> = parent["run"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["id"].as_str().unwrap()))
        .collect();
    assert_eq!(listed.len(), 2, "{parent}");
    for name in ["billing", "policy"] {
        assert_eq!(listed[name], children[name].id);
        let child = mcp_run(&app, &ticket_id, &children[name].id).await;
        assert_eq!(child["run"]["parent_run_id"], parent_id, "{child}");
        assert_eq!(child["run"]["children"], json!([]));
    }
    assert_eq!(parent["run"]["parent_run_id"], Value::Null);

    let (status, metrics) = app
        .raw(Request::get("/metrics").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    let gauge = |name: &str| -> i64 {
        metrics
            .lines()
            .filter(|l| l.starts_with(&format!("refund_desk_{name}{{")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<i64>().ok())
            .sum()
    };
    assert_eq!(gauge("runs"), 1, "only the case's own run:\n{metrics}");
    assert_eq!(gauge("child_runs"), 2, "its two readers:\n{metrics}");
}

// ---------------------------------------------------------------------------------------
// SIGKILL of a real `refund-agent serve` between one child's answer and the join.
// ---------------------------------------------------------------------------------------

/// `refund-agent` on `data` and `database`, with the provider and the model server
/// named (the tokens `seed` prints are read from its stdout).
fn command(data: &std::path::Path, database: &str, payments: &str, llm: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refund-agent"));
    cmd.arg("--data-dir")
        .arg(data)
        .env("DATABASE_URL", database)
        .env("PAYMENTS_URL", payments)
        .env("PAYMENTS_API_KEY", desk::config::DEFAULT_PAYMENTS_KEY)
        .env(
            "PAYMENTS_WEBHOOK_SECRET",
            desk::config::DEFAULT_WEBHOOK_SECRET,
        )
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .env("LLM_BASE_URL", llm)
        .env("LLM_MODEL", "tiny")
        // The shortest work lease: the restarted process resumes after 5 s, not a minute.
        .env("WORK_LEASE_SECS", "5")
        .env("RUST_LOG", "warn");
    cmd
}

/// After a SIGKILL the dead process's run lease (5 s here) must expire before another
/// process resumes the run.
const RESUME_LIMIT: Duration = Duration::from_secs(150);

/// Polls until `found` returns something, for at most [`RESUME_LIMIT`].
async fn until<T, F: std::future::Future<Output = Option<T>>>(mut found: impl FnMut() -> F) -> T {
    let started = std::time::Instant::now();
    while started.elapsed() < RESUME_LIMIT {
        if let Some(value) = found().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("gave up waiting");
}

/// The children hold no lease, yet no worker may claim them and the watchdog does not
/// watch them: they run inside their parent, whose dead holder's lease still stands.
async fn assert_only_the_parent_is_claimable_or_watched(db: &store::Db, parent_id: &str) {
    let now = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
    let claimed = runs::claim_next(db, "probe", now).await.unwrap();
    assert!(claimed.is_none(), "{claimed:?}");
    let watched = runs::stalled_runs(
        db,
        &runs::status::ACTIVE,
        &desk::watchdog::PROGRESS,
        now + 3_600_000,
        10,
    )
    .await
    .unwrap();
    let watched: Vec<&str> = watched.iter().map(|s| s.run.id.as_str()).collect();
    assert_eq!(watched, [parent_id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_killed_after_one_child_answered_resumes_without_asking_it_again_and_decides_once()
{
    // The policy reader's last reply is held (the process dies waiting on it); asked
    // again after the restart, it answers.
    let held = slow(
        Duration::from_secs(600),
        338,
        &[("p2", "submit_findings", json!({}))],
    );
    let policy = vec![policy_script().remove(0), held, policy_findings()];
    let server = FakeServer::start(scripts(billing_script(), policy)).await;
    let dir = tempfile::tempdir().unwrap();
    let mock = crate::support::start_mock(dir.path()).await;
    let data = dir.path().join("app");
    std::fs::create_dir_all(&data).unwrap();
    let database = match crate::support::fresh_postgres_url("rd_subagents").await {
        Some(url) => url,
        None => store::Db::sqlite_url(&data),
    };
    let cmd = || command(&data, &database, &mock.base_url(), &server.base_url);
    let (agent, customer) = serve::seed(&mut cmd());
    let db = store::Db::connect(&database).await.unwrap();
    let http = reqwest::Client::new();

    let mut serve = start(&mut cmd()).await;
    let ticket: Value = http
        .post(format!("{}/api/v1/tickets", serve.base))
        .bearer_auth(&customer)
        .json(&json!({ "message": CHARGED_TWICE }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let case_id = ticket["case"]["id"].as_str().unwrap().to_string();
    let case_url = |serve: &Serve| format!("{}/api/v1/cases/{case_id}", serve.base);
    let case = crate::support::poll_json(&http, &case_url(&serve), &agent, RESUME_LIMIT, |c| {
        c["run_id"].is_string()
    })
    .await;
    let parent_id = case["run_id"].as_str().unwrap().to_string();
    // Billing's findings are committed, and the policy reader waits on its last reply.
    until(|| async {
        let children = children(&db, &parent_id).await;
        let billing = children.get("billing")?;
        let answered = !kinds(&events(&db, &billing.id).await, "findings").is_empty();
        (answered && server.requests(Caller::Policy).len() == 2).then_some(())
    })
    .await;
    sigkill(&mut serve);
    let billing_asked = server.requests(Caller::Billing).len();
    assert_eq!(billing_asked, 3);
    assert!(
        kinds(&events(&db, &parent_id).await, "children_joined").is_empty(),
        "killed before the join"
    );
    assert_only_the_parent_is_claimable_or_watched(&db, &parent_id).await;

    let mut serve = start(&mut cmd()).await;
    let done = crate::support::poll_json(&http, &case_url(&serve), &agent, RESUME_LIMIT, |c| {
        c["status"] != "investigating"
    })
    .await;

    assert_eq!(
        server.requests(Caller::Billing).len(),
        billing_asked,
        "billing answered from its log"
    );
    assert_eq!(
        server.requests(Caller::Policy).len(),
        3,
        "policy resumed its interrupted call"
    );
    let parent_events = events(&db, &parent_id).await;
    assert_the_duplicate_is_proposed(&done, &parent_events);
    assert_eq!(
        kinds(&parent_events, "children_joined").len(),
        1,
        "joined once"
    );
    let children = children(&db, &parent_id).await;
    let policy_events = events(&db, &children["policy"].id).await;
    assert_eq!(kinds(&policy_events, "resumed").len(), 1);
    assert_eq!(
        kinds(&events(&db, &children["billing"].id).await, "findings").len(),
        1
    );
    sigkill(&mut serve);
    db.close().await;
    mock.shutdown().await;
}
