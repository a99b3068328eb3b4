//! The investigation tools over the Model Context Protocol, for the agent hosts support
//! engineers already use: `refund-agent mcp` (stdio) and `POST /mcp` (streamable HTTP),
//! both on the official SDK (`rmcp`) at protocol revision [`PROTOCOL_VERSION`].
//!
//! One implementation, two protocol surfaces. The tools are the agent loop's own
//! (`agent::tools`: the same declarations, JSON Schemas, argument validation, records
//! and structured errors with hints), plus read-only views of a case and of its run.
//! Each schema gains one scope argument, `ticket_id` or `case_id`: every call names the
//! ticket or case it reads, and then sees exactly what the loop sees for that ticket.
//!
//! Identity and scope come from the staff bearer token — the HTTP `Authorization`
//! header on every request, or for stdio [`TOKEN_ENV`] resolved once at start — never
//! from arguments (docs/spec/invariants.md #7); customer tokens are refused (invariant 12). Every
//! tool is `readOnlyHint: true` and none writes business state: nothing here can move
//! money. The one write is the audit row naming the caller of each call.
//!
//! One file because it is one surface: the server, its tool list (the agent's declarations
//! plus the case and run readers), the token check and the refusals answer the same MCP
//! client.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

use crate::access::{Caller, Capability};
use crate::error::{status_of, AppResult};
use desk::agent::tools::{self, ToolDeclaration, ToolEnv};
use desk::agent::{ToolCall, ToolOutcome};
use desk::auth::{self, Principal, Staff};
use desk::cases::{self, Case};
use desk::error::{DomainError, ErrorCode};
use desk::state::Services;
use desk::tickets::{self, Ticket};

/// The environment variable `refund-agent mcp` reads its staff token from.
pub const TOKEN_ENV: &str = "REFUND_DESK_TOKEN";

/// The current stable MCP revision (rmcp's newest, per-request metadata, no
/// handshake). Hosts that still send `initialize` negotiate an older revision.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The longest ticket, case or run id a call may name (as the loop's own tools bound ids).
const MAX_ID_CHARS: usize = 64;

/// Which surface a call came through, for the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Stdio,
    Http,
}

impl Surface {
    fn as_str(self) -> &'static str {
        match self {
            Surface::Stdio => "stdio",
            Surface::Http => "http",
        }
    }
}

/// Why a credential may not use the tools.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("a staff bearer token is required: send `Authorization: Bearer <token>` over HTTP, or set {TOKEN_ENV} for stdio (`refund-agent staff token --email E` prints one)")]
    Missing,
    #[error("the bearer token is unknown, revoked or expired: issue a new one with `refund-agent staff token --email E`")]
    Invalid,
    #[error("customer tokens are refused: the investigation tools are for staff")]
    Customer,
    #[error("{0}: the investigation tools need the right to read cases")]
    Role(String),
    #[error(transparent)]
    Store(#[from] DomainError),
}

impl Refusal {
    /// The refusal as a JSON-RPC error at the HTTP status (401, 403) that says it, so an
    /// MCP client shows its message rather than a bare status; `data.code` is the API's
    /// error code.
    fn into_response(self, id: Value) -> Response {
        let (status, rpc_code, code) = match &self {
            Refusal::Missing | Refusal::Invalid => {
                (StatusCode::UNAUTHORIZED, -32001, ErrorCode::Unauthorized)
            }
            Refusal::Customer | Refusal::Role(_) => {
                (StatusCode::FORBIDDEN, -32003, ErrorCode::Forbidden)
            }
            Refusal::Store(e) => (status_of(e), -32603, e.code()),
        };
        let message = match &self {
            Refusal::Store(e) => e.public_message(),
            other => other.to_string(),
        };
        let body = json!({ "jsonrpc": "2.0", "id": id,
                           "error": { "code": rpc_code, "message": message, "data": { "code": code } } });
        let mut response = (status, axum::Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"refund-desk\""),
            );
        }
        response
    }
}

