//! The loop and sub-agents on in-memory logs: crashes, answers recorded before a crash,
//! shared budgets, join with required and optional children, cancellation.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::{note, reads, Fixed, Note, Reader};
use harness::sub::{join, Child, JoinOutcome, Shared};
use harness::{
    BoxFuture, Counters, Event, EventLog, MemoryLog, Model, ModelContext, Outcome, Phase, Reply,
    Run, RunLog, Step, Tool, ToolDeclaration, ToolError, Toolset, Turn, Usage,
};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// A model that plays its turns in order, each costing `tokens`, then hands off. An
/// optional gate holds its first call until opened.
struct Script {
    turns: Mutex<VecDeque<Turn<Note>>>,
    tokens: u64,
    asked: AtomicUsize,
    gate: Option<Arc<Notify>>,
    entered: Arc<Notify>,
}

impl Script {
    fn new(turns: Vec<Turn<Note>>) -> Self {
        Script {
            turns: Mutex::new(turns.into()),
            tokens: 10,
            asked: AtomicUsize::new(0),
            gate: None,
            entered: Arc::new(Notify::new()),
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl Model<Note> for Script {
    fn name(&self) -> String {
        "script".into()
    }

    fn next_turn<'a>(
        &'a self,
        _: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<Turn<Note>>> {
        Box::pin(async { unreachable_turn() })
    }

    fn next_reply<'a>(
        &'a self,
        _: &'a ModelContext<'a>,
    ) -> BoxFuture<'a, anyhow::Result<Reply<Note>>> {
        Box::pin(async move {
            let n = self.asked.fetch_add(1, Ordering::SeqCst);
            if let (0, Some(gate)) = (n, &self.gate) {
                self.entered.notify_one();
                gate.notified().await;
            }
            let turn = self
                .turns
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?
                .pop_front();
            let turn = turn.unwrap_or(Turn::HandOff {
                reason: "out of script".into(),
            });
            Ok(Reply {
                turn,
                usage: Usage {
                    prompt_tokens: self.tokens,
                    completion_tokens: 0,
                },
            })
        })
    }
}

fn unreachable_turn() -> anyhow::Result<Turn<Note>> {
    Err(anyhow::anyhow!("the harness asks for replies, not turns"))
}

/// A read-only tool that counts its runs per argument.
#[derive(Clone, Default)]
struct Counting(Arc<Mutex<Vec<String>>>);

impl Counting {
    fn runs(&self) -> Vec<String> {
        self.0.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl Tool for Counting {
    fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration {
            name: "read",
            description: "Reads one record.",
            parameters: json!({ "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] }),
            read_only: true,
        }
    }

    fn run<'a>(&'a self, arguments: &'a Value) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let id = arguments["id"].as_str().unwrap_or_default().to_string();
            self.0
                .lock()
                .map_err(|_| ToolError::transient("poisoned", "retry"))?
                .push(id.clone());
            Ok(json!({ "id": id }))
        })
    }
}

/// A log that dies (fails every commit) after `left` commits, like a killed worker: what
/// it committed before stays in `inner`.
struct Dying<'a> {
    inner: &'a mut MemoryLog,
    left: usize,
}

impl EventLog for Dying<'_> {
    type Error = &'static str;

    fn load(&mut self) -> BoxFuture<'_, Result<Vec<Event>, Self::Error>> {
        Box::pin(async move { Ok(self.inner.load().await.unwrap_or_default()) })
    }

    fn commit(&mut self, step: Step) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async move {
            if self.left == 0 {
                return Err("killed");
            }
            self.left -= 1;
            let _ = self.inner.commit(step).await;
            Ok(())
        })
    }

    fn counters(&self) -> Counters {
        self.inner.counters()
    }

    fn phase(&self) -> Option<Phase> {
        self.inner.phase()
    }
}

fn kinds(log: &MemoryLog) -> Vec<&'static str> {
    log.events.iter().map(|e| e.kind).collect()
}

#[tokio::test]
async fn a_loop_killed_at_every_step_finishes_each_tool_call_once_and_answers_once() {
    // Kill after k commits for every k a clean run takes, then resume on the same log.
    let clean = {
        let tool = Counting::default();
        let tools = Toolset::new().with(tool.clone());
        let mut log = MemoryLog::new();
        let Ok(ended) =
            harness::run_loop(&Run::new(&Reader(&["a", "b"]), &tools, &Fixed), &mut log).await;
        assert_eq!(
            ended.outcome,
            Outcome::Answered(Note {
                text: "done".into()
            })
        );
        assert_eq!(tool.runs(), ["a", "b"]);
        log.events.len()
    };
    for k in 0..clean {
        let tool = Counting::default();
        let tools = Toolset::new().with(tool.clone());
        let mut log = MemoryLog::new();
        let killed = harness::run_loop(
            &Run::new(&Reader(&["a", "b"]), &tools, &Fixed),
            &mut Dying {
                inner: &mut log,
                left: k,
            },
        )
        .await;
        if killed.is_ok() {
            continue;
        }
        let Ok(ended) =
            harness::run_loop(&Run::new(&Reader(&["a", "b"]), &tools, &Fixed), &mut log).await;
        assert_eq!(
            ended.outcome,
            Outcome::Answered(Note {
                text: "done".into()
            }),
            "kill at {k}"
        );
        // A result committed before the kill is not run again; at most the call the
        // kill interrupted is (read-only, so that is safe).
        let runs = tool.runs();
        assert!(
            runs.iter().filter(|r| *r == "a").count() <= 2,
            "kill at {k}: {runs:?}"
        );
        assert_eq!(
            ended.log.exchanges.len(),
            2,
            "kill at {k}: one result per intent"
        );
        assert_eq!(
            kinds(&log).iter().filter(|k| **k == "note").count(),
            1,
            "kill at {k}"
        );
    }
}

