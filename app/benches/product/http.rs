//! HTTP (`http`): each endpoint of `serve` under `wrk`, `/readyz` and the HTTP peer as baselines, and a second build beside it (`BENCH_SERVE_BIN_B`).

use super::*;

pub(crate) async fn phase_http(
    backend: &Backend,
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!(
        "[{}] HTTP against `refund-agent serve` (second process)",
        backend.name()
    );
    let dir = tempfile::tempdir()?;
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&data_dir)?;
    let db = FreshDb::new(backend, &data_dir).await?;
    // `serve` runs on the system clock: the world is dated relative to now. Tokens and
    // links are written straight into the store (as `refund-agent customer token` does),
    // before the server starts.
    let (messages, customer_tokens) =
        seeded_customers(&dir, &data_dir, &db.url, settings.http_tickets).await?;
    let now = SystemClock.now_ms();
    let store = Db::connect(&db.url).await?;
    let staff = desk::auth::staff_by_email(&store, "agent@refund-desk.test")
        .await?
        .context("seed creates the demo agent")?;
    let (staff_token, _) = desk::auth::issue_token(&store, "api", "staff", &staff.id, now).await?;
    let mut sign_in_links = Vec::new();
    for (customer, _) in &messages {
        sign_in_links.push(desk::auth::issue_sign_in_link(&store, customer, now).await?);
    }
    store.close().await;

    let server = start_serve(
        SERVE_BIN,
        &data_dir,
        &db.url,
        &dir.path().join("serve.log"),
        &[],
    )?;
    let result = http_load(
        &server,
        dir.path(),
        &db.url,
        settings,
        &messages,
        &customer_tokens,
        &sign_in_links,
        &staff_token,
        backend,
        report,
    )
    .await;
    if result.is_err() {
        print_log_tail(&dir.path().join("serve.log"));
    }
    server.stop().await;
    db.drop_database().await;
    result
}

