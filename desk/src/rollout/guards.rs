//! The rollout's guards: measures computed from the records — approvals,
//! refund intents, the audit log, shadow pairs — for the cases of each scope, each with
//! a threshold and a minimum sample. Evaluated once per `EVALUATION_PERIOD_MS` of the
//! app clock by the worker (`evaluate_if_due`); a tripped guard demotes its scope to
//! `shadow` at once (`modes::demote`). Each evaluation is stored in
//! `rollout_evaluations` (its writer), keyed by period, so instances sharing a database
//! evaluate a period once and the console can draw each guard over time.
//!
//! Reads the other modules' tables, writes none of them.

use serde::Serialize;
use sqlx::Row;

use super::modes::{self, ScopeMode};
use super::{Mode, Scope};
use crate::error::DomainResult;
use store::Db;

/// How often the guards are evaluated (app clock).
pub const EVALUATION_PERIOD_MS: i64 = 5 * 60_000;
/// The records a guard looks at: cases opened in the last seven days.
pub const WINDOW_MS: i64 = 7 * 24 * 3_600_000;

/// Which way a guard trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trips {
    /// When the value rises above the threshold (a rate of bad outcomes, a duration).
    Above,
    /// When the value falls below it (an agreement).
    Below,
}

/// One guard's threshold and minimum sample. Defaults in `Guards::default` (README).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    pub threshold: f64,
    pub min_sample: i64,
}

/// Every guard's threshold. `Services` holds one; tests lower the samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Guards {
    /// The reviewer rejected the agent's proposal, or took the case over.
    pub override_rate: Threshold,
    /// Refunds failed, canceled or flagged for review after approval.
    pub refund_problems: Threshold,
    /// Submissions the provider's idempotency layer refused (a key reused or in flight).
    pub duplicate_refusals: Threshold,
    /// The agent's decisions that went to a person.
    pub escalation_rate: Threshold,
    /// Median milliseconds from opening to a human's verdict.
    pub time_to_decision_ms: Threshold,
    /// Reviewers' blind decisions that agree with the agent's (canary-out and shadow).
    pub shadow_agreement: Threshold,
}

impl Default for Guards {
    fn default() -> Self {
        let t = |threshold, min_sample| Threshold {
            threshold,
            min_sample,
        };
        Guards {
            override_rate: t(0.30, 20),
            refund_problems: t(0.05, 20),
            duplicate_refusals: t(0.0, 1),
            escalation_rate: t(0.40, 20),
            time_to_decision_ms: t(24.0 * 3_600_000.0, 20),
            shadow_agreement: t(0.90, 20),
        }
    }
}

/// The guards by name, in the order pages show them.
pub const GUARD_NAMES: [&str; 6] = [
    "override_rate",
    "refund_problems",
    "duplicate_refusals",
    "escalation_rate",
    "time_to_decision_ms",
    "shadow_agreement",
];

/// One guard's reading for one scope.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Reading {
    pub guard: String,
    /// `None` with no sample at all.
    pub value: Option<f64>,
    pub threshold: f64,
    pub trips: Trips,
    pub sample: i64,
    pub min_sample: i64,
    /// Over (or under) its threshold on at least the minimum sample.
    pub tripped: bool,
}

impl Reading {
    fn new(guard: &str, value: Option<f64>, sample: i64, t: Threshold, trips: Trips) -> Reading {
        let over = |v: f64| match trips {
            Trips::Above => v > t.threshold,
            Trips::Below => v < t.threshold,
        };
        Reading {
            guard: guard.to_string(),
            value,
            threshold: t.threshold,
            trips,
            sample,
            min_sample: t.min_sample,
            tripped: sample >= t.min_sample && value.is_some_and(over),
        }
    }

    /// "guard override_rate 0.42 > 0.30 over 25 cases", the audit's reason.
    pub fn why(&self) -> String {
        let sign = match self.trips {
            Trips::Above => ">",
            Trips::Below => "<",
        };
        format!(
            "guard {} {:.2} {sign} {:.2} over {} cases",
            self.guard,
            self.value.unwrap_or_default(),
            self.threshold,
            self.sample
        )
    }
}

/// The SQL condition selecting a scope's cases in `rollout_cases rc` (`$1` binds its
/// name part; `all` binds nothing).
fn scope_filter(scope: Scope) -> (&'static str, Option<String>) {
    match scope {
        Scope::All => ("1 = 1", None),
        Scope::Region(r) => ("rc.region = $3", Some(r.code().to_string())),
        Scope::Product(p) => ("rc.product = $3", Some(p.as_str().to_string())),
        Scope::Request(k) => ("rc.request = $3", Some(k.as_str().to_string())),
    }
}

