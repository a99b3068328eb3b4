//! The stuck-run watchdog (seed §15.1), on the injected clock, against the
//! real database (SQLite, or PostgreSQL with `TEST_DATABASE_URL`) and the real payments
//! mock. A worker that dies mid-step is played by claiming the run and writing its
//! first step with the same `runs` functions a worker uses, then never again.

use std::sync::Arc;

use crate::support::{spawn_app, spawn_app_with_model, TestApp};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use desk::agent::{ModelTurn, Proposal};
use desk::runs::{self, NewEvent, Run};
use desk::watchdog::{self, ScanReport};
use refund_evals::scripted::ScriptedModel;
use serde_json::{json, Value};
use sqlx::Row;

const CHARGED_TWICE: &str = "I was charged twice for my annual plan";

/// Opens a ticket as C-100 without letting any worker near it; returns (case, run).
async fn queued_case(app: &TestApp) -> (String, String) {
    let ticket = app.post_ticket("C-100", CHARGED_TWICE).await;
    let case_id = ticket["case"]["id"].as_str().unwrap().to_string();
    let run_id = app.case(&case_id).await["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    (case_id, run_id)
}

/// A worker named `owner` claims the run and commits its first step (`model_running`,
/// committed before the model is asked), as `investigation::advance` does.
async fn worker_starts_model_call(app: &TestApp, owner: &str) -> Run {
    let now = app.clock_now();
    let mut run = runs::claim_next(&app.state.db, owner, now)
        .await
        .unwrap()
        .expect("the queued run is claimable");
    let mut tx = app.state.db.begin().await.unwrap();
    runs::record_step(
        &mut tx,
        &mut run,
        runs::RunStatus::ModelRunning,
        1,
        0,
        now,
        &[],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    run
}

/// The worker records one tool call and its result (new evidence), as `run_tools` does.
async fn worker_records_evidence(app: &TestApp, run: &mut Run, n: usize) {
    let now = app.clock_now();
    let call_id = format!("call-{n}");
    let intent = json!({ "id": call_id, "name": "list_orders", "arguments": {} });
    let result = json!({ "ok": true, "content": { "orders": [] }, "duration_ms": 5 });
    let mut tx = app.state.db.begin().await.unwrap();
    let events = [NewEvent {
        kind: runs::EventKind::Harness(harness::Kind::ToolIntent),
        call_id: Some(&call_id),
        payload: &intent,
    }];
    runs::record_step(
        &mut tx,
        run,
        runs::RunStatus::ToolPending,
        0,
        0,
        now,
        &events,
    )
    .await
    .unwrap();
    let events = [NewEvent {
        kind: runs::EventKind::Harness(harness::Kind::ToolResult),
        call_id: Some(&call_id),
        payload: &result,
    }];
    runs::record_step(&mut tx, run, runs::RunStatus::Ready, 0, 1, now, &events)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

async fn events_of_kind(app: &TestApp, run_id: &str, kind: &str) -> Vec<Value> {
    let (status, events) = app
        .request(
            "GET",
            &format!("/api/v1/runs/{run_id}/events"),
            Some(&app.agent_token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{events}");
    events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

async fn scan(app: &TestApp) -> ScanReport {
    watchdog::scan(&app.state.db, app.state.clock.as_ref(), app.state.watchdog)
        .await
        .expect("the scan succeeds")
}

fn minutes(m: i64) -> time::Duration {
    time::Duration::minutes(m)
}

async fn console_page(app: &TestApp, path: &str) -> String {
    let (cookie, _) = app.staff_session("agent@test.example").await;
    let request = Request::get(path)
        .header("cookie", cookie)
        .body(Body::empty())
        .unwrap();
    let (status, html) = app.raw(request).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    html
}

async fn count(app: &TestApp, sql: &'static str, bind: &str) -> i64 {
    sqlx::query(sql)
        .bind(bind)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
        .try_get::<i64, _>(0)
        .unwrap()
}

trait ClockNow {
    fn clock_now(&self) -> i64;
}

impl ClockNow for TestApp {
    fn clock_now(&self) -> i64 {
        use desk::clock::Clock;
        self.clock.now_ms()
    }
}

#[tokio::test]
async fn a_run_whose_worker_died_is_flagged_after_the_first_period_and_handed_to_a_human_after_the_second(
) {
    let app = spawn_app().await;
    assert_eq!(
        app.state.watchdog,
        desk::config::WatchdogPeriods::from_minutes(15, 30)
    );
    let (case_id, run_id) = queued_case(&app).await;
    worker_starts_model_call(&app, "inst_dead").await;

    app.clock.advance(minutes(14));
    assert_eq!(
        scan(&app).await,
        ScanReport::default(),
        "not before 15 minutes"
    );

    app.clock.advance(minutes(2));
    assert_eq!(scan(&app).await.flagged, 1);
    let flags = events_of_kind(&app, &run_id, "watchdog_flagged").await;
    assert_eq!(flags.len(), 1);
    let diagnosis = &flags[0]["payload"]["diagnosis"];
    assert_eq!(
        diagnosis["waiting_on"]["kind"], "dead_worker",
        "{diagnosis:#}"
    );
    assert_eq!(diagnosis["waiting_on"]["owner"], "inst_dead");
    assert_eq!(diagnosis["waiting_on"]["state"], "model_running");
    assert_eq!(diagnosis["run_status"], "model_running");
    assert_eq!(diagnosis["stalled_minutes"], 16);
    assert_eq!(
        diagnosis["last_event"]["kind"], "state",
        "the step to model_running"
    );
    assert_eq!(app.case(&case_id).await["status"], "investigating");

    // The console shows it: a badge in the queue, a "stuck" view, the case page.
    let stuck = console_page(&app, "/console?status=stuck").await;
    assert!(stuck.contains(&case_id), "the stuck view lists the case");
    assert!(
        stuck.contains("data-stuck") && stuck.contains("lease held by a dead worker (inst_dead")
    );
    let page = console_page(&app, &format!("/console/cases/{case_id}")).await;
    assert!(
        page.contains("id=\"stuck\""),
        "the case page names the stall"
    );
    let trace = console_page(&app, &format!("/console/runs/{run_id}")).await;
    assert!(trace.contains("watchdog_flagged"));
    let (status, metrics) = app
        .raw(Request::get("/metrics").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        metrics.contains("refund_desk_stuck_runs{kind=\"dead_worker\"} 1"),
        "{metrics}"
    );

    // Later scans in the same stall flag nothing more, until the second period is over.
    app.clock.advance(minutes(29));
    assert_eq!(scan(&app).await, ScanReport::default());
    app.clock.advance(minutes(1));
    assert_eq!(scan(&app).await.handed_off, 1);

    let case = app.case(&case_id).await;
    assert_eq!(case["status"], "escalated", "{case:#}");
    let escalated = events_of_kind(&app, &run_id, "escalated").await;
    assert_eq!(escalated.len(), 1);
    let reason = escalated[0]["payload"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("stuck-run watchdog: no progress for 46 min"),
        "{reason}"
    );
    assert!(reason.contains("lease held by a dead worker"), "{reason}");
    let run = runs::load_run(&app.state.db, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, "failed");
    assert_eq!(run.lease_owner, None, "the dead worker's lease is gone");
    let stuck = console_page(&app, "/console?status=stuck").await;
    assert!(
        !stuck.contains(&case_id),
        "a handed-off case is no longer stuck: it is escalated"
    );

    app.clock.advance(minutes(60));
    assert_eq!(
        scan(&app).await,
        ScanReport::default(),
        "an ended run is not watched"
    );
}

#[tokio::test]
async fn a_run_progressing_slowly_but_steadily_is_never_flagged() {
    let app = spawn_app().await;
    let (_, run_id) = queued_case(&app).await;
    let mut run = worker_starts_model_call(&app, "inst_slow").await;
    // New evidence every 10 minutes for an hour and a half, scanned every minute.
    for n in 0..9 {
        for _ in 0..10 {
            app.clock.advance(minutes(1));
            assert_eq!(
                scan(&app).await.flagged,
                0,
                "minute {} of a steady run",
                n * 10
            );
        }
        runs::renew_lease(&app.state.db, &mut run, app.clock_now())
            .await
            .unwrap();
        worker_records_evidence(&app, &mut run, n).await;
    }
    assert!(events_of_kind(&app, &run_id, "watchdog_flagged")
        .await
        .is_empty());

    // Once it stops learning anything it is flagged, so the loop above could fail.
    app.clock.advance(minutes(16));
    assert_eq!(scan(&app).await.flagged, 1);
}

#[tokio::test]
async fn a_flag_clears_when_the_run_makes_progress_again() {
    let app = spawn_app().await;
    let (case_id, run_id) = queued_case(&app).await;
    let mut run = worker_starts_model_call(&app, "inst_late").await;
    app.clock.advance(minutes(16));
    runs::renew_lease(&app.state.db, &mut run, app.clock_now())
        .await
        .unwrap();
    let report = scan(&app).await;
    assert_eq!(report.flagged, 1);
    let flagged = events_of_kind(&app, &run_id, "watchdog_flagged").await;
    assert_eq!(
        flagged[0]["payload"]["diagnosis"]["waiting_on"]["kind"], "model",
        "a live worker's lease: the model has not answered"
    );

    worker_records_evidence(&app, &mut run, 0).await;
    assert_eq!(scan(&app).await.cleared, 1);
    let stuck = console_page(&app, "/console?status=stuck").await;
    assert!(!stuck.contains(&case_id));
    // The second period passes from the new progress: no hand-off of a moving run.
    app.clock.advance(minutes(14));
    assert_eq!(scan(&app).await, ScanReport::default());
    assert_eq!(app.case(&case_id).await["status"], "investigating");
}

#[tokio::test]
async fn two_scanners_at_once_flag_a_stuck_run_once_and_hand_it_off_once() {
    let app = spawn_app().await;
    let (case_id, run_id) = queued_case(&app).await;
    worker_starts_model_call(&app, "inst_dead").await;
    let mut other = app.state.clone();
    other.instance_id = "inst_other".into();

    app.clock.advance(minutes(16));
    let (a, b) = tokio::join!(
        watchdog::scan(&app.state.db, app.state.clock.as_ref(), app.state.watchdog),
        watchdog::scan(&other.db, other.clock.as_ref(), other.watchdog)
    );
    assert_eq!(a.unwrap().flagged + b.unwrap().flagged, 1);
    assert_eq!(
        events_of_kind(&app, &run_id, "watchdog_flagged")
            .await
            .len(),
        1
    );

    app.clock.advance(minutes(30));
    let (a, b) = tokio::join!(
        watchdog::scan(&app.state.db, app.state.clock.as_ref(), app.state.watchdog),
        watchdog::scan(&other.db, other.clock.as_ref(), other.watchdog)
    );
    assert_eq!(a.unwrap().handed_off + b.unwrap().handed_off, 1);
    assert_eq!(events_of_kind(&app, &run_id, "escalated").await.len(), 1);
    assert_eq!(app.case(&case_id).await["status"], "escalated");
    let audited = count(
        &app,
        "SELECT COUNT(*) FROM audit_log WHERE action = 'escalated' AND subject = $1",
        &case_id,
    )
    .await;
    assert_eq!(audited, 1, "one escalation in the audit log");
}

#[tokio::test]
async fn a_run_resting_on_the_payment_provider_is_diagnosed_as_waiting_on_it() {
    let proposer = ScriptedModel::new("scripted-proposer").turn(ModelTurn::Answer {
        answer: Proposal {
            request: policy_engine::RequestKind::DuplicateCharge,
            order_id: Some("O-1001".into()),
            reason_code: "duplicate_charge".into(),
            refunds: vec![],
            evidence: vec![],
            citations: vec![],
            summary: "the customer reports a duplicate charge on O-1001".into(),
            order_source: None,
            request_source: None,
            repeat_of: None,
            other_readings: Vec::new(),
            reading: None,
        },
    });
    let app = spawn_app_with_model(Arc::new(proposer)).await;
    // The provider answers every read with a 503.
    let fault = reqwest::Client::new()
        .post(format!("{}/__mock/faults", app.mock.base_url()))
        .json(&json!({ "mode": "fail_before_commit", "status": 503, "method": "GET" }))
        .send()
        .await
        .unwrap();
    assert!(fault.status().is_success());
    let (_, run_id) = queued_case(&app).await;
    app.drain().await;
    let run = runs::load_run(&app.state.db, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, "awaiting_dependency");

    // No worker retries it (none is running); the watchdog sees what it rests on.
    app.clock.advance(minutes(16));
    assert_eq!(scan(&app).await.flagged, 1);
    let flagged = events_of_kind(&app, &run_id, "watchdog_flagged").await;
    let diagnosis = &flagged[0]["payload"]["diagnosis"];
    assert_eq!(
        diagnosis["waiting_on"]["kind"], "dependency",
        "{diagnosis:#}"
    );
    assert_eq!(diagnosis["waiting_on"]["dependency"], "payment_provider");
    assert_eq!(diagnosis["waiting_on"]["attempts"], 1);
    assert_eq!(diagnosis["last_event"]["kind"], "state");
    assert!(diagnosis["summary"]
        .as_str()
        .unwrap()
        .contains("waiting on the payment provider (1 failed attempts"));
}

#[tokio::test]
async fn a_run_awaiting_approval_is_never_flagged_a_human_owns_it() {
    let app = spawn_app().await;
    let (_, case) = app.open_ticket("C-100", CHARGED_TWICE).await;
    assert_eq!(case["status"], "awaiting_approval");
    app.clock.advance(minutes(60 * 24));
    assert_eq!(scan(&app).await, ScanReport::default());
}

/// A model that never answers (a hung model server): the worker waits on it while
/// renewing its lease, as long as the model call's timeout allows.
struct HungModel;

impl desk::agent::Model for HungModel {}

impl harness::Model<Proposal> for HungModel {
    fn name(&self) -> String {
        "hung".into()
    }

    fn next_turn<'a>(
        &'a self,
        _ctx: &'a desk::agent::ModelContext<'a>,
    ) -> desk::agent::BoxFuture<'a, anyhow::Result<ModelTurn>> {
        Box::pin(std::future::pending())
    }
}

/// Polls (real time, bounded) until the run has an event of `kind`.
async fn wait_for_event(app: &TestApp, run_id: &str, kind: &str) -> Value {
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(20) {
        if let Some(e) = events_of_kind(app, run_id, kind).await.pop() {
            return e;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no {kind} event within 20 s");
}

#[tokio::test]
async fn the_serve_worker_flags_a_run_stuck_on_a_hung_model_and_hands_it_off() {
    let app = spawn_app_with_model(Arc::new(HungModel)).await;
    let (case_id, run_id) = queued_case(&app).await;
    let worker = tokio::spawn(desk::worker::run_forever(app.state.clone()));
    // The worker committed `model_running` and is waiting on the model.
    let started = std::time::Instant::now();
    loop {
        let run = runs::load_run(&app.state.db, &run_id)
            .await
            .unwrap()
            .unwrap();
        if run.status == "model_running" {
            break;
        }
        assert!(
            started.elapsed().as_secs() < 20,
            "the worker never asked the model"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    app.clock.advance(minutes(16));
    let flagged = wait_for_event(&app, &run_id, "watchdog_flagged").await;
    assert_eq!(
        flagged["payload"]["diagnosis"]["run_status"],
        "model_running"
    );
    app.clock.advance(minutes(31));
    let escalated = wait_for_event(&app, &run_id, "escalated").await;
    assert!(escalated["payload"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("stuck-run watchdog:"));
    assert_eq!(app.case(&case_id).await["status"], "escalated");
    worker.abort();
}

/// The stuck tab pages through flagged cases only. A newer case that is not
/// stuck never takes the place of the stuck one on a page of one (the flag was once
/// applied after the page was cut, leaving an empty page with a "next" link).
#[tokio::test]
async fn the_stuck_tab_pages_through_flagged_cases_only() {
    let app = spawn_app().await;
    let (case_id, _) = queued_case(&app).await;
    worker_starts_model_call(&app, "inst_dead").await;
    app.clock.advance(minutes(16));
    assert_eq!(scan(&app).await.flagged, 1);
    let other = app.post_ticket("C-200", CHARGED_TWICE).await;
    let other_id = other["case"]["id"].as_str().unwrap();

    // Newest first, the unflagged case would come first.
    let all = console_page(&app, "/console?status=all&per_page=1&sort=newest").await;
    assert!(all.contains(other_id) && all.contains("id=\"next-page\""));
    let page = console_page(&app, "/console?status=stuck&per_page=1&sort=newest").await;
    assert!(page.contains(&case_id), "{page}");
    assert!(!page.contains(other_id), "{page}");
    assert!(
        !page.contains("id=\"next-page\""),
        "one flagged case: no next page"
    );
}
