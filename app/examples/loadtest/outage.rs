//! The database outage phase: PostgreSQL stopped under load for `--db-outage-secs`
//! (`pg_ctlcluster`, so root), every live instance's `/readyz` and `/healthz` probed
//! meanwhile, then started again and every live instance waited for. `/readyz` must say
//! 503 while the database is down and `/healthz` keep answering (docs/spec/interfaces.md,
//! "Storage and scale").
//!
//! What it does not do: judge what it saw (`checks`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;

use super::pg_cluster;
use super::processes::{live_urls, Instance};

/// What the database outage phase saw (PostgreSQL stopped under load).
#[derive(serde::Serialize)]
pub struct Outage {
    pub after_tickets: usize,
    pub down_secs: u64,
    /// `/readyz` answers while the database was down, by kind: every one must be 503.
    pub readyz_503: usize,
    pub readyz_200_while_down: usize,
    pub readyz_other_while_down: usize,
    /// `/healthz` (liveness) must keep answering 200 through the outage.
    pub healthz_failed: usize,
    /// From `pg_ctlcluster start` returning until every live instance's `/readyz` is 200.
    pub recovery_secs: f64,
}

/// Stops PostgreSQL for `down`, probing every live instance's `/readyz` and `/healthz`
/// meanwhile, starts it again, and waits (at most a minute) until every live instance
/// is ready. The start is attempted whatever the probes saw.
pub async fn database_outage(
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