pub(crate) async fn http_load(
    server: &Server,
    dir: &Path,
    db_url: &str,
    settings: &Settings,
    messages: &[(String, String)],
    customer_tokens: &[String],
    sign_in_links: &[String],
    staff_token: &str,
    backend: &Backend,
    report: &mut Report,
) -> anyhow::Result<()> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()?;
    wait_for_healthz(&client, server).await?;
    let rss_idle = proc_memory(&server.pid, "VmRSS:").unwrap_or(0.0);

    // Open one ticket per customer over HTTP; the server's own worker investigates.
    let mut tickets = Vec::new();
    for ((_, text), token) in messages.iter().zip(customer_tokens) {
        let resp = client
            .post(format!("{}/api/v1/tickets", server.base))
            .bearer_auth(token)
            .json(&json!({ "message": text }))
            .send()
            .await?;
        let status = resp.status();
        let body: Value = resp.json().await?;
        if status != reqwest::StatusCode::CREATED {
            bail!("POST /api/v1/tickets: {status} {body}");
        }
        let ticket_id = body["id"].as_str().context("ticket id")?.to_string();
        let case_id = body["case"]["id"].as_str().context("case id")?.to_string();
        tickets.push((ticket_id, case_id));
    }
    let started = Instant::now();
    loop {
        let cases: Value = client
            .get(format!(
                "{}/api/v1/cases?status=awaiting_approval&limit=500",
                server.base
            ))
            .bearer_auth(staff_token)
            .send()
            .await?
            .json()
            .await?;
        let n = cases.as_array().map_or(0, Vec::len);
        if n >= tickets.len() {
            break;
        }
        if started.elapsed() > Duration::from_secs(180) {
            report.note(format!(
                "{}: HTTP: only {n}/{} cases reached awaiting_approval in 180 s; loading anyway",
                backend.name(),
                tickets.len()
            ));
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let serve_investigation = started.elapsed();

    // Customer sessions: use each sign-in link once (the page's POST), keep the cookie.
    let mut cookies = Vec::new();
    for ((ticket_id, _), link) in tickets.iter().zip(sign_in_links) {
        let next = format!("/tickets/{ticket_id}");
        let resp = client
            .post(format!("{}/sign-in", server.base))
            .form(&[("link", link.as_str()), ("next", next.as_str())])
            .send()
            .await?;
        let cookie = resp
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .context("a sign-in link sets a session cookie")?
            .to_string();
        cookies.push(cookie);
    }

    let auth = |name: &str, value: String| vec![(name.to_string(), value)];
    let endpoints: Vec<(&str, Vec<(String, Vec<(String, String)>)>)> = vec![
        (
            "GET /readyz (one query, index check)",
            vec![(format!("{}/readyz", server.base), vec![])],
        ),
        (
            "GET /tickets/{id} (page, customer cookie)",
            tickets
                .iter()
                .zip(&cookies)
                .map(|((t, _), c)| {
                    (
                        format!("{}/tickets/{t}", server.base),
                        auth("cookie", c.clone()),
                    )
                })
                .collect(),
        ),
        (
            "GET /api/v1/tickets/{id} (customer bearer)",
            tickets
                .iter()
                .zip(customer_tokens)
                .map(|((t, _), tok)| {
                    (
                        format!("{}/api/v1/tickets/{t}", server.base),
                        auth("authorization", format!("Bearer {tok}")),
                    )
                })
                .collect(),
        ),
        (
            "GET /api/v1/cases/{id} (staff bearer)",
            tickets
                .iter()
                .map(|(_, c)| {
                    (
                        format!("{}/api/v1/cases/{c}", server.base),
                        auth("authorization", format!("Bearer {staff_token}")),
                    )
                })
                .collect(),
        ),
    ];
    // Warm-up: every endpoint once over every connection's worth of requests.
    for (_, reqs) in &endpoints {
        generate_load(8, 1, reqs).await?;
    }
    let generator = if wrk_available() {
        "wrk, 2 threads (external process)"
    } else {
        "in-process reqwest tasks (wrk not installed)"
    };
    report.note(format!(
        "{}: HTTP load generator: {generator}",
        backend.name()
    ));
    for &conns in &settings.http_conns {
        let mut baseline: Option<Load> = None;
        let mut peer: Option<Load> = None;
        for (i, (name, reqs)) in endpoints.iter().enumerate() {
            if i == 1 {
                peer = peer_load(dir, settings, conns, backend, report).await?;
            }
            let load = generate_load(conns, settings.http_secs, reqs).await?;
            if let (Some(p), true) = (&peer, i > 0) {
                report.note(format!(
                    "{}: HTTP {name}, {conns} connections: {:.2} of the peer's req/s",
                    backend.name(),
                    load.per_second() / p.per_second()
                ));
            }
            let p99 = load.p99_us;
            let (value, base_text, ratio, target, met) = match &baseline {
                None => (
                    format!(
                        "{} (p50 {}, p99 {})",
                        fmt_rate(load.per_second(), "req/s"),
                        fmt_us(load.p50_us),
                        fmt_us(p99)
                    ),
                    "—".to_string(),
                    "1.00".to_string(),
                    "",
                    None,
                ),
                Some(b) => (
                    format!(
                        "{} (p50 {}, p99 {})",
                        fmt_rate(load.per_second(), "req/s"),
                        fmt_us(load.p50_us),
                        fmt_us(p99)
                    ),
                    format!(
                        "{} p99 {} (`/readyz`)",
                        fmt_rate(b.per_second(), "req/s"),
                        fmt_us(b.p99_us)
                    ),
                    format!("{:.2}", load.per_second() / b.per_second()),
                    "≥ 20,000 req/s, p99 < 10 ms, ratio ≥ 0.7",
                    Some(
                        load.per_second() >= 20_000.0
                            && p99 < 10_000.0
                            && load.per_second() / b.per_second() >= 0.7,
                    ),
                ),
            };
            report.add(
                format!(
                    "{}: HTTP {name}, {} connections, {} s",
                    backend.name(),
                    conns,
                    settings.http_secs
                ),
                value,
                base_text,
                ratio,
                target,
                met,
            );
            if load.errors > 0 {
                report.note(format!(
                    "{}: HTTP {name}: {} of {} requests failed",
                    backend.name(),
                    load.errors,
                    load.requests
                ));
            }
            if baseline.is_none() {
                baseline = Some(load);
            }
        }
    }
    let hwm = proc_memory(&server.pid, "VmHWM:").unwrap_or(0.0);
    if let Some(bin) = &settings.serve_b {
        let b = start_serve(
            bin,
            &dir.join("data-b"),
            db_url,
            &dir.join("serve-b.log"),
            &[],
        )?;
        let compared =
            compare_servers(server, &b, &endpoints[1..], settings, backend, report).await;
        b.stop().await;
        compared?;
    }
    report.add(
        format!(
            "{}: `serve` peak memory (VmHWM) after the HTTP load",
            backend.name()
        ),
        format!("{hwm:.0} MiB"),
        format!("{rss_idle:.0} MiB RSS idle after start-up"),
        format!("{:.2}", hwm / rss_idle.max(1.0)),
        "",
        None,
    );
    report.note(format!(
        "{}: HTTP: {} tickets opened over HTTP and investigated by the server's own worker in {:.1} s ({}) before the load",
        backend.name(),
        tickets.len(),
        serve_investigation.as_secs_f64(),
        fmt_rate(rate(tickets.len(), serve_investigation), "tickets/s")
    ));
    Ok(())
}

/// The HTTP peer (`app/examples/http_peer.rs`: axum + sqlx on SQLite, one
/// page from one row, sqlx's default pool), loaded like the endpoints and reported
/// beside `/readyz`; skipped with a note when it is not built
/// (`cargo build --release -p app --example http_peer`).
pub(crate) async fn peer_load(
    dir: &Path,
    settings: &Settings,
    conns: usize,
    backend: &Backend,
    report: &mut Report,
) -> anyhow::Result<Option<Load>> {
    let bin = Path::new(SERVE_BIN)
        .with_file_name("examples")
        .join("http_peer");
    if !bin.exists() {
        report.note(format!(
            "HTTP peer not measured: no {} (cargo build --release -p app --example http_peer)",
            bin.display()
        ));
        return Ok(None);
    }
    let peer_dir = dir.join("http-peer");
    std::fs::create_dir_all(&peer_dir)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = tokio::process::Command::new(&bin)
        .arg(&peer_dir)
        .arg(format!("127.0.0.1:{port}"))
        .kill_on_drop(true)
        .spawn()?;
    let result = async {
        let client = reqwest::Client::new();
        let started = Instant::now();
        while client.get(format!("{base}/items/i0")).send().await.is_err() {
            if started.elapsed() > Duration::from_secs(30) {
                bail!("the HTTP peer did not answer within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let requests: Vec<_> = (0..200)
            .map(|i| (format!("{base}/items/i{i}"), vec![]))
            .collect();
        generate_load(8, 1, &requests).await?;
        generate_load(conns, settings.http_secs, &requests).await
    }
    .await;
    // Our own child, by its handle.
    let _ = child.kill().await;
    let load = result?;
    report.add(
        format!(
            "{}: HTTP peer GET /items/{{id}} (axum + sqlx SQLite, one page from one row), {conns} connections, {} s",
            backend.name(),
            settings.http_secs
        ),
        format!(
            "{} (p50 {}, p99 {})",
            fmt_rate(load.per_second(), "req/s"),
            fmt_us(load.p50_us),
            fmt_us(load.p99_us)
        ),
        "",
        "",
        "",
        None,
    );
    Ok(Some(load))
}

/// Same-run A/B (`BENCH_SERVE_BIN_B`): a second `serve` binary on the same database,
/// each endpoint loaded on A, B, A, B in turn at the largest connection count; the best
/// of each side's two rounds, and A/B.
pub(crate) async fn compare_servers(
    a: &Server,
    b: &Server,
    endpoints: &[(&str, Vec<(String, Vec<(String, String)>)>)],
    settings: &Settings,
    backend: &Backend,
    report: &mut Report,
) -> anyhow::Result<()> {
    wait_for_healthz(&reqwest::Client::new(), b).await?;
    let conns = settings.http_conns.iter().copied().max().unwrap_or(64);
    for (name, reqs) in endpoints {
        let on_b: Vec<_> = reqs
            .iter()
            .map(|(url, h)| (url.replacen(&a.base, &b.base, 1), h.clone()))
            .collect();
        generate_load(8, 1, &on_b).await?;
        let (mut best_a, mut best_b): (Option<Load>, Option<Load>) = (None, None);
        for _ in 0..2 {
            let la = generate_load(conns, settings.http_secs, reqs).await?;
            let lb = generate_load(conns, settings.http_secs, &on_b).await?;
            if best_a
                .as_ref()
                .is_none_or(|x| la.per_second() > x.per_second())
            {
                best_a = Some(la);
            }
            if best_b
                .as_ref()
                .is_none_or(|x| lb.per_second() > x.per_second())
            {
                best_b = Some(lb);
            }
        }
        let (la, lb) = (best_a.context("two rounds")?, best_b.context("two rounds")?);
        report.add(
            format!(
                "{}: A/B {name}, {conns} connections (A: this build, B: BENCH_SERVE_BIN_B)",
                backend.name()
            ),
            format!(
                "A {} (p99 {})",
                fmt_rate(la.per_second(), "req/s"),
                fmt_us(la.p99_us)
            ),
            format!(
                "B {} (p99 {})",
                fmt_rate(lb.per_second(), "req/s"),
                fmt_us(lb.p99_us)
            ),
            format!("{:.2}", la.per_second() / lb.per_second()),
            "",
            None,
        );
    }
    Ok(())
}
