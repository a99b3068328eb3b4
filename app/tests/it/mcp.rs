//! The investigation tools over MCP (`POST /mcp`, `refund-agent mcp`): only staff tokens,
//! only read-only tools, the loop's own tools and errors, and every call audited with
//! its caller. JSON-RPC goes through the real router and the official SDK's transport.

use crate::support::{spawn_app, TestApp};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::agent::tools::{self, ToolEnv};
use desk::agent::ToolCall;
use serde_json::{json, Value};
use sqlx::Row;

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// Sends one JSON-RPC request to `/mcp` as a streamable HTTP client does.
async fn rpc(
    app: &TestApp,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> (StatusCode, Value) {
    rpc_with(app, token, &[], method, params).await
}

async fn rpc_with(
    app: &TestApp,
    token: Option<&str>,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> (StatusCode, Value) {
    let mut builder = Request::post("/mcp")
        .header("host", "refunds.example.com")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let (status, text) = app
        .raw(builder.body(Body::from(body.to_string())).unwrap())
        .await;
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

/// Calls a tool as the agent-role staff member; returns the `CallToolResult`.
async fn call(app: &TestApp, name: &str, arguments: Value) -> Value {
    let (status, reply) = rpc(
        app,
        Some(&app.agent_token),
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert!(reply.get("error").is_none(), "a protocol error: {reply}");
    reply["result"].clone()
}

async fn mcp_audit_rows(app: &TestApp) -> Vec<(String, String, String)> {
    sqlx::query(
        "SELECT actor, subject, detail FROM audit_log WHERE action = 'mcp_tool_call' ORDER BY created_at, id",
    )
    .fetch_all(app.state.db.pool())
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get("actor"), r.get("subject"), r.get("detail")))
    .collect()
}

async fn staff_id(app: &TestApp, email: &str) -> String {
    desk::auth::staff_by_email(&app.state.db, email)
        .await
        .unwrap()
        .unwrap()
        .id
}

fn tool_names(listed: &Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn mcp_lists_the_loops_own_tools_and_the_case_and_run_views_all_read_only() {
    let app = spawn_app().await;
    let (status, listed) = rpc(&app, Some(&app.agent_token), "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{listed}");

    let mut expected: Vec<String> = tools::declarations()
        .iter()
        .map(|d| d.name.to_string())
        .collect();
    expected.extend(["get_case".to_string(), "get_run".to_string()]);
    assert_eq!(tool_names(&listed), expected);
    for tool in listed["result"]["tools"].as_array().unwrap() {
        let annotations = &tool["annotations"];
        assert_eq!(annotations["readOnlyHint"], true, "{tool}");
        assert_eq!(annotations["destructiveHint"], false, "{tool}");
        let properties = tool["inputSchema"]["properties"].as_object().unwrap();
        assert!(
            properties.contains_key("ticket_id") && properties.contains_key("case_id"),
            "every call names a ticket or a case: {tool}"
        );
    }
    // The product's own schemas, not copies: each declared parameter and requirement is there.
    for declaration in tools::declarations() {
        let listed_tool = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == declaration.name)
            .unwrap();
        assert_eq!(
            listed_tool["inputSchema"]["required"],
            declaration.parameters["required"]
        );
        assert_eq!(listed_tool["description"], declaration.description);
        for (name, spec) in declaration.parameters["properties"].as_object().unwrap() {
            assert_eq!(&listed_tool["inputSchema"]["properties"][name], spec);
        }
    }
}

#[tokio::test]
async fn a_request_without_a_staff_bearer_token_is_refused_with_401_and_a_clear_message() {
    let app = spawn_app().await;
    for token in [None, Some("not-a-real-token")] {
        let (status, body) = rpc(&app, token, "tools/list", json!({})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        // A JSON-RPC error answering the request, so MCP clients show the message.
        assert_eq!(body["id"], 1, "{body}");
        assert_eq!(body["error"]["code"], -32001);
        assert_eq!(body["error"]["data"]["code"], "unauthorized");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("staff") && message.contains("refund-agent staff token"),
            "{message}"
        );
    }
    assert!(mcp_audit_rows(&app).await.is_empty());
}

#[tokio::test]
async fn a_customer_token_is_refused_with_403_even_for_the_customers_own_ticket() {
    let app = spawn_app().await;
    let (ticket_id, _) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let customer = app.customer_token("C-100").await;
    let (status, body) = rpc(
        &app,
        Some(&customer),
        "tools/call",
        json!({ "name": "list_orders", "arguments": { "ticket_id": ticket_id } }),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], -32003);
    assert_eq!(body["error"]["data"]["code"], "forbidden");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("customer tokens are refused"));
    assert!(mcp_audit_rows(&app).await.is_empty());
}

