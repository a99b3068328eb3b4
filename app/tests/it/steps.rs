//! Durable run steps committed together (`runs::StepWriter`): several runs'
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

#[tokio::test]
async fn steps_that_never_pause_still_leave_the_other_writers_their_turn() {
    // The writer keeps SQLite's one writer connection while steps follow each other
    // without a pause (`one_trip::Held`); runs that always have their next step ready
    // must not keep a ticket from being opened meanwhile.
    let app = spawn_app().await;
    let runs = claimed_runs(&app, &["C-100", "C-200", "C-300", "C-400"]).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let loops: Vec<_> = runs
        .into_iter()
        .map(|mut run| {
            let (writer, stop) = (app.state.steps.clone(), stop.clone());
            tokio::spawn(async move {
                let mut steps = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (updated, _) = writer
                        .commit(step(&run, "model_output", "again"))
                        .await
                        .expect("the step commits");
                    run = updated;
                    steps += 1;
                }
                steps
            })
        })
        .collect();
    let opened = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        for customer in ["C-100", "C-200", "C-300"] {
            app.post_ticket(customer, "Where is my refund?").await;
        }
    })
    .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut steps = 0;
    for handle in loops {
        steps += handle.await.unwrap();
    }
    assert!(
        opened.is_ok(),
        "tickets waited for the writer behind {steps} steps"
    );
    assert!(steps > 0, "the runs committed steps meanwhile");
}

#[tokio::test]
async fn a_chain_whose_first_step_is_stale_writes_none_of_its_steps() {
    let app = spawn_app().await;
    let runs = claimed_runs(&app, &["C-100", "C-200"]).await;
    let mut stale = runs[0].clone();
    stale.version -= 1;
    // The chain's second step would match the version a stale first step expects to
    // leave: it must not be written either.
    let mut second = step(&runs[0], "model_output", "second");
    second.run.version = runs[0].version;
    let chain = vec![step(&stale, "model_output", "first"), second];
    let beside = app
        .state
        .steps
        .commit(step(&runs[1], "model_output", "beside"));
    let (chained, beside) = tokio::join!(app.state.steps.commit_chain(chain), beside);
    assert!(
        matches!(&chained, Err(e) if runs::is_run_changed(e)),
        "{:?}",
        chained.err()
    );
    assert!(beside.is_ok(), "{:?}", beside.err());
    let notes: Vec<String> = stored(&app, &runs[0].id)
        .await
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert!(
        !notes.iter().any(|n| n == "first" || n == "second"),
        "{notes:?}"
    );
    assert!(stored(&app, &runs[1].id)
        .await
        .iter()
        .any(|(_, n)| n == "beside"));
}

/// Makes the database itself refuse any run event whose payload mentions `boom`.
async fn refuse_boom_events(app: &TestApp) {
    let pool = app.state.db.pool();
    match app.state.db.backend() {
        store::Backend::Sqlite => {
            sqlx::query(
                "CREATE TRIGGER boom BEFORE INSERT ON run_events WHEN NEW.payload LIKE '%boom%'
                 BEGIN SELECT RAISE(ABORT, 'boom'); END",
            )
            .execute(pool)
            .await
            .unwrap();
        }
        store::Backend::Postgres => {
            sqlx::query(
                "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN IF NEW.payload LIKE '%boom%' THEN RAISE EXCEPTION 'boom'; END IF;
                 RETURN NEW; END $$",
            )
            .execute(pool)
            .await
            .unwrap();
            sqlx::query(
                "CREATE TRIGGER boom BEFORE INSERT ON run_events FOR EACH ROW EXECUTE FUNCTION boom()",
            )
            .execute(pool)
            .await
            .unwrap();
        }
    }
}

#[tokio::test]
async fn a_batch_the_database_refuses_is_rolled_back_and_the_writer_commits_on() {
    let app = spawn_app().await;
    let runs = claimed_runs(&app, &["C-100", "C-200"]).await;
    refuse_boom_events(&app).await;
    // The database fails the batch midway (after the first step's update and events):
    // nothing of it may stay, and the good step still commits alone.
    let writes = vec![
        step(&runs[1], "model_output", "good"),
        step(&runs[0], "model_output", "boom"),
    ];
    let results = runs::commit_batch(&app.state.db, &writes).await;
    assert!(results[0].is_ok(), "{:?}", results[0].as_ref().err());
    let refused = results[1].as_ref().expect_err("the database refuses it");
    assert!(!runs::is_run_changed(refused), "{refused}");
    assert!(!stored(&app, &runs[0].id)
        .await
        .iter()
        .any(|(_, n)| n == "boom"));
    // The writer connection is not left inside a transaction: a step committed after
    // the failure is seen at once from a connection of its own, and the refused run
    // commits at the version it had.
    let mut run = results[0].as_ref().unwrap().0.clone();
    for i in 0..3 {
        let note = format!("after-{i}");
        let (next, _) = app
            .state
            .steps
            .commit(step(&run, "model_output", &note))
            .await
            .expect("the writer commits after a failed batch");
        run = next;
        assert!(stored(&app, &run.id).await.iter().any(|(_, n)| *n == note));
    }
    let retry = [step(&runs[0], "model_output", "retry")];
    assert!(runs::commit_batch(&app.state.db, &retry).await[0].is_ok());
}

