//! What the load test checks once the load is over, from the shared database and the
//! mock's ledger (`GET /__mock/ledger`): every case final; no provider refund duplicated
//! (≤ 1 API refund per charge and per idempotency key); no case refunded twice; money
//! refunded at the provider = money approved (the approved decisions' refund intents);
//! no run event lost (every run's `seq` dense from 1, every tool intent with one result);
//! `/readyz` 503 and `/healthz` 200 through the outage; no process dead but the one
//! killed. Each failure is printed as it is found. Also the case latency (ticket created
//! → `refund_succeeded`, from the app's own timestamps).
//!
//! What it does not do: make any load (`drive`) or print the report (`main`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;
use sqlx::{AnyPool, Row};

use super::outage::Outage;
use super::processes::Processes;

/// The states a case rests in.
const FINAL_STATES: [&str; 8] = [
    "refund_succeeded",
    "refund_failed",
    "denied",
    "escalated",
    "rejected",
    "cancelled",
    "closed",
    "replied",
];

/// Waits (until `deadline`) for every case to be final, reading the shared database.
pub async fn wait_until_final(db: &AnyPool, deadline: Instant) -> anyhow::Result<()> {
    let in_list = FINAL_STATES
        .iter()
        .map(|s| format!("'{s}'"))
        .collect::<Vec<_>>()
        .join(", ");
    loop {
        let open: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) AS n FROM cases WHERE status NOT IN ({in_list})"
        )))
        .fetch_one(db)
        .await?
        .try_get("n")?;
        if open == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            eprintln!("deadline reached with {open} cases not final");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What the checks found, for the report.
pub struct Findings {
    pub passed: bool,
    pub died: Vec<String>,
    pub statuses: BTreeMap<String, i64>,
    pub cases: i64,
    pub ledger: Ledger,
    pub refunded_twice: i64,
    pub approved_cases: i64,
    pub approved_money: BTreeMap<String, i64>,
    pub runs: usize,
    pub lost: usize,
    /// Case latencies in milliseconds, sorted.
    pub latencies: Vec<i64>,
}

/// Runs every check, in the order their failures are printed.
pub async fn check(
    db: &AnyPool,
    http: &reqwest::Client,
    payments_url: &str,
    processes: &mut Processes,
    killed: Option<&str>,
    outage: Option<&Outage>,
) -> anyhow::Result<Findings> {
    let mut passed = outage.is_none_or(outage_held);
    let died = died(processes, killed)?;
    passed &= died.is_empty() || fail(format!("these processes died: {died:?}"));
    let statuses = statuses(db).await?;
    let not_final: i64 = statuses
        .iter()
        .filter(|(s, _)| !FINAL_STATES.contains(&s.as_str()))
        .map(|(_, n)| n)
        .sum();
    passed &= not_final == 0 || fail(format!("{not_final} cases not final: {statuses:?}"));
    let ledger = Ledger::read(http, payments_url).await?;
    let duplicates = ledger.duplicates;
    passed &= duplicates == 0 || fail(format!("{duplicates} duplicated provider refunds"));
    let twice = refunded_twice(db).await?;
    passed &= twice == 0 || fail(format!("{twice} cases with more than one refund"));
    let (approved_cases, approved_money) = approved(db).await?;
    let refunded = &ledger.refunded;
    passed &= *refunded == approved_money
        || fail(format!(
            "refunded {refunded:?} != approved {approved_money:?}"
        ));
    let (runs, lost) = runs_with_lost_events(db).await?;
    passed &= lost == 0
        || fail(format!(
            "{lost} runs with a gap or an unanswered tool intent"
        ));
    Ok(Findings {
        passed,
        died,
        cases: statuses.values().sum(),
        statuses,
        ledger,
        refunded_twice: twice,
        approved_cases,
        approved_money,
        runs,
        lost,
        latencies: latencies(db).await?,
    })
}

/// Prints a failure; `false`, so a check reads `passed &= fine || fail(why)`.
fn fail(why: String) -> bool {
    eprintln!("FAIL: {why}");
    false
}

/// `/readyz` said only 503 while PostgreSQL was down, and `/healthz` kept answering.
fn outage_held(o: &Outage) -> bool {
    let mut held = true;
    if o.readyz_503 == 0 || o.readyz_200_while_down + o.readyz_other_while_down > 0 {
        held = fail(format!(
            "/readyz while PostgreSQL was down: {} × 503, {} × 200, {} other (only 503 is right)",
            o.readyz_503, o.readyz_200_while_down, o.readyz_other_while_down
        ));
    }
    if o.healthz_failed > 0 {
        let failed = o.healthz_failed;
        held &= fail(format!(
            "/healthz failed {failed} times while PostgreSQL was down"
        ));
    }
    held
}

/// The processes that died, but the one `killed` on purpose (`serve` rides out the
/// database restart).
fn died(processes: &mut Processes, killed: Option<&str>) -> anyhow::Result<Vec<String>> {
    let mut died = Vec::new();
    for (name, child) in &mut processes.0 {
        if Some(name.as_str()) != killed && child.try_wait()?.is_some() {
            died.push(name.clone());
        }
    }
    Ok(died)
}

