//! `serve`: the web app, the worker and the credential purge, until SIGINT or SIGTERM,
//! then a drain within the service manager's budget.

use std::net::SocketAddr;

use anyhow::Context;

use super::setup::{provider, state};
use desk::auth;
use desk::config::Config;
use desk::state::Services;

/// How long a stop may take to drain before what is left is aborted: inside the 10 s a
/// service manager waits between SIGTERM and SIGKILL. An aborted refund call
/// is safe anyway: its intent and key were stored first (docs/spec/invariants.md #4).
const DRAIN_BUDGET: std::time::Duration = std::time::Duration::from_secs(8);

pub(super) async fn serve(config: &Config, addr: SocketAddr) -> anyhow::Result<()> {
    serve_with(config, addr, None).await
}

/// `serve`, and with `demo_rate` the demo's made-up customers at that many actions a
/// minute (`demo`), stopped with the rest.
pub(super) async fn serve_with(
    config: &Config,
    addr: SocketAddr,
    demo_rate: Option<f64>,
) -> anyhow::Result<()> {
    config.check()?;
    let (url, mock) = provider(config).await?;
    if mock.is_some() && !config.defaulted_secrets.is_empty() {
        tracing::warn!(
            defaults = ?config.defaulted_secrets,
            "embedded payments mock: using the public default test secrets (set PAYMENTS_URL, PAYMENTS_API_KEY and PAYMENTS_WEBHOOK_SECRET for a real provider)"
        );
    }
    let state = state(config, &url).await?;
    // docs/spec/data.md, "Backups": a restored desk serves and executes nothing until
    // the refunds the provider made since the backup are adopted.
    match customer_data::adoption::adopt_after_restore(state.sender()).await {
        Ok(Some(adoption)) => tracing::info!(summary = %adoption.summary(), "restore adopted"),
        Ok(None) => {}
        Err(e) => anyhow::bail!(
            "not serving: a restore waits for the refunds the payment provider made since the backup, and the provider could not be asked ({e}); start serve again once it can be reached"
        ),
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    super::accounts::record_served_address(config, bound);
    let served = super::accounts::serve_url(Some(&bound.to_string()));
    if mock.is_some() {
        // The embedded provider sends its signed webhooks back to us.
        let app_url = config.public_url.clone().unwrap_or_else(|| served.clone());
        desk::webhooks::point_provider_webhooks(&url, &app_url).await?;
    }
    // A log event, not a bare line: with LOG_FORMAT=json every line of `serve` is JSON.
    tracing::info!(url = %served, console = %format!("{served}/console"), provider = %url, "Refund desk serving");
    let stop = desk::stop::StopSignal::default();
    let worker = tokio::spawn(desk::worker::run_until_stopped(state.clone(), stop.clone()));
    let purge = tokio::spawn(purge_forever(state.clone()));
    let traffic = demo_rate.map(|rate| {
        let (state, url, stop) = (state.clone(), url.clone(), stop.clone());
        tokio::spawn(super::demo::keep_coming(state, url, rate, stop))
    });
    // The peer address reaches handlers as `ConnectInfo`: logins are throttled per client.
    let app = web::router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let server_stop = stop.clone();
    let mut server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { server_stop.requested().await })
            .await
    });
    tokio::select! {
        signal = stop_signal() => {
            tracing::info!(signal, "stopping: no new work is claimed; finishing the work in flight");
        }
        ended = &mut server => {
            // The server cannot end before a stop unless it failed.
            stop.request();
            let _ = tokio::time::timeout(DRAIN_BUDGET, worker).await;
            ended??;
            anyhow::bail!("the HTTP server stopped by itself");
        }
    }
    stop.request();
    purge.abort();
    if let Some(traffic) = traffic {
        traffic.abort();
    }
    drain(server, worker).await;
    // Closing the pools waits for their connections to finish and says goodbye to the
    // database, instead of leaving it to notice dropped sockets.
    state.db.close().await;
    if let Some(m) = mock {
        m.shutdown().await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// Waits for the HTTP server (answering the requests it has) and the worker (finishing
/// its step, releasing its lease) to stop, within `DRAIN_BUDGET`; aborts what remains.
async fn drain(
    mut server: tokio::task::JoinHandle<std::io::Result<()>>,
    mut worker: tokio::task::JoinHandle<()>,
) {
    let both = async {
        let (served, worked) = tokio::join!(&mut server, &mut worker);
        match served {
            Ok(Err(e)) => tracing::warn!(error = %e, "the HTTP server ended with an error"),
            Err(e) => tracing::warn!(error = %e, "the HTTP server task failed"),
            Ok(Ok(())) => {}
        }
        if let Err(e) = worked {
            tracing::warn!(error = %e, "the worker task failed");
        }
    };
    if tokio::time::timeout(DRAIN_BUDGET, both).await.is_err() {
        tracing::warn!(
            budget_secs = DRAIN_BUDGET.as_secs(),
            "drain took longer than its budget; aborting the rest (a refund in flight resumes after its lease expires)"
        );
        server.abort();
        worker.abort();
    }
}

/// Resolves on Ctrl-C (SIGINT) or, on Unix, SIGTERM (what service managers and
/// `docker stop` send), naming the signal.
async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops serve gracefully");
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    }
}

/// Every ten minutes, deletes expired tokens, sessions, sign-in links and old failed
/// logins (`auth::purge_expired`); any instance may run it, deleting twice is harmless.
async fn purge_forever(state: Services) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(600));
    loop {
        tick.tick().await;
        match auth::purge_expired(&state.db, state.clock.now_ms()).await {
            Ok(n) if n > 0 => tracing::info!(rows = n, "expired credentials purged"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purging expired credentials failed"),
        }
    }
}
