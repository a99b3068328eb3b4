//! The tool runtime: declarations with a JSON Schema (sent to the model and used to
//! check its arguments), structured errors the model can act on, read-only marking.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use std::future::Future;
use std::pin::Pin;

/// A boxed future, as trait objects return them (models, tools, logs).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// A tool's answer as the model sees it: a result, or a structured error with a hint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub ok: bool,
    pub content: Value,
}

/// A tool call and its outcome, in the order they happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    pub call: ToolCall,
    pub outcome: ToolOutcome,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolDeclaration {
    pub name: &'static str,
    pub description: &'static str,
    /// The arguments' JSON Schema (the subset [`validate`] checks).
    pub parameters: Value,
    /// Whether calling it changes nothing. Not sent to the model.
    #[serde(skip)]
    pub read_only: bool,
}

/// A structured tool error: what went wrong, a hint the caller can act on, and whether
/// the same call may succeed if tried again (only a transient failure may).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub code: String,
    pub hint: String,
    pub retryable: bool,
}

impl ToolError {
    /// A failure the same call will meet again (a record that is not there, bad input).
    pub fn permanent(code: &str, hint: &str) -> Self {
        ToolError {
            code: code.to_string(),
            hint: hint.to_string(),
            retryable: false,
        }
    }

    /// A transient failure: the same call may succeed later.
    pub fn transient(code: &str, hint: &str) -> Self {
        ToolError {
            retryable: true,
            ..ToolError::permanent(code, hint)
        }
    }

    pub fn outcome(&self) -> ToolOutcome {
        ToolOutcome {
            ok: false,
            content: json!({ "error": self.code, "hint": self.hint, "retryable": self.retryable }),
        }
    }
}

/// The error codes of a call the harness refused before any tool ran; they count
/// against [`crate::Limits::invalid_tool_calls`].
pub const UNKNOWN_TOOL: &str = "unknown_tool";
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";

pub trait Tool: Send + Sync {
    fn declaration(&self) -> ToolDeclaration;

    /// Runs the call; `arguments` already fit the declaration's schema.
    fn run<'a>(&'a self, arguments: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// The tools one run may call.
#[derive(Default)]
pub struct Toolset<'a> {
    tools: Vec<Box<dyn Tool + 'a>>,
    declarations: Vec<ToolDeclaration>,
}

impl<'a> Toolset<'a> {
    pub fn new() -> Self {
        Toolset::default()
    }

    pub fn with(mut self, tool: impl Tool + 'a) -> Self {
        self.declarations.push(tool.declaration());
        self.tools.push(Box::new(tool));
        self
    }

    /// What the model is offered, in order.
    pub fn declarations(&self) -> &[ToolDeclaration] {
        &self.declarations
    }

    /// Names of tools that are not read-only (a product that must not let its model
    /// act checks this is empty).
    pub fn writers(&self) -> Vec<&'static str> {
        self.declarations
            .iter()
            .filter(|d| !d.read_only)
            .map(|d| d.name)
            .collect()
    }

    /// A version of the tools' schemas as the model is offered them: changes whenever a
    /// name, description or parameter schema does (runs record it beside the prompt's).
    pub fn schema_version(&self) -> String {
        schema_version(&self.declarations)
    }

    /// Only the named tools (a sub-agent's subset); unknown names are ignored.
    pub fn subset(self, names: &[&str]) -> Self {
        let (tools, declarations) = self
            .tools
            .into_iter()
            .zip(self.declarations)
            .filter(|(_, d)| names.contains(&d.name))
            .unzip();
        Toolset {
            tools,
            declarations,
        }
    }

    /// Runs one call: an unknown tool or arguments that do not fit its schema come back
    /// as a structured error with a hint, never as a crash.
    pub async fn execute(&self, call: &ToolCall) -> ToolOutcome {
        let Some(i) = self.declarations.iter().position(|d| d.name == call.name) else {
            let names: Vec<_> = self.declarations.iter().map(|d| d.name).collect();
            let hint = format!(
                "there is no tool '{}'; available tools: {}",
                call.name,
                names.join(", ")
            );
            return ToolError::permanent(UNKNOWN_TOOL, &hint).outcome();
        };
        if let Err(problem) = validate(&self.declarations[i], &call.arguments) {
            let hint = format!("{problem}; see the tool's JSON Schema");
            return ToolError::permanent(INVALID_ARGUMENTS, &hint).outcome();
        }
        match self.tools[i].run(&call.arguments).await {
            Ok(content) => ToolOutcome { ok: true, content },
            Err(e) => e.outcome(),
        }
    }
}

/// Checks arguments against the declaration's schema (the subset declarations use: an
/// object of string properties, required names, no extra properties, maxLength, enum).
pub fn validate(declaration: &ToolDeclaration, args: &Value) -> Result<(), String> {
    let Some(args) = args.as_object() else {
        return Err("arguments must be a JSON object".into());
    };
    let schema = &declaration.parameters;
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for name in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !args.contains_key(name) {
            return Err(format!("missing required argument '{name}'"));
        }
    }
    for (name, value) in args {
        let Some(spec) = properties.get(name) else {
            return Err(format!("unknown argument '{name}'"));
        };
        let Some(text) = value.as_str() else {
            return Err(format!("argument '{name}' must be a string"));
        };
        if let Some(max) = spec["maxLength"].as_u64() {
            if text.chars().count() as u64 > max {
                return Err(format!("argument '{name}' is longer than {max} characters"));
            }
        }
        if let Some(options) = spec["enum"].as_array() {
            if !options.iter().any(|o| o.as_str() == Some(text)) {
                return Err(format!(
                    "argument '{name}' must be one of {}",
                    Value::Array(options.clone())
                ));
            }
        }
    }
    Ok(())
}

/// Whether an outcome is a call the harness refused (unknown tool, bad arguments).
pub(crate) fn is_invalid_call(outcome: &ToolOutcome) -> bool {
    !outcome.ok
        && matches!(
            outcome.content["error"].as_str(),
            Some(UNKNOWN_TOOL | INVALID_ARGUMENTS)
        )
}

/// `tools-` and a 64-bit FNV-1a hash of the declarations' JSON, in hex: stable across
/// builds and platforms (the JSON of a declaration is its name, description and
/// parameters, keys in order).
pub fn schema_version(declarations: &[ToolDeclaration]) -> String {
    let text = serde_json::to_string(declarations).unwrap_or_default();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("tools-{hash:016x}")
}

/// What a run was made with, recorded with it so reports can break results down by it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Versions {
    pub model: String,
    /// The prompt template's version.
    pub prompt: String,
    /// The tool schemas' version ([`schema_version`]).
    pub tools: String,
}

impl Versions {
    /// One label for a breakdown: `model · prompt · tools`.
    pub fn label(&self) -> String {
        format!("{} · {} · {}", self.model, self.prompt, self.tools)
    }
}

/// The length of `value`'s compact JSON text (`value.to_string().len()`), without
/// the text.
pub(crate) fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` into a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_counted_length_is_the_length_of_the_written_text() {
        let values = [
            json!(null),
            json!("naïve \"quoted\" \\ \n 明细 😀"),
            json!({"a": [1, 2.5, -3e40, true], "b": {"c": "\u{1}"}, "ü": ""}),
            json!([]),
        ];
        for value in values {
            assert_eq!(json_len(&value), value.to_string().len(), "{value}");
        }
    }
}
