//! When a model's turn is committed: a turn whose calls are all read-only and
//! quick goes into the log with its first result, one commit instead of two; a slow
//! call's turn is committed while the call runs; a turn offered a tool that can act is
//! committed before any call runs.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Fixed, Note, Reader};
use harness::{
    BoxFuture, Counters, Event, EventLog, MemoryLog, Outcome, Phase, Run, Step, Tool,
    ToolDeclaration, ToolError, Toolset,
};
use serde_json::{json, Value};

/// A log that records each commit's event kinds and counts its commits where a tool
/// can see them.
struct Recording {
    inner: MemoryLog,
    commits: Vec<Vec<&'static str>>,
    count: Arc<AtomicUsize>,
}

impl Recording {
    fn new(count: Arc<AtomicUsize>) -> Self {
        Recording {
            inner: MemoryLog::new(),
            commits: Vec::new(),
            count,
        }
    }

    fn record(&mut self, steps: &[Step]) {
        let kinds = steps
            .iter()
            .flat_map(|s| s.events.iter().map(|e| e.kind))
            .collect();
        self.commits.push(kinds);
        self.count.fetch_add(1, Ordering::SeqCst);
    }
}

impl EventLog for Recording {
    type Error = Infallible;

    fn load(&mut self) -> BoxFuture<'_, Result<Vec<Event>, Self::Error>> {
        self.inner.load()
    }

    fn commit(&mut self, step: Step) -> BoxFuture<'_, Result<(), Self::Error>> {
        self.record(std::slice::from_ref(&step));
        self.inner.commit(step)
    }

    fn commit_steps(&mut self, steps: Vec<Step>) -> BoxFuture<'_, Result<(), Self::Error>> {
        self.record(&steps);
        self.inner.commit_steps(steps)
    }

    fn counters(&self) -> Counters {
        self.inner.counters()
    }

    fn phase(&self) -> Option<Phase> {
        self.inner.phase()
    }
}

/// The `read` tool: takes `takes`, may be declared able to act, and notes how many
/// commits the log had made when it started and when it finished.
struct Read {
    takes: Duration,
    read_only: bool,
    commits: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<(usize, usize)>>>,
}

impl Tool for Read {
    fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: "read",
            description: "Reads one record.",
            parameters: json!({ "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] }),
            read_only: self.read_only,
        }
    }

    fn run<'a>(&'a self, arguments: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let before = self.commits.load(Ordering::SeqCst);
            tokio::time::sleep(self.takes).await;
            let after = self.commits.load(Ordering::SeqCst);
            self.seen
                .lock()
                .map_err(|_| ToolError::transient("poisoned", "retry"))?
                .push((before, after));
            Ok(json!({ "id": arguments["id"] }))
        })
    }
}

/// Runs a reader of `a` with a `read` tool as given; returns the log's commits and, for the
/// one call, the commits made when it started and when it finished.
async fn run_with(takes: Duration, read_only: bool) -> (Vec<Vec<&'static str>>, (usize, usize)) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tool = Read {
        takes,
        read_only,
        commits: count.clone(),
        seen: seen.clone(),
    };
    let tools = Toolset::new().with(tool);
    let mut log = Recording::new(count);
    let Ok(ended) = harness::run_loop(&Run::new(&Reader(&["a"]), &tools, &Fixed), &mut log).await;
    assert_eq!(
        ended.outcome,
        Outcome::Answered(Note {
            text: "done".into()
        })
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "the call ran once");
    (log.commits, seen[0])
}

fn holds(commit: &[&str], kind: &str) -> bool {
    commit.contains(&kind)
}

#[tokio::test]
async fn a_quick_read_only_call_goes_into_the_log_in_one_commit_with_its_turn() {
    let (commits, (started, finished)) = run_with(Duration::ZERO, true).await;
    assert_eq!(
        started, finished,
        "nothing was committed while the call ran"
    );
    let with_intent: Vec<_> = commits.iter().filter(|c| holds(c, "tool_intent")).collect();
    assert_eq!(with_intent.len(), 1, "{commits:?}");
    assert!(holds(with_intent[0], "tool_result"), "{commits:?}");
    // Asking the model, the turn with its result and the next ask, the answer.
    assert_eq!(commits.len(), 3, "{commits:?}");
}

#[tokio::test]
async fn a_slow_read_only_call_has_its_turn_committed_while_it_runs() {
    let slow = harness::DEFER_TURN * 4;
    let (commits, (started, finished)) = run_with(slow, true).await;
    assert_eq!(
        finished,
        started + 1,
        "the turn was committed while the call ran"
    );
    let intent = commits.iter().position(|c| holds(c, "tool_intent"));
    let result = commits.iter().position(|c| holds(c, "tool_result"));
    assert!(intent < result, "{commits:?}");
    assert!(
        !holds(&commits[intent.unwrap()], "tool_result"),
        "{commits:?}"
    );
}

#[tokio::test]
async fn a_turn_offered_a_tool_that_can_act_is_committed_before_any_call_runs() {
    let (commits, (started, finished)) = run_with(Duration::ZERO, false).await;
    assert_eq!(started, finished);
    let intent = commits
        .iter()
        .position(|c| holds(c, "tool_intent"))
        .expect("the turn is in the log");
    assert!(
        !holds(&commits[intent], "tool_result") && intent < started,
        "the turn was committed before the call started: {commits:?}"
    );
}
