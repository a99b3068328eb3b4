//! The multi-instance load test (docs/spec/interfaces.md ("Storage and scale")): several `refund-agent serve` processes on
//! one PostgreSQL database and one payments mock, driven over loopback HTTP, with one
//! instance SIGKILLed half-way. Run it with `scripts/loadtest` (which builds the release
//! binaries and starts PostgreSQL); see `--help` for the knobs. Long because it is one
//! program: its phases (seed, load, kill, outage, checks) share one cluster and report.
//!
//! What it does, in order: a fresh database; the payments mock as its own process
//! (`target/release/payments-mock`); a generated billing world (one customer charged
//! twice for one plan per ticket) written as a billing-world file (docs/spec/interfaces.md) and loaded with
//! `refund-agent seed --world`; a supervisor from `staff add` / `staff token`; customer
//! tokens from `customer token`; N `serve` instances (own port and data dir, same
//! `DATABASE_URL` and `PAYMENTS_URL`); tickets spread over instances while a staff loop
//! polls the approval queue and approves concurrently through different instances;
//! one instance SIGKILLed mid-way; then it waits (bounded) until every case is final.
//!
//! Checks at the end (exit status 1 if any fails): every case final; no provider refund
//! duplicated (`GET /__mock/ledger`: ≤ 1 API refund per charge and per idempotency
//! key); no run event lost (every run's `seq` dense from 1, every tool intent with one
//! result); money refunded at the provider = money approved (the approved decisions'
//! refund intents). Prints tickets/s, p50/p99 case latency (ticket created →
//! `refund_succeeded`, from the app's own timestamps; it includes the simulated
//! reviewer's polling delay), refunds issued vs approved, and duplicates.
//!
//! What it deliberately does not do: listen beyond 127.0.0.1, run unbounded (ticket
//! count and a deadline cap it), or leave processes behind (children are killed on
//! every exit path).

use futures_util::future::join_all;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use serde_json::{json, Value};
use sqlx::Row;
use tokio::process::{Child, Command};

#[path = "../tests/it/support/pg_cluster.rs"]
mod pg_cluster;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "loadtest",
    about = "Several refund-agent instances on one PostgreSQL"
)]
struct Args {
    /// PostgreSQL server URL (any database on it); a fresh database is created.
    #[arg(long, env = "LOADTEST_POSTGRES")]
    postgres: String,
    /// Tickets to open (one customer each).
    #[arg(long, default_value_t = 2000)]
    tickets: usize,
    /// `serve` instances.
    #[arg(long, default_value_t = 3)]
    instances: usize,
    /// Tickets in flight at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Give up (and fail) after this many seconds.
    #[arg(long, default_value_t = 600)]
    deadline_secs: u64,
    /// Directory holding `refund-agent` and `payments-mock`.
    #[arg(long, default_value = "target/release")]
    bin_dir: PathBuf,
    /// Do not SIGKILL an instance half-way.
    #[arg(long)]
    no_kill: bool,
    /// Seconds PostgreSQL is stopped when three quarters of the tickets are out (issue
    /// 20; `pg_ctlcluster`, so root); 0 skips the outage.
    #[arg(long, default_value_t = 10)]
    db_outage_secs: u64,
    /// Caps each `serve` instance at this share of one CPU (0.25 = a quarter), each in a
    /// cgroup (v1 `cpu` controller, `cpu.cfs_quota_us`; root) of its own, so that the
    /// instances, not the machine's cores, are what a scale-out run measures. Off when unset.
    #[arg(long)]
    cpu_quota: Option<f64>,
}

/// The `cpu` cgroups (v1) the instances run in, one each, removed when dropped.
struct CpuCaps(Vec<PathBuf>);

impl CpuCaps {
    const ROOT: &'static str = "/sys/fs/cgroup/cpu";
    const PERIOD_US: u64 = 100_000;

    /// Puts the process `pid` in a new cgroup allowed `share` of one CPU.
    fn cap(&mut self, pid: u32, share: f64) -> anyhow::Result<()> {
        anyhow::ensure!(share > 0.0, "--cpu-quota must be above 0");
        let dir = PathBuf::from(Self::ROOT).join(format!("refund-loadtest-{pid}"));
        std::fs::create_dir_all(&dir).with_context(|| {
            format!(
                "creating {} (cgroup v1 cpu controller; needs root)",
                dir.display()
            )
        })?;
        self.0.push(dir.clone());
        let quota = (share * Self::PERIOD_US as f64).round().max(1_000.0) as u64;
        std::fs::write(dir.join("cpu.cfs_period_us"), Self::PERIOD_US.to_string())?;
        std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())?;
        // `cgroup.procs` moves every thread of the process.
        std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        eprintln!("serve {pid} capped at {share} of a CPU ({})", dir.display());
        Ok(())
    }
}