#[tokio::test]
async fn an_answer_recorded_before_a_crash_is_returned_without_asking_the_model_again() {
    let tools = Toolset::new().with(Counting::default());
    let model = Script::new(vec![note("first")]);
    let mut log = MemoryLog::new();
    let Ok(_) = harness::run_loop(&Run::new(&model, &tools, &Fixed), &mut log).await;
    let again = Script::new(vec![note("second")]);
    let Ok(ended) = harness::run_loop(&Run::new(&again, &tools, &Fixed), &mut log).await;
    assert_eq!(
        ended.outcome,
        Outcome::Answered(Note {
            text: "first".into()
        })
    );
    assert_eq!(again.asked(), 0);
}

fn child<'a>(
    name: &'a str,
    required: bool,
    model: &'a Script,
    tools: &'a Toolset<'a>,
    shared: &'a Shared,
) -> Child<'a, Note, MemoryLog> {
    let mut run = Run::new(model, tools, &Fixed);
    run.shared = Some(shared);
    Child {
        name,
        required,
        run,
        log: MemoryLog::new(),
    }
}

#[tokio::test]
async fn children_draw_tokens_and_tool_calls_from_the_parents_budget() {
    let tool = Counting::default();
    let tools = Toolset::new().with(tool.clone());
    let shared = Shared::new(1_000, 10);
    let billing = Script::new(vec![reads(&["o1", "o2"]), note("billing")]);
    let policy = Script::new(vec![reads(&["p1", "p2"]), note("policy")]);
    let children = vec![
        child("billing", true, &billing, &tools, &shared),
        child("policy", false, &policy, &tools, &shared),
    ];
    let Ok(joined) = join(children, &shared).await;
    assert_eq!(joined.outcome, JoinOutcome::Complete);
    assert_eq!(tool.runs().len(), 4);
    assert_eq!(
        joined.spent(),
        (40, 4),
        "two model calls per child at 10 tokens, two reads each"
    );
    assert_eq!(shared.spent(), (40, 4));
    // The parent records the join: the children's tokens and calls are now its own.
    let mut parent = MemoryLog::new();
    let Ok(()) = parent.commit(joined.step()).await;
    let Ok(events) = parent.load().await;
    assert_eq!(RunLog::<Note>::fold(&events).tokens, 40);
    assert_eq!(parent.counters().tool_calls, 4);
}

#[tokio::test]
async fn children_stop_when_the_parents_budget_runs_out() {
    let tool = Counting::default();
    let tools = Toolset::new().with(tool.clone());
    let shared = Shared::new(1_000, 3);
    let billing = Script::new(vec![reads(&["o1", "o2"]), note("billing")]);
    let policy = Script::new(vec![reads(&["p1", "p2"]), note("policy")]);
    let children = vec![
        child("billing", true, &billing, &tools, &shared),
        child("policy", false, &policy, &tools, &shared),
    ];
    let Ok(joined) = join(children, &shared).await;
    // Four calls were asked for; the parent had three to give, and none for more work.
    assert_eq!(tool.runs().len(), 3, "{:?}", tool.runs());
    assert_eq!(joined.spent().1, 3);
    // Billing ran first and answered; policy's second read found the budget spent, and
    // it stopped before asking its model again.
    assert_eq!(
        joined.answer("billing"),
        Some(&Note {
            text: "billing".into()
        })
    );
    assert_eq!(
        joined.outcome,
        JoinOutcome::Partial {
            gaps: vec!["policy: the run exhausted its shared_tool_calls budget (3 of 3)".into()]
        }
    );
    assert_eq!(policy.asked(), 1);
}

