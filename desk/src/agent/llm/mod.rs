//! An OpenAI-compatible chat-completions client with tool calling: the [`Model`] used
//! when `LLM_BASE_URL` is configured.
//!
//! It sends the prompt built by [`super::context`], the read-only tools and two answer
//! tools (`submit_proposal`, `escalate_to_human`) that are not actions: they are how the
//! model ends its investigation. As a sub-agent's reader ([`reader`]) it sends
//! that reader's prompt, its tool subset and one answer tool, `submit_findings`
//! ([`super::findings::Findings`]). It maps the reply to a [`ModelTurn`] and never
//! panics on what a model writes: arguments that are not JSON become a string the harness's
//! validator answers with a structured `invalid_arguments` error; a proposal that does
//! not parse, a model that stops talking without answering, or a cut-off reply is an
//! `Err`, which the harness records as a `model_error` and counts against its budget.
//!
//! Transport: a timeout per request; 429, 5xx and connection failures are retried a
//! bounded number of times with exponential backoff (honouring `Retry-After` seconds,
//! capped); other 4xx are not retried. Timeouts are not retried here (the request
//! already used its whole time; the harness asks again on its next step). The API key
//! is sent as `Authorization: Bearer` only when set, and is never logged or printed.

pub mod reader;

use domain::backoff::Backoff;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use serde_json::{json, Value};

use harness::context::Prompt;

use super::context::{self, ContextBudget};
use super::{ModelContext, ModelReply, ModelTurn, ToolCall, Usage};

/// Name of the answer tool that ends a run with a proposal.
pub const SUBMIT_PROPOSAL: &str = "submit_proposal";
/// Name of the answer tool that hands the case to a human.
pub const ESCALATE_TO_HUMAN: &str = "escalate_to_human";
/// Name of the answer tool that ends a sub-agent's reading with its findings.
pub const SUBMIT_FINDINGS: &str = "submit_findings";

/// Tokens one answer may take unless configured: what the default [`ContextBudget`]
/// leaves of an 8k window once the prompt's sections are full.
pub const DEFAULT_MAX_TOKENS: u32 = 1_024;

/// An OpenAI-compatible chat-completions model.
pub struct LlmModel {
    client: reqwest::Client,
    endpoint: String,
    api_key: Option<String>,
    model: String,
    max_retries: u32,
    backoff: Duration,
    max_backoff: Duration,
    budget: ContextBudget,
    max_tokens: u32,
}

impl std::fmt::Debug for LlmModel {
    // Hand-written so the API key can never reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmModel")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl LlmModel {
    /// A client of `{base_url}/chat/completions` (e.g. `http://127.0.0.1:18081/v1`).
    /// `timeout` bounds each HTTP request. Defaults: 3 retries, 500 ms backoff doubling
    /// up to 20 s, [`ContextBudget::default`], [`DEFAULT_MAX_TOKENS`] per answer.
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        model: String,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let base = base_url.trim().trim_end_matches('/');
        let parsed = reqwest::Url::parse(base).context("LLM base url is not a valid url")?;
        if !matches!(parsed.scheme(), "http" | "https") {
            bail!("LLM base url must be http or https");
        }
        if model.trim().is_empty() {
            bail!("LLM model name is empty");
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .context("building the LLM http client")?;
        Ok(LlmModel {
            client,
            endpoint: format!("{base}/chat/completions"),
            api_key: api_key.filter(|k| !k.trim().is_empty()),
            model,
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            budget: ContextBudget::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
        })
    }

