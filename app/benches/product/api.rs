//! Tickets through the API (`api`), the shape a user meets: `BENCH_API_TICKETS` (300)
//! duplicate-charge tickets opened with `POST /api/v1/tickets` by 1, 8 and 32 clients
//! (`BENCH_API_CLIENTS`) against the release `serve` as a second process, the clock running
//! from the first request until every case awaits approval. Beside it, in the same run, the
//! Agents SDK's 6-tool script (`../shared/bench/agents_overhead.py`, fake model, nothing
//! persisted), measured before and after ours. On PostgreSQL it also counts the writing
//! transactions (transaction ids assigned) and the server's CPU per ticket. `serve` logs
//! as it ships (its default `info` filter, to a file), as a user runs it. After the
//! 8-client run the ticket API is loaded beside `/readyz` (`api_reads`).

use super::*;

/// One run: tickets/s from the first request until every case awaits approval, and on
/// PostgreSQL the writing transactions and the server's CPU milliseconds per ticket.
pub(crate) struct ApiRun {
    pub(crate) per_second: f64,
    pub(crate) opened_in: Duration,
    pub(crate) writes_per_ticket: Option<f64>,
    pub(crate) pg_cpu_ms_per_ticket: Option<f64>,
}

pub(crate) async fn phase_api(
    backend: &Backend,
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!(
        "[{}] tickets through the API until every case awaits approval",
        backend.name()
    );
    let before = phase_peer(settings, report).await?.map(|(plain, _)| plain);
    let mut runs = Vec::new();
    // With `BENCH_SERVE_BIN_B`, that build runs each client count too, on a fresh database
    // of its own, right before or after this one (turn about), so both see the same load.
    let b = std::env::var("BENCH_SERVE_BIN_B").ok();
    for (i, &clients) in settings.api_clients.iter().enumerate() {
        let n = settings.api_tickets;
        let run_b = || async {
            match &b {
                Some(bin) => Ok(Some(api_run(backend, bin, n, clients, None).await?)),
                None => anyhow::Ok(None),
            }
        };
        let b_first = if i % 2 == 1 { run_b().await? } else { None };
        let reads =
            reads_follow(clients, &settings.api_clients).then_some((settings, &mut *report));
        runs.push((
            clients,
            "",
            api_run(backend, SERVE_BIN, n, clients, reads).await?,
        ));
        let b_run = match b_first {
            Some(run) => Some(run),
            None => run_b().await?,
        };
        if let Some(run) = b_run {
            runs.push((clients, " B (BENCH_SERVE_BIN_B)", run));
        }
    }
    let after = match before {
        Some(_) => phase_peer(settings, report).await?.map(|(plain, _)| plain),
        None => None,
    };
    let sdk = match (before, after) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (a, b) => a.or(b),
    };
    for (clients, who, run) in runs {
        let name = format!("{}{who}", backend.name());
        report_api_run(&name, settings.api_tickets, clients, &run, sdk, report);
    }
    Ok(())
}

fn report_api_run(
    name: &str,
    tickets: usize,
    clients: usize,
    run: &ApiRun,
    sdk: Option<f64>,
    report: &mut Report,
) {
    report.add(
        format!("[{name}] {tickets} tickets through the API until every case awaits approval, {} (all opened in {:.2} s)", clients_of(clients), run.opened_in.as_secs_f64()),
        fmt_rate(run.per_second, "tickets/s"),
        sdk.map_or("the SDK not measured".into(), |s| format!("the Agents SDK {} (6 tool calls, fake model, nothing persisted; mean of before and after)", fmt_rate(s, "runs/s"))),
        sdk.map_or(String::new(), |s| format!("{:.2}", run.per_second / s)),
        "≥ 3× the SDK",
        sdk.map(|s| run.per_second / s >= 3.0),
    );
    if let Some(writes) = run.writes_per_ticket {
        report.add(
            format!(
                "[{name}] writing transactions per ticket, {} (transaction ids assigned)",
                clients_of(clients)
            ),
            format!("{writes:.1}"),
            "",
            "",
            "",
            None,
        );
    }
    if let Some(cpu) = run.pg_cpu_ms_per_ticket {
        report.add(
            format!(
                "[{name}] PostgreSQL CPU per ticket, {} (every postgres process, user + system)",
                clients_of(clients)
            ),
            format!("{cpu:.1} ms"),
            "",
            "",
            "≤ 9 ms",
            Some(cpu <= 9.0),
        );
    }
}

