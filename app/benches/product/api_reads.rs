//! The ticket API in the shape a user meets it (part of `api`): once the 8-client run's
//! tickets all await approval, `GET /api/v1/tickets/{id}` with each ticket's own customer
//! bearer under `wrk` (`BENCH_HTTP_CONNS`' largest, 64), `GET /readyz` on the same server
//! as its baseline, alternating, two rounds. With `BENCH_SERVE_BIN_B`, a second build
//! serves the same database beside it and is loaded in the same rounds (before and after
//! a change, in one run).

use super::*;

/// The client count of the run after which the reads are measured (the user's shape:
/// 300 tickets, 8 clients); with no such run, the last one.
pub(crate) const READS_AFTER_CLIENTS: usize = 8;

/// Whether the reads follow the run with `clients` clients among `all`.
pub(crate) fn reads_follow(clients: usize, all: &[usize]) -> bool {
    match all.contains(&READS_AFTER_CLIENTS) {
        true => clients == READS_AFTER_CLIENTS,
        false => all.last() == Some(&clients),
    }
}

/// The two rounds of `/readyz` and the ticket API on `server` (and on `BENCH_SERVE_BIN_B`
/// beside it), each round's figures in the report with the ticket API's share of
/// `/readyz`'s req/s in that round.
pub(crate) async fn ticket_api_reads(
    server: &Server,
    dir: &Path,
    db_url: &str,
    tickets: &[String],
    tokens: &[String],
    settings: &Settings,
    backend: &Backend,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut servers = vec![("A", None)];
    if let Some(bin) = &settings.serve_b {
        let log = dir.join("serve-b.log");
        let b = start_serve_as_shipped(bin, &dir.join("data-b"), db_url, &log)?;
        wait_for_healthz(&reqwest::Client::new(), &b).await?;
        servers.push(("B", Some(b)));
    }
    let result = load_rounds(server, &servers, tickets, tokens, settings, backend, report).await;
    for (_, b) in servers {
        if let Some(b) = b {
            b.stop().await;
        }
    }
    result
}

async fn load_rounds(
    a: &Server,
    servers: &[(&str, Option<Server>)],
    tickets: &[String],
    tokens: &[String],
    settings: &Settings,
    backend: &Backend,
    report: &mut Report,
) -> anyhow::Result<()> {
    let conns = settings.http_conns.iter().copied().max().unwrap_or(64);
    let secs = settings.http_secs;
    for round in 1..=2 {
        for (label, b) in servers {
            let base = b.as_ref().map_or(&a.base, |b| &b.base);
            let (readyz, reads) = requests_on(base, tickets, tokens);
            if round == 1 {
                generate_load(8, 1, &readyz).await?;
                generate_load(8, 1, &reads).await?;
            }
            let ready = generate_load(conns, secs, &readyz).await?;
            let api = generate_load(conns, secs, &reads).await?;
            let who = match servers.len() {
                1 => String::new(),
                _ => format!(
                    " {label} ({})",
                    if *label == "A" {
                        "this build"
                    } else {
                        "BENCH_SERVE_BIN_B"
                    }
                ),
            };
            add_round(
                report,
                backend,
                &who,
                round,
                tickets.len(),
                conns,
                &ready,
                &api,
            );
        }
    }
    Ok(())
}

/// `/readyz` and one ticket read per ticket, each with its own customer's bearer.
fn requests_on(
    base: &str,
    tickets: &[String],
    tokens: &[String],
) -> (
    Vec<(String, Vec<(String, String)>)>,
    Vec<(String, Vec<(String, String)>)>,
) {
    let readyz = vec![(format!("{base}/readyz"), vec![])];
    let reads = tickets
        .iter()
        .zip(tokens)
        .map(|(t, tok)| {
            let auth = ("authorization".to_string(), format!("Bearer {tok}"));
            (format!("{base}/api/v1/tickets/{t}"), vec![auth])
        })
        .collect();
    (readyz, reads)
}

fn add_round(
    report: &mut Report,
    backend: &Backend,
    who: &str,
    round: usize,
    tickets: usize,
    conns: usize,
    ready: &Load,
    api: &Load,
) {
    let ratio = api.per_second() / ready.per_second();
    report.add(
        format!(
            "[{}]{who} ticket API after the {tickets} tickets, round {round}: GET /api/v1/tickets/{{id}} (customer bearer), {conns} connections",
            backend.name()
        ),
        format!(
            "{} (p50 {}, p99 {})",
            fmt_rate(api.per_second(), "req/s"),
            fmt_us(api.p50_us),
            fmt_us(api.p99_us)
        ),
        format!(
            "`/readyz` {} (p50 {}, p99 {})",
            fmt_rate(ready.per_second(), "req/s"),
            fmt_us(ready.p50_us),
            fmt_us(ready.p99_us)
        ),
        format!("{ratio:.2}"),
        "p99 < 10 ms, ≥ 0.9 of `/readyz`",
        Some(api.p99_us < 10_000.0 && ratio >= 0.9),
    );
    for (name, load) in [("/readyz", ready), ("the ticket API", api)] {
        if load.errors > 0 {
            report.note(format!(
                "[{}]{who} {name}, round {round}: {} of {} requests failed",
                backend.name(),
                load.errors,
                load.requests
            ));
        }
    }
}
