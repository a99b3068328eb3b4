//! `rollout_modes` (each scope's mode) and `rollout_cases` (the mode each case was
//! opened in), their one writer. Every change of a mode is audited in its transaction:
//! who, when, from → to, why.

use serde::Serialize;
use sqlx::Row;

use super::{Mode, Scope, Subject};
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::{Db, Tx};

/// The audit log's subject for rollout changes (`audit::case_timeline` reads them).
pub const AUDIT_SUBJECT: &str = "rollout";

/// A scope's stored mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeMode {
    pub scope: Scope,
    pub mode: Mode,
    /// A staff id, or `guard:<name>` for a demotion.
    pub updated_by: String,
    pub reason: String,
    pub updated_at: i64,
}

/// Every scope with a row, most specific first; who set it by email (or `guard:…`, `cli`).
pub async fn list(db: &Db) -> DomainResult<Vec<ScopeMode>> {
    let rows = sqlx::query(
        "SELECT m.scope, m.mode, m.percent, COALESCE(s.email, m.updated_by) AS updated_by,
                m.reason, m.updated_at
         FROM rollout_modes m LEFT JOIN staff s ON s.id = m.updated_by",
    )
    .fetch_all(db.pool())
    .await?;
    let mut modes = rows
        .iter()
        .map(scope_mode)
        .collect::<DomainResult<Vec<_>>>()?;
    modes.sort_by_key(|m| (std::cmp::Reverse(m.scope.specificity()), m.scope));
    Ok(modes)
}

async fn list_tx(tx: &mut Tx<'_>) -> DomainResult<Vec<ScopeMode>> {
    let rows = sqlx::query(
        "SELECT scope, mode, percent, updated_by, reason, updated_at FROM rollout_modes",
    )
    .fetch_all(&mut **tx)
    .await?;
    rows.iter().map(scope_mode).collect()
}