    /// How many times a retryable failure (429, 5xx, connection error) is retried.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// First backoff (doubled on each retry) and the cap on any wait, including one
    /// asked for by `Retry-After`.
    pub fn with_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.backoff = first;
        self.max_backoff = max.max(first);
        self
    }

    /// Token budgets for the prompt.
    pub fn with_budget(mut self, budget: ContextBudget) -> Self {
        self.budget = budget;
        self
    }

    /// The most tokens one answer may take (`max_tokens` in each request). A model that
    /// runs on past it is cut off, which is an error the harness counts against its
    /// budget — instead of a small model rambling until the request times out.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The model name sent in each request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The request body for one turn (public so tests and traces can show it).
    pub fn request_body(&self, ctx: &ModelContext<'_>) -> Value {
        self.body(ctx, &super::prompt::PROMPT, answer_tools())
    }

    /// A request body: `prompt`'s messages, the read tools and the answer tools.
    fn body(&self, ctx: &ModelContext<'_>, prompt: &Prompt<'_>, answers: Vec<Value>) -> Value {
        let mut tools: Vec<Value> = ctx
            .tools
            .iter()
            .map(|d| {
                json!({ "type": "function",
                        "function": { "name": d.name, "description": d.description, "parameters": d.parameters } })
            })
            .collect();
        tools.extend(answers);
        if !context::tools_fit(&tools, &self.budget) {
            tracing::warn!(model = %self.model, "tool declarations exceed their token budget");
        }
        json!({
            "model": self.model,
            "messages": context::build_messages(prompt, ctx, &self.budget),
            "tools": tools,
            // OpenAI's default when tools are sent, but said outright: llama.cpp's
            // Python server (chatml-function-calling) drops the tools from the prompt
            // when `tool_choice` is absent, so the model never sees them.
            "tool_choice": "auto",
            "max_tokens": self.max_tokens,
        })
    }

    /// Asks the model for its next turn and reports the provider's token usage.
    pub async fn reply(&self, ctx: &ModelContext<'_>) -> anyhow::Result<ModelReply> {
        let body = self.request_body(ctx);
        let response = self.post(&body).await?;
        parse_response(&response)
    }

    /// One plain chat completion (no tools): `system` and `user` in, the reply's text
    /// out, at most `max_tokens` long. For the console's machine translations
    /// (a message's translation for staff); a reply cut off, filtered or empty is an `Err`.
    pub async fn complete(
        &self,
        system: &str,
        user: &str,
        max_tokens: u32,
    ) -> anyhow::Result<String> {
        let body = json!({
            "model": self.model,
            "messages": [
                { "role": "system", "content": system },
                { "role": "user", "content": user },
            ],
            "max_tokens": max_tokens,
        });
        let response = self.post(&body).await?;
        let choice = response["choices"]
            .get(0)
            .ok_or_else(|| anyhow!("model provider returned no choices"))?;
        match choice["finish_reason"].as_str().unwrap_or_default() {
            "length" => bail!("model output was cut off at its token limit"),
            "content_filter" => bail!("model output was withheld by the provider's content filter"),
            _ => {}
        }
        let text = choice["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .trim();
        if text.is_empty() {
            bail!("model answered with no text");
        }
        Ok(text.to_string())
    }

    /// POSTs with bounded retries; returns the decoded JSON of a 2xx response.
    async fn post(&self, body: &Value) -> anyhow::Result<Value> {
        let mut attempt = 0u32;
        loop {
            let mut request = self.client.post(&self.endpoint).json(body);
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let failure = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = retry_after(response.headers());
                    if status.is_success() {
                        let text = response
                            .text()
                            .await
                            .context("reading the model provider's response")?;
                        return serde_json::from_str(&text).map_err(|_| {
                            anyhow!("model provider returned a response that is not JSON")
                        });
                    }
                    let text = response.text().await.unwrap_or_default();
                    let message = error_message(status, &text);
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    if !retryable {
                        bail!(message);
                    }
                    (message, retry_after)
                }
                Err(e) if e.is_timeout() => {
                    bail!("model provider did not answer in time (timeout)")
                }
                Err(e) if e.is_connect() || e.is_request() => {
                    // reqwest errors name the url, never headers: safe to show.
                    (format!("cannot reach the model provider: {e}"), None)
                }
                Err(e) => bail!("model provider request failed: {e}"),
            };
            let (message, retry_after) = failure;
            if attempt >= self.max_retries {
                bail!("{message} (after {} attempts)", attempt + 1);
            }
            let wait = self.wait_before_retry(attempt, retry_after);
            tracing::warn!(model = %self.model, attempt = attempt + 1, wait_ms = wait.as_millis() as u64,
                error = %message, "model provider call failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    fn wait_before_retry(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exponential = Backoff::new(self.backoff, self.max_backoff).delay(attempt);
        retry_after
            .unwrap_or(exponential)
            .max(self.backoff)
            .min(self.max_backoff)
    }
}