async fn statuses(db: &AnyPool) -> anyhow::Result<BTreeMap<String, i64>> {
    Ok(
        sqlx::query("SELECT status, COUNT(*) AS n FROM cases GROUP BY status")
            .fetch_all(db)
            .await?
            .iter()
            .map(|r| Ok((r.try_get("status")?, r.try_get("n")?)))
            .collect::<Result<_, sqlx::Error>>()?,
    )
}

/// What the provider's ledger shows of the refunds the app asked for.
pub struct Ledger {
    /// Refunds beyond the first per charge, and repeated idempotency keys.
    pub duplicates: i64,
    /// API refunds issued.
    pub issued: i64,
    /// Succeeded refunds, in minor units per currency.
    pub refunded: BTreeMap<String, i64>,
}

impl Ledger {
    async fn read(http: &reqwest::Client, payments_url: &str) -> anyhow::Result<Ledger> {
        let ledger: Value = http
            .get(format!("{payments_url}/__mock/ledger"))
            .send()
            .await?
            .json()
            .await?;
        let mut found = Ledger {
            duplicates: 0,
            issued: 0,
            refunded: BTreeMap::new(),
        };
        for n in ledger["counters"]["refunds_created"]
            .as_object()
            .context("ledger counters")?
            .values()
        {
            found.duplicates += (n.as_i64().unwrap_or(0) - 1).max(0);
        }
        let mut keys = BTreeSet::new();
        for entry in ledger["refunds"].as_array().context("ledger refunds")? {
            if entry["origin"] == "api" {
                found.count(entry, &mut keys);
            }
        }
        Ok(found)
    }

    /// One API refund of the ledger.
    fn count(&mut self, entry: &Value, keys: &mut BTreeSet<String>) {
        let refund = if entry["refund"].is_object() {
            &entry["refund"]
        } else {
            entry
        };
        self.issued += 1;
        let key = entry["idempotency_key"].as_str().unwrap_or_default();
        if !keys.insert(key.to_string()) {
            self.duplicates += 1;
        }
        if refund["status"] == "succeeded" {
            let currency = refund["currency"].as_str().unwrap_or_default();
            *self
                .refunded
                .entry(currency.to_ascii_uppercase())
                .or_default() += refund["amount"].as_i64().unwrap_or(0);
        }
    }
}

/// Cases holding more than one live refund intent (each case finishes once).
async fn refunded_twice(db: &AnyPool) -> anyhow::Result<i64> {
    Ok(sqlx::query(
        "SELECT COUNT(*) AS n FROM (SELECT case_id FROM refund_intents WHERE status <> 'void'
           GROUP BY case_id HAVING COUNT(*) > 1) AS twice",
    )
    .fetch_one(db)
    .await?
    .try_get("n")?)
}

/// Approved cases, and the approved money: the refund intents created by approvals
/// (every approved refund), in minor units per currency.
async fn approved(db: &AnyPool) -> anyhow::Result<(i64, BTreeMap<String, i64>)> {
    let approved_cases: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM approvals WHERE verdict = 'approved'")
            .fetch_one(db)
            .await?
            .try_get("n")?;
    let mut approved_money = BTreeMap::new();
    for r in sqlx::query("SELECT currency, CAST(SUM(amount_minor) AS BIGINT) AS total FROM refund_intents WHERE status <> 'void' GROUP BY currency")
        .fetch_all(db)
        .await?
    {
        approved_money.insert(r.try_get("currency")?, r.try_get("total")?);
    }
    Ok((approved_cases, approved_money))
}

/// Runs checked, and those with a gap in `seq` or a tool intent without exactly one
/// result after it.
async fn runs_with_lost_events(db: &AnyPool) -> anyhow::Result<(usize, usize)> {
    let events =
        sqlx::query("SELECT run_id, seq, kind, call_id FROM run_events ORDER BY run_id, seq")
            .fetch_all(db)
            .await?;
    let mut by_run: BTreeMap<String, Vec<(i64, String, Option<String>)>> = BTreeMap::new();
    for r in &events {
        by_run.entry(r.try_get("run_id")?).or_default().push((
            r.try_get("seq")?,
            r.try_get("kind")?,
            r.try_get("call_id")?,
        ));
    }
    let lost = by_run
        .values()
        .filter(|log| {
            let dense = log.iter().enumerate().all(|(i, e)| e.0 == i as i64 + 1);
            let answered = log.iter().filter(|e| e.1 == "tool_intent").all(|intent| {
                log.iter()
                    .filter(|e| e.1 == "tool_result" && e.2 == intent.2 && e.0 > intent.0)
                    .count()
                    == 1
            });
            !dense || !answered
        })
        .count();
    Ok((by_run.len(), lost))
}

/// Ticket created → `refund_succeeded`, from the app's timestamps, sorted.
async fn latencies(db: &AnyPool) -> anyhow::Result<Vec<i64>> {
    let mut latencies: Vec<i64> = sqlx::query(
        "SELECT a.created_at - t.created_at AS ms FROM audit_log a
           JOIN cases c ON c.id = a.subject JOIN tickets t ON t.id = c.ticket_id
         WHERE a.action = 'refund_status' AND a.detail = 'refund_succeeded'",
    )
    .fetch_all(db)
    .await?
    .iter()
    .map(|r| r.try_get("ms"))
    .collect::<Result<_, _>>()?;
    latencies.sort_unstable();
    Ok(latencies)
}

pub fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