/// The staff member a bearer token names. Customers' tokens and unknown tokens are
/// refused (docs/spec/invariants.md #12: identity from the credential alone).
pub async fn staff_for_token(state: &Services, token: Option<&str>) -> Result<Staff, Refusal> {
    let token = token
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(Refusal::Missing)?;
    match auth::resolve(&state.db, token, state.clock.now_ms()).await? {
        Some(resolved) if resolved.csrf_token.is_some() => Err(Refusal::Invalid),
        Some(resolved) => match resolved.principal {
            Principal::Staff(staff) if !Capability::ReadCases.allows(staff.role) => Err(
                Refusal::Role(format!("a {} may not read cases", staff.role.as_str())),
            ),
            Principal::Staff(staff) => Ok(staff),
            Principal::Customer { .. } => Err(Refusal::Customer),
            Principal::Service(_) => Err(Refusal::Role(
                "a service token may use its own routes only".into(),
            )),
        },
        None => Err(Refusal::Invalid),
    }
}

/// The `/mcp` route: the streamable HTTP transport, stateless (no session pins a client
/// to one instance, so any `serve` behind the load balancer answers any request:
/// docs/spec/interfaces.md, "Storage and scale"). Who may call it is `web::access`'s rule (read cases); refusals come back through
/// [`refused_by_access`] as JSON-RPC errors.
pub fn service(
    state: &Services,
) -> StreamableHttpService<InvestigationServer, NeverSessionManager> {
    let for_service = state.clone();
    // The SDK's Host allowlist guards unauthenticated local servers against DNS
    // rebinding. This endpoint takes no cookies, only an `Authorization` header a
    // rebinding page can neither know nor make a browser attach, so it gains nothing
    // there, and a loopback-only list would refuse every deployment behind its own name.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts()
        .with_max_request_body_bytes(64 * 1024);
    StreamableHttpService::new(
        move || {
            Ok(InvestigationServer::new(
                for_service.clone(),
                Surface::Http,
                None,
            ))
        },
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// The access layer's refusal of an MCP request (no staff token: 401; a customer's or a
/// role that may not read cases: 403), answered with the request's id when its body
/// names one (clients match on it).
pub async fn refused_by_access(refusal: &crate::access::Refusal, request: Request) -> Response {
    use crate::access::Refusal as Access;
    let refusal = match (refusal, crate::extract::bearer_header(request.headers())) {
        (Access::SignIn, None) => Refusal::Missing,
        (Access::SignIn, Some(_)) => Refusal::Invalid,
        (Access::Forbidden(_), _) if is_customer(&request) => Refusal::Customer,
        (Access::Forbidden(why), _) => Refusal::Role(why.clone()),
    };
    tracing::warn!(reason = %refusal, "MCP request refused");
    let id = axum::body::to_bytes(request.into_body(), 64 * 1024)
        .await
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .map_or(Value::Null, |message| message["id"].clone());
    refusal.into_response(id)
}

fn is_customer(request: &Request) -> bool {
    matches!(
        request.extensions().get::<Caller>(),
        Some(Caller::Customer { .. })
    )
}

/// `refund-agent mcp`: the tools on stdin/stdout for the staff member `token` names
/// (resolved once, here), until the client closes stdin.
pub async fn serve_stdio(state: Services, token: Option<&str>) -> anyhow::Result<()> {
    let staff = staff_for_token(&state, token)
        .await
        .map_err(|refusal| anyhow::anyhow!("{refusal}"))?;
    tracing::info!(staff = %staff.email, "MCP investigation tools on stdio");
    let server = InvestigationServer::new(state, Surface::Stdio, Some(staff));
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("MCP on stdio: {e}"))?;
    running.waiting().await?;
    Ok(())
}

/// The MCP server: the investigation tools for one caller.
#[derive(Clone)]
pub struct InvestigationServer {
    state: Services,
    surface: Surface,
    /// stdio: the staff member resolved at start. HTTP: `None`; each request carries
    /// its own, put there by `web::gate::check`.
    caller: Option<Staff>,
}

impl InvestigationServer {
    pub fn new(state: Services, surface: Surface, caller: Option<Staff>) -> Self {
        InvestigationServer {
            state,
            surface,
            caller,
        }
    }

    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Staff, McpError> {
        self.caller
            .clone()
            .or_else(|| {
                context.extensions.get::<Parts>().and_then(|parts| {
                    match parts.extensions.get::<Caller>() {
                        Some(Caller::Staff { staff, .. }) => Some(staff.clone()),
                        _ => None,
                    }
                })
            })
            .ok_or_else(|| McpError::invalid_request(Refusal::Missing.to_string(), None))
    }
}

impl ServerHandler for InvestigationServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(PROTOCOL_VERSION)
            .with_server_info(Implementation::new(
                "refund-desk",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Read-only investigation tools of the refund desk: the customer, orders, payment \
                 provider charges and refunds, the customer's other tickets and past refunds, and \
                 policy passages of one ticket, and the case and agent run on it. Every call names the ticket (ticket_id) or the case (case_id). \
                 Nothing here can change a record or move money.",
            )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL_VERSION))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(mcp_tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        mcp_tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = self.caller(&context)?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let outcome = call(&self.state, &caller, self.surface, &request.name, arguments)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "MCP call could not be audited");
                McpError::internal_error("the call could not be recorded; try again", None)
            })?;
        match outcome {
            Called::Outcome(o) if o.ok => Ok(CallToolResult::structured(o.content).into()),
            Called::Outcome(o) => Ok(CallToolResult::structured_error(o.content).into()),
            // An unknown tool is a protocol error (the MCP spec's rule), with the names
            // the caller may use.
            Called::UnknownTool(hint) => Err(McpError::invalid_params(hint, None)),
        }
    }
}

