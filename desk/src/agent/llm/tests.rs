//! The wire format's parsing and the client's settings, without a server
//! (`app/tests/llm.rs` and `app/tests/subagents.rs` drive a fake one).

use harness::Turn;

use super::reader::parse_findings;
use super::*;

fn response(message: Value, finish_reason: &str) -> Value {
    json!({ "id": "x", "object": "chat.completion",
            "choices": [{ "index": 0, "message": message, "finish_reason": finish_reason }],
            "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 } })
}

fn call(id: &str, name: &str, arguments: &str) -> Value {
    json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } })
}

#[test]
fn string_arguments_are_parsed_and_garbage_stays_a_string() {
    let r = parse_response(&response(
        json!({ "role": "assistant", "content": null, "tool_calls": [
            call("a", "list_charges", r#"{"order_id":"O-1001"}"#),
            call("b", "list_charges", r#"{"order_id": "O-1001",}"#),
            call("", "get_customer", ""),
        ] }),
        "tool_calls",
    ))
    .unwrap();
    let ModelTurn::ToolCalls { calls } = r.turn else {
        panic!("{:?}", r.turn)
    };
    assert_eq!(calls[0].arguments, json!({ "order_id": "O-1001" }));
    assert_eq!(
        calls[1].arguments,
        Value::String(r#"{"order_id": "O-1001",}"#.into())
    );
    assert_eq!(calls[2].id, "call_2");
    assert_eq!(calls[2].arguments, json!({}));
    assert_eq!(
        r.usage,
        Usage {
            prompt_tokens: 10,
            completion_tokens: 5
        }
    );
    let mut no_usage = response(
        json!({ "tool_calls": [call("a", "get_customer", "{}")] }),
        "tool_calls",
    );
    no_usage.as_object_mut().unwrap().remove("usage");
    assert_eq!(parse_response(&no_usage).unwrap().usage, Usage::default());
}

#[test]
fn answers_become_proposals_or_escalations() {
    let args = json!({ "request": "duplicate_charge", "order_id": "O-1001", "reason_code": "duplicate_charge",
                       "refunds": [], "evidence": [], "citations": [], "summary": "s" })
    .to_string();
    let r = parse_response(&response(
        json!({ "tool_calls": [call("p", SUBMIT_PROPOSAL, &args)] }),
        "tool_calls",
    ))
    .unwrap();
    assert!(matches!(r.turn, ModelTurn::Answer { .. }));
    let r = parse_response(&response(
        json!({ "tool_calls": [call("p", SUBMIT_PROPOSAL, &args), call("e", ESCALATE_TO_HUMAN, r#"{"reason":"unsure"}"#)] }),
        "tool_calls",
    ))
    .unwrap();
    assert_eq!(
        r.turn,
        ModelTurn::HandOff {
            reason: "unsure".into()
        }
    );
    let r = parse_response(&response(
        json!({ "tool_calls": [call("e", ESCALATE_TO_HUMAN, "{")] }),
        "tool_calls",
    ))
    .unwrap();
    assert_eq!(r.turn, ModelTurn::HandOff { reason: "{".into() });
}

#[test]
fn a_bad_proposal_a_silent_stop_and_a_cut_off_reply_are_errors() {
    for (message, finish) in [
        (
            json!({ "tool_calls": [call("p", SUBMIT_PROPOSAL, r#"{"request":"refund_now"}"#)] }),
            "tool_calls",
        ),
        (
            json!({ "tool_calls": [call("p", SUBMIT_PROPOSAL, "{,}")] }),
            "tool_calls",
        ),
        (
            json!({ "content": "I think you should get a refund." }),
            "stop",
        ),
        (
            json!({ "tool_calls": [call("a", "get_customer", "{")] }),
            "length",
        ),
    ] {
        assert!(parse_response(&response(message, finish)).is_err());
    }
    let e = parse_response(&response(json!({ "content": "hello" }), "stop")).unwrap_err();
    assert!(
        e.to_string().contains("model stopped without a proposal"),
        "{e}"
    );
    assert!(parse_response(&json!({ "choices": [] })).is_err());
}

#[test]
fn provider_errors_are_surfaced_with_message_type_and_code() {
    let m = error_message(
        reqwest::StatusCode::BAD_REQUEST,
        r#"{"error":{"message":"bad tools","type":"invalid_request_error","code":"x1"}}"#,
    );
    assert_eq!(m, "model provider returned 400 Bad Request: bad tools (type: invalid_request_error) (code: x1)");
    assert!(error_message(reqwest::StatusCode::BAD_GATEWAY, "<html>").contains("<html>"));
}

#[test]
fn the_offered_tools_fit_their_default_budget() {
    let m = unreachable_model();
    let declarations = crate::agent::tools::declarations();
    let customer = vec!["hi".to_string()];
    let ctx = ModelContext {
        inputs: &customer,
        tools: &declarations,
        history: &[],
    };
    let body = m.request_body(&ctx);
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), declarations.len() + 2);
    assert!(context::tools_fit(tools, &ContextBudget::default()));
    assert!(context::tools_fit(
        tools,
        &ContextBudget::for_context_window(4096)
    ));
}

#[test]
fn debug_output_never_shows_the_key() {
    let m = LlmModel::new(
        "http://127.0.0.1:1/v1",
        Some("sk-secret".into()),
        "m".into(),
        Duration::from_secs(1),
    )
    .unwrap();
    assert!(!format!("{m:?}").contains("sk-secret"));
    assert!(LlmModel::new("not a url", None, "m".into(), Duration::from_secs(1)).is_err());
}

#[test]
fn retry_waits_double_and_honour_retry_after_within_the_cap() {
    let m = unreachable_model().with_backoff(Duration::from_millis(100), Duration::from_secs(2));
    assert_eq!(m.wait_before_retry(0, None), Duration::from_millis(100));
    assert_eq!(m.wait_before_retry(2, None), Duration::from_millis(400));
    assert_eq!(m.wait_before_retry(10, None), Duration::from_secs(2));
    assert_eq!(
        m.wait_before_retry(0, Some(Duration::from_secs(1))),
        Duration::from_secs(1)
    );
    assert_eq!(
        m.wait_before_retry(0, Some(Duration::from_secs(60))),
        Duration::from_secs(2)
    );
}

#[test]
fn a_readers_submit_findings_ends_its_turn_and_bad_findings_are_errors() {
    let findings = r#"{"summary":"two charges","evidence":[{"call_id":"s1c0:a","record_id":"ch_1"}],"citations":[]}"#;
    let r = parse_findings(&response(
        json!({ "tool_calls": [call("a", "list_orders", "{}"), call("f", SUBMIT_FINDINGS, findings)] }),
        "tool_calls",
    ))
    .unwrap();
    let Turn::Answer { answer } = r.turn else {
        panic!("{:?}", r.turn)
    };
    assert_eq!(answer.summary, "two charges");
    assert_eq!(answer.evidence[0].record_id, "ch_1");
    let r = parse_findings(&response(
        json!({ "tool_calls": [call("a", "list_orders", "{}")] }),
        "tool_calls",
    ))
    .unwrap();
    assert!(matches!(r.turn, Turn::ToolCalls { .. }));
    for bad in ["{", r#"{"evidence":[]}"#] {
        let message = json!({ "tool_calls": [call("f", SUBMIT_FINDINGS, bad)] });
        assert!(
            parse_findings(&response(message, "tool_calls")).is_err(),
            "{bad}"
        );
    }
    let e = parse_findings(&response(json!({ "content": "done" }), "stop")).unwrap_err();
    assert!(e.to_string().contains("without findings"), "{e}");
}

#[test]
fn every_request_caps_the_answer_at_max_tokens_and_offers_the_tools_with_tool_choice_auto() {
    let m = unreachable_model();
    let customer = vec!["hi".to_string()];
    let ctx = ModelContext {
        inputs: &customer,
        tools: &[],
        history: &[],
    };
    assert_eq!(m.request_body(&ctx)["max_tokens"], DEFAULT_MAX_TOKENS);
    // Said outright: llama-cpp-python's server hides the tools without it.
    assert_eq!(m.request_body(&ctx)["tool_choice"], "auto");
    let capped = m.with_max_tokens(200);
    assert_eq!(capped.request_body(&ctx)["max_tokens"], 200);
}

/// A client of a port nothing listens on: for what is built before any request.
fn unreachable_model() -> LlmModel {
    LlmModel::new(
        "http://127.0.0.1:1/v1",
        None,
        "m".into(),
        Duration::from_secs(1),
    )
    .unwrap()
}
