//! How fast the product is (BENCHMARKS.md): one program, one table of figures, each beside a
//! baseline measured in the same run on the same machine: one program, so every figure and
//! its baseline share one setup and one report table; a module per phase.
//!
//! `cargo bench -p app --bench product` (or `scripts/bench`). SQLite always (a temp
//! file); PostgreSQL too when `BENCH_DATABASE_URL` is set (a fresh database per phase is
//! created on that server and dropped afterwards). Everything runs on loopback.
//!
//! | figure | baseline |
//! |---|---|
//! | durable agent steps/s (`runs::append_event`, one transaction each) | raw single-row insert commits/s, same database |
//! | agent steps/s and tickets/s inside `worker::run_once` | same raw commit rate |
//! | tickets/s end to end (created → `awaiting_approval`, built-in investigator, payments mock over HTTP) | same raw commit rate (commits/s) |
//! | policy decisions/s on one core | hashing the same facts' evidence (`workflow::evidence_hash`) |
//! | policy search p50/p99 at 10,000 sections | raw tantivy on the same index and terms (`raw_tantivy_search`) |
//! | HTTP req/s and p99: `GET /tickets/{id}` (page, cookie), `/api/v1/tickets/{id}` (bearer), `/api/v1/cases/{id}` (staff) | `GET /readyz` (one query and the index check) |
//! | the same, beside the peer | `app/examples/http_peer.rs` (axum + sqlx on SQLite, one page from one row), when built |
//! | `serve` peak memory with 10,000 open cases (`BENCH_OPEN_CASES`) | its RSS right after start-up |
//! | durable tickets/s | the peer: the OpenAI Agents SDK's runs/s, same 6-tool shape, fake model (`phase_peer`) |
//! | shadow replay tickets/s | parsing the same history file |
//! | staff-write p50 beside four `/metrics` scrapers, 1 M runs (`metrics_scrape`) | the same writes beside four `/healthz` clients |
//! | tickets through the API until every case awaits approval, 1 / 8 / 32 clients (`api`); writing transactions and PostgreSQL CPU per ticket | the Agents SDK's runs/s, before and after ours |
//! | `import customers` of 400,000 rows: wall time and peak memory (`import`) | the same import of 100,000 rows |
//!
//! The HTTP load comes from `wrk` (an external process; in-process reqwest tasks only
//! when wrk is not installed); the server is the release `refund-agent serve` binary
//! running as a second process (its peak memory, VmHWM, is read from
//! `/proc/<pid>/status` after the load). Sizes and durations are bounded and can be
//! changed with environment variables (see `Settings`); a larger size is skipped when
//! the smaller one projects it past `BENCH_PHASE_BUDGET_SECS`.
//!
//! `BENCH_PHASES` (comma separated, default all) runs only the named phases:
//! `decisions`, `search`, `shadow`, `peer`, `steps`, `tickets`, `http`, `api`, `import`,
//! `login_flood`, `metrics_scrape`. For example
//! `BENCH_PHASES=decisions cargo bench -p app --bench product` measures the policy
//! decisions alone in seconds instead of the whole run's minutes. `tickets` also runs
//! `steps`, whose raw commit rate is its baseline.
//!
//! Tests never time anything; this program does, and only reports: it fails on
//! errors, never on a missed target.
//!
//! One program so that every figure and its baseline are measured in the same run on the
//! same machine (BENCHMARKS.md); each phase is its own module.

#![allow(
    clippy::type_complexity,
    clippy::too_many_arguments,
    reason = "measurement and fixture code: tuples of figures read better than one-use types"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use desk::agent::investigator::Investigator;
use desk::clock::{Clock, ManualClock, SystemClock};
use desk::customer::NewTicket;
use desk::state::Services;
use desk::world::{World, WorldCharge, WorldCustomer, WorldOrder};
use policy_engine::{Currency, Facts, Money, Product, Region};
use serde_json::{json, Value};
use sqlx::Row;
use store::Db;
use time::OffsetDateTime;

mod api;
mod api_reads;
mod http;
mod import;
mod login_flood;
mod metrics_scrape;
mod peer;
mod policy;
mod report;
mod rig;
mod serve;
mod shadow;
mod tickets;

use api::*;
use api_reads::*;
use http::*;
use import::*;
use login_flood::*;
use metrics_scrape::*;
use peer::*;
use policy::*;
use report::*;
use rig::*;
use serve::*;
use shadow::*;
use tickets::*;