#[tokio::test]
async fn a_required_child_that_hands_off_stops_the_join_and_cancels_its_sibling() {
    let tools = Toolset::new().with(Counting::default());
    let shared = Shared::new(10_000, 100);
    let (slow_gate, billing_gate) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let mut slow = Script::new((0..20).map(|i| reads(&[&format!("r{i}")])).collect());
    slow.gate = Some(slow_gate.clone());
    let slow_entered = slow.entered.clone();
    let mut gives_up = Script::new(vec![Turn::HandOff {
        reason: "no records".into(),
    }]);
    gives_up.gate = Some(billing_gate.clone());
    let children = vec![
        child("billing", true, &gives_up, &tools, &shared),
        child("policy", false, &slow, &tools, &shared),
    ];
    let joining = join(children, &shared);
    let conductor = async {
        // Both children are inside their first model call; billing gives up first.
        slow_entered.notified().await;
        billing_gate.notify_one();
        while !shared.is_cancelled() {
            tokio::task::yield_now().await;
        }
        slow_gate.notify_one();
    };
    let (joined, ()) = tokio::join!(joining, conductor);
    let Ok(joined) = joined;
    assert_eq!(
        joined.outcome,
        JoinOutcome::EvidenceIncomplete {
            missing: "billing".into(),
            reason: "the model escalated: no records".into()
        }
    );
    let policy = &joined.children[1];
    assert_eq!(policy.outcome, Outcome::Cancelled);
    // The call under way when the sibling was cancelled finished; nothing after it ran.
    assert_eq!(slow.asked(), 1);
    assert_eq!(policy.counters.tool_calls, 0);
}

#[tokio::test]
async fn an_optional_child_that_hands_off_leaves_a_named_gap() {
    let tools = Toolset::new().with(Counting::default());
    let shared = Shared::new(10_000, 100);
    let answers = Script::new(vec![note("facts")]);
    let gives_up = Script::new(vec![Turn::HandOff {
        reason: "index down".into(),
    }]);
    let children = vec![
        child("billing", true, &answers, &tools, &shared),
        child("policy", false, &gives_up, &tools, &shared),
    ];
    let Ok(joined) = join(children, &shared).await;
    assert_eq!(
        joined.outcome,
        JoinOutcome::Partial {
            gaps: vec!["policy: the model escalated: index down".into()]
        }
    );
    assert_eq!(
        joined.answer("billing"),
        Some(&Note {
            text: "facts".into()
        })
    );
    assert!(!shared.is_cancelled());
}

#[tokio::test]
async fn cancelling_stops_a_child_before_its_next_call_and_keeps_what_it_did() {
    let tool = Counting::default();
    let tools = Toolset::new().with(tool.clone());
    let shared = Shared::new(10_000, 100);
    let gate = Arc::new(Notify::new());
    let mut model = Script::new(vec![reads(&["a"]), note("never")]);
    model.gate = Some(gate.clone());
    let entered = model.entered.clone();
    let children = vec![child("billing", true, &model, &tools, &shared)];
    let joining = join(children, &shared);
    let canceller = async {
        entered.notified().await;
        // The customer withdrew while the model was thinking.
        shared.cancel();
        gate.notify_one();
    };
    let (joined, ()) = tokio::join!(joining, canceller);
    let Ok(joined) = joined;
    let billing = &joined.children[0];
    assert_eq!(billing.outcome, Outcome::Cancelled);
    // The model's answer to the call under way is recorded; its tool intent never ran.
    assert!(tool.runs().is_empty());
    assert_eq!(model.asked(), 1);
    assert_eq!(
        joined.outcome,
        JoinOutcome::EvidenceIncomplete {
            missing: "billing".into(),
            reason: "cancelled".into()
        }
    );
}

#[tokio::test]
async fn a_child_that_answered_before_a_crash_answers_again_from_its_log_when_rejoined() {
    let tools = Toolset::new().with(Counting::default());
    let shared = Shared::new(10_000, 100);
    let billing = Script::new(vec![note("billing facts")]);
    let policy = Script::new(vec![reads(&["p"]), note("policy facts")]);
    let (mut billing_log, mut policy_log) = (MemoryLog::new(), MemoryLog::new());
    // First attempt: billing answers; the process dies while policy works.
    let mut run = Run::new(&billing, &tools, &Fixed);
    run.shared = Some(&shared);
    let Ok(first) = harness::run_loop(&run, &mut billing_log).await;
    assert!(matches!(first.outcome, Outcome::Answered(_)));
    let mut run = Run::new(&policy, &tools, &Fixed);
    run.shared = Some(&shared);
    assert!(harness::run_loop(
        &run,
        &mut Dying {
            inner: &mut policy_log,
            left: 3
        }
    )
    .await
    .is_err());
    // After the restart the parent joins again, on the same logs, with fresh models:
    // billing's answer comes from its log (its model is not asked), policy resumes.
    let billing_again = Script::new(vec![note("a different answer")]);
    let policy_again = Script::new(vec![reads(&["p"]), note("policy facts")]);
    let mut a = child("billing", true, &billing_again, &tools, &shared);
    a.log = billing_log;
    let mut b = child("policy", true, &policy_again, &tools, &shared);
    b.log = policy_log;
    let Ok(joined) = join(vec![a, b], &shared).await;
    assert_eq!(joined.outcome, JoinOutcome::Complete);
    assert_eq!(
        joined.answer("billing"),
        Some(&Note {
            text: "billing facts".into()
        })
    );
    assert_eq!(billing_again.asked(), 0);
    assert_eq!(
        joined.answer("policy"),
        Some(&Note {
            text: "policy facts".into()
        })
    );
}