/// `COUNT(*)` of a scope's cases (of one kind: with or without the proposal) opened
/// since `since`, that meet `condition` (SQL over `rc`).
async fn count(
    db: &Db,
    scope: Scope,
    with_proposal: bool,
    since: i64,
    condition: &str,
) -> DomainResult<i64> {
    let (filter, name) = scope_filter(scope);
    let sql = format!(
        "SELECT COUNT(*) AS n FROM rollout_cases rc
         WHERE rc.gets_proposal = $1 AND rc.opened_at >= $2 AND {filter} AND ({condition})"
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(i64::from(with_proposal))
        .bind(since);
    if let Some(name) = name {
        query = query.bind(name);
    }
    Ok(query.fetch_one(db.reader()).await?.try_get("n")?)
}

/// `SUM` over a scope's cases of a per-case count (`expression`, SQL over `rc`).
async fn sum(db: &Db, scope: Scope, since: i64, expression: &str) -> DomainResult<i64> {
    let (filter, name) = scope_filter(scope);
    let sql = format!(
        "SELECT CAST(COALESCE(SUM({expression}), 0) AS BIGINT) AS n FROM rollout_cases rc
         WHERE rc.gets_proposal = $1 AND rc.opened_at >= $2 AND {filter}"
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(1_i64)
        .bind(since);
    if let Some(name) = name {
        query = query.bind(name);
    }
    Ok(query.fetch_one(db.reader()).await?.try_get("n")?)
}

const REVIEWED: &str = "EXISTS (SELECT 1 FROM approvals a WHERE a.case_id = rc.case_id) \
     OR EXISTS (SELECT 1 FROM audit_log l WHERE l.subject = rc.case_id AND l.action = 'proposed_by_staff')";
const OVERRIDDEN: &str = "EXISTS (SELECT 1 FROM approvals a WHERE a.case_id = rc.case_id AND a.verdict = 'rejected') \
     OR EXISTS (SELECT 1 FROM audit_log l WHERE l.subject = rc.case_id AND l.action = 'proposed_by_staff')";
const AGENT_DECIDED: &str =
    "EXISTS (SELECT 1 FROM audit_log l WHERE l.subject = rc.case_id AND l.actor = 'agent' \
     AND l.action IN ('decided', 'escalated'))";
const AGENT_ESCALATED: &str =
    "EXISTS (SELECT 1 FROM audit_log l WHERE l.subject = rc.case_id AND l.actor = 'agent' \
     AND (l.action = 'escalated' OR (l.action = 'decided' AND l.detail LIKE 'escalated%')))";
const INTENTS: &str = "(SELECT COUNT(*) FROM refund_intents i WHERE i.case_id = rc.case_id)";
const BAD_INTENTS: &str = "(SELECT COUNT(*) FROM refund_intents i WHERE i.case_id = rc.case_id \
     AND i.status IN ('failed', 'canceled', 'needs_review'))";
const REFUSED_INTENTS: &str =
    "(SELECT COUNT(*) FROM refund_intents i WHERE i.case_id = rc.case_id \
     AND (i.last_error LIKE '%idempotency%' OR i.last_error LIKE '409 %'))";
const BLIND_DECIDED: &str = "EXISTS (SELECT 1 FROM shadow_pairs p WHERE p.case_id = rc.case_id AND p.decided_at IS NOT NULL)";
const BLIND_AGREED: &str = "EXISTS (SELECT 1 FROM shadow_pairs p WHERE p.case_id = rc.case_id AND p.decided_at IS NOT NULL \
     AND p.human_outcome = p.agent_outcome)";

fn rate(part: i64, whole: i64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Every guard's reading for a scope now, over the cases opened since its mode was set
/// (`mode_since`: a promotion is judged on its own cases) and within `WINDOW_MS`.
pub async fn read(
    db: &Db,
    scope: Scope,
    guards: &Guards,
    mode_since: i64,
    now: i64,
) -> DomainResult<Vec<Reading>> {
    let since = (now - WINDOW_MS).max(mode_since);
    let reviewed = count(db, scope, true, since, REVIEWED).await?;
    let overridden = count(db, scope, true, since, OVERRIDDEN).await?;
    let decided = count(db, scope, true, since, AGENT_DECIDED).await?;
    let escalated = count(db, scope, true, since, AGENT_ESCALATED).await?;
    let intents = sum(db, scope, since, INTENTS).await?;
    let bad = sum(db, scope, since, BAD_INTENTS).await?;
    let refused = sum(db, scope, since, REFUSED_INTENTS).await?;
    let blind = count(db, scope, false, since, BLIND_DECIDED).await?;
    let agreed = count(db, scope, false, since, BLIND_AGREED).await?;
    let (median, timed) = median_time_to_decision(db, scope, since).await?;
    use Trips::{Above, Below};
    Ok(vec![
        Reading::new(
            "override_rate",
            rate(overridden, reviewed),
            reviewed,
            guards.override_rate,
            Above,
        ),
        Reading::new(
            "refund_problems",
            rate(bad, intents),
            intents,
            guards.refund_problems,
            Above,
        ),
        Reading::new(
            "duplicate_refusals",
            rate(refused, intents),
            intents,
            guards.duplicate_refusals,
            Above,
        ),
        Reading::new(
            "escalation_rate",
            rate(escalated, decided),
            decided,
            guards.escalation_rate,
            Above,
        ),
        Reading::new(
            "time_to_decision_ms",
            median,
            timed,
            guards.time_to_decision_ms,
            Above,
        ),
        Reading::new(
            "shadow_agreement",
            rate(agreed, blind),
            blind,
            guards.shadow_agreement,
            Below,
        ),
    ])
}

/// The median time from opening to the first human verdict, and how many cases had one.
async fn median_time_to_decision(
    db: &Db,
    scope: Scope,
    since: i64,
) -> DomainResult<(Option<f64>, i64)> {
    let (filter, name) = scope_filter(scope);
    let sql = format!(
        "SELECT rc.opened_at, (SELECT MIN(a.created_at) FROM approvals a WHERE a.case_id = rc.case_id) AS decided_at
         FROM rollout_cases rc
         WHERE rc.gets_proposal = $1 AND rc.opened_at >= $2 AND {filter}
           AND EXISTS (SELECT 1 FROM approvals a WHERE a.case_id = rc.case_id)"
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(1_i64)
        .bind(since);
    if let Some(name) = name {
        query = query.bind(name);
    }
    let mut took = Vec::new();
    for row in query.fetch_all(db.reader()).await? {
        let opened: i64 = row.try_get("opened_at")?;
        let decided: Option<i64> = row.try_get("decided_at")?;
        took.extend(decided.map(|d| (d - opened).max(0)));
    }
    took.sort_unstable();
    let median = match took.len() {
        0 => None,
        n if n % 2 == 1 => Some(took[n / 2] as f64),
        n => Some((took[n / 2 - 1] + took[n / 2]) as f64 / 2.0),
    };
    Ok((median, took.len() as i64))
}

/// Whether a tripped guard moves this mode: only a scope that shows proposals can be
/// demoted (a scope in shadow is where a demotion leads).
fn demotable(mode: Mode) -> bool {
    mode != Mode::Shadow
}

/// What one evaluation did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Evaluation {
    pub evaluated: Vec<String>,
    pub demoted: Vec<modes::Change>,
}

/// Evaluates each scope with a row once per period: stores every reading and demotes a
/// scope whose guard tripped. A scope another instance already evaluated this period is
/// skipped (the readings' key is the period).
pub async fn evaluate_if_due(db: &Db, guards: &Guards, now: i64) -> DomainResult<Evaluation> {
    let period_start = now - now.rem_euclid(EVALUATION_PERIOD_MS);
    let mut done = Evaluation::default();
    for ScopeMode {
        scope,
        mode,
        updated_at,
        ..
    } in modes::list(db).await?
    {
        let seen: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM rollout_evaluations WHERE scope = $1 AND period_start = $2",
        )
        .bind(scope.to_string())
        .bind(period_start)
        .fetch_one(db.pool())
        .await?;
        if seen > 0 {
            continue;
        }
        let readings = read(db, scope, guards, updated_at, now).await?;
        store(db, scope, period_start, &readings).await?;
        done.evaluated.push(scope.to_string());
        let tripped = readings.iter().find(|r| r.tripped);
        if let (Some(reading), true) = (tripped, demotable(mode)) {
            done.demoted
                .extend(modes::demote(db, scope, &reading.guard, &reading.why(), now).await?);
        }
    }
    Ok(done)
}

async fn store(db: &Db, scope: Scope, period_start: i64, readings: &[Reading]) -> DomainResult<()> {
    let mut tx = db.begin().await?;
    for r in readings {
        sqlx::query(
            "INSERT INTO rollout_evaluations (scope, guard, period_start, value_milli, threshold_milli, sample, tripped)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (scope, guard, period_start) DO NOTHING",
        )
        .bind(scope.to_string())
        .bind(&r.guard)
        .bind(period_start)
        .bind(r.value.map(milli))
        .bind(milli(r.threshold))
        .bind(r.sample)
        .bind(i64::from(r.tripped))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

fn milli(v: f64) -> i64 {
    (v * 1000.0).round() as i64
}

/// One stored reading: a point of a guard's line on the console.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub period_start: i64,
    pub value: Option<f64>,
    pub threshold: f64,
    pub tripped: bool,
}

/// A scope's stored readings of one guard since `since`, oldest first.
pub async fn history(db: &Db, scope: Scope, guard: &str, since: i64) -> DomainResult<Vec<Point>> {
    let rows = sqlx::query(
        "SELECT period_start, value_milli, threshold_milli, tripped FROM rollout_evaluations
         WHERE scope = $1 AND guard = $2 AND period_start >= $3 ORDER BY period_start",
    )
    .bind(scope.to_string())
    .bind(guard)
    .bind(since)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Point {
                period_start: r.try_get("period_start")?,
                value: r
                    .try_get::<Option<i64>, _>("value_milli")?
                    .map(|v| v as f64 / 1000.0),
                threshold: r.try_get::<i64, _>("threshold_milli")? as f64 / 1000.0,
                tripped: r.try_get::<i64, _>("tripped")? == 1,
            })
        })
        .collect()
}

