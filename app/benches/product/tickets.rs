//! Durable steps and tickets end to end (`steps`, `tickets`): the worker until every case awaits approval, and `serve` over the open cases it left.

use super::*;

pub(crate) async fn phase_steps(
    backend: &Backend,
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<f64> {
    eprintln!("[{}] durable steps vs raw commits", backend.name());
    let rig = Rig::start(backend).await?;
    let (world, messages) = duplicate_world(1, bench_now());
    rig.load(&world).await?;
    let (customer, text) = &messages[0];
    let ticket = desk::customer::create_ticket(
        &rig.state.db,
        rig.state.clock.as_ref(),
        rig.state.queue(),
        customer,
        NewTicket {
            message: text.clone(),
            order_id: None,
        },
    )
    .await?;
    let run_id = desk::cases::case_for_ticket(&rig.state.db, &ticket.id)
        .await?
        .and_then(|c| c.run_id)
        .context("a new ticket has a run")?;
    let n = settings.steps;
    // Warm up both paths, then alternate (raw, steps, raw, steps) and keep the best of
    // each, so neither side is measured on a colder cache or a luckier moment.
    raw_commits(&rig.state.db, 100).await?;
    durable_steps(&rig.state, &run_id, 100).await?;
    let mut raw = 0f64;
    let mut steps = 0f64;
    for _ in 0..2 {
        raw = raw.max(raw_commits(&rig.state.db, n / 2).await?);
        steps = steps.max(durable_steps(&rig.state, &run_id, n / 2).await?);
    }
    let ratio = steps / raw;
    report.add(
        format!(
            "{}: durable agent steps/s (`append_event`, 1 tx each)",
            backend.name()
        ),
        fmt_rate(steps, "steps/s"),
        fmt_rate(raw, "commits/s (1-row insert, 1 tx each)"),
        format!("{ratio:.2}"),
        "ratio ≥ 0.5",
        Some(ratio >= 0.5),
    );
    rig.stop().await;
    Ok(raw)
}

// ---------------------------------------------------------------------------------------
// Phase: whole tickets, created → awaiting_approval.
// ---------------------------------------------------------------------------------------

pub(crate) struct TicketRun {
    pub(crate) n: usize,
    /// `serve` over this run's cases, when asked (`BENCH_OPEN_CASES`).
    pub(crate) open_cases: Option<OpenCases>,
    pub(crate) load: Duration,
    pub(crate) create: Duration,
    pub(crate) drain: Duration,
    pub(crate) events: i64,
    pub(crate) statuses: BTreeMap<String, i64>,
    pub(crate) tool_calls_per_ticket: f64,
}

pub(crate) async fn tickets_end_to_end(
    backend: &Backend,
    n: usize,
    settings: &Settings,
) -> anyhow::Result<TicketRun> {
    let rig = Rig::start(backend).await?;
    let (world, messages) = duplicate_world(n, bench_now());
    let started = Instant::now();
    rig.load(&world).await?;
    let load = started.elapsed();

    let started = Instant::now();
    let mut tickets = Vec::with_capacity(n);
    for (customer, text) in &messages {
        let ticket = desk::customer::create_ticket(
            &rig.state.db,
            rig.state.clock.as_ref(),
            rig.state.queue(),
            customer,
            NewTicket {
                message: text.clone(),
                order_id: None,
            },
        )
        .await?;
        tickets.push((ticket.id.into_string(), ticket.customer_id.into_string()));
    }
    let create = started.elapsed();

    let events_before = count(&rig.state.db, "SELECT COUNT(*) FROM run_events").await?;
    let started = Instant::now();
    for _ in 0..20 {
        if desk::worker::run_once(&rig.state).await? == 0 {
            break;
        }
    }
    let drain = started.elapsed();
    let events = count(&rig.state.db, "SELECT COUNT(*) FROM run_events").await? - events_before;
    let statuses = case_statuses(&rig.state.db).await?;
    // Tool calls the investigations made (each a read of the store or, for charges and
    // refunds, of the payments mock over HTTP).
    let tool_calls = count(
        &rig.state.db,
        "SELECT COUNT(*) FROM run_events WHERE kind = 'tool_result'",
    )
    .await?;
    let open_cases = if n == settings.open_cases {
        Some(serve_open_cases(&rig, &tickets, settings).await?)
    } else {
        None
    };
    rig.stop().await;
    Ok(TicketRun {
        n,
        open_cases,
        load,
        create,
        drain,
        events,
        statuses,
        tool_calls_per_ticket: tool_calls as f64 / n.max(1) as f64,
    })
}

/// `serve` (the release binary, a second process) over the cases an end-to-end run left
/// awaiting approval: its memory with that many open cases, and the ticket API under
/// load across all of them.
pub(crate) struct OpenCases {
    pub(crate) cases: usize,
    pub(crate) rss_idle_mib: f64,
    pub(crate) hwm_mib: f64,
    pub(crate) api: Load,
}

pub(crate) async fn serve_open_cases(
    rig: &Rig,
    tickets: &[(String, String)],
    settings: &Settings,
) -> anyhow::Result<OpenCases> {
    let data_dir = rig._dir.path().join("serve-data");
    std::fs::create_dir_all(&data_dir)?;
    // Tokens on the system clock: `serve` runs on it.
    let now = SystemClock.now_ms();
    let mut requests = Vec::with_capacity(tickets.len());
    for (ticket_id, customer) in tickets {
        let (token, _) =
            desk::auth::issue_token(&rig.state.db, "api", "customer", customer, now).await?;
        requests.push((
            format!("/api/v1/tickets/{ticket_id}"),
            vec![("authorization".to_string(), format!("Bearer {token}"))],
        ));
    }
    // The cases were decided on the manual clock, days ago: a long approval TTL keeps
    // `serve` from re-investigating them while it is measured.
    let env = [
        ("PAYMENTS_URL", rig.mock.base_url()),
        (
            "PAYMENTS_API_KEY",
            desk::config::DEFAULT_PAYMENTS_KEY.to_string(),
        ),
        (
            "PAYMENTS_WEBHOOK_SECRET",
            desk::config::DEFAULT_WEBHOOK_SECRET.to_string(),
        ),
        ("APPROVAL_TTL_HOURS", "8760".to_string()),
    ];
    let log = rig._dir.path().join("serve-open-cases.log");
    let server = start_serve(SERVE_BIN, &data_dir, &rig.db.url, &log, &env)?;
    let result = async {
        wait_for_healthz(&reqwest::Client::new(), &server).await?;
        let rss_idle_mib = proc_memory(&server.pid, "VmRSS:").unwrap_or(0.0);
        let requests: Vec<_> = requests
            .into_iter()
            .map(|(path, headers)| (format!("{}{path}", server.base), headers))
            .collect();
        generate_load(8, 1, &requests).await?;
        let conns = settings.http_conns.iter().copied().max().unwrap_or(64);
        let api = generate_load(conns, settings.http_secs, &requests).await?;
        let hwm_mib = proc_memory(&server.pid, "VmHWM:").unwrap_or(0.0);
        anyhow::Ok(OpenCases {
            cases: tickets.len(),
            rss_idle_mib,
            hwm_mib,
            api,
        })
    }
    .await;
    if result.is_err() {
        print_log_tail(&log);
    }
    server.stop().await;
    result
}

/// Returns the end-to-end tickets/s at each size that ran.
pub(crate) async fn phase_tickets(
    backend: &Backend,
    settings: &Settings,
    raw: f64,
    report: &mut Report,
) -> anyhow::Result<Vec<(usize, f64)>> {
    let mut previous: Option<(usize, f64)> = None;
    let mut per_second_at = Vec::new();
    for &n in &settings.tickets {
        if let Some((m, secs)) = previous {
            let projected = secs * n as f64 / m as f64;
            if projected > settings.phase_budget {
                report.note(format!(
                    "{}: end-to-end run at {n} tickets skipped: projected {projected:.0} s from {m} tickets, over the {:.0} s phase budget (BENCH_PHASE_BUDGET_SECS)",
                    backend.name(),
                    settings.phase_budget
                ));
                continue;
            }
        }
        eprintln!("[{}] {n} tickets end to end", backend.name());
        let run = tickets_end_to_end(backend, n, settings).await?;
        let total = run.create + run.drain;
        previous = Some((n, total.as_secs_f64() + run.load.as_secs_f64()));
        let e2e = rate(n, total);
        report_ticket_run(backend, &run, e2e, raw, report);
        per_second_at.push((run.n, e2e));
    }
    for pair in per_second_at.windows(2) {
        let [(a, ra), (b, rb)] = pair else { continue };
        report.add(
            format!("{}: end-to-end growth {a} → {b} tickets", backend.name()),
            format!("{} at {b}", fmt_rate(*rb, "tickets/s")),
            format!("{} at {a}", fmt_rate(*ra, "tickets/s")),
            format!("{:.2}", rb / ra),
            "ratio ≥ 0.9",
            Some(rb / ra >= 0.9),
        );
    }
    Ok(per_second_at)
}

pub(crate) fn report_ticket_run(
    backend: &Backend,
    run: &TicketRun,
    e2e: f64,
    raw: f64,
    report: &mut Report,
) {
    let n = run.n;
    let awaiting = run.statuses.get("awaiting_approval").copied().unwrap_or(0);
    if awaiting != n as i64 {
        report.note(format!(
            "{}: {n} tickets: case statuses after the drain {:?} (expected all awaiting_approval)",
            backend.name(),
            run.statuses
        ));
    }
    let steps = rate(run.events as usize, run.drain);
    let target = match backend {
        Backend::Sqlite => (
            "≥ 1,000 tickets/s, ≤ 15 commits/ticket",
            Some(e2e >= 1_000.0 && raw / e2e <= 15.0),
        ),
        Backend::Postgres(_) => ("", None),
    };
    report.add(
        format!(
            "{}: tickets/s end to end, {n} tickets (created → awaiting_approval)",
            backend.name()
        ),
        fmt_rate(e2e, "tickets/s"),
        fmt_rate(raw, "commits/s"),
        format!("1 ticket per {:.0} commits", raw / e2e),
        target.0,
        target.1,
    );
    report.add(
        format!(
            "{}: run events/s appended inside `worker::run_once`, {n} tickets",
            backend.name()
        ),
        fmt_rate(steps, "events/s"),
        fmt_rate(raw, "commits/s"),
        format!("{:.2}", steps / raw),
        "",
        None,
    );
    report.note(format!(
        "{}: {n} tickets: world load {:.1} s (not timed in the figures); create {:.1} s ({}); worker {:.1} s ({}, {:.1} run events/ticket, {:.1} tool calls/ticket); {} awaiting_approval",
        backend.name(),
        run.load.as_secs_f64(),
        run.create.as_secs_f64(),
        fmt_rate(rate(n, run.create), "tickets/s"),
        run.drain.as_secs_f64(),
        fmt_rate(rate(n, run.drain), "tickets/s"),
        run.events as f64 / n as f64,
        run.tool_calls_per_ticket,
        awaiting,
    ));
    if let Some(open) = &run.open_cases {
        report.add(
            format!(
                "{}: `serve` peak memory (VmHWM) with {} open cases, after {} s of ticket-API load",
                backend.name(),
                open.cases,
                open.api.elapsed.as_secs()
            ),
            format!("{:.0} MiB", open.hwm_mib),
            format!("{:.0} MiB RSS idle after start-up", open.rss_idle_mib),
            format!("{:.2}", open.hwm_mib / open.rss_idle_mib.max(1.0)),
            "≤ 64 MiB",
            Some(open.hwm_mib <= 64.0),
        );
        report.note(format!(
            "{}: ticket API over all {} open cases: {} (p50 {}, p99 {}), {} errors",
            backend.name(),
            open.cases,
            fmt_rate(open.api.per_second(), "req/s"),
            fmt_us(open.api.p50_us),
            fmt_us(open.api.p99_us),
            open.api.errors
        ));
    }
}
