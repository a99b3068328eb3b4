//! The load itself: tickets `--concurrency` in flight, round-robin over the live
//! instances, one instance SIGKILLed when half are out and the database outage started
//! at three quarters; beside them a reviewer polling the approval queue through one live
//! instance and approving each case through another, concurrently.
//!
//! What it does not do: wait for the cases to finish, or check anything (`checks`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use futures_util::future::join_all;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use super::outage::{database_outage, Outage};
use super::pg_cluster;
use super::processes::{live_urls, Instance, Processes};

/// What opening the tickets came to.
pub struct Driven {
    pub created: usize,
    pub failed_posts: usize,
    /// After how many tickets an instance was killed, if one was.
    pub killed: Option<usize>,
    pub outage: Option<Outage>,
    /// When the first ticket went out, and how long until the last was answered.
    pub started: Instant,
    pub creating_secs: f64,
}

/// How the tickets go out.
pub struct Load {
    pub tickets: usize,
    pub concurrency: usize,
    /// Whether an instance is SIGKILLed half-way (never the only one).
    pub kill: bool,
    pub outage: Duration,
    pub deadline: Instant,
}

/// Opens one ticket per customer token, killing `processes.0[1]` (the first instance)
/// half-way and stopping PostgreSQL (`cluster`) at three quarters.
pub async fn open_tickets(
    load: &Load,
    http: &reqwest::Client,
    instances: &Arc<Mutex<Vec<Instance>>>,
    processes: &mut Processes,
    mut cluster: Option<pg_cluster::Cluster>,
    customer_tokens: Vec<String>,
) -> anyhow::Result<Driven> {
    let counts = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let semaphore = Arc::new(tokio::sync::Semaphore::new(load.concurrency));
    let drive_started = Instant::now();
    let mut posts = Vec::new();
    let (mut killed, mut outage) = (None, None);
    for (i, token) in customer_tokens.into_iter().enumerate() {
        if load.kill && killed.is_none() && i == load.tickets / 2 {
            kill_first_instance(processes, instances, i, drive_started).await?;
            killed = Some(i);
        }
        if i == load.tickets * 3 / 4 {
            if let Some(cluster) = cluster.take() {
                let (http, instances) = (http.clone(), instances.clone());
                let task = database_outage(http, cluster, instances, load.outage, i);
                outage = Some(tokio::spawn(task));
            }
        }
        if Instant::now() > load.deadline {
            bail!("deadline reached while opening tickets");
        }
        let permit = semaphore.clone().acquire_owned().await?;
        let live = live_urls(instances);
        let url = live[i % live.len()].clone();
        let (http, counts) = (http.clone(), counts.clone());
        posts.push(tokio::spawn(async move {
            let _permit = permit;
            post_ticket(&http, &url, &token, &counts).await
        }));
    }
    for post in posts {
        post.await?;
    }
    let outage = match outage {
        Some(task) => Some(task.await??),
        None => None,
    };
    Ok(Driven {
        created: counts.0.load(Ordering::Relaxed),
        failed_posts: counts.1.load(Ordering::Relaxed),
        killed,
        outage,
        started: drive_started,
        creating_secs: drive_started.elapsed().as_secs_f64(),
    })
}

/// SIGKILLs the first instance (`processes.0[1]`, after the mock) and marks it dead.
async fn kill_first_instance(
    processes: &mut Processes,
    instances: &Mutex<Vec<Instance>>,
    tickets_out: usize,
    drive_started: Instant,
) -> anyhow::Result<()> {
    let (name, child) = &mut processes.0[1];
    child.start_kill()?; // SIGKILL on Unix
    child.wait().await?;
    instances.lock().expect("not poisoned")[0].alive = false;
    eprintln!(
        "SIGKILLed {name} after {tickets_out} tickets ({:.1}s)",
        drive_started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One ticket; counted as created (`counts.0`) or failed (`counts.1`).
async fn post_ticket(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    counts: &(AtomicUsize, AtomicUsize),
) {
    let resp = http
        .post(format!("{url}/api/v1/tickets"))
        .bearer_auth(token)
        .json(&json!({ "message": "I was charged twice for my annual plan" }))
        .send()
        .await;
    match resp {
        Ok(r) if r.status().as_u16() == 201 => {
            counts.0.fetch_add(1, Ordering::Relaxed);
        }
        Ok(r) => {
            eprintln!(
                "ticket refused: {} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            );
            counts.1.fetch_add(1, Ordering::Relaxed);
        }
        // In flight to the instance that was killed: the customer would retry.
        Err(_) => {
            counts.1.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A reviewer: polls the queue through rotating live instances and approves each case
/// through another, concurrently, until aborted. The count is of cases approved with a
/// 200, each once.
pub fn reviewer(
    http: reqwest::Client,
    instances: Arc<Mutex<Vec<Instance>>>,
    token: String,
) -> (JoinHandle<()>, Arc<AtomicUsize>) {
    let approved_ok = Arc::new(AtomicUsize::new(0));
    let counted = approved_ok.clone();
    let task = tokio::spawn(async move {
        let mut seen = BTreeSet::new();
        let mut turn = 0usize;
        loop {
            let live = live_urls(&instances);
            turn += 1;
            let queue = awaiting_approval(&http, &live[turn % live.len()], &token).await;
            let approvals = queue.iter().enumerate().map(|(j, case)| {
                let url = &live[(turn + j + 1) % live.len()];
                approve(&http, url, &token, case)
            });
            for (id, ok) in join_all(approvals).await {
                if ok && seen.insert(id) {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    (task, approved_ok)
}

/// The approval queue as one instance answers it (empty when it does not).
async fn awaiting_approval(http: &reqwest::Client, url: &str, token: &str) -> Vec<Value> {
    match http
        .get(format!("{url}/api/v1/cases?status=awaiting_approval"))
        .bearer_auth(token)
        .send()
        .await
    {
        Ok(resp) if resp.status().is_success() => resp.json().await.unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Approves `case` at its fingerprint; its id and whether the answer was a success.
async fn approve(http: &reqwest::Client, url: &str, token: &str, case: &Value) -> (String, bool) {
    let id = case["id"].as_str().unwrap_or_default().to_string();
    let fingerprint = case["fingerprint"].as_str().unwrap_or_default();
    let resp = http
        .post(format!("{url}/api/v1/cases/{id}/approve"))
        .bearer_auth(token)
        .json(&json!({ "fingerprint": fingerprint }))
        .send()
        .await;
    (id, resp.map(|r| r.status().is_success()).unwrap_or(false))
}
