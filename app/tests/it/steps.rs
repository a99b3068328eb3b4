//! Durable run steps committed together (issue 19, `runs::StepWriter`): several runs'
//! steps share one transaction, yet each is what a transaction of its own would have
//! made it — a step whose run changed elsewhere writes nothing, a step that fails fails
//! alone, and a step is in the store when its commit returns. On SQLite, or on a fresh
//! PostgreSQL database with `TEST_DATABASE_URL`.

use crate::support::{spawn_app, TestApp};
use desk::runs::{self, Run, RunStatus, StepWrite};
use serde_json::json;
use sqlx::Row;

/// `n` runs claimed by this test's worker, each on a ticket of its own (not advanced).
async fn claimed_runs(app: &TestApp, customers: &[&str]) -> Vec<Run> {
    let mut runs = Vec::new();
    for customer in customers {
        app.post_ticket(customer, "I was charged twice for my annual plan")
            .await;
        let now = desk::clock::Clock::now_ms(app.state.clock.as_ref());
        let run = runs::claim_next(&app.state.db, "test-worker", now)
            .await
            .unwrap()
            .expect("a ready run to claim");
        runs.push(run);
    }
    runs
}

fn step(run: &Run, kind: &'static str, note: &str) -> StepWrite {
    StepWrite {
        run: run.clone(),
        status: RunStatus::ModelRunning,
        add_steps: 1,
        add_tool_calls: 0,
        now: 1,
        events: vec![harness::NewEvent::new(kind, None, json!({ "note": note }))],
    }
}

/// The events stored for `run_id`, as (kind, note), read on a connection of their own.
async fn stored(app: &TestApp, run_id: &str) -> Vec<(String, String)> {
    let db = store::Db::connect(&app.database_url).await.unwrap();
    let rows = sqlx::query("SELECT kind, payload FROM run_events WHERE run_id = $1 ORDER BY seq")
        .bind(run_id)
        .fetch_all(db.reader())
        .await
        .unwrap();
    db.close().await;
    rows.iter()
        .map(|r| {
            let payload: serde_json::Value =
                serde_json::from_str(&r.get::<String, _>("payload")).unwrap();
            (
                r.get::<String, _>("kind"),
                payload["note"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn steps_of_several_runs_commit_together_and_a_stale_one_writes_nothing() {
    let app = spawn_app().await;
    let runs = claimed_runs(&app, &["C-100", "C-200", "C-300"]).await;
    let mut stale = runs[1].clone();
    stale.version -= 1; // another worker's update came in between
    let writes = vec![
        step(&runs[0], "model_output", "first"),
        step(&stale, "model_output", "stale"),
        step(&runs[2], "model_output", "third"),
    ];
    let results = runs::commit_batch(&app.state.db, &writes).await;

    let (first, _) = results[0].as_ref().expect("the first step commits");
    assert_eq!(first.version, runs[0].version + 1);
    assert_eq!(first.status, RunStatus::ModelRunning);
    assert_eq!(first.steps, runs[0].steps + 1);
    assert!(
        matches!(&results[1], Err(e) if runs::is_run_changed(e)),
        "a stale step is refused as run_changed"
    );
    assert!(results[2].is_ok(), "the third step commits beside it");
    for (run, note, written) in [
        (&runs[0], "first", true),
        (&runs[1], "stale", false),
        (&runs[2], "third", true),
    ] {
        let events = stored(&app, &run.id).await;
        let has = events
            .iter()
            .any(|(kind, n)| kind == "model_output" && n == note);
        assert_eq!(has, written, "{note}: {events:?}");
        // The state change is logged after the step's own events (`record_step`).
        assert_eq!(
            events.last().map(|(kind, _)| kind == "state"),
            Some(written),
            "{note}: {events:?}"
        );
    }
}

#[tokio::test]
async fn a_step_that_fails_inside_a_batch_fails_alone_and_the_others_commit() {
    let app = spawn_app().await;
    let runs = claimed_runs(&app, &["C-100", "C-200"]).await;
    let writes = vec![
        step(&runs[0], "no_such_kind", "bad"),
        step(&runs[1], "model_output", "good"),
    ];
    let results = runs::commit_batch(&app.state.db, &writes).await;
    let error = results[0]
        .as_ref()
        .expect_err("an unknown event kind is refused");
    assert!(!runs::is_run_changed(error), "{error}");
    assert!(results[1].is_ok(), "{:?}", results[1].as_ref().err());
    assert!(!stored(&app, &runs[0].id)
        .await
        .iter()
        .any(|(_, n)| n == "bad"));
    assert!(stored(&app, &runs[1].id)
        .await
        .iter()
        .any(|(_, n)| n == "good"));
    // The refused run was not touched: its holder can still commit at its version.
    let retry = [step(&runs[0], "model_output", "retry")];
    assert!(runs::commit_batch(&app.state.db, &retry).await[0].is_ok());
}

#[tokio::test]
async fn concurrent_steps_through_the_writer_are_each_stored_once_when_their_commit_returns() {
    let app = spawn_app().await;
    let runs = claimed_runs(&app, &["C-100", "C-200", "C-300", "C-400"]).await;
    // Each run commits five steps in a row; the four runs at once, through the one
    // writer task the worker uses, so steps of different runs share transactions.
    let tasks = runs.into_iter().map(|mut run| {
        let writer = app.state.steps.clone();
        let url = app.database_url.clone();
        tokio::spawn(async move {
            for i in 0..5 {
                let note = format!("{}-{i}", run.id);
                let (updated, appended) = writer
                    .commit(step(&run, "model_output", &note))
                    .await
                    .expect("the step commits");
                // Committed before the answer: a connection of its own sees it now.
                let db = store::Db::connect(&url).await.unwrap();
                let seen: i64 = sqlx::query(
                    "SELECT COUNT(*) AS n FROM run_events WHERE run_id = $1 AND seq = $2",
                )
                .bind(run.id.as_str())
                .bind(appended[0].seq)
                .fetch_one(db.reader())
                .await
                .unwrap()
                .get("n");
                db.close().await;
                assert_eq!(seen, 1, "step {note} is durable when its commit returns");
                run = updated;
            }
            run
        })
    });
    for run in futures_util::future::join_all(tasks).await {
        let run = run.unwrap();
        let notes: Vec<String> = stored(&app, &run.id)
            .await
            .into_iter()
            .filter(|(kind, _)| kind == "model_output")
            .map(|(_, n)| n)
            .collect();
        let expected: Vec<String> = (0..5).map(|i| format!("{}-{i}", run.id)).collect();
        assert_eq!(notes, expected, "each step once, in order");
        assert_eq!(run.steps, 5);
    }
}