pub(crate) struct Settings {
    /// Commits per durable-step measurement (`BENCH_STEPS`).
    pub(crate) steps: usize,
    /// End-to-end ticket counts (`BENCH_TICKETS`, comma separated).
    pub(crate) tickets: Vec<usize>,
    /// Shadow replay sizes (`BENCH_SHADOW`).
    pub(crate) shadow: Vec<usize>,
    /// Seconds per HTTP endpoint (`BENCH_HTTP_SECS`).
    pub(crate) http_secs: u64,
    /// Concurrent connections, one load per count (`BENCH_HTTP_CONNS`, comma separated).
    pub(crate) http_conns: Vec<usize>,
    /// Tickets the HTTP load reads from (`BENCH_HTTP_TICKETS`).
    pub(crate) http_tickets: usize,
    /// Policy-search sections (`BENCH_SECTIONS`).
    pub(crate) sections: usize,
    /// After the end-to-end run of this many tickets, `serve` runs over its open cases
    /// (memory, ticket API) (`BENCH_OPEN_CASES`; 0: never).
    pub(crate) open_cases: usize,
    /// Runs of our harness in the peer's shape (`BENCH_PEER_RUNS`).
    pub(crate) peer_runs: usize,
    /// Runs of ours at a time, one measurement each (`BENCH_PEER_AT_ONCE`, comma separated).
    pub(crate) peer_at_once: Vec<usize>,
    /// The peer's interpreter (`BENCH_PEER_PYTHON`) and script (`BENCH_PEER_SCRIPT`).
    pub(crate) peer_python: String,
    pub(crate) peer_script: String,
    /// A second `serve` binary for a same-run A/B of the HTTP endpoints
    /// (`BENCH_SERVE_BIN_B`, e.g. a build of the previous commit).
    pub(crate) serve_b: Option<String>,
    /// A larger size is skipped when projected past this many seconds
    /// (`BENCH_PHASE_BUDGET_SECS`).
    pub(crate) phase_budget: f64,
    pub(crate) postgres: Option<String>,
    /// The phases to run (`BENCH_PHASES`, comma separated; default all of [`PHASES`]).
    pub(crate) phases: Vec<String>,
    /// Rows of the customer files imported (`BENCH_IMPORT`, comma separated).
    pub(crate) imports: Vec<usize>,
    /// Tickets opened through the API (`BENCH_API_TICKETS`), by each count of clients
    /// (`BENCH_API_CLIENTS`, comma separated).
    pub(crate) api_tickets: usize,
    pub(crate) api_clients: Vec<usize>,
}

/// Every phase, in the order the run measures them.
pub(crate) const PHASES: [&str; 11] = [
    "decisions",
    "search",
    "shadow",
    "peer",
    "steps",
    "tickets",
    "http",
    "api",
    "import",
    "login_flood",
    "metrics_scrape",
];

/// The workspace root (the peer's venv and script are found from it).
pub(crate) const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

pub(crate) fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| default.to_vec())
}

impl Settings {
    pub(crate) fn from_env() -> Settings {
        Settings {
            steps: env_usize("BENCH_STEPS", 3_000),
            tickets: env_list("BENCH_TICKETS", &[1_000, 10_000, 100_000]),
            shadow: env_list("BENCH_SHADOW", &[1_000, 10_000]),
            http_secs: env_usize("BENCH_HTTP_SECS", 5) as u64,
            http_conns: env_list("BENCH_HTTP_CONNS", &[64]),
            http_tickets: env_usize("BENCH_HTTP_TICKETS", 200),
            sections: env_usize("BENCH_SECTIONS", 10_000),
            open_cases: env_usize("BENCH_OPEN_CASES", 10_000),
            serve_b: std::env::var("BENCH_SERVE_BIN_B")
                .ok()
                .filter(|b| !b.trim().is_empty()),
            peer_runs: env_usize("BENCH_PEER_RUNS", 1000),
            peer_at_once: env_list("BENCH_PEER_AT_ONCE", &[1, 4, 16]),
            peer_python: std::env::var("BENCH_PEER_PYTHON")
                .unwrap_or_else(|_| format!("{WORKSPACE}/.cache/agents/bin/python")),
            peer_script: std::env::var("BENCH_PEER_SCRIPT")
                .unwrap_or_else(|_| format!("{WORKSPACE}/../shared/bench/agents_overhead.py")),
            phase_budget: env_usize("BENCH_PHASE_BUDGET_SECS", 300) as f64,
            postgres: std::env::var("BENCH_DATABASE_URL")
                .ok()
                .filter(|u| !u.trim().is_empty()),
            phases: std::env::var("BENCH_PHASES")
                .ok()
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .filter(|v: &Vec<String>| !v.is_empty())
                .unwrap_or_else(|| PHASES.iter().map(|p| p.to_string()).collect()),
            imports: env_list("BENCH_IMPORT", &[100_000, 400_000]),
            api_tickets: env_usize("BENCH_API_TICKETS", 300),
            api_clients: env_list("BENCH_API_CLIENTS", &[1, 8, 32]),
        }
    }

    pub(crate) fn runs(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    let settings = Settings::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(settings))
}