#[tokio::test]
async fn stdio_refuses_to_start_without_a_staff_token_or_with_a_customers() {
    let app = spawn_app().await;
    let customer = app.customer_token("C-100").await;
    for (token, expected) in [
        (None, "REFUND_DESK_TOKEN"),
        (Some("nonsense"), "unknown, revoked or expired"),
        (Some(customer.as_str()), "customer tokens are refused"),
    ] {
        let refused = web::mcp::serve_stdio(app.state.clone(), token)
            .await
            .expect_err("no staff token, no MCP");
        assert!(refused.to_string().contains(expected), "{refused}");
    }
}

#[tokio::test]
async fn an_unknown_ticket_or_case_is_a_tool_error_with_a_hint_and_is_audited() {
    let app = spawn_app().await;
    for (key, id, what) in [
        ("ticket_id", "tkt_does_not_exist", "ticket"),
        ("case_id", "case_does_not_exist", "case"),
    ] {
        let result = call(&app, "get_customer", json!({ key: id })).await;
        assert_eq!(result["isError"], true, "{result}");
        let error = &result["structuredContent"];
        assert_eq!(error["error"], "not_found");
        assert_eq!(error["retryable"], false);
        let hint = error["hint"].as_str().unwrap();
        assert!(hint.contains(&format!("no {what} '{id}'")), "{hint}");
    }
    let agent = staff_id(&app, "agent@test.example").await;
    let rows = mcp_audit_rows(&app).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|(actor, _, detail)| *actor == agent
        && detail.starts_with("get_customer over http")
        && detail.ends_with(": not_found")));
    let mut subjects: Vec<_> = rows
        .iter()
        .map(|(_, subject, _)| subject.as_str())
        .collect();
    subjects.sort();
    assert_eq!(subjects, ["case_does_not_exist", "tkt_does_not_exist"]);
}

#[tokio::test]
async fn a_call_must_name_exactly_one_ticket_or_case_and_nothing_else_that_is_not_in_the_schema() {
    let app = spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    for (arguments, expected) in [
        (
            json!({}),
            "name the ticket (ticket_id) or the case (case_id)",
        ),
        (
            json!({ "ticket_id": ticket_id, "case_id": case_id }),
            "not both",
        ),
        (json!({ "ticket_id": 7 }), "must be a non-empty string"),
        (json!({ "ticket_id": "x".repeat(65) }), "at most 64"),
        // Identity never comes from arguments: the loop's schema has no such argument.
        (
            json!({ "ticket_id": ticket_id, "customer_id": "C-200" }),
            "unknown argument 'customer_id'",
        ),
    ] {
        let result = call(&app, "get_customer", arguments.clone()).await;
        assert_eq!(result["isError"], true, "{arguments}: {result}");
        assert_eq!(result["structuredContent"]["error"], "invalid_arguments");
        let hint = result["structuredContent"]["hint"].as_str().unwrap();
        assert!(hint.contains(expected), "{arguments}: {hint}");
    }
}