fn clients_of(n: usize) -> String {
    match n {
        1 => "one client".into(),
        n => format!("{n} clients"),
    }
}

/// A fresh database and `serve` with `n` customers who each have a duplicate charge; `n`
/// tickets opened by `clients` clients at once against `serve` built as `bin`; then the wait until every case awaits
/// approval (read on a connection of our own, which writes nothing). With `reads`, then
/// the ticket API under load beside `/readyz` (`api_reads`).
pub(crate) async fn api_run(
    backend: &Backend,
    bin: &str,
    n: usize,
    clients: usize,
    reads: Option<(&Settings, &mut Report)>,
) -> anyhow::Result<ApiRun> {
    let dir = tempfile::tempdir()?;
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir)?;
    let db = FreshDb::new(backend, &data_dir).await?;
    let (messages, tokens) = seeded_customers(&dir, &data_dir, &db.url, n).await?;
    log_statements(&db).await?;
    let log = dir.path().join("serve.log");
    let server = start_serve_as_shipped(bin, &data_dir, &db.url, &log)?;
    let mut result = drive_api(&server, &db.url, backend, &messages, &tokens, clients).await;
    if let (Ok((_, tickets)), Some((settings, report))) = (&result, reads) {
        let (dir, url) = (dir.path(), &db.url);
        if let Err(e) = ticket_api_reads(
            &server, dir, url, tickets, &tokens, settings, backend, report,
        )
        .await
        {
            result = Err(e);
        }
    }
    if result.is_err() {
        print_log_tail(&dir.path().join("serve.log"));
    }
    server.stop().await;
    db.drop_database().await;
    result.map(|(run, _)| run)
}

/// With `BENCH_PG_LOG_STATEMENTS=1`, on PostgreSQL: every statement on `db` from now on
/// (after seeding: `serve`'s, and the bench's own wait, which reads `cases`) goes to the
/// server's log (`log_statement = all` for this database only), its lines prefixed with
/// the database's name, which is printed here. How the statements per ticket were
/// counted (BENCHMARKS.md).
async fn log_statements(db: &FreshDb) -> anyhow::Result<()> {
    let Some((base, name)) = &db.drop_on else {
        return Ok(());
    };
    if std::env::var("BENCH_PG_LOG_STATEMENTS").as_deref() != Ok("1") {
        return Ok(());
    }
    let admin = sqlx::AnyPool::connect(base).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE {name} SET log_statement = 'all'"
    )))
    .execute(&admin)
    .await?;
    admin.close().await;
    eprintln!("  statements on {name} are logged from here");
    Ok(())
}

/// `refund-agent seed --world` with `n` duplicate-charge customers (dated relative to now:
/// `serve` runs on the system clock), and an API token each.
pub(crate) async fn seeded_customers(
    dir: &tempfile::TempDir,
    data_dir: &Path,
    db_url: &str,
    n: usize,
) -> anyhow::Result<(Vec<(String, String)>, Vec<String>)> {
    let (world, messages) = duplicate_world(n, OffsetDateTime::now_utc());
    let world_path = dir.path().join("world.json");
    std::fs::write(&world_path, serde_json::to_vec(&world)?)?;
    let seed = cli(data_dir, db_url)
        .arg("seed")
        .arg("--world")
        .arg(&world_path)
        .output()
        .await?;
    if !seed.status.success() {
        bail!(
            "refund-agent seed failed: {}",
            String::from_utf8_lossy(&seed.stderr)
        );
    }
    let store = Db::connect(db_url).await?;
    let now = SystemClock.now_ms();
    let mut tokens = Vec::with_capacity(n);
    for (customer, _) in &messages {
        tokens.push(
            desk::auth::issue_token(&store, "api", "customer", customer, now)
                .await?
                .0,
        );
    }
    store.close().await;
    Ok((messages, tokens))
}