/// The loop's declarations plus the two views only staff get, in the order listed.
fn declarations() -> Vec<ToolDeclaration> {
    let mut all = tools::declarations();
    all.push(ToolDeclaration {
        name: GET_CASE,
        description: "The case as the console shows it: status, proposal, the policy decision with \
                      its rule trace, evidence, fingerprint, refunds made, the customer's other tickets \
                      and past refunds, and the ticket's messages.",
        parameters: json!({ "type": "object", "properties": {}, "required": [], "additionalProperties": false }),
        read_only: true,
    });
    all.push(ToolDeclaration {
        name: GET_RUN,
        description: "The agent run on the case (its current one, or run_id if it belongs to the \
                      case): status, steps, its parent and sub-agent runs (each readable by run_id), and the \
                      whole event log, each tool call with its result.",
        parameters: json!({ "type": "object", "properties": { "run_id": { "type": "string", "maxLength": MAX_ID_CHARS } },
                            "required": [], "additionalProperties": false }),
        read_only: true,
    });
    all
}

const GET_CASE: &str = "get_case";
const GET_RUN: &str = "get_run";

/// Every tool as MCP lists it: the declaration's schema with the scope arguments added,
/// read-only and idempotent.
fn mcp_tools() -> Vec<Tool> {
    declarations()
        .into_iter()
        .map(|d| {
            let annotations = ToolAnnotations::with_title(d.name.replace('_', " "))
                .read_only(true)
                .destructive(false)
                .idempotent(true);
            Tool::new(d.name, d.description, input_schema(&d)).with_annotations(annotations)
        })
        .collect()
}

fn input_schema(declaration: &ToolDeclaration) -> JsonObject {
    let mut schema = declaration
        .parameters
        .as_object()
        .cloned()
        .unwrap_or_default();
    let scope =
        |what: &str| json!({ "type": "string", "maxLength": MAX_ID_CHARS, "description": what });
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "ticket_id".into(),
            scope("the ticket this call is about (tkt_…); name it or case_id, not both"),
        );
        properties.insert(
            "case_id".into(),
            scope("the case this call is about (case_…); name it or ticket_id, not both"),
        );
    }
    schema
}

/// What a call came to.
#[derive(Debug)]
pub enum Called {
    Outcome(ToolOutcome),
    /// No tool has that name; the hint lists those that do.
    UnknownTool(String),
}