#[tokio::test]
async fn each_tool_reads_the_named_ticket_exactly_as_the_loop_does_and_is_audited_with_its_caller()
{
    let app = spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let scope = json!({ "ticket_id": ticket_id });

    let customer = call(&app, "get_customer", scope.clone()).await;
    assert_eq!(customer["isError"], false, "{customer}");
    assert_eq!(customer["structuredContent"]["customer"]["id"], "C-100");
    let orders = call(&app, "list_orders", json!({ "case_id": case_id })).await;
    assert_eq!(orders["structuredContent"]["orders"][0]["id"], "O-1001");
    let charges = call(
        &app,
        "list_charges",
        json!({ "ticket_id": ticket_id, "order_id": "O-1001" }),
    )
    .await;
    assert_eq!(
        charges["structuredContent"]["charges"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // One implementation: the loop's tool answers the same for the same ticket.
    let ticket = desk::tickets::load_ticket(&app.state.db, &ticket_id)
        .await
        .unwrap()
        .unwrap();
    let env = ToolEnv {
        billing: &*app.state.billing,
        index: &app.state.index,
    };
    let direct = tools::execute(
        &env,
        &ticket,
        &ToolCall {
            id: "c1".into(),
            name: "list_charges".into(),
            arguments: json!({ "order_id": "O-1001" }),
        },
    )
    .await;
    assert_eq!(charges["structuredContent"], direct.content);

    let refunds = call(
        &app,
        "list_refunds",
        json!({ "ticket_id": ticket_id, "charge_id": "ch_1001b" }),
    )
    .await;
    assert_eq!(refunds["structuredContent"]["charge_id"], "ch_1001b");
    let history = call(&app, "list_customer_history", scope.clone()).await;
    assert_eq!(history["isError"], false, "{history}");
    assert_eq!(history["structuredContent"]["tickets_total"], 0);
    let policy = call(
        &app,
        "search_policy",
        json!({ "ticket_id": ticket_id, "query": "charged twice duplicate" }),
    )
    .await;
    let citation = policy["structuredContent"]["passages"][0]["citation"]
        .as_str()
        .unwrap();
    assert!(
        citation.contains('@') && citation.contains('#'),
        "{citation}"
    );
    let case_view = call(&app, "get_case", scope.clone()).await;
    assert_eq!(case_view["structuredContent"]["case"]["id"], case_id);
    assert_eq!(
        case_view["structuredContent"]["case"]["status"],
        "awaiting_approval"
    );
    assert_eq!(
        case_view["structuredContent"]["messages"][0]["body"],
        CHARGED_TWICE
    );
    let run = call(&app, "get_run", json!({ "case_id": case_id })).await;
    assert_eq!(run["structuredContent"]["run"]["id"], case["run_id"]);
    assert!(run["structuredContent"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "tool_result"));

    let supervisor = rpc(
        &app,
        Some(&app.supervisor_token),
        "tools/call",
        json!({ "name": "get_case", "arguments": { "case_id": case_id } }),
    )
    .await;
    assert_eq!(supervisor.0, StatusCode::OK);

    let rows = mcp_audit_rows(&app).await;
    assert_eq!(rows.len(), 9, "{rows:#?}");
    let agent = staff_id(&app, "agent@test.example").await;
    let supervisor_id = staff_id(&app, "supervisor@test.example").await;
    assert!(
        rows.iter().all(|(_, subject, detail)| subject == case_id
            && detail.contains(" over http ")
            && detail.ends_with(": ok")),
        "{rows:#?}"
    );
    let by = |who: &str| rows.iter().filter(|(actor, _, _)| actor == who).count();
    assert_eq!((by(&agent), by(&supervisor_id)), (8, 1));
    for tool in [
        "get_customer",
        "list_orders",
        "list_charges",
        "list_refunds",
        "list_customer_history",
        "search_policy",
        "get_case",
        "get_run",
    ] {
        assert!(
            rows.iter().any(|(actor, _, detail)| *actor == agent
                && detail.starts_with(&format!("{tool} over http"))),
            "{tool}: {rows:#?}"
        );
    }
}

#[tokio::test]
async fn another_customers_order_or_charge_is_not_found_as_in_the_loop() {
    let app = spawn_app().await;
    let (ticket_id, _) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let charges = call(
        &app,
        "list_charges",
        json!({ "ticket_id": ticket_id, "order_id": "O-2001" }),
    )
    .await;
    assert_eq!(charges["isError"], true);
    assert_eq!(charges["structuredContent"]["error"], "not_found");
    let refunds = call(
        &app,
        "list_refunds",
        json!({ "ticket_id": ticket_id, "charge_id": "ch_2001a" }),
    )
    .await;
    assert_eq!(refunds["structuredContent"]["error"], "not_found");
}

/// Counts of every table a write could touch, and the provider's refunds.
async fn records(app: &TestApp) -> Vec<(String, i64)> {
    let mut counts = Vec::new();
    for table in [
        "tickets",
        "messages",
        "cases",
        "runs",
        "run_events",
        "approvals",
        "refund_intents",
    ] {
        let n: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) AS n FROM {table}"
        )))
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
        .get("n");
        counts.push((table.to_string(), n));
    }
    let versions: i64 =
        sqlx::query("SELECT CAST(COALESCE(SUM(version), 0) AS BIGINT) AS v FROM cases")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap()
            .get("v");
    counts.push(("case versions".into(), versions));
    let provider = app.provider_refunds("ch_1001b").await.len() as i64;
    counts.push(("provider refunds".into(), provider));
    counts
}