/// The live loop runs this model with sub-agents (`investigation::children`).
impl crate::agent::Model for LlmModel {
    fn sub_agent_server(&self) -> Option<&LlmModel> {
        Some(self)
    }
}

impl harness::Model<crate::agent::Proposal> for LlmModel {
    fn name(&self) -> String {
        format!("llm:{}", self.model)
    }

    fn next_turn<'a>(&'a self, ctx: &'a ModelContext<'a>) -> harness::ModelCall<'a, ModelTurn> {
        Box::pin(async move { self.reply(ctx).await.map(|r| r.turn) })
    }

    /// The turn with the `usage` object of the response (zero when the server sends
    /// none, as some local servers do).
    fn next_reply<'a>(&'a self, ctx: &'a ModelContext<'a>) -> harness::ModelCall<'a, ModelReply> {
        Box::pin(self.reply(ctx))
    }
}

/// `Retry-After` in seconds (the HTTP-date form is ignored: exponential backoff).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// The provider's `{"error":{"message","type","code"}}`, or the start of the body.
fn error_message(status: reqwest::StatusCode, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().map(|v| &v["error"]);
    let detail = match error {
        Some(Value::Object(e)) => {
            let mut detail = e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_string();
            for key in ["type", "code"] {
                match e.get(key) {
                    Some(Value::String(s)) => detail.push_str(&format!(" ({key}: {s})")),
                    Some(Value::Number(n)) => detail.push_str(&format!(" ({key}: {n})")),
                    _ => {}
                }
            }
            detail
        }
        Some(Value::String(s)) => s.clone(),
        _ => body.chars().take(300).collect(),
    };
    format!("model provider returned {status}: {detail}")
}

/// The two answer tools. They are not actions: the harness turns them into a
/// proposal for the policy engine, or an escalation.
pub fn answer_tools() -> Vec<Value> {
    let string = |max: u32| json!({ "type": "string", "maxLength": max });
    vec![
        json!({ "type": "function", "function": {
            "name": SUBMIT_PROPOSAL,
            "description": "End the investigation with a proposal for the policy engine and a human approver. It moves no money. Cite the tool call and record for every fact.",
            "parameters": {
                "type": "object",
                "properties": {
                    "request": { "type": "string", "enum": ["duplicate_charge", "overcharge", "cancellation", "authorization_hold", "unclear"] },
                    "order_id": { "type": ["string", "null"], "maxLength": 64, "description": "The order the request is about, exactly as list_orders returned it; null when the customer did not say and the records do not settle it. The workflow resolves the order from the conversation and the records itself and uses this only when they settle nothing." },
                    "reason_code": string(64),
                    "refunds": { "type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "charge_id": string(64),
                            "amount": { "type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$", "description": "Decimal amount, e.g. \"198.00\"." },
                            "currency": { "type": "string", "pattern": "^[A-Z]{3}$" }
                        },
                        "required": ["charge_id", "amount", "currency"],
                        "additionalProperties": false
                    } },
                    "evidence": { "type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "call_id": { "type": "string", "description": "The id of the tool call that returned the record." },
                            "record_id": { "type": "string", "description": "The record's id as the tool returned it." }
                        },
                        "required": ["call_id", "record_id"],
                        "additionalProperties": false
                    } },
                    "citations": { "type": "array", "items": { "type": "string", "description": "doc@version#section from search_policy." } },
                    "summary": string(2000)
                },
                "required": ["request", "reason_code", "refunds", "evidence", "citations", "summary"],
                "additionalProperties": false
            }
        } }),
        json!({ "type": "function", "function": {
            "name": ESCALATE_TO_HUMAN,
            "description": "Hand the case to a human when the records or the policy do not settle it.",
            "parameters": {
                "type": "object",
                "properties": { "reason": string(1000) },
                "required": ["reason"],
                "additionalProperties": false
            }
        } }),
    ]
}