/// The scopes a guard demoted and that are still in shadow since: what the console's
/// banner and `/metrics` say. `(scope, reason)`.
pub async fn standing_demotions(db: &Db) -> DomainResult<Vec<(String, String)>> {
    let rows = sqlx::query(
        "SELECT scope, reason FROM rollout_modes WHERE mode = 'shadow' AND updated_by LIKE 'guard:%' ORDER BY scope",
    )
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get("scope")?, r.try_get("reason")?)))
        .collect()
}

/// The latest stored reading of every guard of every scope: `(scope, guard, tripped)`.
pub async fn latest_trips(db: &Db) -> DomainResult<Vec<(String, String, bool)>> {
    let rows = sqlx::query(
        "SELECT e.scope, e.guard, e.tripped FROM rollout_evaluations e
         WHERE e.period_start = (SELECT MAX(x.period_start) FROM rollout_evaluations x WHERE x.scope = e.scope)
         ORDER BY e.scope, e.guard",
    )
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get("scope")?,
                r.try_get("guard")?,
                r.try_get::<i64, _>("tripped")? == 1,
            ))
        })
        .collect()
}

/// What a canary at `percent` would have done over the recorded shadow pairs decided
/// since `since`: the cases in its share (by the same hash as a live canary), and how
/// often the agent's verdict there matched the reviewer's blind one.
#[derive(Debug, Clone, Serialize)]
pub struct CanaryPreview {
    pub percent: u8,
    /// Decided pairs in the window.
    pub decided: i64,
    /// Of those, the cases a canary at `percent` would have shown the agent's proposal.
    pub in_canary: i64,
    /// Of those, where the agent's outcome matched the reviewer's.
    pub agreed: i64,
    /// Of those, where the agent would have refunded and the reviewer did not.
    pub agent_only_refunds: i64,
}

