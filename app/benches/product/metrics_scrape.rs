//! Staff writes beside `/metrics` scrapers on a million runs (`metrics_scrape`).

use super::*;

pub(crate) fn metrics_runs() -> usize {
    env_usize("BENCH_METRICS_RUNS", 1_000_000)
}

pub(crate) async fn phase_metrics_scrape(
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut builds = vec![("this build", SERVE_BIN.to_string())];
    if let Some(b) = &settings.serve_b {
        builds.push(("BENCH_SERVE_BIN_B", b.clone()));
    }
    for (name, bin) in builds {
        metrics_scrape_of(&bin, name, settings, report).await?;
    }
    Ok(())
}

/// The metrics phase for one `serve` binary, on a database of its own (a build of an
/// earlier commit cannot open a database migrated by a later one).
pub(crate) async fn metrics_scrape_of(
    bin: &str,
    name: &str,
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!(
        "[SQLite] {name}: staff writes beside four /metrics scrapers, {} runs",
        metrics_runs()
    );
    let dir = tempfile::tempdir()?;
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir)?;
    let db_url = Db::sqlite_url(&data_dir);
    let seed = cli_of(bin, &data_dir, &db_url).arg("seed").output().await?;
    if !seed.status.success() {
        bail!(
            "refund-agent seed failed: {}",
            String::from_utf8_lossy(&seed.stderr)
        );
    }
    let customer = sqlite_token(&db_url, "customer", "C-100").await?;
    let case_id = one_case(bin, dir.path(), &data_dir, &db_url, &customer).await?;
    let token = sqlite_token(&db_url, "staff", "agent@refund-desk.test").await?;
    bulk_runs(&db_url, &case_id, metrics_runs()).await?;

    let mut p50 = BTreeMap::new();
    // `BENCH_METRICS_CACHE_SECS` (default 5, the product's default) for the cached run.
    let cached = std::env::var("BENCH_METRICS_CACHE_SECS").unwrap_or_else(|_| "5".into());
    for (label, path, cache) in [
        ("healthz", "/healthz", cached.as_str()),
        ("metrics", "/metrics", cached.as_str()),
        ("metrics, no cache", "/metrics", "0"),
    ] {
        let env = [("METRICS_CACHE_SECS", cache.to_string())];
        let log = dir.path().join(format!("serve-{cache}.log"));
        let server = start_serve(bin, &data_dir, &db_url, &log, &env)?;
        let measured = writes_beside(&server, path, &case_id, &token, settings.http_secs).await;
        server.stop().await;
        let (write_p50, reads) = measured?;
        eprintln!("  {label}: write p50 {}, {reads} reads", fmt_us(write_p50));
        p50.insert(label, (write_p50, reads));
    }
    let (healthz, _) = p50["healthz"];
    for label in ["metrics", "metrics, no cache"] {
        let (with, reads) = p50[label];
        let ratio = with / healthz.max(1.0);
        report.add(
            format!(
                "SQLite ({name}): staff-write p50 beside four `/metrics` scrapers ({label}: {reads} scrapes), {} runs",
                metrics_runs()
            ),
            fmt_us(with),
            format!("{} beside four `/healthz` clients", fmt_us(healthz)),
            format!("{ratio:.2}"),
            "ratio ≤ 1.5",
            (label == "metrics").then_some(ratio <= 1.5),
        );
    }
    Ok(())
}

/// A bearer token for a customer (by id) or a staff member (by email), written straight
/// into a SQLite database with plain SQL (so any build's database takes it).
pub(crate) async fn sqlite_token(db_url: &str, kind: &str, who: &str) -> anyhow::Result<String> {
    use sha2::Digest as _;
    use sqlx::ConnectOptions;
    let mut conn = db_url
        .parse::<sqlx::sqlite::SqliteConnectOptions>()?
        .connect()
        .await?;
    let subject: String = if kind == "staff" {
        sqlx::query_scalar("SELECT id FROM staff WHERE email = $1")
            .bind(who)
            .fetch_one(&mut conn)
            .await?
    } else {
        who.to_string()
    };
    let token = format!("bench{}", uuid::Uuid::new_v4().simple());
    let hash = hex::encode(sha2::Sha256::digest(token.as_bytes()));
    sqlx::query(
        "INSERT INTO auth_tokens (token_hash, kind, subject_kind, subject_id, expires_at, created_at)
         VALUES ($1, 'api', $2, $3, $4, 0)",
    )
    .bind(hash)
    .bind(kind)
    .bind(subject)
    .bind(i64::MAX / 2)
    .execute(&mut conn)
    .await?;
    Ok(token)
}

