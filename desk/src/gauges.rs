//! The states `/metrics` reads from the database at scrape time (cases, runs, approvals
//! and refund intents by status, the latest reconciliation's differences, stuck runs,
//! rollout guards), after this process's counters (`metrics`), cached for
//! `METRICS_CACHE_SECS` with one computation in flight. Above the modules whose tables it
//! reads (the watchdog's among them); `metrics`, which every module counts through, stays
//! below them all. Reads only, on the read-only connections.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sqlx::Row;

use crate::metrics::{KindLabel, PREFIX};
use store::Db;

/// A row count's labels: the `status` (and, for approvals, the `verdict`) of the rows.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
    verdict: Option<String>,
}

/// What the database holds now, counted at scrape time: `(metric, help, table, grouped
/// by verdict too, which rows)`. Approvals carry `verdict` (approved, rejected) and
/// `status` (valid, void), so rejections and voided approvals are read here, whichever
/// path voided them. Sub-agent runs are counted apart from the runs a worker claims.
const STATE_GAUGES: [(&str, &str, &str, bool, &str); 5] = [
    ("cases", "Cases by status", "cases", false, "1 = 1"),
    (
        "runs",
        "Agent runs by status (a case's own runs; sub-agents are child_runs)",
        "runs",
        false,
        "parent_run_id IS NULL",
    ),
    (
        "child_runs",
        "Sub-agent runs by status (children of an agent run)",
        "runs",
        false,
        "parent_run_id IS NOT NULL",
    ),
    (
        "approvals",
        "Approvals by verdict and status (valid or void)",
        "approvals",
        true,
        "1 = 1",
    ),
    (
        "refund_intents",
        "Refund intents by status",
        "refund_intents",
        false,
        "1 = 1",
    ),
];

/// `SELECT status[, verdict], COUNT(*)` of `table`, as a gauge family.
async fn count_by_status(
    db: &Db,
    table: &str,
    with_verdict: bool,
    rows: &str,
) -> sqlx::Result<Family<StatusLabel, Gauge>> {
    let columns = if with_verdict {
        "status, verdict"
    } else {
        "status"
    };
    // SQLite's planner, with no statistics, answers `GROUP BY status` by walking the
    // status index over every row (0.3 s at a million runs) rather than the few child
    // rows of `runs_by_parent_status`: tell it which index (PostgreSQL plans this well).
    let from = match (db.backend(), table) {
        (store::Backend::Sqlite, "runs") => "runs INDEXED BY runs_by_parent_status",
        _ => table,
    };
    // `table`, `columns` and `rows` are the constants above, never input.
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {columns}, COUNT(*) AS n FROM {from} WHERE {rows} GROUP BY {columns}"
    )))
    .fetch_all(db.reader())
    .await?;
    let family = Family::<StatusLabel, Gauge>::default();
    for row in rows {
        let labels = StatusLabel {
            status: row.try_get("status")?,
            verdict: if with_verdict {
                Some(row.try_get("verdict")?)
            } else {
                None
            },
        };
        family.get_or_create(&labels).set(row.try_get("n")?);
    }
    Ok(family)
}

/// The report lists that need a human, by the `kind` label they are counted under.
const RECONCILE_KINDS: [(&str, &str); 6] = [
    ("amount_mismatch", "amount"),
    ("status_mismatch", "status"),
    ("provider_without_intent", "provider_only"),
    ("intent_without_provider", "intent_only"),
    ("unresolved", "unresolved"),
    ("errors", "error"),
];

/// The differences in the latest stored reconciliation report (`job_runs.last_report`
/// of `job`), by kind: a gauge, since each periodic pass reports the same open
/// difference again until a human settles it.
async fn reconcile_mismatches(db: &Db, job: &str) -> anyhow::Result<Family<KindLabel, Gauge>> {
    let report: Option<Option<String>> =
        sqlx::query_scalar("SELECT last_report FROM job_runs WHERE name = $1")
            .bind(job)
            .fetch_optional(db.reader())
            .await?;
    let family = Family::<KindLabel, Gauge>::default();
    let Some(text) = report.flatten() else {
        return Ok(family);
    };
    let report: serde_json::Value = serde_json::from_str(&text)?;
    for (field, kind) in RECONCILE_KINDS {
        let n = report[field].as_array().map_or(0, Vec::len);
        family.get_or_create(&KindLabel { kind }).set(n as i64);
    }
    Ok(family)
}

