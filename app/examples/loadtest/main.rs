//! The multi-instance load test (docs/spec/interfaces.md ("Storage and scale")): several `refund-agent serve` processes on
//! one PostgreSQL database and one payments mock, driven over loopback HTTP, with one
//! instance SIGKILLed half-way. Run it with `scripts/loadtest` (which builds the release
//! binaries and starts PostgreSQL); see `--help` for the knobs. This file is the order of
//! its phases, each a file: `processes`, `seed`, `drive` (with `outage`), `checks`.
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

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;

mod checks;
mod drive;
mod outage;
#[path = "../../tests/it/support/pg_cluster.rs"]
mod pg_cluster;
mod processes;
mod seed;

use checks::{percentile, Findings};
use drive::{Driven, Load};
use processes::{Binaries, Running};

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

async fn run(args: Args) -> anyhow::Result<bool> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.deadline_secs);
    let bins = Binaries::found(&args.bin_dir)?;
    // Found before any work, so a machine that cannot stop PostgreSQL fails at once.
    let cluster = match args.db_outage_secs > 0 {
        true => Some(pg_cluster::Cluster::serving(&args.postgres).map_err(anyhow::Error::msg)?),
        false => None,
    };
    let dir = tempfile::tempdir()?;
    let database_url = processes::fresh_database(&args.postgres).await?;
    eprintln!("database: {database_url}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(args.concurrency)
        .build()?;
    let mut running = Running::default();

    // The payments mock, its own process; its webhooks go to the last instance (which
    // is never the one killed), standing in for a load balancer.
    let mock_port = processes::free_port()?;
    let ports: Vec<u16> = (0..args.instances)
        .map(|_| processes::free_port())
        .collect::<Result<_, _>>()?;
    let webhook_url = format!(
        "http://127.0.0.1:{}/api/v1/webhooks/payments",
        ports[args.instances - 1]
    );
    let mock_dir = dir.path().join("payments");
    let payments_url = processes::start_mock(
        &mut running,
        &http,
        &bins.mock,
        mock_dir,
        mock_port,
        &webhook_url,
    )
    .await?;
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
    let seeded = seed::seed(&bins.agent, &env, dir.path(), args.tickets, started).await?;
    let (bin, quota) = (&bins.agent, args.cpu_quota);
    let instances =
        processes::start_instances(&mut running, &http, bin, dir.path(), &env, &ports, quota)
            .await?;
    let instances = Arc::new(Mutex::new(instances));
    eprintln!(
        "{} instances up after {:.1}s; driving {} tickets",
        args.instances,
        started.elapsed().as_secs_f64(),
        args.tickets
    );

    let (reviewer, approved_ok) =
        drive::reviewer(http.clone(), instances.clone(), seeded.staff_token);
    let load = Load {
        tickets: args.tickets,
        concurrency: args.concurrency,
        kill: !args.no_kill && args.instances > 1,
        outage: Duration::from_secs(args.db_outage_secs),
        deadline,
    };
    let tokens = seeded.customer_tokens;
    let processes = &mut running.processes;
    let driven = drive::open_tickets(&load, &http, &instances, processes, cluster, tokens).await?;
    eprintln!(
        "{} tickets created in {:.1}s ({} failed); waiting for every case to be final…",
        driven.created, driven.creating_secs, driven.failed_posts
    );

    sqlx::any::install_default_drivers();
    let db = sqlx::AnyPool::connect(&database_url).await?;
    checks::wait_until_final(&db, deadline).await?;
    let all_done_secs = driven.started.elapsed().as_secs_f64();
    reviewer.abort();
    let killed = driven.killed.map(|_| "instance-0");
    let outage = driven.outage.as_ref();
    let found = checks::check(
        &db,
        &http,
        &payments_url,
        &mut running.processes,
        killed,
        outage,
    )
    .await?;
    db.close().await;
    let approved_ok = approved_ok.load(std::sync::atomic::Ordering::Relaxed);
    report(&args, &driven, &found, all_done_secs, approved_ok)?;
    drop(running);
    Ok(found.passed)
}

/// The report: JSON on stdout, one line on stderr.
fn report(
    args: &Args,
    driven: &Driven,
    found: &Findings,
    all_done_secs: f64,
    approved_ok: usize,
) -> anyhow::Result<()> {
    let (created, creating_secs) = (driven.created, driven.creating_secs);
    let latencies = &found.latencies;
    let report = json!({
        "instances": args.instances,
        "cpu_quota_per_instance": args.cpu_quota,
        "killed_instance_after_tickets": driven.killed,
        "tickets_requested": args.tickets,
        "tickets_created": created,
        "ticket_posts_failed": driven.failed_posts,
        "cases": found.cases,
        "case_statuses": found.statuses,
        "tickets_per_second": (created as f64 / creating_secs * 10.0).round() / 10.0,
        "seconds_to_create": (creating_secs * 10.0).round() / 10.0,
        "seconds_until_all_final": (all_done_secs * 10.0).round() / 10.0,
        "case_latency_ms": {"p50": percentile(latencies, 50.0), "p99": percentile(latencies, 99.0),
                            "max": latencies.last().copied().unwrap_or(0), "n": latencies.len()},
        "approved_cases": found.approved_cases,
        "approvals_answered_200": approved_ok,
        "refunds_issued": found.ledger.issued,
        "duplicates": found.ledger.duplicates,
        "cases_refunded_twice": found.refunded_twice,
        "db_outage": driven.outage,
        "processes_died": found.died,
        "runs_checked": found.runs,
        "runs_with_lost_events": found.lost,
        "refunded_minor_units": found.ledger.refunded,
        "approved_minor_units": found.approved_money,
        "passed": found.passed,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    let outage_summary = driven.outage.as_ref().map_or(String::new(), |o| {
        format!(
            "PostgreSQL down {} s: /readyz 503 × {}, ready {:.1} s after the start; ",
            o.down_secs, o.readyz_503, o.recovery_secs
        )
    });
    eprintln!(
        "{:.1} tickets/s; case latency p50 {} ms, p99 {} ms; refunds issued {} vs approved {}; duplicates: {}; {outage_summary}{}",
        created as f64 / creating_secs,
        percentile(latencies, 50.0),
        percentile(latencies, 99.0),
        found.ledger.issued,
        found.approved_cases,
        found.ledger.duplicates,
        if found.passed { "PASS" } else { "FAIL" }
    );
    Ok(())
}