/// One case, opened through the API of a `serve` started for it and stopped again.
pub(crate) async fn one_case(
    bin: &str,
    dir: &Path,
    data_dir: &Path,
    db_url: &str,
    customer: &str,
) -> anyhow::Result<String> {
    let server = start_serve(bin, data_dir, db_url, &dir.join("serve-setup.log"), &[])?;
    let client = reqwest::Client::new();
    wait_for_healthz(&client, &server).await?;
    let ticket: serde_json::Value = client
        .post(format!("{}/api/v1/tickets", server.base))
        .bearer_auth(customer)
        .json(&serde_json::json!({ "message": "I was charged twice for my annual plan" }))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    server.stop().await;
    ticket["case"]["id"]
        .as_str()
        .map(str::to_string)
        .context("the ticket has a case")
}

/// `n` finished runs of `case_id`, inserted in one statement with plain SQL (a bench
/// fixture: the product never writes runs this way).
pub(crate) async fn bulk_runs(db_url: &str, case_id: &str, n: usize) -> anyhow::Result<()> {
    use sqlx::ConnectOptions;
    let started = Instant::now();
    let mut conn = db_url
        .parse::<sqlx::sqlite::SqliteConnectOptions>()?
        .connect()
        .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n})
         INSERT INTO runs (id, case_id, status, version, model, prompt_version, steps, tool_calls, created_at, updated_at)
         SELECT 'bench_run_' || i, $1, CASE i % 3 WHEN 0 THEN 'completed' WHEN 1 THEN 'failed' ELSE 'cancelled' END,
                1, 'bench', 'bench', 3, 6, i, i FROM k"
    )))
    .bind(case_id)
    .execute(&mut conn)
    .await?;
    eprintln!(
        "  {n} runs inserted in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Staff writes (taking a case, one at a time) for `secs`, while four clients loop on
/// `read_path`; returns the writes' p50 (µs) and how many reads were answered. The four
/// readers are `wrk` (a process of its own, four connections) when installed, so their
/// client-side work is not this process's and does not delay the writes' own timing;
/// else four tasks here.
pub(crate) async fn writes_beside(
    server: &Server,
    read_path: &str,
    case_id: &str,
    token: &str,
    secs: u64,
) -> anyhow::Result<(f64, usize)> {
    let client = reqwest::Client::new();
    wait_for_healthz(&client, server).await?;
    let deadline = Instant::now() + Duration::from_secs(secs);
    let url = format!("{}{read_path}", server.base);
    let readers = if wrk_available() {
        let requests = vec![(url, Vec::new())];
        tokio::spawn(async move { wrk_load(4, secs, &requests).await.map(|l| l.requests) })
    } else {
        let client = client.clone();
        tokio::spawn(async move {
            let reads = Arc::new(AtomicUsize::new(0));
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..4 {
                let (client, url, reads) = (client.clone(), url.clone(), reads.clone());
                tasks.spawn(async move {
                    while Instant::now() < deadline {
                        if client
                            .get(&url)
                            .send()
                            .await
                            .and_then(|r| r.error_for_status())
                            .is_ok()
                        {
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            while tasks.join_next().await.is_some() {}
            anyhow::Ok(reads.load(Ordering::Relaxed))
        })
    };
    // The write: an agent takes the case (an update and an audit line in one
    // transaction). Its answer is the same size every time, so each run measures the same
    // work (a note would lengthen the thread every write reads back).
    let url = format!("{}/api/v1/cases/{case_id}/assign", server.base);
    let mut latencies = Vec::new();
    while Instant::now() < deadline {
        let started = Instant::now();
        client
            .post(&url)
            .bearer_auth(token)
            .json(&serde_json::json!({}))
            .send()
            .await?
            .error_for_status()?;
        latencies.push(started.elapsed());
    }
    let reads = readers.await??;
    latencies.sort();
    Ok((percentile_us(&latencies, 50.0), reads))
}
