//! SPEC invariant 4 against a real process: `refund-agent serve` is killed with SIGKILL
//! while its refund call is in flight — before the provider answered, and after the
//! provider committed but before the answer arrived — then restarted on the same data.
//! Exactly one provider refund results, and the case ends `refund_succeeded`.

use std::process::Command;
use std::time::Duration;

use crate::support::serve::{self, sigkill, Serve};
use serde_json::{json, Value};

fn command(data: &std::path::Path, payments: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refund-agent"));
    cmd.arg("--data-dir")
        .arg(data)
        .env("PAYMENTS_URL", payments)
        // A provider named by PAYMENTS_URL needs its secrets set: the test
        // mock's, given explicitly.
        .env("PAYMENTS_API_KEY", desk::config::DEFAULT_PAYMENTS_KEY)
        .env(
            "PAYMENTS_WEBHOOK_SECRET",
            desk::config::DEFAULT_WEBHOOK_SECRET,
        )
        .env("FIXTURES_DIR", desk::config::default_fixtures_dir())
        .env_remove("DATABASE_URL")
        .env_remove("LLM_BASE_URL")
        // The shortest work lease, so the restarted process takes the dead one's case
        // over after 5 s instead of the default minute.
        .env("WORK_LEASE_SECS", "5")
        .env("RUST_LOG", "warn");
    cmd
}

async fn start(data: &std::path::Path, payments: &str) -> Serve {
    serve::start(&mut command(data, payments)).await
}

/// Up to two minutes: after a SIGKILL, the dead process's case lease (5 s here) must
/// expire before another process resumes its work.
const RESUME_LIMIT: Duration = Duration::from_secs(120);

async fn killed_mid_refund_then_restarted(fault: Value) {
    let dir = tempfile::tempdir().unwrap();
    let mock = crate::support::start_mock(dir.path()).await;
    let data = dir.path().join("app");
    let (agent, customer) = serve::seed(&mut command(&data, &mock.base_url()));
    let http = reqwest::Client::new();

    let mut serve = start(&data, &mock.base_url()).await;
    let ticket: Value = http
        .post(format!("{}/api/v1/tickets", serve.base))
        .bearer_auth(&customer)
        .json(&json!({ "message": "I was charged twice for my annual plan" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let case_url = format!(
        "{}/api/v1/cases/{}",
        serve.base,
        ticket["case"]["id"].as_str().unwrap()
    );
    let case = crate::support::poll_json(&http, &case_url, &agent, RESUME_LIMIT, |c| {
        c["status"] == "awaiting_approval"
    })
    .await;

    let installed = http
        .post(format!("{}/__mock/faults", mock.base_url()))
        .json(&fault)
        .send()
        .await
        .unwrap();
    assert!(installed.status().is_success());
    let approved = http
        .post(format!("{case_url}/approve"))
        .bearer_auth(&agent)
        .json(&json!({ "fingerprint": case["fingerprint"] }))
        .send()
        .await
        .unwrap();
    assert!(approved.status().is_success());
    // The intent is stored and the call is in flight (the provider holds it).
    crate::support::poll_json(&http, &case_url, &agent, RESUME_LIMIT, |c| {
        c["refunds"][0]["status"] == "submitting" && c["refunds"][0]["attempts"] == 1
    })
    .await;
    let key = crate::support::poll_json(&http, &case_url, &agent, RESUME_LIMIT, |_| true).await
        ["refunds"][0]["idempotency_key"]
        .as_str()
        .unwrap()
        .to_string();
    sigkill(&mut serve);

    let mut serve = start(&data, &mock.base_url()).await;
    let case_url = format!(
        "{}/api/v1/cases/{}",
        serve.base,
        ticket["case"]["id"].as_str().unwrap()
    );
    let done = crate::support::poll_json(&http, &case_url, &agent, RESUME_LIMIT, |c| {
        c["status"] == "refund_succeeded"
    })
    .await;
    assert_eq!(
        done["refunds"][0]["idempotency_key"],
        key.as_str(),
        "the same stored key after the restart"
    );
    let ledger: Value = http
        .get(format!("{}/__mock/ledger", mock.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ours: Vec<&Value> = ledger["refunds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["charge"] == "ch_1001b")
        .collect();
    assert_eq!(ours.len(), 1, "exactly one provider refund: {ledger:#}");
    assert_eq!(ours[0]["amount"], 19800);
    sigkill(&mut serve);
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_killed_while_the_provider_holds_its_refund_call_refunds_once_after_restart() {
    killed_mid_refund_then_restarted(json!({ "mode": "latency", "ms": 3000, "method": "POST", "path": "/v1/refunds", "one_shot": true })).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_killed_after_the_provider_committed_but_before_its_answer_refunds_once_after_restart(
) {
    killed_mid_refund_then_restarted(json!({ "mode": "drop_response_after_commit", "drop_mode": "hang", "ms": 4000, "method": "POST", "path": "/v1/refunds", "one_shot": true })).await;
}