pub async fn canary_preview(db: &Db, percent: u8, since: i64) -> DomainResult<CanaryPreview> {
    let rows = sqlx::query(
        "SELECT case_id, agent_outcome, human_outcome FROM shadow_pairs
         WHERE decided_at IS NOT NULL AND decided_at >= $1",
    )
    .bind(since)
    .fetch_all(db.reader())
    .await?;
    let mut preview = CanaryPreview {
        percent,
        decided: rows.len() as i64,
        in_canary: 0,
        agreed: 0,
        agent_only_refunds: 0,
    };
    for row in rows {
        let case_id: String = row.try_get("case_id")?;
        if !super::in_canary(&case_id, percent) {
            continue;
        }
        let agent: String = row.try_get("agent_outcome")?;
        let human: Option<String> = row.try_get("human_outcome")?;
        preview.in_canary += 1;
        preview.agreed += i64::from(human.as_deref() == Some(agent.as_str()));
        preview.agent_only_refunds +=
            i64::from(agent == "refund" && human.as_deref() != Some("refund"));
    }
    Ok(preview)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Threshold = Threshold {
        threshold: 0.30,
        min_sample: 20,
    };

    #[test]
    fn a_guard_trips_only_past_its_threshold_on_at_least_its_minimum_sample() {
        let cases = [
            (Some(0.42), 25, Trips::Above, true),
            (Some(0.42), 19, Trips::Above, false),
            (Some(0.30), 25, Trips::Above, false),
            (None, 25, Trips::Above, false),
            (Some(0.20), 25, Trips::Below, true),
            (Some(0.95), 25, Trips::Below, false),
        ];
        for (value, sample, trips, tripped) in cases {
            let reading = Reading::new("g", value, sample, T, trips);
            assert_eq!(reading.tripped, tripped, "{value:?} {sample} {trips:?}");
        }
        let why = Reading::new("override_rate", Some(0.42), 25, T, Trips::Above).why();
        assert_eq!(why, "guard override_rate 0.42 > 0.30 over 25 cases");
    }
}
