//! The LLM client over real HTTP, against a fake OpenAI-compatible server on a loopback
//! port that speaks the chat-completions wire format: tool calls with string
//! arguments, answers, garbage arguments, retries, provider errors, timeouts, and one
//! investigation end to end through the harness, the policy engine and the store.
//!
//! Long because the fake chat-completions server and its scripted replies live beside
//! the tests that use them; one area, one binary.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use desk::agent::llm::LlmModel;
use desk::agent::tools::{self, ToolDeclaration};
use desk::agent::{ModelContext, ModelTurn, Usage};
use harness::Model as _;
use serde_json::{json, Value};

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// One scripted answer of the fake server.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Value,
    delay: Duration,
}

impl Reply {
    fn ok(body: Value) -> Self {
        Reply {
            status: 200,
            headers: Vec::new(),
            body,
            delay: Duration::ZERO,
        }
    }

    fn error(status: u16, message: &str, kind: &str) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: json!({ "error": { "message": message, "type": kind, "code": null } }),
            delay: Duration::ZERO,
        }
    }
}

/// A script step: the reply, computed from the request the client sent.
type Step = Box<dyn Fn(&Value) -> Reply + Send>;

#[derive(Default)]
struct Fake {
    script: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<(HeaderMap, Value)>>,
}

struct FakeServer {
    fake: Arc<Fake>,
    base_url: String,
}

impl FakeServer {
    async fn start(steps: Vec<Step>) -> Self {
        let fake = Arc::new(Fake {
            script: Mutex::new(steps.into()),
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

    fn requests(&self) -> Vec<(HeaderMap, Value)> {
        self.fake.requests.lock().unwrap().clone()
    }

    fn model(&self) -> LlmModel {
        LlmModel::new(&self.base_url, None, "tiny".into(), Duration::from_secs(5))
            .unwrap()
            .with_backoff(Duration::from_millis(10), Duration::from_secs(2))
    }
}

async fn chat_completions(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(findings) = reader_findings(&body) {
        return Json(findings).into_response();
    }
    fake.requests.lock().unwrap().push((headers, body.clone()));
    let step = fake.script.lock().unwrap().pop_front();
    let reply = match step {
        Some(step) => step(&body),
        None => Reply::error(400, "fake: the script has no more replies", "test_error"),
    };
    tokio::time::sleep(reply.delay).await;
    let mut response = (
        StatusCode::from_u16(reply.status).unwrap(),
        Json(reply.body),
    )
        .into_response();
    for (name, value) in reply.headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

/// On the LLM path a live run first asks its two sub-agent readers (their
/// own tests in `subagents.rs`); here they answer at once with findings that add
/// nothing, so these tests script and count the investigator's requests alone.
fn reader_findings(body: &Value) -> Option<Value> {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    let reader = system.starts_with("You are the billing evidence reader")
        || system.starts_with("You are the policy reader");
    let args = r#"{"summary":"nothing to add","evidence":[],"citations":[]}"#;
    reader.then(|| tool_calls(&[("f", "submit_findings", args)]))
}

/// Whether a tool message is the readers' briefing (`billing:findings`,
/// `policy:findings`) rather than the result of one of the investigator's own calls.
fn briefing(message: &Value) -> bool {
    let id = message["tool_call_id"].as_str().unwrap_or_default();
    id.starts_with("billing:") || id.starts_with("policy:")
}

/// A completion with tool calls whose arguments are JSON strings, as servers send them.
fn tool_calls(calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } })
        })
        .collect();
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "tiny",
        "choices": [{ "index": 0, "finish_reason": "tool_calls",
                      "message": { "role": "assistant", "content": null, "tool_calls": calls } }],
        "usage": { "prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338 }
    })
}

fn step(f: impl Fn(&Value) -> Reply + Send + 'static) -> Step {
    Box::new(f)
}

fn fixed(body: Value) -> Step {
    step(move |_| Reply::ok(body.clone()))
}

fn customer_messages() -> Vec<String> {
    vec![CHARGED_TWICE.to_string()]
}