#[tokio::test]
async fn no_tool_changes_any_record_and_write_actions_are_not_tools() {
    let app = spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let before = records(&app).await;

    let (_, listed) = rpc(&app, Some(&app.agent_token), "tools/list", json!({})).await;
    for name in tool_names(&listed) {
        let mut arguments = json!({ "case_id": case_id });
        match name.as_str() {
            "list_charges" => arguments["order_id"] = json!("O-1001"),
            "list_refunds" => arguments["charge_id"] = json!("ch_1001b"),
            "search_policy" => arguments["query"] = json!("refund"),
            _ => {}
        }
        let result = call(&app, &name, arguments).await;
        assert_eq!(result["isError"], false, "{name}: {result}");
    }
    for write in [
        "approve",
        "submit_proposal",
        "escalate_to_human",
        "create_refund",
    ] {
        let (status, reply) = rpc(
            &app,
            Some(&app.supervisor_token),
            "tools/call",
            json!({ "name": write, "arguments": { "ticket_id": ticket_id, "fingerprint": case["fingerprint"] } }),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(reply["error"]["code"], -32602, "{write}: {reply}");
        assert!(reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("available tools: get_customer"));
    }
    app.drain().await;
    assert_eq!(records(&app).await, before);
    assert_eq!(app.case(case_id).await["status"], "awaiting_approval");
}

#[tokio::test]
async fn in_shadow_mode_the_run_stays_hidden_until_a_reviewer_decides() {
    let mut app = spawn_app().await;
    app.state.shadow_mode = true;
    app.router = web::router(app.state.clone());
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let case_id = case["id"].as_str().unwrap();
    let run = call(&app, "get_run", json!({ "case_id": case_id })).await;
    assert_eq!(run["isError"], true, "{run}");
    assert_eq!(run["structuredContent"]["error"], "hidden");
    let view = call(&app, "get_case", json!({ "case_id": case_id })).await;
    assert!(view["structuredContent"]["case"]["decision"].is_null());
}

#[tokio::test]
async fn a_run_of_another_case_is_not_found() {
    let app = spawn_app().await;
    let (_, first) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let (_, second) = app
        .open_ticket("C-200", "I want a refund for my plan")
        .await;
    let result = call(
        &app,
        "get_run",
        json!({ "case_id": first["id"], "run_id": second["run_id"] }),
    )
    .await;
    assert_eq!(
        result["structuredContent"]["error"], "not_found",
        "{result}"
    );
}

#[tokio::test]
async fn the_server_offers_the_current_stable_revision_and_hosts_that_initialize_still_connect() {
    let app = spawn_app().await;
    let (status, init) = rpc(
        &app,
        Some(&app.agent_token),
        "initialize",
        json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "test-host", "version": "1" } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "refund-desk");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    let meta = json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": {} } });
    // The 2026-07-28 revision: no handshake, the version on every request (SEP-2243 headers).
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let (status, discovered) = rpc_with(
        &app,
        Some(&app.agent_token),
        &headers,
        "server/discover",
        meta,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{discovered}");
    assert!(
        discovered
            .to_string()
            .contains(web::mcp::PROTOCOL_VERSION.as_str()),
        "{discovered}"
    );
}

#[tokio::test]
async fn a_stdio_call_runs_the_same_tool_and_is_audited_as_stdio_with_its_caller() {
    let app = spawn_app().await;
    let (ticket_id, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    let (outcome, staff) = app
        .mcp_as_supervisor("list_orders", json!({ "ticket_id": ticket_id }))
        .await;
    assert!(outcome.ok, "{outcome:?}");
    assert_eq!(outcome.content["orders"][0]["id"], "O-1001");
    let rows = mcp_audit_rows(&app).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, staff.id);
    assert_eq!(rows[0].1, case["id"].as_str().unwrap());
    assert!(rows[0].2.starts_with("list_orders over stdio"), "{rows:?}");
}

/// `list_customer_history` answers for the named ticket's own customer — their
/// other tickets with their cases, and the provider's refunds on their charges — over
/// MCP exactly as the loop's tool does; a second customer's tickets and refunds never
/// appear, a customer cannot be named, and each call is audited.
#[tokio::test]
async fn list_customer_history_reads_only_the_tickets_own_customer_and_is_audited() {
    let app = spawn_app().await;
    let (other_ticket, _) = app.refunded_ticket("C-400").await;
    app.refund_elsewhere("ch_6001a", 500).await;
    let (first_ticket, first_case) = app.refunded_ticket("C-100").await;
    let (ticket_id, _) = app.open_ticket("C-100", "Is everything settled now?").await;

    let history = call(
        &app,
        "list_customer_history",
        json!({ "ticket_id": ticket_id }),
    )
    .await;
    assert_eq!(history["isError"], false, "{history}");
    let content = &history["structuredContent"];
    assert_eq!(content["customer_id"], "C-100");
    assert_eq!(content["tickets_total"], 1, "{content:#}");
    assert_eq!(content["tickets"][0]["id"], first_ticket.as_str());
    assert_eq!(content["tickets"][0]["case_id"], first_case["id"]);
    assert_eq!(content["tickets"][0]["case_status_label"], "Refunded");
    assert_eq!(content["refunds_total"], 1, "{content:#}");
    let refund = &content["refunds"][0];
    assert_eq!(refund["charge"], "ch_1001b");
    assert_eq!(refund["amount"], "198.00");
    assert_eq!(refund["currency"], "CNY");
    assert_eq!(refund["status"], "succeeded");
    assert_eq!(content["notes"], json!([]));
    let text = content.to_string();
    for foreign in [
        other_ticket.as_str(),
        "C-400",
        "ch_4001",
        "C-600",
        "ch_6001",
    ] {
        assert!(!text.contains(foreign), "{foreign} in {text}");
    }

    // One implementation: the loop's tool answers the same for the same ticket.
    let ticket = desk::tickets::load_ticket(&app.state.db, &ticket_id)
        .await
        .unwrap()
        .unwrap();
    let env = ToolEnv {
        billing: &*app.state.billing,
        index: &app.state.index,
    };
    let direct = tools::execute(
        &env,
        &ticket,
        &ToolCall {
            id: "h1".into(),
            name: "list_customer_history".into(),
            arguments: json!({}),
        },
    )
    .await;
    assert_eq!(&direct.content, content);

    // Identity is the ticket's, never an argument (SPEC invariant 7).
    let named = call(
        &app,
        "list_customer_history",
        json!({ "ticket_id": ticket_id, "customer_id": "C-600" }),
    )
    .await;
    assert_eq!(named["isError"], true, "{named}");
    assert_eq!(named["structuredContent"]["error"], "invalid_arguments");
    assert_eq!(named["structuredContent"]["retryable"], false);
    assert!(named["structuredContent"]["hint"].is_string());

    let rows = mcp_audit_rows(&app).await;
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(rows
        .iter()
        .all(|(_, _, detail)| detail.starts_with("list_customer_history over http")));
    assert!(rows[1].2.ends_with(": invalid_arguments"), "{rows:#?}");
}

/// A long history is cut at the newest 20 tickets, with the full count and a
/// note saying it was cut.
#[tokio::test]
async fn list_customer_history_lists_at_most_the_newest_twenty_tickets_with_the_count() {
    let app = spawn_app().await;
    let tickets = app.many_tickets("C-100", 23).await;
    let newest = tickets.last().unwrap();
    let history = call(
        &app,
        "list_customer_history",
        json!({ "ticket_id": newest }),
    )
    .await;
    let content = &history["structuredContent"];
    assert_eq!(content["tickets_total"], 22, "{content:#}");
    let listed: Vec<&str> = content["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = tickets[2..22].iter().rev().map(String::as_str).collect();
    assert_eq!(listed, expected, "the newest twenty, newest first");
    assert_eq!(
        content["tickets"][0]["case_status_label"],
        "Being investigated"
    );
    assert_eq!(content["notes"], json!(["tickets: the newest 20 of 22"]));
}