async fn run(settings: Settings) -> anyhow::Result<()> {
    if let Some(unknown) = settings
        .phases
        .iter()
        .find(|p| !PHASES.contains(&p.as_str()))
    {
        bail!(
            "BENCH_PHASES: unknown phase '{unknown}' (phases: {})",
            PHASES.join(", ")
        );
    }
    let started = Instant::now();
    let mut report = Report::default();
    let machine = machine();
    eprintln!("Refund desk benchmarks on {machine}");
    let load_at_start = load_average();

    let fixtures = desk::config::default_fixtures_dir();
    let policies = desk::policies::load_policy_set(&fixtures.join("policies"))?;
    let index_dir = tempfile::tempdir()?;
    let index = {
        let (dir, set) = (index_dir.path().to_path_buf(), policies.clone());
        Arc::new(
            tokio::task::spawn_blocking(move || desk::policies::open_index(&dir, &set)).await??,
        )
    };

    if settings.runs("decisions") {
        let mix = facts_mix(&index).await?;
        phase_decisions(&policies, &mix, &mut report);
    }
    if settings.runs("search") {
        phase_search(&settings, &index, &mut report)?;
    }
    if settings.runs("shadow") {
        phase_shadow(&settings, &policies, &index, &mut report).await?;
    }
    let peer = if settings.runs("peer") {
        phase_peer(&settings, &mut report).await?
    } else {
        None
    };
    // Our harness in the peer's shape, durable on SQLite: one run at a time (as the peer
    // runs them), then as many at a time as the worker's claim loops (`BENCH_PEER_AT_ONCE`).
    let mut shaped = Vec::new();
    if settings.runs("peer") {
        eprintln!("[peer] our harness, the peer's shape, durable on SQLite");
        for &at_once in &settings.peer_at_once {
            let rate =
                durable_runs_peer_shape(&Backend::Sqlite, settings.peer_runs, at_once).await?;
            shaped.push((at_once, rate));
        }
    }
    let mut ours: Option<f64> = None;

    let database_phases = ["steps", "tickets", "http", "api", "import"];
    if database_phases.iter().any(|p| settings.runs(p)) {
        let mut backends = vec![Backend::Sqlite];
        if let Some(url) = &settings.postgres {
            backends.push(Backend::Postgres(url.clone()));
        } else {
            report
                .note("PostgreSQL not measured: set BENCH_DATABASE_URL (scripts/bench --postgres)");
        }
        for backend in &backends {
            // The end-to-end figures are ratios against the raw commit rate `steps` measures.
            if settings.runs("steps") || settings.runs("tickets") {
                let raw = phase_steps(backend, &settings, &mut report).await?;
                if settings.runs("tickets") {
                    let rates = phase_tickets(backend, &settings, raw, &mut report).await?;
                    if matches!(backend, Backend::Sqlite) {
                        ours = rates.first().map(|(_, r)| *r);
                    }
                }
            }
            if settings.runs("http") {
                phase_http(backend, &settings, &mut report).await?;
            }
            if settings.runs("api") {
                phase_api(backend, &settings, &mut report).await?;
            }
            if settings.runs("import") {
                phase_import(backend, &settings, &mut report).await?;
            }
        }
    }

    if settings.runs("login_flood") {
        phase_login_flood(&settings, &mut report).await?;
    }
    if settings.runs("metrics_scrape") {
        phase_metrics_scrape(&settings, &mut report).await?;
    }
    if let Some((plain, session)) = peer {
        for &(at_once, ours) in &shaped {
            let how = match at_once {
                1 => "one run at a time".to_string(),
                n => format!("{n} runs at a time"),
            };
            report.add(
                format!("our durable runs/s in the peer's shape (6 tool calls, fake model, trivial tool; every step committed on SQLite), {how}, vs the peer's runs/s (no persistence)"),
                fmt_rate(ours, "runs/s"),
                format!(
                    "{} (with its SQLite session store: {})",
                    fmt_rate(plain, "runs/s"),
                    fmt_rate(session, "runs/s")
                ),
                format!("{:.2} ({:.2} against its session store)", ours / plain, ours / session),
                "ratio ≥ 3",
                Some(ours / plain >= 3.0),
            );
        }
    }
    if let (Some((plain, session)), Some(ours)) = (peer, ours) {
        report.add(
            "durable tickets/s on SQLite (6 tool calls each, over HTTP) vs the peer's runs/s (6 tool calls, fake model, no persistence)",
            fmt_rate(ours, "tickets/s"),
            format!(
                "{} (with its SQLite session store: {})",
                fmt_rate(plain, "runs/s"),
                fmt_rate(session, "runs/s")
            ),
            format!("{:.2} ({:.2} against its session store)", ours / plain, ours / session),
            "— (the peer decides nothing, reads no records)",
            None,
        );
    }

    report.note(format!(
        "bench process peak memory (VmHWM) {:.0} MiB; whole run {:.0} s; load average at start {load_at_start}, at end {} (other work on the machine skews every figure)",
        proc_memory("self", "VmHWM:").unwrap_or(0.0),
        started.elapsed().as_secs_f64(),
        load_average()
    ));
    println!("Refund desk benchmarks — {machine}");
    println!();
    report.print();
    Ok(())
}