async fn drive_api(
    server: &Server,
    db_url: &str,
    backend: &Backend,
    messages: &[(String, String)],
    tokens: &[String],
    clients: usize,
) -> anyhow::Result<(ApiRun, Vec<String>)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    wait_for_healthz(&client, server).await?;
    let watch = Db::connect(db_url).await?;
    let pg_before = postgres_counters(&watch, backend).await?;
    let started = Instant::now();
    let tickets = open_tickets(&client, &server.base, messages, tokens, clients).await?;
    let opened_in = started.elapsed();
    let awaiting = "SELECT COUNT(*) FROM cases WHERE status = 'awaiting_approval'";
    while (count(&watch, awaiting).await? as usize) < messages.len() {
        if started.elapsed() > Duration::from_secs(900) {
            bail!("the cases did not all reach awaiting_approval within 900 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    let pg_after = postgres_counters(&watch, backend).await?;
    watch.close().await;
    let n = messages.len() as f64;
    let per_ticket = |f: fn(&PgCounters) -> f64| {
        pg_before
            .as_ref()
            .zip(pg_after.as_ref())
            .map(|(b, a)| (f(a) - f(b)) / n)
    };
    let run = ApiRun {
        per_second: rate(messages.len(), elapsed),
        opened_in,
        writes_per_ticket: per_ticket(|c| c.xid),
        pg_cpu_ms_per_ticket: per_ticket(|c| c.cpu_ms),
    };
    Ok((run, tickets))
}

/// `clients` tasks take the next ticket until none is left; each must answer 201. The
/// tickets' ids, in `messages`' order.
async fn open_tickets(
    client: &reqwest::Client,
    base: &str,
    messages: &[(String, String)],
    tokens: &[String],
    clients: usize,
) -> anyhow::Result<Vec<String>> {
    let next = Arc::new(AtomicUsize::new(0));
    let work: Arc<Vec<(String, String)>> = Arc::new(
        messages
            .iter()
            .zip(tokens)
            .map(|((_, text), token)| (text.clone(), token.clone()))
            .collect(),
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients.max(1) {
        let (client, next, work, url) = (
            client.clone(),
            next.clone(),
            work.clone(),
            format!("{base}/api/v1/tickets"),
        );
        tasks.spawn(async move {
            let mut opened = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((text, token)) = work.get(i) else {
                    return anyhow::Ok(opened);
                };
                let resp = client
                    .post(&url)
                    .bearer_auth(token)
                    .json(&json!({ "message": text }))
                    .send()
                    .await?;
                if resp.status() != reqwest::StatusCode::CREATED {
                    bail!(
                        "POST /api/v1/tickets: {} {}",
                        resp.status(),
                        resp.text().await?
                    );
                }
                let body: Value = resp.json().await?;
                let id = body["id"].as_str().context("the ticket's id")?;
                opened.push((i, id.to_string()));
            }
        });
    }
    let mut ids = vec![String::new(); messages.len()];
    while let Some(done) = tasks.join_next().await {
        for (i, id) in done?? {
            ids[i] = id;
        }
    }
    Ok(ids)
}

/// What PostgreSQL has done so far: transaction ids assigned (writing transactions; a
/// read-only one takes none) and the CPU of every `postgres` process on this machine,
/// exited backends included (their time is in the postmaster's children's time).
pub(crate) struct PgCounters {
    xid: f64,
    cpu_ms: f64,
}

async fn postgres_counters(db: &Db, backend: &Backend) -> anyhow::Result<Option<PgCounters>> {
    if !matches!(backend, Backend::Postgres(_)) {
        return Ok(None);
    }
    // `txid_current_snapshot()`'s xmax: the next id to be assigned, without taking one.
    let xid: String =
        sqlx::query("SELECT CAST(txid_snapshot_xmax(txid_current_snapshot()) AS TEXT)")
            .fetch_one(db.pool())
            .await?
            .try_get(0)?;
    Ok(Some(PgCounters {
        xid: xid.parse()?,
        cpu_ms: postgres_cpu_ms(),
    }))
}

/// User + system time of every process named `postgres`, with its reaped children's.
fn postgres_cpu_ms() -> f64 {
    let ticks_per_second = 100.0; // USER_HZ on Linux
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    let mut ticks = 0.0;
    for entry in entries.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        if !head.ends_with("(postgres") {
            continue;
        }
        // After the name: state is field 3; utime, stime, cutime, cstime are 14–17.
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 15 {
            continue;
        }
        ticks += fields[11..15]
            .iter()
            .filter_map(|f| f.parse::<f64>().ok())
            .sum::<f64>();
    }
    ticks * 1000.0 / ticks_per_second
}