impl Drop for CpuCaps {
    fn drop(&mut self) {
        // A cgroup is removed once its processes have gone; the instances are killed
        // before this runs (declared before them, so dropped after), a moment's wait covers the
        // reaping.
        for dir in &self.0 {
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// Children are SIGKILLed when dropped, so every exit path cleans up.
struct Processes(Vec<(String, Child)>);

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            let _ = child.start_kill();
        }
    }
}

struct Instance {
    url: String,
    alive: bool,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    match run(args).await {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("loadtest: error: {e:#}");
            std::process::exit(2);
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn fresh_database(server: &str) -> anyhow::Result<String> {
    sqlx::any::install_default_drivers();
    let name = format!("rd_load_{}", uuid::Uuid::new_v4().simple());
    let admin = sqlx::AnyPool::connect(server)
        .await
        .context("connecting to PostgreSQL")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await?;
    admin.close().await;
    let (prefix, _) = server
        .rsplit_once('/')
        .context("a postgres url ends with /database")?;
    Ok(format!("{prefix}/{name}"))
}

/// The world: customer i has one annual plan charged twice (the duplicate-charge case),
/// three days ago, in one of the four regions.
fn world(n: usize) -> Value {
    let plans = [
        ("CN", "CNY", "198.00"),
        ("US", "USD", "120.00"),
        ("EU", "EUR", "99.00"),
        ("JP", "JPY", "12000"),
    ];
    let day = |offset_secs: i64| {
        (time::OffsetDateTime::now_utc() - time::Duration::days(3)
            + time::Duration::seconds(offset_secs))
        .replace_nanosecond(0)
        .expect("zero nanoseconds is valid")
        .format(&time::format_description::well_known::Rfc3339)
        .expect("a date formats as RFC 3339")
    };
    let (mut customers, mut orders, mut charges) = (vec![], vec![], vec![]);
    for i in 0..n {
        let (region, currency, amount) = plans[i % plans.len()];
        let customer = format!("L-{i:05}");
        let order = format!("O-L{i:05}");
        customers.push(json!({"id": customer, "name": format!("Load Customer {i}"),
            "email": format!("load{i}@example.test"), "region": region}));
        orders.push(
            json!({"id": order, "customer_id": customer, "product": "annual_plan",
            "amount": amount, "currency": currency, "created_at": day(0)}),
        );
        for (suffix, at) in [("a", 5), ("b", 70)] {
            charges.push(
                json!({"id": format!("ch_l{i:05}{suffix}"), "order_id": order,
                "customer_id": customer, "amount": amount, "currency": currency,
                "captured": true, "status": "succeeded", "disputed": false, "created_at": day(at),
                "payment_method": "pm_card_visa_4242", "amount_refunded": "0.00"}),
            );
        }
    }
    json!({"customers": customers, "orders": orders, "charges": charges, "refunds": []})
}

/// Runs a `refund-agent` command to completion; returns its stdout (tokens print alone).
async fn cli(
    bin: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<String> {
    let mut command = Command::new(bin);
    command
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .with_context(|| format!("running {}", bin.display()))?;
    if let Some(text) = stdin {
        use tokio::io::AsyncWriteExt;
        let mut pipe = child.stdin.take().context("stdin is piped")?;
        pipe.write_all(text.as_bytes()).await?;
    }
    let out = child.wait_with_output().await?;
    if !out.status.success() {
        bail!(
            "refund-agent {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

async fn wait_until_up(http: &reqwest::Client, url: &str, child: &mut Child) -> anyhow::Result<()> {
    for _ in 0..600 {
        if let Ok(resp) = http.get(url).send().await {
            if resp.status().is_success() {
                return Ok(());
            }
        }
        if let Some(status) = child.try_wait()? {
            bail!("{url}: the process exited ({status}) before it was up");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{url} did not come up within 60 s")
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn run(args: Args) -> anyhow::Result<bool> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.deadline_secs);
    let agent_bin = args.bin_dir.join("refund-agent");
    let mock_bin = args.bin_dir.join("payments-mock");
    for bin in [&agent_bin, &mock_bin] {
        if !bin.is_file() {
            bail!(
                "{} is missing: cargo build --release -p app -p payments-mock",
                bin.display()
            );
        }
    }
    // Found before any work, so a machine that cannot stop PostgreSQL fails at once.
    let mut cluster = if args.db_outage_secs > 0 {
        Some(pg_cluster::Cluster::serving(&args.postgres).map_err(anyhow::Error::msg)?)
    } else {
        None
    };
    let dir = tempfile::tempdir()?;
    let database_url = fresh_database(&args.postgres).await?;
    eprintln!("database: {database_url}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(args.concurrency)
        .build()?;
    // Declared first so it is dropped last: the cgroups go once the instances have.
    let mut caps = CpuCaps(Vec::new());
    let mut processes = Processes(Vec::new());

    // The payments mock, its own process; its webhooks go to the last instance (which
    // is never the one killed), standing in for a load balancer.
    let mock_port = free_port()?;
    let ports: Vec<u16> = (0..args.instances)
        .map(|_| free_port())
        .collect::<Result<_, _>>()?;
    let payments_url = format!("http://127.0.0.1:{mock_port}");
    let webhook_url = format!(
        "http://127.0.0.1:{}/api/v1/webhooks/payments",
        ports[args.instances - 1]
    );
    let mut mock = Command::new(&mock_bin)
        .args(["--addr", &format!("127.0.0.1:{mock_port}")])
        .arg("--data-dir")
        .arg(dir.path().join("payments"))
        .args(["--webhook-url", &webhook_url])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting payments-mock")?;
    wait_until_up(&http, &format!("{payments_url}/__mock/ledger"), &mut mock).await?;
    processes.0.push(("payments-mock".into(), mock));

    // Seed: the world file, loaded into the app's database and the mock.
    let world_path = dir.path().join("world.json");
    std::fs::write(&world_path, world(args.tickets).to_string())?;
    let seed_dir = dir.path().join("seed");
    let seed_dir = seed_dir.to_str().context("a UTF-8 temp path")?;
    // A provider named by PAYMENTS_URL needs its secrets set: the mock's.
    let env = [
        ("DATABASE_URL", database_url.as_str()),
        ("PAYMENTS_URL", payments_url.as_str()),
        ("PAYMENTS_API_KEY", desk::config::DEFAULT_PAYMENTS_KEY),
        (
            "PAYMENTS_WEBHOOK_SECRET",
            desk::config::DEFAULT_WEBHOOK_SECRET,
        ),
    ];
    let world_arg = world_path.to_str().context("a UTF-8 temp path")?;
    cli(
        &agent_bin,
        &env,
        &["--data-dir", seed_dir, "seed", "--world", world_arg],
        None,
    )
    .await?;
    let email = "loadtest-supervisor@refund-desk.test";
    cli(
        &agent_bin,
        &env,
        &[
            "--data-dir",
            seed_dir,
            "staff",
            "add",
            "--email",
            email,
            "--role",
            "supervisor",
            "--password-stdin",
        ],
        Some("load test password, not secret\n"),
    )
    .await?;
    let staff_token = cli(
        &agent_bin,
        &env,
        &["--data-dir", seed_dir, "staff", "token", "--email", email],
        None,
    )
    .await?;
    eprintln!(
        "seeded {} customers in {:.1}s; issuing customer tokens…",
        args.tickets,
        started.elapsed().as_secs_f64()
    );

    // Customer tokens, from the CLI, 8 at a time.
    let customers: Vec<String> = (0..args.tickets).map(|i| format!("L-{i:05}")).collect();
    let mut customer_tokens = Vec::with_capacity(customers.len());
    for chunk in customers.chunks(8) {
        let calls = chunk.iter().map(|c| {
            let agent_bin = &agent_bin;
            let env = &env;
            async move {
                cli(
                    agent_bin,
                    env,
                    &["--data-dir", seed_dir, "customer", "token", c],
                    None,
                )
                .await
            }
        });
        for token in join_all(calls).await {
            customer_tokens.push(token?);
        }
    }

    // The instances, each capped when asked.
    let mut instances = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let data_dir = dir.path().join(format!("instance-{i}"));
        let mut child = Command::new(&agent_bin)
            .arg("--data-dir")
            .arg(&data_dir)
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .envs(env)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting refund-agent serve")?;
        if let Some(share) = args.cpu_quota {
            let pid = child.id().context("a running child has a pid")?;
            caps.cap(pid, share)?;
        }
        let url = format!("http://127.0.0.1:{port}");
        wait_until_up(&http, &format!("{url}/api/v1/healthz"), &mut child).await?;
        processes.0.push((format!("instance-{i}"), child));
        instances.push(Instance { url, alive: true });
    }
    let instances = Arc::new(Mutex::new(instances));
    eprintln!(
        "{} instances up after {:.1}s; driving {} tickets",
        args.instances,
        started.elapsed().as_secs_f64(),
        args.tickets
    );

    // A reviewer: polls the queue through rotating live instances and approves each
    // case through another, concurrently.
    let approved_ok = Arc::new(AtomicUsize::new(0));
    let reviewer = {
        let http = http.clone();
        let instances = instances.clone();
        let token = staff_token.clone();
        let approved_ok = approved_ok.clone();
        tokio::spawn(async move {
            let mut seen = BTreeSet::new();
            let mut turn = 0usize;
            loop {
                let live = live_urls(&instances);
                turn += 1;
                let url = &live[turn % live.len()];
                let queue: Vec<Value> = match http
                    .get(format!("{url}/api/v1/cases?status=awaiting_approval"))
                    .bearer_auth(&token)
                    .send()
                    .await
                {
                    Ok(resp) if resp.status().is_success() => resp.json().await.unwrap_or_default(),
                    _ => Vec::new(),
                };
                let approvals = queue.iter().enumerate().map(|(j, case)| {
                    let http = http.clone();
                    let token = token.clone();
                    let url = live[(turn + j + 1) % live.len()].clone();
                    let id = case["id"].as_str().unwrap_or_default().to_string();
                    let fingerprint = case["fingerprint"].as_str().unwrap_or_default().to_string();
                    async move {
                        let resp = http
                            .post(format!("{url}/api/v1/cases/{id}/approve"))
                            .bearer_auth(&token)
                            .json(&json!({ "fingerprint": fingerprint }))
                            .send()
                            .await;
                        (id, resp.map(|r| r.status().is_success()).unwrap_or(false))
                    }
                });
                for (id, ok) in join_all(approvals).await {
                    if ok && seen.insert(id) {
                        approved_ok.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };

    // Tickets, `concurrency` in flight, round-robin over live instances; one instance
    // SIGKILLed when half are out.
    let created = Arc::new(AtomicUsize::new(0));
    let failed_posts = Arc::new(AtomicUsize::new(0));
    let semaphore = Arc::new(tokio::sync::Semaphore::new(args.concurrency));
    let drive_started = Instant::now();
    let mut posts = Vec::new();
    let mut killed = None;
    let mut outage = None;
    for (i, token) in customer_tokens.into_iter().enumerate() {
        if !args.no_kill && killed.is_none() && i == args.tickets / 2 && args.instances > 1 {
            let (name, child) = &mut processes.0[1];
            child.start_kill()?; // SIGKILL on Unix
            child.wait().await?;
            instances.lock().expect("not poisoned")[0].alive = false;
            eprintln!(
                "SIGKILLed {name} after {i} tickets ({:.1}s)",
                drive_started.elapsed().as_secs_f64()
            );
            killed = Some(i);
        }
        if i == args.tickets * 3 / 4 {
            if let Some(cluster) = cluster.take() {
                outage = Some(tokio::spawn(database_outage(
                    http.clone(),
                    cluster,
                    instances.clone(),
                    Duration::from_secs(args.db_outage_secs),
                    i,
                )));
            }
        }
        if Instant::now() > deadline {
            bail!("deadline reached while opening tickets");
        }
        let permit = semaphore.clone().acquire_owned().await?;
        let url = {
            let live = live_urls(&instances);
            live[i % live.len()].clone()
        };
        let http = http.clone();
        let created = created.clone();
        let failed_posts = failed_posts.clone();
        posts.push(tokio::spawn(async move {
            let _permit = permit;
            let resp = http
                .post(format!("{url}/api/v1/tickets"))
                .bearer_auth(&token)
                .json(&json!({ "message": "I was charged twice for my annual plan" }))
                .send()
                .await;
            match resp {
                Ok(r) if r.status().as_u16() == 201 => {
                    created.fetch_add(1, Ordering::Relaxed);
                }
                Ok(r) => {
                    eprintln!(
                        "ticket refused: {} {}",
                        r.status(),
                        r.text().await.unwrap_or_default()
                    );
                    failed_posts.fetch_add(1, Ordering::Relaxed);
                }
                // In flight to the instance that was killed: the customer would retry.
                Err(_) => {
                    failed_posts.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for post in posts {
        post.await?;
    }
    let outage = match outage {
        Some(task) => Some(task.await??),
        None => None,
    };
    let creating_secs = drive_started.elapsed().as_secs_f64();
    eprintln!(
        "{} tickets created in {creating_secs:.1}s ({} failed); waiting for every case to be final…",
        created.load(Ordering::Relaxed),
        failed_posts.load(Ordering::Relaxed)
    );

    // Wait (bounded) until every case is final, reading the shared database.
    sqlx::any::install_default_drivers();
    let db = sqlx::AnyPool::connect(&database_url).await?;
    let final_states = [
        "refund_succeeded",
        "refund_failed",
        "denied",
        "escalated",
        "rejected",
        "cancelled",
        "closed",
        "replied",
    ];
    let in_list = final_states
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ");
    loop {
        let open: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) AS n FROM cases WHERE status NOT IN ({in_list})"
        )))
        .fetch_one(&db)
        .await?
        .try_get("n")?;
        if open == 0 {
            break;
        }
        if Instant::now() > deadline {
            eprintln!("deadline reached with {open} cases not final");
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let all_done_secs = drive_started.elapsed().as_secs_f64();
    reviewer.abort();

    // Checks.
    let mut ok = true;
    if let Some(o) = &outage {
        if o.readyz_503 == 0 || o.readyz_200_while_down + o.readyz_other_while_down > 0 {
            eprintln!("FAIL: /readyz while PostgreSQL was down: {} × 503, {} × 200, {} other (only 503 is right)",
                o.readyz_503, o.readyz_200_while_down, o.readyz_other_while_down);
            ok = false;
        }
        if o.healthz_failed > 0 {
            eprintln!(
                "FAIL: /healthz failed {} times while PostgreSQL was down",
                o.healthz_failed
            );
            ok = false;
        }
    }
    // Every instance not killed on purpose is still running (`serve` rides
    // out the database restart).
    let killed_name = killed.map(|_| "instance-0");
    let mut died = Vec::new();
    for (name, child) in &mut processes.0 {
        if Some(name.as_str()) != killed_name && child.try_wait()?.is_some() {
            died.push(name.clone());
        }
    }
    if !died.is_empty() {
        eprintln!("FAIL: these processes died: {died:?}");
        ok = false;
    }
    let statuses: BTreeMap<String, i64> =
        sqlx::query("SELECT status, COUNT(*) AS n FROM cases GROUP BY status")
            .fetch_all(&db)
            .await?
            .iter()
            .map(|r| Ok((r.try_get("status")?, r.try_get("n")?)))
            .collect::<Result<_, sqlx::Error>>()?;
    let cases: i64 = statuses.values().sum();
    let not_final: i64 = statuses
        .iter()
        .filter(|(s, _)| !final_states.contains(&s.as_str()))
        .map(|(_, n)| n)
        .sum();
    if not_final > 0 {
        eprintln!("FAIL: {not_final} cases not final: {statuses:?}");
        ok = false;
    }

    let ledger: Value = http
        .get(format!("{payments_url}/__mock/ledger"))
        .send()
        .await?
        .json()
        .await?;
    let mut duplicates = 0i64;
    for n in ledger["counters"]["refunds_created"]
        .as_object()
        .context("ledger counters")?
        .values()
    {
        duplicates += (n.as_i64().unwrap_or(0) - 1).max(0);
    }
    let mut keys = BTreeSet::new();
    let mut refunded: BTreeMap<String, i64> = BTreeMap::new();
    let mut issued = 0;
    for entry in ledger["refunds"].as_array().context("ledger refunds")? {
        if entry["origin"] != "api" {
            continue;
        }
        let refund = if entry["refund"].is_object() {
            &entry["refund"]
        } else {
            entry
        };
        issued += 1;
        if !keys.insert(
            entry["idempotency_key"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ) {
            duplicates += 1;
        }
        if refund["status"] == "succeeded" {
            *refunded
                .entry(
                    refund["currency"]
                        .as_str()
                        .unwrap_or_default()
                        .to_ascii_uppercase(),
                )
                .or_default() += refund["amount"].as_i64().unwrap_or(0);
        }
    }
    if duplicates > 0 {
        eprintln!("FAIL: {duplicates} duplicated provider refunds");
        ok = false;
    }

    // Every case finished once: no case holds two live refund intents.
    let refunded_twice: i64 = sqlx::query(
        "SELECT COUNT(*) AS n FROM (SELECT case_id FROM refund_intents WHERE status <> 'void'
           GROUP BY case_id HAVING COUNT(*) > 1) AS twice",
    )
    .fetch_one(&db)
    .await?
    .try_get("n")?;
    if refunded_twice > 0 {
        eprintln!("FAIL: {refunded_twice} cases with more than one refund");
        ok = false;
    }

    // Approved money: the refund intents created by approvals (every approved refund).
    let mut approved_money: BTreeMap<String, i64> = BTreeMap::new();
    let approved_cases: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM approvals WHERE verdict = 'approved'")
            .fetch_one(&db)
            .await?
            .try_get("n")?;
    for r in sqlx::query("SELECT currency, CAST(SUM(amount_minor) AS BIGINT) AS total FROM refund_intents WHERE status <> 'void' GROUP BY currency")
        .fetch_all(&db)
        .await?
    {
        approved_money.insert(r.try_get("currency")?, r.try_get("total")?);
    }
    if refunded != approved_money {
        eprintln!("FAIL: refunded {refunded:?} != approved {approved_money:?}");
        ok = false;
    }

    // No event lost.
    let mut lost = 0;
    let mut runs = 0;
    let events =
        sqlx::query("SELECT run_id, seq, kind, call_id FROM run_events ORDER BY run_id, seq")
            .fetch_all(&db)
            .await?;
    let mut by_run: BTreeMap<String, Vec<(i64, String, Option<String>)>> = BTreeMap::new();
    for r in &events {
        by_run.entry(r.try_get("run_id")?).or_default().push((
            r.try_get("seq")?,
            r.try_get("kind")?,
            r.try_get("call_id")?,
        ));
    }
    for log in by_run.values() {
        runs += 1;
        let dense = log.iter().enumerate().all(|(i, e)| e.0 == i as i64 + 1);
        let answered = log.iter().filter(|e| e.1 == "tool_intent").all(|intent| {
            log.iter()
                .filter(|e| e.1 == "tool_result" && e.2 == intent.2 && e.0 > intent.0)
                .count()
                == 1
        });
        if !dense || !answered {
            lost += 1;
        }
    }
    if lost > 0 {
        eprintln!("FAIL: {lost} runs with a gap or an unanswered tool intent");
        ok = false;
    }

    // Latency: ticket created → refund_succeeded, from the app's timestamps.
    let mut latencies: Vec<i64> = sqlx::query(
        "SELECT a.created_at - t.created_at AS ms FROM audit_log a
           JOIN cases c ON c.id = a.subject JOIN tickets t ON t.id = c.ticket_id
         WHERE a.action = 'refund_status' AND a.detail = 'refund_succeeded'",
    )
    .fetch_all(&db)
    .await?
    .iter()
    .map(|r| r.try_get("ms"))
    .collect::<Result<_, _>>()?;
    latencies.sort_unstable();
    db.close().await;

    let created = created.load(Ordering::Relaxed);
    let report = json!({
        "instances": args.instances,
        "cpu_quota_per_instance": args.cpu_quota,
        "killed_instance_after_tickets": killed,
        "tickets_requested": args.tickets,
        "tickets_created": created,
        "ticket_posts_failed": failed_posts.load(Ordering::Relaxed),
        "cases": cases,
        "case_statuses": statuses,
        "tickets_per_second": (created as f64 / creating_secs * 10.0).round() / 10.0,
        "seconds_to_create": (creating_secs * 10.0).round() / 10.0,
        "seconds_until_all_final": (all_done_secs * 10.0).round() / 10.0,
        "case_latency_ms": {"p50": percentile(&latencies, 50.0), "p99": percentile(&latencies, 99.0),
                            "max": latencies.last().copied().unwrap_or(0), "n": latencies.len()},
        "approved_cases": approved_cases,
        "approvals_answered_200": approved_ok.load(Ordering::Relaxed),
        "refunds_issued": issued,
        "duplicates": duplicates,
        "cases_refunded_twice": refunded_twice,
        "db_outage": outage,
        "processes_died": died,
        "runs_checked": runs,
        "runs_with_lost_events": lost,
        "refunded_minor_units": refunded,
        "approved_minor_units": approved_money,
        "passed": ok,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    let outage_summary = outage.as_ref().map_or(String::new(), |o| {
        format!(
            "PostgreSQL down {} s: /readyz 503 × {}, ready {:.1} s after the start; ",
            o.down_secs, o.readyz_503, o.recovery_secs
        )
    });
    eprintln!(
        "{:.1} tickets/s; case latency p50 {} ms, p99 {} ms; refunds issued {issued} vs approved {approved_cases}; duplicates: {duplicates}; {outage_summary}{}",
        created as f64 / creating_secs,
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        if ok { "PASS" } else { "FAIL" }
    );
    drop(processes);
    Ok(ok)
}

/// What the database outage phase saw (PostgreSQL stopped under load).
#[derive(serde::Serialize)]
struct Outage {
    after_tickets: usize,
    down_secs: u64,
    /// `/readyz` answers while the database was down, by kind: every one must be 503.
    readyz_503: usize,
    readyz_200_while_down: usize,
    readyz_other_while_down: usize,
    /// `/healthz` (liveness) must keep answering 200 through the outage.
    healthz_failed: usize,
    /// From `pg_ctlcluster start` returning until every live instance's `/readyz` is 200.
    recovery_secs: f64,
}

/// Stops PostgreSQL for `down`, probing every live instance's `/readyz` and `/healthz`
/// meanwhile, starts it again, and waits (at most a minute) until every live instance
/// is ready. The start is attempted whatever the probes saw.
async fn database_outage(
    http: reqwest::Client,
    cluster: pg_cluster::Cluster,
    instances: Arc<Mutex<Vec<Instance>>>,
    down: Duration,
    after_tickets: usize,
) -> anyhow::Result<Outage> {
    let control = |cluster: pg_cluster::Cluster, stop: bool| {
        tokio::task::spawn_blocking(move || {
            let done = if stop {
                cluster.stop()
            } else {
                cluster.start()
            };
            done.map(|()| cluster).map_err(anyhow::Error::msg)
        })
    };
    let cluster = control(cluster, true).await??;
    let stopped = Instant::now();
    eprintln!("PostgreSQL stopped for {} s", down.as_secs());
    let mut outage = Outage {
        after_tickets,
        down_secs: down.as_secs(),
        readyz_503: 0,
        readyz_200_while_down: 0,
        readyz_other_while_down: 0,
        healthz_failed: 0,
        recovery_secs: 0.0,
    };
    let probe = |url: String, path: &'static str| {
        let request = http
            .get(format!("{url}{path}"))
            .timeout(Duration::from_secs(5));
        async move { request.send().await.map(|r| r.status().as_u16()).ok() }
    };
    while stopped.elapsed() < down {
        for url in live_urls(&instances) {
            match probe(url.clone(), "/readyz").await {
                Some(503) => outage.readyz_503 += 1,
                Some(200) => outage.readyz_200_while_down += 1,
                _ => outage.readyz_other_while_down += 1,
            }
            if probe(url, "/api/v1/healthz").await != Some(200) {
                outage.healthz_failed += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    control(cluster, false).await??;
    let started = Instant::now();
    for url in live_urls(&instances) {
        while probe(url.clone(), "/readyz").await != Some(200) {
            if started.elapsed() > Duration::from_secs(60) {
                bail!("{url}/readyz not ready a minute after PostgreSQL started");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    outage.recovery_secs = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    eprintln!(
        "PostgreSQL started; every live instance ready after {:.1} s",
        outage.recovery_secs
    );
    Ok(outage)
}

fn live_urls(instances: &Mutex<Vec<Instance>>) -> Vec<String> {
    instances
        .lock()
        .expect("not poisoned")
        .iter()
        .filter(|i| i.alive)
        .map(|i| i.url.clone())
        .collect()
}