/// Each stored event of `run_id` exactly as stored: seq, kind, call id, payload text, time.
async fn stored_rows(
    app: &TestApp,
    run_id: &str,
) -> Vec<(i64, String, Option<String>, String, i64)> {
    let rows = sqlx::query(
        "SELECT seq, kind, call_id, payload, created_at FROM run_events WHERE run_id = $1 ORDER BY seq",
    )
    .bind(run_id)
    .fetch_all(app.state.db.reader())
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get("seq"),
                r.get("kind"),
                r.get("call_id"),
                r.get("payload"),
                r.get("created_at"),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_batched_step_stores_exactly_what_a_step_of_its_own_stores() {
    let app = spawn_app().await;
    let runs = claimed_runs(&app, &["C-100", "C-200"]).await;
    let payloads = [
        json!({ "text": "Zweimal belastet — \"doppelt\" \\ ✓", "amount": "49.00", "n": 1.5e300 }),
        json!({ "name": "lookup_order", "arguments": { "order_id": "A-1" } }),
        json!([null, true, -0.0, 12345678901234567_i64]),
    ];
    let events = |tag: &str| {
        vec![
            harness::NewEvent::new("model_output", None, payloads[0].clone()),
            harness::NewEvent::new(
                "tool_intent",
                Some(format!("call-{tag}").as_str()),
                payloads[1].clone(),
            ),
            harness::NewEvent::new(
                "tool_result",
                Some(format!("call-{tag}").as_str()),
                payloads[2].clone(),
            ),
        ]
    };
    let write = |run: &Run, tag: &str| StepWrite {
        run: run.clone(),
        status: RunStatus::ToolPending,
        add_steps: 1,
        add_tool_calls: 1,
        now: 7,
        events: events(tag),
    };
    // One run's step in the group writer's batch (one trip on SQLite)…
    let batched = runs::commit_batch(&app.state.db, &[write(&runs[0], "x")]).await;
    let (batched_run, batched_events) = batched.into_iter().next().unwrap().unwrap();
    // …the other's with `record_step` in a transaction of its own.
    let mut alone_run = runs[1].clone();
    let mut tx = app.state.db.begin().await.unwrap();
    let kinds = events("x");
    let own: Vec<runs::NewEvent> = kinds
        .iter()
        .map(|e| runs::NewEvent {
            kind: runs::EventKind::parse(e.kind).unwrap(),
            call_id: e.call_id.as_deref(),
            payload: &e.payload,
        })
        .collect();
    let alone_events = runs::record_step(
        &mut tx,
        &mut alone_run,
        RunStatus::ToolPending,
        1,
        1,
        7,
        &own,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    // The step's own rows (its time is 7; the runs' creation came before).
    let step_rows = |rows: Vec<(i64, String, Option<String>, String, i64)>| {
        rows.into_iter().filter(|r| r.4 == 7).collect::<Vec<_>>()
    };
    let b = step_rows(stored_rows(&app, &runs[0].id).await);
    let a = step_rows(stored_rows(&app, &runs[1].id).await);
    assert_eq!((b.len(), a.len()), (4, 4), "{b:?}");
    for (b, a) in b.iter().zip(&a) {
        assert_eq!((b.0, &b.1, &b.2, &b.3, b.4), (a.0, &a.1, &a.2, &a.3, a.4));
    }
    let seqs = |e: &[runs::Appended]| e.iter().map(|e| (e.seq, e.kind)).collect::<Vec<_>>();
    assert_eq!(seqs(&batched_events), seqs(&alone_events));
    assert_eq!(batched_events.len(), 4, "three events and the state change");
    assert_eq!(
        (
            batched_run.version,
            batched_run.status,
            batched_run.steps,
            batched_run.tool_calls
        ),
        (
            alone_run.version,
            alone_run.status,
            alone_run.steps,
            alone_run.tool_calls
        )
    );
    let row = |id: String| {
        let db = app.state.db.reader();
        async move {
            let r = sqlx::query("SELECT status, version, steps, tool_calls, lease_owner, lease_expires_at, updated_at FROM runs WHERE id = $1")
                .bind(id)
                .fetch_one(db)
                .await
                .unwrap();
            (
                r.get::<String, _>("status"),
                r.get::<i64, _>("version"),
                r.get::<i64, _>("steps"),
                r.get::<i64, _>("tool_calls"),
                r.get::<Option<String>, _>("lease_owner"),
                r.get::<Option<i64>, _>("lease_expires_at"),
                r.get::<i64, _>("updated_at"),
            )
        }
    };
    assert_eq!(
        row(runs[0].id.to_string()).await,
        row(runs[1].id.to_string()).await
    );
}

/// One step of `writer` on `run` with `record_step` in a transaction of its own:
/// `Ok(Some(run as updated))` once committed, `Ok(None)` when refused as run_changed
/// (rolled back), the error otherwise.
async fn step_alone(db: &store::Db, mut run: Run, writer: usize) -> Option<Run> {
    let payload = json!({ "note": format!("writer {writer}") });
    let events = [runs::NewEvent {
        kind: runs::EventKind::parse("model_output").unwrap(),
        call_id: None,
        payload: &payload,
    }];
    let mut tx = db.begin().await.unwrap();
    match runs::record_step(&mut tx, &mut run, RunStatus::ModelRunning, 1, 0, 9, &events).await {
        Ok(_) => {
            tx.commit().await.unwrap();
            Some(run)
        }
        Err(e) => {
            assert!(runs::is_run_changed(&e), "refused as run_changed: {e:?}");
            tx.rollback().await.unwrap();
            None
        }
    }
}

/// The run's event numbers in order, and the `last_seq` its row keeps.
async fn seqs_and_last(app: &TestApp, run_id: &str) -> (Vec<i64>, i64) {
    let seqs = stored_rows(app, run_id).await.iter().map(|r| r.0).collect();
    let last: i64 = sqlx::query("SELECT last_seq FROM runs WHERE id = $1")
        .bind(run_id)
        .fetch_one(app.state.db.reader())
        .await
        .unwrap()
        .get("last_seq");
    (seqs, last)
}

#[tokio::test]
async fn writers_racing_on_one_run_from_one_version_leave_one_winner_and_gap_free_events() {
    const WRITERS: usize = 6;
    let app = spawn_app().await;
    let run = claimed_runs(&app, &["C-100"]).await.remove(0);
    let (before, _) = seqs_and_last(&app, &run.id).await;
    // Every writer holds the run at the same version and steps at once (on PostgreSQL the
    // losers wait on the winner's row lock, then find its version gone).
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(WRITERS));
    let racing = (0..WRITERS).map(|w| {
        let (db, run, start) = (app.state.db.clone(), run.clone(), start.clone());
        tokio::spawn(async move {
            start.wait().await;
            step_alone(&db, run, w).await
        })
    });
    let won: Vec<Run> = futures_util::future::join_all(racing)
        .await
        .into_iter()
        .filter_map(|r| r.unwrap())
        .collect();
    assert_eq!(won.len(), 1, "exactly one writer wins the version");
    assert_eq!(won[0].version, run.version + 1);
    let (seqs, last) = seqs_and_last(&app, &run.id).await;
    // The winner's event and its `state` event (the claimed run was not model_running).
    assert_eq!(seqs.len(), before.len() + 2, "the winner's events only");

    // Then each writer steps again, reloading the run after each refusal, beside an
    // event appended on its own: every event gets its own number, none is skipped.
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(WRITERS + 1));
    let retrying: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, id, start) = (app.state.db.clone(), run.id.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                loop {
                    let run = runs::load_run(&db, &id).await.unwrap().unwrap();
                    if step_alone(&db, run, w).await.is_some() {
                        break;
                    }
                }
            })
        })
        .collect();
    let (db, id) = (app.state.db.clone(), run.id.clone());
    let appended = tokio::spawn(async move {
        start.wait().await;
        let mut tx = db.begin().await.unwrap();
        let kind = runs::EventKind::Escalated;
        let seq = runs::append_event(&mut tx, &id, kind, None, &json!({}), 9).await;
        tx.commit().await.unwrap();
        seq.unwrap()
    });
    futures_util::future::join_all(retrying).await;
    let appended = appended.await.unwrap();

    let (seqs, last_now) = seqs_and_last(&app, &run.id).await;
    let expected: Vec<i64> = (1..=last + WRITERS as i64 + 1).collect();
    assert_eq!(seqs, expected, "numbered 1, 2, 3… without gap or repeat");
    assert_eq!(
        last_now,
        *expected.last().unwrap(),
        "the row keeps the last number"
    );
    assert!(seqs.contains(&appended));
}