/// The watchdog's standing flags, one gauge per diagnosis (`stuck`: each diagnosis
/// with its count, zeros included).
fn stuck_runs(stuck: &[(&'static str, usize)]) -> Family<KindLabel, Gauge> {
    let family = Family::<KindLabel, Gauge>::default();
    for &(kind, n) in stuck {
        family.get_or_create(&KindLabel { kind }).set(n as i64);
    }
    family
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GuardLabel {
    scope: String,
    guard: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScopeLabel {
    scope: String,
}

/// The rollout's standing: each guard's latest trip (scopes and guard names are fixed
/// kinds an admin set, never ids) and the scopes a guard demoted.
async fn rollout_gauges(
    db: &Db,
) -> anyhow::Result<(Family<GuardLabel, Gauge>, Family<ScopeLabel, Gauge>)> {
    let tripped = Family::<GuardLabel, Gauge>::default();
    for (scope, guard, trip) in crate::rollout::guards::latest_trips(db).await? {
        tripped
            .get_or_create(&GuardLabel { scope, guard })
            .set(i64::from(trip));
    }
    let demoted = Family::<ScopeLabel, Gauge>::default();
    for (scope, _) in crate::rollout::guards::standing_demotions(db).await? {
        demoted.get_or_create(&ScopeLabel { scope }).set(1);
    }
    Ok((tripped, demoted))
}

/// The whole exposition: this process's counters, then the states read from `db` now
/// (`reconcile_job` names the reconciliation report's row in `job_runs`) and the
/// watchdog's standing flags by diagnosis (`stuck`, from `watchdog::stuck_counts`).
pub async fn render(
    db: &Db,
    reconcile_job: &str,
    cache: &GaugeCache,
) -> anyhow::Result<bytes::Bytes> {
    cache
        .get_or_compute(|| async {
            let states = database_gauges(db, reconcile_job).await?;
            let mut out = String::new();
            crate::metrics::encode_counters(&mut out)?;
            out.push_str(&states);
            Ok(bytes::Bytes::from(out))
        })
        .await
}

/// The gauges read from the database, as Prometheus text: every query on the read-only
/// connections (`Db::reader`), never the writer, so a scrape cannot stall a write.
async fn database_gauges(db: &Db, reconcile_job: &str) -> anyhow::Result<String> {
    let stuck = crate::watchdog::stuck_counts(db).await?;
    let mut states = Registry::with_prefix(PREFIX);
    for (name, help, table, with_verdict, rows) in STATE_GAUGES {
        let help = format!("{help}, read from the database at scrape time");
        states.register(
            name,
            help,
            count_by_status(db, table, with_verdict, rows).await?,
        );
    }
    states.register(
        "reconcile_mismatches",
        "Differences needing a human in the latest reconciliation report, by kind",
        reconcile_mismatches(db, reconcile_job).await?,
    );
    states.register(
        "stuck_runs",
        "Runs the stuck-run watchdog flags now, by what they wait on",
        stuck_runs(&stuck),
    );
    let (tripped, demoted) = rollout_gauges(db).await?;
    states.register(
        "rollout_guard_tripped",
        "Whether each rollout guard of each scope tripped at its latest evaluation",
        tripped,
    );
    states.register(
        "rollout_scope_demoted",
        "Scopes a tripped guard demoted to shadow and that are still there",
        demoted,
    );
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, &states)?;
    Ok(out)
}

/// The exposition of the last scrape, kept `ttl` of real time with one computation in
/// flight: scrapers arriving meanwhile wait for it and share its answer, so any number of
/// scrapers cost at most one count of each table, and one encoding, per `ttl`
/// (`METRICS_CACHE_SECS`; Prometheus scrapes every 15 s or more, so a few seconds' age is
/// never seen). Each answer is the same shared bytes.
pub struct GaugeCache {
    ttl: std::time::Duration,
    last: tokio::sync::Mutex<Option<(std::time::Instant, bytes::Bytes)>>,
}

impl GaugeCache {
    pub fn new(ttl: std::time::Duration) -> GaugeCache {
        GaugeCache {
            ttl,
            last: tokio::sync::Mutex::new(None),
        }
    }

    async fn get_or_compute<F, Fut>(&self, compute: F) -> anyhow::Result<bytes::Bytes>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<bytes::Bytes>>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, text)) = last.as_ref() {
            if at.elapsed() < self.ttl {
                return Ok(text.clone());
            }
        }
        let text = compute().await?;
        *last = Some((std::time::Instant::now(), text.clone()));
        Ok(text)
    }
}