/// One call of tool `name` by `caller`: the scope resolved, the tool run, and the call
/// audited with its caller, whatever its outcome. Errs only when the audit row cannot
/// be written (then nothing read is returned).
pub async fn call(
    state: &Services,
    caller: &Staff,
    surface: Surface,
    name: &str,
    arguments: Value,
) -> AppResult<Called> {
    // docs/spec/roles.md: each tool's capability, checked in the access table. A known
    // tool the role may not use is refused like any tool error, and audited.
    let known = declarations().iter().any(|d| d.name == name);
    let (subject, called) = if known && !crate::access::tool_allowed(name, caller.role) {
        let why = format!("a {} may not use {name}", caller.role.as_str());
        (
            String::new(),
            Called::Outcome(tools::error("forbidden", &why)),
        )
    } else {
        run(state, name, &arguments).await
    };
    let outcome = match &called {
        Called::Outcome(o) if o.ok => "ok".to_string(),
        Called::Outcome(o) => o.content["error"].as_str().unwrap_or("error").to_string(),
        Called::UnknownTool(_) => "unknown_tool".to_string(),
    };
    let mut detail = format!("{name} over {} {arguments}: {outcome}", surface.as_str());
    if detail.chars().count() > 500 {
        detail = detail.chars().take(500).collect::<String>() + "…";
    }
    desk::audit::record_alone(
        &state.db,
        &caller.id,
        "mcp_tool_call",
        &subject,
        &detail,
        state.clock.now_ms(),
    )
    .await?;
    Ok(called)
}

/// Runs a call; returns the audit subject (the case, or the id the call named) and
/// what it came to.
async fn run(state: &Services, name: &str, arguments: &Value) -> (String, Called) {
    let declarations = declarations();
    let Some(declaration) = declarations.iter().find(|d| d.name == name) else {
        let names: Vec<_> = declarations.iter().map(|d| d.name).collect();
        let hint = format!(
            "there is no tool '{name}'; available tools: {}",
            names.join(", ")
        );
        return (String::new(), Called::UnknownTool(hint));
    };
    let (named, rest) = match split_scope(arguments) {
        Ok(split) => split,
        Err(e) => return (String::new(), Called::Outcome(e)),
    };
    let scope = match resolve(state, &named).await {
        Ok(scope) => scope,
        Err(e) => return (named.id().to_string(), Called::Outcome(e)),
    };
    let subject = scope
        .case
        .as_ref()
        .map_or(named.id(), |c| &c.id)
        .to_string();
    let outcome = match declaration.name {
        GET_CASE | GET_RUN => match tools::validate(declaration, &rest) {
            Err(problem) => invalid(&format!("{problem}; see the tool's JSON Schema")),
            Ok(()) if declaration.name == GET_CASE => case_view(state, &scope).await,
            Ok(()) => run_view(state, &scope, rest["run_id"].as_str()).await,
        },
        _ => {
            let env = ToolEnv {
                billing: &*state.billing,
                index: &state.index,
            };
            let call = ToolCall {
                id: store::new_id("mcp"),
                name: name.to_string(),
                arguments: rest,
            };
            tools::execute(&env, &scope.ticket, &call).await
        }
    };
    (subject, Called::Outcome(outcome))
}

/// The ticket or case a call names.
enum Named {
    Ticket(String),
    Case(String),
}

impl Named {
    fn id(&self) -> &str {
        match self {
            Named::Ticket(id) | Named::Case(id) => id,
        }
    }
}

fn invalid(hint: &str) -> ToolOutcome {
    tools::error("invalid_arguments", hint)
}

