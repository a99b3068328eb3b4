//! The loop's spans. Tracing caches per call site whether anyone listens, so a subscriber
//! set as one thread's default, in a binary where other threads run without one, can see
//! the cache decide "nobody" first (tokio-rs/tracing#2874). So the recorder is the
//! process's global subscriber, installed once, and each test reads only the spans opened
//! on its own thread (a `#[tokio::test]` runs on a thread of its own).

use std::sync::{Arc, Mutex};

use crate::common::{Fixed, Reader};
use harness::{BoxFuture, MemoryLog, Run, Tool, ToolDeclaration, ToolError, Toolset};
use serde_json::{json, Value};
use tracing_subscriber::layer::SubscriberExt;

struct Read;

impl Tool for Read {
    fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: "read",
            description: "Reads one record.",
            parameters: json!({ "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] }),
            read_only: true,
        }
    }

    fn run<'a>(&'a self, arguments: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Ok(json!({ "id": arguments["id"] })) })
    }
}

/// The spans opened, each with the thread that opened it.
type Recorded = Arc<Mutex<Vec<(std::thread::ThreadId, String)>>>;

/// Records the names of the spans opened, with the thread that opened them.
struct SpanNames(Recorded);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanNames {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Ok(mut names) = self.0.lock() {
            let thread = std::thread::current().id();
            names.push((thread, attrs.metadata().name().to_string()));
        }
    }
}

/// The spans opened on this thread from now on, as recorded by the global subscriber.
fn recorded_spans() -> impl Fn() -> Vec<String> {
    static NAMES: std::sync::OnceLock<Recorded> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let names = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(SpanNames(names.clone()));
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in this test binary");
        tracing::callsite::rebuild_interest_cache();
        names
    });
    let thread = std::thread::current().id();
    let start = names.lock().map(|n| n.len()).unwrap_or(0);
    move || {
        let all = names.lock().map(|n| n.clone()).unwrap_or_default();
        all.into_iter()
            .skip(start)
            .filter(|(t, _)| *t == thread)
            .map(|(_, name)| name)
            .collect()
    }
}

#[tokio::test]
async fn a_run_is_traced_with_the_genai_span_names() {
    let spans = recorded_spans();
    let tools = Toolset::new().with(Read);
    let mut log = MemoryLog::new();
    let Ok(_) = harness::run_loop(&Run::new(&Reader(&["a", "b"]), &tools, &Fixed), &mut log).await;
    let names = spans();
    let count = |name: &str| names.iter().filter(|n| *n == name).count();
    assert_eq!(count("invoke_agent"), 1, "{names:?}");
    assert_eq!(count("chat"), 2, "two model calls: {names:?}");
    assert_eq!(count("execute_tool"), 2, "two tool calls: {names:?}");
}