/// Maps a chat-completions response to a turn.
pub fn parse_response(response: &Value) -> anyhow::Result<ModelReply> {
    let (calls, usage) = completion_calls(response, "a proposal")?;
    // An answer ends the turn; read calls made alongside it would never be seen. An
    // escalation wins over a proposal: when a model says both, a human should look.
    let turn = if let Some(call) = calls.iter().find(|c| c.name == ESCALATE_TO_HUMAN) {
        ModelTurn::HandOff {
            reason: escalation_reason(&call.arguments),
        }
    } else if let Some(call) = calls.iter().find(|c| c.name == SUBMIT_PROPOSAL) {
        ModelTurn::Answer {
            answer: answer(SUBMIT_PROPOSAL, &call.arguments)?,
        }
    } else {
        ModelTurn::ToolCalls { calls }
    };
    Ok(ModelReply { turn, usage })
}

/// The tool calls of a completion and its usage; a reply without calls (the model
/// stopped without `answer`), cut off or filtered is an error.
fn completion_calls(response: &Value, answer: &str) -> anyhow::Result<(Vec<ToolCall>, Usage)> {
    let usage = response
        .get("usage")
        .filter(|u| u.is_object())
        .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
        .unwrap_or_default();
    let choice = response["choices"]
        .get(0)
        .ok_or_else(|| anyhow!("model provider returned no choices"))?;
    let finish_reason = choice["finish_reason"].as_str().unwrap_or_default();
    if finish_reason == "length" {
        bail!("model output was cut off at its token limit (finish_reason: length)");
    }
    if finish_reason == "content_filter" {
        bail!("model output was withheld by the provider's content filter");
    }
    let message = &choice["message"];
    let raw_calls = message["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if raw_calls.is_empty() {
        let text = message["content"].as_str().unwrap_or_default().trim();
        let shown: String = text.chars().take(120).collect();
        bail!(
            "model stopped without {answer} (finish_reason: {}; text: {shown:?})",
            if finish_reason.is_empty() {
                "none"
            } else {
                finish_reason
            }
        );
    }
    let calls = raw_calls
        .iter()
        .enumerate()
        .map(|(i, c)| tool_call(i, c))
        .collect();
    Ok((calls, usage))
}

/// One wire tool call. Arguments arrive as a JSON string; a string that is not JSON
/// is kept as a string value so the tool validator can tell the model what is wrong.
fn tool_call(index: usize, raw: &Value) -> ToolCall {
    let function = &raw["function"];
    let id = raw["id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("call_{index}"));
    let name = function["name"].as_str().unwrap_or_default().to_string();
    let arguments = match &function["arguments"] {
        Value::String(text) if text.trim().is_empty() => json!({}),
        Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        Value::Null => json!({}),
        other => other.clone(),
    };
    ToolCall {
        id,
        name,
        arguments,
    }
}

/// The arguments of an answer tool as its answer type.
fn answer<A: serde::de::DeserializeOwned>(tool: &str, arguments: &Value) -> anyhow::Result<A> {
    if let Value::String(_) = arguments {
        bail!("{tool} arguments are not valid JSON");
    }
    serde_json::from_value(arguments.clone())
        .map_err(|e| anyhow!("{tool} arguments do not match its schema: {e}"))
}

fn escalation_reason(arguments: &Value) -> String {
    let reason = match arguments {
        Value::String(raw) => raw.clone(),
        other => other["reason"].as_str().unwrap_or_default().to_string(),
    };
    let reason: String = reason.trim().chars().take(1000).collect();
    if reason.is_empty() {
        "the model asked for a human".to_string()
    } else {
        reason
    }
}

#[cfg(test)]
mod tests;