/// Takes the scope out of the arguments: exactly one of `ticket_id` and `case_id`, a
/// string of at most [`MAX_ID_CHARS`]. The rest goes to the tool's own validation.
fn split_scope(arguments: &Value) -> Result<(Named, Value), ToolOutcome> {
    let Some(object) = arguments.as_object() else {
        return Err(invalid("arguments must be a JSON object"));
    };
    let mut rest = object.clone();
    let ticket = rest.remove("ticket_id");
    let case = rest.remove("case_id");
    let (key, value, named): (_, _, fn(String) -> Named) = match (ticket, case) {
        (Some(v), None) => ("ticket_id", v, Named::Ticket),
        (None, Some(v)) => ("case_id", v, Named::Case),
        (None, None) => {
            return Err(invalid(
                "name the ticket (ticket_id) or the case (case_id) this call is about",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(invalid("name either ticket_id or case_id, not both"));
        }
    };
    let id = value
        .as_str()
        .map(str::trim)
        .filter(|id| !id.is_empty() && id.chars().count() <= MAX_ID_CHARS)
        .ok_or_else(|| {
            invalid(&format!(
                "argument '{key}' must be a non-empty string of at most {MAX_ID_CHARS} characters"
            ))
        })?;
    Ok((named(id.to_string()), Value::Object(rest)))
}

/// What a call may read: one ticket and its case.
struct Scope {
    ticket: Ticket,
    case: Option<Case>,
}

async fn resolve(state: &Services, named: &Named) -> Result<Scope, ToolOutcome> {
    let unknown = |what: &str, id: &str| {
        tools::error(
            "not_found",
            &format!("there is no {what} '{id}'; ticket ids look like tkt_…, case ids like case_… (the console's queue lists them)"),
        )
    };
    let (ticket_id, case) = match named {
        Named::Ticket(id) => (id.clone(), None),
        Named::Case(id) => {
            let case = cases::load_case(&state.db, id)
                .await
                .map_err(tools::internal)?
                .ok_or_else(|| unknown("case", id))?;
            (case.ticket_id.to_string(), Some(case))
        }
    };
    let ticket = tickets::load_ticket(&state.db, &ticket_id)
        .await
        .map_err(tools::internal)?
        .ok_or_else(|| unknown("ticket", &ticket_id))?;
    let case = match case {
        Some(case) => Some(case),
        None => cases::case_for_ticket(&state.db, &ticket.id)
            .await
            .map_err(tools::internal)?,
    };
    Ok(Scope { ticket, case })
}

fn ok(content: Value) -> ToolOutcome {
    ToolOutcome { ok: true, content }
}

fn no_case(scope: &Scope) -> ToolOutcome {
    tools::error(
        "not_found",
        &format!("ticket '{}' has no case yet", scope.ticket.id),
    )
}

/// `get_case`: the staff view of `GET /api/v1/cases/{id}` and the ticket's messages.
async fn case_view(state: &Services, scope: &Scope) -> ToolOutcome {
    let Some(case) = &scope.case else {
        return no_case(scope);
    };
    let view = desk::views::full_case_view(&state.db, case).await;
    let messages = tickets::messages(&state.db, &scope.ticket.id).await;
    match (view, messages) {
        (Ok(view), Ok(messages)) => ok(json!({ "case": view, "messages": messages })),
        (Err(e), _) | (_, Err(e)) => tools::internal(e),
    }
}

/// `get_run`: the case's run and its event log — hidden, as on the console, while a
/// shadow-mode reviewer has not decided the case (no anchoring on the agent's side).
async fn run_view(state: &Services, scope: &Scope, run_id: Option<&str>) -> ToolOutcome {
    let Some(case) = &scope.case else {
        return no_case(scope);
    };
    let Some(run_id) = run_id.or(case.run_id.as_deref()) else {
        return tools::error("not_found", "the case has no agent run");
    };
    match desk::shadow_pairs::pending(&state.db, &case.id).await {
        Ok(false) => {}
        Ok(true) => {
            return tools::error(
                "hidden",
                "shadow mode: the agent's run is hidden until a reviewer decides this case by hand",
            )
        }
        Err(e) => return tools::internal(e),
    }
    let run = match desk::runs::load_run(&state.db, run_id).await {
        Ok(Some(run)) if case.id == *run.case_id => run,
        Ok(_) => {
            return tools::error(
                "not_found",
                &format!(
                    "case '{}' has no run '{run_id}'; omit run_id for its current run",
                    case.id
                ),
            )
        }
        Err(e) => return tools::internal(e),
    };
    let family = tokio::try_join!(
        desk::runs::events(&state.db, &run.id),
        desk::runs::parent_of(&state.db, &run.id),
        desk::runs::children(&state.db, &run.id),
    );
    match family {
        // A run on the LLM path names its sub-agents' runs (each readable by `run_id`),
        // and a sub-agent's run its parent, as the trace page links them.
        Ok((events, parent_run_id, children)) => ok(json!({
            "run": { "id": run.id, "case_id": run.case_id, "status": run.status,
                     "steps": run.steps, "tool_calls": run.tool_calls,
                     "parent_run_id": parent_run_id, "children": children },
            "events": events,
        })),
        Err(e) => tools::internal(e),
    }
}