async fn turn_of(model: &LlmModel, declarations: &[ToolDeclaration]) -> anyhow::Result<ModelTurn> {
    let customer = customer_messages();
    let ctx = ModelContext {
        inputs: &customer,
        tools: declarations,
        history: &[],
    };
    model.next_turn(&ctx).await
}

#[tokio::test]
async fn tool_calls_with_string_arguments_become_tool_calls_and_usage_is_reported() {
    let server = FakeServer::start(vec![fixed(tool_calls(&[
        ("call_1", "get_customer", "{}"),
        ("call_2", "list_charges", r#"{"order_id":"O-1001"}"#),
    ]))])
    .await;
    let declarations = tools::declarations();
    let customer = customer_messages();
    let ctx = ModelContext {
        inputs: &customer,
        tools: &declarations,
        history: &[],
    };
    // `next_reply` is what the harness calls.
    let reply = server.model().next_reply(&ctx).await.unwrap();
    let ModelTurn::ToolCalls { calls } = reply.turn else {
        panic!("{:?}", reply.turn)
    };
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_1", "get_customer")
    );
    assert_eq!(calls[0].arguments, json!({}));
    assert_eq!(calls[1].arguments, json!({ "order_id": "O-1001" }));
    assert_eq!(
        reply.usage,
        Usage {
            prompt_tokens: 321,
            completion_tokens: 17
        }
    );
}

#[tokio::test]
async fn a_submit_proposal_call_becomes_a_proposal() {
    let args = json!({
        "request": "duplicate_charge", "order_id": "O-1001", "reason_code": "duplicate_charge",
        "refunds": [{ "charge_id": "ch_1001b", "amount": "198.00", "currency": "CNY" }],
        "evidence": [{ "call_id": "s2c0:call_3", "record_id": "ch_1001b" }],
        "citations": ["RP-002@2#duplicate-charges"], "summary": "Charged twice a minute apart."
    })
    .to_string();
    let server = FakeServer::start(vec![fixed(tool_calls(&[(
        "call_9",
        "submit_proposal",
        &args,
    )]))])
    .await;
    let turn = turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap();
    let ModelTurn::Answer { answer: proposal } = turn else {
        panic!("{turn:?}")
    };
    assert_eq!(proposal.order_id.as_deref(), Some("O-1001"));
    assert_eq!(proposal.refunds[0].charge_id, "ch_1001b");
    assert_eq!(proposal.evidence[0].call_id, "s2c0:call_3");
}

#[tokio::test]
async fn an_escalate_to_human_call_becomes_an_escalation() {
    let server = FakeServer::start(vec![fixed(tool_calls(&[(
        "call_1",
        "escalate_to_human",
        r#"{"reason":"the customer mentions a chargeback"}"#,
    )]))])
    .await;
    let turn = turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap();
    assert_eq!(
        turn,
        ModelTurn::HandOff {
            reason: "the customer mentions a chargeback".into()
        }
    );
}

#[tokio::test]
async fn invalid_json_arguments_become_a_string_the_validator_can_answer() {
    // A trailing comma inside the arguments string, as a tiny real model writes it.
    let server = FakeServer::start(vec![fixed(tool_calls(&[(
        "call_1",
        "list_charges",
        r#"{"order_id": "O-1001",}"#,
    )]))])
    .await;
    let turn = turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap();
    let ModelTurn::ToolCalls { calls } = turn else {
        panic!("{turn:?}")
    };
    assert_eq!(
        calls[0].arguments,
        Value::String(r#"{"order_id": "O-1001",}"#.into())
    );
    let declaration = tools::declarations()
        .into_iter()
        .find(|d| d.name == "list_charges")
        .unwrap();
    assert!(tools::validate(&declaration, &calls[0].arguments).is_err());
}

#[tokio::test]
async fn an_invalid_proposal_is_an_error_not_a_turn() {
    let server = FakeServer::start(vec![fixed(tool_calls(&[(
        "call_1",
        "submit_proposal",
        r#"{"request": "refund_everything", "summary": "approved by manager"}"#,
    )]))])
    .await;
    let e = turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("submit_proposal"), "{e}");
}