fn scope_mode(row: &sqlx::any::AnyRow) -> DomainResult<ScopeMode> {
    let scope: String = row.try_get("scope")?;
    let mode: String = row.try_get("mode")?;
    let stored = |e: DomainError| anyhow::anyhow!("stored rollout mode of {scope}: {e}");
    Ok(ScopeMode {
        scope: Scope::parse(&scope).map_err(stored)?,
        mode: Mode::parse(&mode, row.try_get::<Option<i64>, _>("percent")?).map_err(stored)?,
        updated_by: row.try_get("updated_by")?,
        reason: row.try_get("reason")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// The mode in force for a subject: the most specific scope with a row, else the
/// start-up default (`None` as the scope).
pub fn resolve(modes: &[ScopeMode], subject: &Subject, default: Mode) -> (Option<Scope>, Mode) {
    subject
        .scopes()
        .into_iter()
        .find_map(|scope| modes.iter().find(|m| m.scope == scope))
        .map_or((None, default), |m| (Some(m.scope), m.mode))
}

/// A mode change as the audit records it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Change {
    pub scope: String,
    /// The mode before (`default` when the scope had no row of its own).
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// Sets a scope's mode (an admin's promotion or demotion; the caller checked the role)
/// and audits it, in one transaction.
pub async fn set_mode(
    db: &Db,
    actor: &str,
    scope: Scope,
    mode: Mode,
    reason: &str,
    now: i64,
) -> DomainResult<Change> {
    let reason = reason.trim();
    if reason.chars().count() > 500 {
        return Err(DomainError::bad_request(
            ErrorCode::ReasonTooLong,
            "a reason is at most 500 characters",
        ));
    }
    let mut tx = db.begin().await?;
    let before = list_tx(&mut tx).await?;
    let from = before
        .iter()
        .find(|m| m.scope == scope)
        .map_or("default".to_string(), |m| m.mode.to_string());
    upsert(&mut tx, scope, mode, actor, reason, now).await?;
    let change = Change {
        scope: scope.to_string(),
        from,
        to: mode.to_string(),
        reason: reason.to_string(),
    };
    let detail = change_detail(&change);
    crate::audit::record(&mut tx, actor, "rollout_set", AUDIT_SUBJECT, &detail, now).await?;
    tx.commit().await?;
    tracing::info!(scope = %scope, mode = %mode, actor, "rollout mode set");
    Ok(change)
}

fn change_detail(change: &Change) -> String {
    let why = if change.reason.is_empty() {
        "no reason given"
    } else {
        &change.reason
    };
    format!("{} {} → {} ({why})", change.scope, change.from, change.to)
}

async fn upsert(
    tx: &mut Tx<'_>,
    scope: Scope,
    mode: Mode,
    actor: &str,
    reason: &str,
    now: i64,
) -> DomainResult<()> {
    sqlx::query(
        "INSERT INTO rollout_modes (scope, mode, percent, updated_by, reason, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (scope) DO UPDATE SET mode = excluded.mode, percent = excluded.percent,
             updated_by = excluded.updated_by, reason = excluded.reason, updated_at = excluded.updated_at",
    )
    .bind(scope.to_string())
    .bind(mode.name())
    .bind(mode.percent().map(i64::from))
    .bind(actor)
    .bind(reason)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A tripped guard's demotion: the scope goes to `shadow` at once, with the audit line
/// saying why. `None` when the scope already was in shadow (another instance demoted it
/// this period, or it never left): nothing is written twice.
pub async fn demote(
    db: &Db,
    scope: Scope,
    guard: &str,
    why: &str,
    now: i64,
) -> DomainResult<Option<Change>> {
    let mut tx = db.begin().await?;
    let before = list_tx(&mut tx).await?;
    let Some(current) = before.into_iter().find(|m| m.scope == scope) else {
        return Ok(None);
    };
    let demoted = sqlx::query(
        "UPDATE rollout_modes SET mode = 'shadow', percent = NULL, updated_by = $1, reason = $2, updated_at = $3
         WHERE scope = $4 AND mode <> 'shadow'",
    )
    .bind(format!("guard:{guard}"))
    .bind(why)
    .bind(now)
    .bind(scope.to_string())
    .execute(&mut *tx)
    .await?;
    if demoted.rows_affected() != 1 {
        return Ok(None);
    }
    let change = Change {
        scope: scope.to_string(),
        from: current.mode.to_string(),
        to: Mode::Shadow.to_string(),
        reason: why.to_string(),
    };
    let detail = change_detail(&change);
    crate::audit::record(
        &mut tx,
        "guard",
        "rollout_demoted",
        AUDIT_SUBJECT,
        &detail,
        now,
    )
    .await?;
    tx.commit().await?;
    tracing::warn!(scope = %scope, guard, why, "rollout guard tripped: scope demoted to shadow");
    Ok(Some(change))
}

/// The mode a case was opened in, and what it came to at its decision.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CaseRollout {
    /// The scope whose mode applied (`default`: the start-up switch).
    pub scope: String,
    pub mode: super::ModeName,
    pub percent: Option<i64>,
    /// Whether the reviewer works from the agent's proposal.
    pub gets_proposal: bool,
    /// Why a case opened with a proposal was decided blind after all.
    pub note: Option<String>,
}

impl CaseRollout {
    /// In words, for the case page: "canary 10% (region:EU): with the agent's proposal".
    pub fn describe(&self) -> String {
        let mode = match self.percent {
            Some(p) => format!("{} {p}%", self.mode),
            None => self.mode.to_string(),
        };
        let works = if self.gets_proposal {
            "the reviewer works from the agent's proposal"
        } else {
            "the reviewer decides blind (no agent proposal shown)"
        };
        match &self.note {
            Some(note) => format!("{mode} ({}): {works}; {note}", self.scope),
            None => format!("{mode} ({}): {works}", self.scope),
        }
    }
}

/// Records the mode a new case opens in (docs/spec/domain.md: the admin's rollout), in the case's
/// opening transaction. What is known at opening is the region and, when the ticket
/// names it, the order's product; a request-kind scope applies at the decision.
pub async fn assign_case(
    tx: &mut Tx<'_>,
    case_id: &str,
    subject: &Subject,
    default: Mode,
    now: i64,
) -> DomainResult<()> {
    let modes = list_tx(tx).await?;
    let (scope, mode) = resolve(&modes, subject, default);
    insert_case(tx, case_id, (scope, mode), subject, now).await
}

async fn insert_case(
    tx: &mut Tx<'_>,
    case_id: &str,
    (scope, mode): (Option<Scope>, Mode),
    subject: &Subject,
    now: i64,
) -> DomainResult<()> {
    sqlx::query(
        "INSERT INTO rollout_cases (case_id, scope, mode, percent, gets_proposal, opened_at, region, product, request)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (case_id) DO NOTHING",
    )
    .bind(case_id)
    .bind(scope.map_or("default".to_string(), |s| s.to_string()))
    .bind(mode.name())
    .bind(mode.percent().map(i64::from))
    .bind(i64::from(mode.gives_proposal(case_id)))
    .bind(now)
    .bind(subject.region.map(|r| r.code()))
    .bind(subject.product.map(|p| p.as_str()))
    .bind(subject.request.map(|k| k.as_str()))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A case's stored rollout (`None` for a case opened before rollouts were recorded).
pub async fn case_rollout(db: &Db, case_id: &str) -> DomainResult<Option<CaseRollout>> {
    let row = sqlx::query(
        "SELECT scope, mode, percent, gets_proposal, note FROM rollout_cases WHERE case_id = $1",
    )
    .bind(case_id)
    .fetch_optional(db.reader())
    .await?;
    row.map(|r| case_row(&r)).transpose()
}

fn case_row(r: &sqlx::any::AnyRow) -> DomainResult<CaseRollout> {
    Ok(CaseRollout {
        scope: r.try_get("scope")?,
        mode: super::ModeName::parse(&r.try_get::<String, _>("mode")?)
            .map_err(|e| anyhow::anyhow!("stored rollout mode of a case: {e}"))?,
        percent: r.try_get("percent")?,
        gets_proposal: r.try_get::<i64, _>("gets_proposal")? == 1,
        note: r.try_get("note")?,
    })
}

/// What the decision of a case works from, read (nothing written) inside the decision's
/// transaction, before its first write — the versioned case update (`workflow`).
#[derive(Debug, Clone)]
pub struct AtDecision {
    pub gets_proposal: bool,
    subject: Subject,
    /// What `record_decision` must write afterwards.
    write: Option<AtDecisionWrite>,
}

#[derive(Debug, Clone)]
enum AtDecisionWrite {
    /// The case had no row (opened before rollouts were recorded): record it now.
    Insert(Option<Scope>, Mode),
    /// Opened with the proposal, but its scope is blind now (a guard demoted it, or a
    /// request-kind scope applies): decided blind, and the row says why.
    Blind(String),
}

/// Whether the reviewer of this case works from the agent's proposal: only when the case
/// was opened with it AND the mode in force now, for everything now known of the case,
/// still gives it. A demotion therefore takes effect at once, for open cases too; a case
/// opened blind stays blind (its reviewer started without the agent's view).
pub async fn at_decision(
    tx: &mut Tx<'_>,
    case_id: &str,
    subject: &Subject,
    default: Mode,
) -> DomainResult<AtDecision> {
    let modes = list_tx(tx).await?;
    let (scope, mode) = resolve(&modes, subject, default);
    let now_gives = mode.gives_proposal(case_id);
    let row = sqlx::query(
        "SELECT scope, mode, percent, gets_proposal, note FROM rollout_cases WHERE case_id = $1",
    )
    .bind(case_id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(opened) = row.map(|r| case_row(&r)).transpose()? else {
        return Ok(AtDecision {
            gets_proposal: now_gives,
            subject: *subject,
            write: Some(AtDecisionWrite::Insert(scope, mode)),
        });
    };
    let scope_name = scope.map_or("default".to_string(), |s| s.to_string());
    let write = (opened.gets_proposal && !now_gives)
        .then(|| AtDecisionWrite::Blind(format!("decided blind: {scope_name} is {mode} now")));
    Ok(AtDecision {
        gets_proposal: opened.gets_proposal && now_gives,
        subject: *subject,
        write,
    })
}

/// Writes what `at_decision` found, after the decision's versioned case update: the
/// subject now known (the guards select cases by it), and a blind decision's reason.
pub async fn record_decision(
    tx: &mut Tx<'_>,
    case_id: &str,
    at: &AtDecision,
    now: i64,
) -> DomainResult<()> {
    let subject = &at.subject;
    let note = match &at.write {
        Some(AtDecisionWrite::Insert(scope, mode)) => {
            return insert_case(tx, case_id, (*scope, *mode), subject, now).await
        }
        Some(AtDecisionWrite::Blind(note)) => Some(note.as_str()),
        None => None,
    };
    sqlx::query(
        "UPDATE rollout_cases SET region = $1, product = $2, request = $3,
             gets_proposal = CASE WHEN $4 = 1 THEN 0 ELSE gets_proposal END, note = COALESCE($5, note)
         WHERE case_id = $6",
    )
    .bind(subject.region.map(|r| r.code()))
    .bind(subject.product.map(|p| p.as_str()))
    .bind(subject.request.map(|k| k.as_str()))
    .bind(i64::from(note.is_some()))
    .bind(note)
    .bind(case_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What is known of a case when it opens: the customer's region and, when the ticket
/// names an order of theirs, its product.
pub async fn subject_at_opening(
    db: &Db,
    region: Option<policy_engine::Region>,
    order_id: Option<&str>,
) -> DomainResult<Subject> {
    let product = match order_id {
        Some(order_id) => {
            let product: Option<String> =
                sqlx::query_scalar("SELECT product FROM orders WHERE id = $1")
                    .bind(order_id)
                    .fetch_optional(db.reader())
                    .await?;
            product.and_then(|p| p.parse().ok())
        }
        None => None,
    };
    Ok(Subject {
        region,
        product,
        request: None,
    })
}
