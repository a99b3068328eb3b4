//! Tests of `log.rs`: kept apart so the file reads as the code it tests.

use super::*;

#[test]
fn every_kind_reads_back_from_its_stored_name_and_no_two_share_one() {
    let names: std::collections::BTreeSet<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names.len(), Kind::ALL.len());
    for kind in Kind::ALL {
        assert_eq!(Kind::parse(kind.as_str()), Some(kind));
    }
    assert_eq!(
        Kind::parse("proposal"),
        None,
        "an answer's kind is the product's"
    );
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Done {
    text: String,
}

impl Answer for Done {
    const EVENT: &'static str = "done";
}

fn event(seq: i64, kind: &str, call_id: Option<&str>, payload: Value) -> Event {
    let call_id = call_id.map(str::to_string);
    Event {
        seq,
        kind: kind.to_string(),
        call_id,
        payload,
    }
}

/// A run's log with a turn of two tool calls, a domain event and an answer.
fn a_log() -> Vec<Event> {
    let usage = serde_json::json!({ "type": "tool_calls", "calls": [], "usage": { "prompt_tokens": 7 }, "latency_ms": 3 });
    let call =
        |id: &str| serde_json::json!({ "id": id, "name": "lookup", "arguments": { "q": id } });
    let result =
        |n: i64| serde_json::json!({ "ok": true, "content": { "n": n }, "duration_ms": n });
    vec![
        event(1, "model_output", None, usage),
        event(2, "tool_intent", Some("a"), call("a")),
        event(3, "tool_intent", Some("b"), call("b")),
        event(4, "tool_result", Some("b"), result(2)),
        event(5, "dependency_unavailable", None, serde_json::json!({})),
        event(6, "tool_result", Some("a"), result(1)),
        event(7, "done", None, serde_json::json!({ "text": "found it" })),
    ]
}

/// A hand-off turn too, so every fold path reads a payload in place.
fn a_memory_log() -> MemoryLog {
    let mut log = MemoryLog::new();
    let handoff = serde_json::json!({ "type": "hand_off", "reason": "unsure" });
    let extra = event(8, "model_output", None, handoff);
    for e in a_log().into_iter().chain([extra]) {
        let kind: &'static str = Box::leak(e.kind.into_boxed_str());
        log.events
            .push(NewEvent::new(kind, e.call_id.as_deref(), e.payload));
    }
    log
}

#[test]
fn a_memory_log_lends_at_every_split_what_loading_it_gives() {
    let mut log = a_memory_log();
    let Ok(events) = ready(log.load());
    let whole = format!("{:?}", RunLog::<Done>::fold(&events));
    assert!(whole.contains("the model escalated: unsure"), "{whole}");
    for split in 0..=events.len() {
        let mut folded = Folded::<Done>::new();
        folded.catch_up(&events[..split]);
        let after = folded.last_seq();
        let mut fold = |seq: i64, kind: &str, call_id: Option<&str>, payload: &Value| {
            folded.fold_one(seq, kind, call_id, payload)
        };
        let Ok(()) = ready(log.fold_after(after, &mut fold));
        assert_eq!(format!("{:?}", folded.log), whole, "split {split}");
    }
}

/// Polls an in-memory log's future, which is ready at once.
fn ready<T>(f: BoxFuture<'_, T>) -> T {
    let mut f = f;
    let waker = std::task::Waker::noop();
    match f.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
        std::task::Poll::Ready(t) => t,
        std::task::Poll::Pending => panic!("an in-memory log is ready at once"),
    }
}

#[test]
fn folding_what_is_new_at_every_split_gives_the_fold_of_the_whole_log() {
    let events = a_log();
    let whole = format!("{:?}", RunLog::<Done>::fold(&events));
    for split in 0..=events.len() {
        let mut folded = Folded::<Done>::new();
        folded.catch_up(&events[..split]);
        // A look at the rest does not fold it into the kept state…
        let looked = folded.with(&events);
        assert_eq!(format!("{looked:?}"), whole, "split {split}");
        let prefix = format!("{:?}", RunLog::<Done>::fold(&events[..split]));
        assert_eq!(format!("{:?}", folded.log), prefix, "split {split}");
        // …and catching up, even with the old events again, folds each once.
        folded.catch_up(&events);
        folded.catch_up(&events);
        assert_eq!(format!("{:?}", folded.log), whole, "split {split}");
    }
    assert_eq!(RunLog::<Done>::fold(&events).exchanges.len(), 2);
}