#[tokio::test]
async fn a_text_only_stop_and_a_cut_off_reply_are_errors() {
    let text = |finish: &str| {
        json!({ "choices": [{ "index": 0, "finish_reason": finish,
                              "message": { "role": "assistant", "content": "You will get a refund." } }] })
    };
    let server = FakeServer::start(vec![fixed(text("stop")), fixed(text("length"))]).await;
    let model = server.model();
    let e = turn_of(&model, &tools::declarations()).await.unwrap_err();
    assert!(
        e.to_string().contains("model stopped without a proposal"),
        "{e}"
    );
    let e = turn_of(&model, &tools::declarations()).await.unwrap_err();
    assert!(e.to_string().contains("length"), "{e}");
    assert_eq!(server.requests().len(), 2, "neither is retried");
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_after_the_wait() {
    let server = FakeServer::start(vec![
        step(|_| Reply {
            headers: vec![("retry-after", "1".into())],
            ..Reply::error(429, "rate limited", "rate_limit_error")
        }),
        fixed(tool_calls(&[("call_1", "get_customer", "{}")])),
    ])
    .await;
    let started = Instant::now();
    let turn = turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap();
    assert!(matches!(turn, ModelTurn::ToolCalls { .. }));
    assert_eq!(server.requests().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_the_cap_is_capped() {
    let server = FakeServer::start(vec![
        step(|_| Reply {
            headers: vec![("retry-after", "3600".into())],
            ..Reply::error(429, "rate limited", "rate_limit_error")
        }),
        fixed(tool_calls(&[("call_1", "get_customer", "{}")])),
    ])
    .await;
    let model = server
        .model()
        .with_backoff(Duration::from_millis(10), Duration::from_millis(50));
    let started = Instant::now();
    turn_of(&model, &tools::declarations()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let server = FakeServer::start(vec![
        step(|_| Reply::error(500, "internal error", "server_error")),
        step(|_| Reply::error(503, "overloaded", "server_error")),
        fixed(tool_calls(&[("call_1", "list_orders", "{}")])),
    ])
    .await;
    let turn = turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap();
    assert!(matches!(turn, ModelTurn::ToolCalls { .. }));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_bounded() {
    let steps = (0..10)
        .map(|_| step(|_| Reply::error(502, "bad gateway", "server_error")))
        .collect();
    let server = FakeServer::start(steps).await;
    let model = server.model().with_max_retries(2);
    let e = turn_of(&model, &tools::declarations()).await.unwrap_err();
    assert!(e.to_string().contains("bad gateway"), "{e}");
    assert!(e.to_string().contains("after 3 attempts"), "{e}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_400_error_body_is_surfaced_and_not_retried() {
    let server = FakeServer::start(vec![
        step(|_| {
            let mut r = Reply::error(
                400,
                "tools[5].function.parameters is invalid",
                "invalid_request_error",
            );
            r.body["error"]["code"] = json!("invalid_tools");
            r
        }),
        fixed(tool_calls(&[("call_1", "get_customer", "{}")])),
    ])
    .await;
    let e = turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap_err();
    let message = e.to_string();
    assert!(message.contains("400"), "{message}");
    assert!(
        message.contains("tools[5].function.parameters is invalid"),
        "{message}"
    );
    assert!(
        message.contains("invalid_request_error") && message.contains("invalid_tools"),
        "{message}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_slow_server_times_out_with_an_error() {
    let server = FakeServer::start(vec![step(|_| Reply {
        delay: Duration::from_secs(3),
        ..Reply::ok(tool_calls(&[("call_1", "get_customer", "{}")]))
    })])
    .await;
    let model = LlmModel::new(
        &server.base_url,
        None,
        "tiny".into(),
        Duration::from_millis(300),
    )
    .unwrap();
    let started = Instant::now();
    let e = turn_of(&model, &tools::declarations()).await.unwrap_err();
    assert!(e.to_string().contains("timeout"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_unreachable_server_is_retried_then_reported() {
    // A port that was just free: connection refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let model = LlmModel::new(
        &format!("http://{addr}/v1"),
        None,
        "tiny".into(),
        Duration::from_secs(2),
    )
    .unwrap()
    .with_max_retries(2)
    .with_backoff(Duration::from_millis(5), Duration::from_millis(20));
    let e = turn_of(&model, &tools::declarations()).await.unwrap_err();
    assert!(
        e.to_string().contains("cannot reach the model provider"),
        "{e}"
    );
    assert!(e.to_string().contains("after 3 attempts"), "{e}");
}

#[tokio::test]
async fn the_request_carries_every_tool_schema_plus_the_answer_tools_and_no_auth_without_a_key() {
    let server =
        FakeServer::start(vec![fixed(tool_calls(&[("call_1", "get_customer", "{}")]))]).await;
    turn_of(&server.model(), &tools::declarations())
        .await
        .unwrap();
    let requests = server.requests();
    let (headers, body) = &requests[0];
    assert!(headers.get("authorization").is_none());
    assert_eq!(body["model"], "tiny");
    let sent = body["tools"].as_array().unwrap();
    let declarations = tools::declarations();
    assert_eq!(sent.len(), declarations.len() + 2);
    for d in &declarations {
        let tool = sent
            .iter()
            .find(|t| t["function"]["name"] == d.name)
            .unwrap_or_else(|| panic!("{} is not offered", d.name));
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["description"], d.description);
        assert_eq!(tool["function"]["parameters"], d.parameters);
    }
    let proposal = sent
        .iter()
        .find(|t| t["function"]["name"] == "submit_proposal")
        .unwrap();
    let properties = &proposal["function"]["parameters"]["properties"];
    for field in [
        "request",
        "order_id",
        "reason_code",
        "refunds",
        "evidence",
        "citations",
        "summary",
    ] {
        assert!(
            properties.get(field).is_some(),
            "submit_proposal lacks {field}"
        );
    }
    assert_eq!(
        properties["refunds"]["items"]["required"],
        json!(["charge_id", "amount", "currency"])
    );
    assert_eq!(
        properties["evidence"]["items"]["required"],
        json!(["call_id", "record_id"])
    );
    let escalate = sent
        .iter()
        .find(|t| t["function"]["name"] == "escalate_to_human")
        .unwrap();
    assert_eq!(
        escalate["function"]["parameters"]["required"],
        json!(["reason"])
    );
    // The prompt: system instructions, then the customer's words as delimited content.
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    assert!(messages[1]["content"]
        .as_str()
        .unwrap()
        .contains(CHARGED_TWICE));
}

#[tokio::test]
async fn a_configured_key_is_sent_as_a_bearer_token() {
    let server =
        FakeServer::start(vec![fixed(tool_calls(&[("call_1", "get_customer", "{}")]))]).await;
    let model = LlmModel::new(
        &server.base_url,
        Some("sk-test-123".into()),
        "tiny".into(),
        Duration::from_secs(5),
    )
    .unwrap();
    turn_of(&model, &tools::declarations()).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].0["authorization"], "Bearer sk-test-123");
    assert!(!format!("{model:?}").contains("sk-test-123"));
}

/// The id of the call the model made to `tool` with `arguments`, as the harness echoed
/// it back in the request's assistant messages.
fn call_id(request: &Value, tool: &str, argument: Option<(&str, &str)>) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .find(|c| {
            c["function"]["name"] == tool
                && argument.is_none_or(|(k, v)| {
                    let args: Value =
                        serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                    args[k] == v
                })
        })
        .and_then(|c| c["id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("the request shows no {tool} call"))
}

#[tokio::test]
async fn an_llm_investigation_reaches_awaiting_approval_with_the_engines_refund() {
    let server = FakeServer::start(vec![
        fixed(tool_calls(&[("call_a", "get_customer", "{}")])),
        fixed(tool_calls(&[("call_b", "list_orders", "{}")])),
        fixed(tool_calls(&[("call_c", "list_charges", r#"{"order_id":"O-1001"}"#)])),
        fixed(tool_calls(&[
            ("call_d", "list_refunds", r#"{"charge_id":"ch_1001a"}"#),
            ("call_e", "list_refunds", r#"{"charge_id":"ch_1001b"}"#),
        ])),
        step(|request| {
            // Evidence cites the call ids the harness gave the model's calls.
            let orders = call_id(request, "list_orders", None);
            let charges = call_id(request, "list_charges", Some(("order_id", "O-1001")));
            let refunds = call_id(request, "list_refunds", Some(("charge_id", "ch_1001b")));
            let args = json!({
                "request": "duplicate_charge", "order_id": "O-1001", "reason_code": "duplicate_charge",
                "refunds": [{ "charge_id": "ch_1001b", "amount": "198.00", "currency": "CNY" }],
                "evidence": [
                    { "call_id": orders, "record_id": "O-1001" },
                    { "call_id": charges, "record_id": "ch_1001a" },
                    { "call_id": charges, "record_id": "ch_1001b" },
                    { "call_id": refunds, "record_id": "ch_1001b" }
                ],
                "citations": [],
                "summary": "Two captured charges of 198.00 CNY on O-1001 a minute apart; none refunded."
            });
            Reply::ok(tool_calls(&[("call_f", "submit_proposal", &args.to_string())]))
        }),
    ])
    .await;
    let model = server.model();
    let app = crate::support::spawn_app_with_model(Arc::new(model)).await;

    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;

    assert_eq!(case["status"], "awaiting_approval", "{case:#}");
    assert_eq!(case["reason_code"], "duplicate_charge");
    assert_eq!(case["refund_total"], "198.00");
    assert_eq!(case["currency"], "CNY");
    let refunds = case["decision"]["refunds"].as_array().unwrap();
    assert_eq!(refunds.len(), 1, "{case:#}");
    assert_eq!(refunds[0]["charge_id"], "ch_1001b");
    assert!(
        app.provider_refunds("ch_1001b").await.is_empty(),
        "nothing moves before approval"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 5, "one request per model turn");
    // The model saw each tool's result, answered under the call id it was given.
    let last = &requests[4].1;
    let tool_messages: Vec<&Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool" && !briefing(m))
        .collect();
    assert_eq!(tool_messages.len(), 5);
    let results: String = tool_messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    for record in ["C-100", "O-1001", "ch_1001a", "ch_1001b"] {
        assert!(
            results.contains(record),
            "{record} missing from the tool results: {results}"
        );
    }
    let charges = call_id(last, "list_charges", Some(("order_id", "O-1001")));
    assert!(tool_messages
        .iter()
        .any(|m| m["tool_call_id"] == charges.as_str()));
    // The run's log records each model output with the usage the server reported.
    let (_, events) = app
        .request(
            "GET",
            &format!("/api/v1/runs/{}/events", case["run_id"].as_str().unwrap()),
            Some(&app.agent_token),
            None,
        )
        .await;
    let outputs: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "model_output")
        .collect();
    assert_eq!(outputs.len(), 5, "{events:#}");
    for output in outputs {
        assert_eq!(
            output["payload"]["usage"]["prompt_tokens"], 321,
            "{output:#}"
        );
        assert_eq!(output["payload"]["model"], "llm:tiny");
    }
    // Every request offered the tools and carried the customer's words as content.
    for (headers, body) in &requests {
        assert!(headers.get("authorization").is_none());
        assert_eq!(
            body["tools"].as_array().unwrap().len(),
            tools::declarations().len() + 2
        );
        assert!(body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains(CHARGED_TWICE));
    }
}

#[tokio::test]
async fn garbage_arguments_get_a_structured_error_through_the_harness() {
    let server = FakeServer::start(vec![
        fixed(tool_calls(&[(
            "call_a",
            "list_charges",
            r#"{"order_id": "O-1001",}"#,
        )])),
        step(|request| {
            let messages = request["messages"].as_array().unwrap();
            let answer = messages
                .iter()
                .find(|m| m["role"] == "tool" && !briefing(m))
                .unwrap();
            let content = answer["content"].as_str().unwrap();
            assert!(content.contains("invalid_arguments"), "{content}");
            Reply::ok(tool_calls(&[(
                "call_b",
                "escalate_to_human",
                r#"{"reason":"I cannot form valid arguments"}"#,
            )]))
        }),
    ])
    .await;
    let app = crate::support::spawn_app_with_model(Arc::new(server.model())).await;

    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;

    assert_eq!(case["status"], "escalated", "{case:#}");
    assert_eq!(server.requests().len(), 2);
    assert!(app.provider_refunds("ch_1001b").await.is_empty());
}
