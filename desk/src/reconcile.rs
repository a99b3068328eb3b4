//! Reconciliation: the provider's refunds against our refund intents, charge by charge
//! (`GET /v1/refunds?charge=` — the provider's list is the source of truth, payments.md
//! §4).
//!
//! A run first resolves what is open — `pending_verification` and crashed `submitting`
//! intents (adopted by `metadata.refund_intent_id`, else the same key resent while it
//! is young, else a human), `pending` ones (polled) — then compares and reports:
//! `matched`, `resolved` (with how), `provider_without_intent` (refunds made elsewhere),
//! `intent_without_provider` (intents we think the provider has, that it lacks),
//! `amount_mismatch`, `status_mismatch`, `unresolved` and per-charge `errors`. Resolving
//! takes the case's lease, so it never races the worker on one case.
//!
//! Entry points: [`run`] (everything; the CLI, the API and the console), [`run_if_due`]
//! (the worker's periodic pass, at most every [`PERIOD_MS`] of the app's clock over the
//! charges with open or just-changed intents, and once an hour over the last week's;
//! claimed through `job_runs` rows so one instance runs it per period), [`last_report`].
//!
//! [`run_with_drift`] (the CLI's `reconcile`) adds `drift`: the customers and orders
//! that drifted from the provider's customers and charges, and the erased customers
//! (known, never drift: docs/spec/data.md).
//!
//! What it deliberately does not do: create refunds with a new key, or change anything
//! for a refund made elsewhere or a mismatch — those are reported for a human.

pub mod drift;

use std::collections::{BTreeMap, BTreeSet};

use policy_engine::{Currency, Money};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::clock::Clock;
use crate::error::{DomainError, DomainResult};
use crate::refunds::Sender;
use crate::refunds::{self, Intent, IntentStatus, Step};
use payments_adapter::ProviderRefund;
use store::Db;

/// The `job_runs` name of the periodic pass.
pub const JOB_NAME: &str = "reconcile";
/// The periodic pass runs at most this often (app clock).
pub const PERIOD_MS: i64 = 30_000;
/// The `job_runs` name of the periodic pass's wider sweep.
pub const SWEEP_JOB_NAME: &str = "reconcile_sweep";
/// At most this often (app clock), the periodic pass covers [`Scope::Recent`] instead of
/// [`Scope::Open`]: every charge refunded in the last week is listed once an hour, not
/// every 30 s (a provider's rate limit would not allow that at volume).
pub const SWEEP_PERIOD_MS: i64 = 3600 * 1000;
/// [`Scope::Recent`]: charges with an open intent, or one changed this recently.
pub const RECENT_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;
/// [`Scope::Open`]: charges with an open intent, or one changed this recently.
pub const OPEN_WINDOW_MS: i64 = 10 * 60 * 1000;

/// Which intents' charges a run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every charge any intent ever named.
    All,
    /// Charges with an open intent or one updated within [`RECENT_WINDOW_MS`].
    Recent,
    /// Charges with an open intent or one updated within [`OPEN_WINDOW_MS`].
    Open,
}

/// Provider vs internal, as JSON (`POST /api/v1/reconcile`, `refund-agent reconcile`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReconcileReport {
    /// RFC 3339, app clock.
    pub generated_at: String,
    pub scope: Scope,
    pub charges_checked: usize,
    pub intents_checked: usize,
    /// An intent and the provider's refund agree (id, amount, currency, status).
    pub matched: Vec<Matched>,
    /// Open intents this run moved, and how.
    pub resolved: Vec<Resolved>,
    /// Provider refunds no intent of ours made (dashboard, another system).
    pub provider_without_intent: Vec<ProviderRefundLine>,
    /// Intents we believe the provider holds, that its list for the charge lacks.
    pub intent_without_provider: Vec<IntentLine>,
    /// Our refund at the provider, with another amount or currency than the intent.
    pub amount_mismatch: Vec<AmountMismatch>,
    /// Our refund at the provider, in a status the intent does not show.
    pub status_mismatch: Vec<StatusMismatch>,
    /// Intents still unknown or waiting for a human after this run.
    pub unresolved: Vec<IntentLine>,
    /// Charges whose refunds could not be read (provider unavailable).
    pub errors: Vec<ChargeError>,
    /// Customers and orders that drifted from the provider (a run with drift only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<drift::DriftReport>,
}

impl ReconcileReport {
    /// No discrepancy, nothing left open, nothing unread.
    pub fn is_clean(&self) -> bool {
        self.provider_without_intent.is_empty()
            && self.intent_without_provider.is_empty()
            && self.amount_mismatch.is_empty()
            && self.status_mismatch.is_empty()
            && self.unresolved.is_empty()
            && self.errors.is_empty()
            && self.drift.as_ref().is_none_or(drift::DriftReport::is_clean)
    }

    /// One line for logs and the CLI.
    pub fn summary(&self) -> String {
        let drift = self.drift.as_ref().map_or(String::new(), |d| {
            format!(
                "; drift: {} customers, {} orders, {} charges naming no order; {} erased customers (known, not drift)",
                d.customers.count, d.orders.count, d.unlinked_charges, d.erased.count
            )
        });
        format!(
            "{} charges, {} intents: {} matched, {} resolved, {} provider-only, {} intent-only, {} amount mismatches, {} status mismatches, {} unresolved, {} errors{drift}",
            self.charges_checked,
            self.intents_checked,
            self.matched.len(),
            self.resolved.len(),
            self.provider_without_intent.len(),
            self.intent_without_provider.len(),
            self.amount_mismatch.len(),
            self.status_mismatch.len(),
            self.unresolved.len(),
            self.errors.len()
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Matched {
    pub intent_id: String,
    pub case_id: String,
    pub charge_id: String,
    pub refund_id: String,
    pub amount: String,
    pub currency: String,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Resolved {
    pub intent_id: String,
    pub case_id: String,
    pub charge_id: String,
    pub from: String,
    pub to: String,
    pub refund_id: Option<String>,
    /// What was done: `{"how": "adopted_by_metadata" | "polled" | "accepted" |
    /// "not_at_provider" | "refused" | "needs_review" | …, …}`.
    #[schema(value_type = Object)]
    pub step: Step,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProviderRefundLine {
    pub refund_id: String,
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
    pub status: String,
    pub created: i64,
    /// `metadata.refund_intent_id`, when it names an intent we do not have.
    pub refund_intent_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IntentLine {
    pub intent_id: String,
    pub case_id: String,
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
    pub status: String,
    pub provider_refund_id: Option<String>,
    pub idempotency_key: String,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AmountMismatch {
    pub intent_id: String,
    pub refund_id: String,
    pub charge_id: String,
    pub intent_amount: String,
    pub intent_currency: String,
    pub provider_amount: String,
    pub provider_currency: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StatusMismatch {
    pub intent_id: String,
    pub refund_id: String,
    pub charge_id: String,
    pub intent_status: String,
    pub provider_status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChargeError {
    pub charge_id: String,
    pub error: String,
}

/// What a reconciliation runs with: the refund sender (store, time, provider), and the
/// name this process leases cases under (suffixed `-reconcile`).
#[derive(Clone, Copy)]
pub struct Reconciler<'a> {
    pub sender: Sender<'a>,
    pub instance_id: &'a str,
}

/// A full run over every charge an intent names.
pub async fn run(r: Reconciler<'_>) -> DomainResult<ReconcileReport> {
    run_scoped(r, Scope::All).await
}

/// A full run, and the customers and orders that drifted from the provider
/// ([`drift::check`]: every provider customer and charge read once).
pub async fn run_with_drift(r: Reconciler<'_>) -> DomainResult<ReconcileReport> {
    let mut report = run_scoped(r, Scope::All).await?;
    let now = r.sender.clock.now_ms();
    report.drift = Some(drift::check(r.sender.db, r.sender.payments, now).await?);
    store_report(r.sender.db, r.sender.clock, &report).await?;
    Ok(report)
}

/// The worker's periodic pass: runs only if no instance ran it in the last
/// [`PERIOD_MS`] of the app clock, over [`Scope::Open`] — or [`Scope::Recent`] when the
/// hourly sweep is due too. Each claim is one conditional upsert of a `job_runs` row — in
/// the database, not in memory, so it holds across instances and restarts, and each
/// test's fresh database starts its own schedule.
pub async fn run_if_due(r: Reconciler<'_>) -> DomainResult<Option<ReconcileReport>> {
    let now = r.sender.clock.now_ms();
    if !claim_job(r.sender.db, JOB_NAME, PERIOD_MS, now).await? {
        return Ok(None);
    }
    let scope = if claim_job(r.sender.db, SWEEP_JOB_NAME, SWEEP_PERIOD_MS, now).await? {
        Scope::Recent
    } else {
        Scope::Open
    };
    let report = run_scoped(r, scope).await?;
    if report.is_clean() {
        tracing::debug!(summary = %report.summary(), "periodic reconciliation");
    } else {
        tracing::warn!(summary = %report.summary(), "periodic reconciliation found discrepancies");
    }
    Ok(Some(report))
}

/// Claims one run of the periodic job `name` if nobody ran it within `period_ms` of
/// `now` (one conditional upsert: exactly one claimant per period, across instances).
pub async fn claim_job(db: &Db, name: &str, period_ms: i64, now: i64) -> DomainResult<bool> {
    // No write a read could replace. A job run within the period is seen on a
    // reader without taking the writer; `last_run_at` only ever grows (the upsert below
    // moves it forward), so a run seen here makes the upsert's condition false too. A
    // stale read only sends us on to the upsert, which still decides.
    let last: Option<i64> = sqlx::query_scalar("SELECT last_run_at FROM job_runs WHERE name = $1")
        .bind(name)
        .fetch_optional(db.reader())
        .await?;
    if last.is_some_and(|last| last > now - period_ms) {
        return Ok(false);
    }
    let claimed = sqlx::query(
        "INSERT INTO job_runs (name, last_run_at) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET last_run_at = excluded.last_run_at
         WHERE job_runs.last_run_at <= $3",
    )
    .bind(name)
    .bind(now)
    .bind(now - period_ms)
    .execute(db.pool())
    .await?;
    Ok(claimed.rows_affected() == 1)
}

/// The last report any run stored (for the console).
pub async fn last_report(db: &Db) -> DomainResult<Option<ReconcileReport>> {
    let row = sqlx::query("SELECT last_report FROM job_runs WHERE name = $1")
        .bind(JOB_NAME)
        .fetch_optional(db.pool())
        .await?;
    let Some(row) = row else { return Ok(None) };
    let text: Option<String> = row.try_get("last_report")?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

const OPEN_FOR_RESOLUTION: [&str; 3] = ["submitting", "pending", "pending_verification"];

/// A run over the charges `scope` selects.
pub async fn run_scoped(r: Reconciler<'_>, scope: Scope) -> DomainResult<ReconcileReport> {
    let now = r.sender.clock.now_ms();
    let charge_ids = charges_in_scope(r.sender.db, scope, now).await?;
    let mut report = ReconcileReport {
        generated_at: crate::clock::rfc3339(now),
        scope,
        charges_checked: 0,
        intents_checked: 0,
        matched: Vec::new(),
        resolved: Vec::new(),
        provider_without_intent: Vec::new(),
        intent_without_provider: Vec::new(),
        amount_mismatch: Vec::new(),
        status_mismatch: Vec::new(),
        unresolved: Vec::new(),
        errors: Vec::new(),
        drift: None,
    };
    let owner = format!("{}-reconcile", r.instance_id);
    for charge_id in charge_ids {
        report.charges_checked += 1;
        // 1. Resolve what is open, under the case's lease.
        for intent in intents_on_charge(r.sender.db, &charge_id).await? {
            if !OPEN_FOR_RESOLUTION.contains(&intent.status.as_str()) {
                continue;
            }
            let Some((case, lease)) = crate::cases::claim_case(
                r.sender.db,
                &intent.case_id,
                &owner,
                r.sender.clock.now_ms(),
            )
            .await?
            else {
                // The worker holds it right now; it resolves it itself.
                continue;
            };
            let result = refunds::reconcile_intent(r.sender, &case, &intent).await;
            let settled = match &result {
                Ok(_) => refunds::settle_case(r.sender.db, r.sender.clock, &case.id)
                    .await
                    .map(|_| ()),
                Err(_) => Ok(()),
            };
            crate::cases::release_case(r.sender.db, &lease).await?;
            let step = result?;
            settled?;
            let after = refunds::load_intent(r.sender.db, &intent.id)
                .await?
                .ok_or(DomainError::NotFound("refund intent"))?;
            if after.status != intent.status {
                report.resolved.push(Resolved {
                    intent_id: intent.id.to_string(),
                    case_id: intent.case_id.to_string(),
                    charge_id: intent.charge_id.to_string(),
                    from: intent.status.to_string(),
                    to: after.status.to_string(),
                    refund_id: after.provider_refund_id.clone(),
                    step,
                });
            }
        }
        // 2. Compare with the provider's list.
        let provider = match r.sender.payments.list_refunds(&charge_id).await {
            Ok(list) => list,
            Err(e) => {
                report.errors.push(ChargeError {
                    charge_id: charge_id.clone(),
                    error: e.to_string(),
                });
                continue;
            }
        };
        let intents = intents_on_charge(r.sender.db, &charge_id).await?;
        report.intents_checked += intents
            .iter()
            .filter(|i| i.status != IntentStatus::Void)
            .count();
        compare(&mut report, &charge_id, &intents, &provider);
    }
    store_report(r.sender.db, r.sender.clock, &report).await?;
    Ok(report)
}

/// Sorts one charge's provider refunds and intents into the report.
fn compare(
    report: &mut ReconcileReport,
    charge_id: &str,
    intents: &[Intent],
    provider: &[ProviderRefund],
) {
    let by_id: BTreeMap<&str, &Intent> = intents.iter().map(|i| (i.id.as_str(), i)).collect();
    let mut seen_refunds = BTreeSet::new();
    for refund in provider {
        // Ours when the intent records this refund, or when our metadata names an
        // intent that records none yet. A refund naming an intent that records another
        // one is a second refund for one intent: reported as provider-only.
        let intent = intents
            .iter()
            .find(|i| i.provider_refund_id.as_deref() == Some(refund.id.as_str()))
            .or_else(|| {
                refund
                    .intent_id()
                    .and_then(|id| by_id.get(id).copied())
                    .filter(|i| i.provider_refund_id.is_none())
            });
        let Some(intent) = intent else {
            let (amount, currency) = money(refund.amount, &refund.currency);
            report.provider_without_intent.push(ProviderRefundLine {
                refund_id: refund.id.clone(),
                charge_id: charge_id.to_string(),
                amount,
                currency,
                status: refund.status().to_string(),
                created: refund.created,
                refund_intent_id: refund.intent_id().map(str::to_string),
            });
            continue;
        };
        seen_refunds.insert(intent.id.as_str());
        if !refunds::refund_matches_intent(refund, intent) {
            let (provider_amount, provider_currency) = money(refund.amount, &refund.currency);
            report.amount_mismatch.push(AmountMismatch {
                intent_id: intent.id.to_string(),
                refund_id: refund.id.clone(),
                charge_id: charge_id.to_string(),
                intent_amount: intent.amount.amount_string(),
                intent_currency: intent.amount.currency().code().to_string(),
                provider_amount,
                provider_currency,
            });
            continue;
        }
        let provider_status = refunds::provider_status(refund);
        if provider_status == intent.status
            && intent.provider_refund_id.as_deref() == Some(refund.id.as_str())
        {
            report.matched.push(Matched {
                intent_id: intent.id.to_string(),
                case_id: intent.case_id.to_string(),
                charge_id: charge_id.to_string(),
                refund_id: refund.id.clone(),
                amount: intent.amount.amount_string(),
                currency: intent.amount.currency().code().to_string(),
                status: intent.status.to_string(),
            });
        } else {
            report.status_mismatch.push(StatusMismatch {
                intent_id: intent.id.to_string(),
                refund_id: refund.id.clone(),
                charge_id: charge_id.to_string(),
                intent_status: intent.status.to_string(),
                provider_status: provider_status.to_string(),
            });
        }
    }
    for intent in intents {
        let believed_at_provider =
            matches!(intent.status.as_str(), "succeeded" | "pending" | "canceled")
                || (intent.status == IntentStatus::Failed && intent.provider_refund_id.is_some());
        let line = |note: Option<String>| IntentLine {
            intent_id: intent.id.to_string(),
            case_id: intent.case_id.to_string(),
            charge_id: intent.charge_id.to_string(),
            amount: intent.amount.amount_string(),
            currency: intent.amount.currency().code().to_string(),
            status: intent.status.to_string(),
            provider_refund_id: intent.provider_refund_id.clone(),
            idempotency_key: intent.idempotency_key.clone(),
            note,
        };
        if believed_at_provider && !seen_refunds.contains(intent.id.as_str()) {
            report.intent_without_provider.push(line(None));
        } else if matches!(
            intent.status.as_str(),
            "submitting" | "pending_verification" | "needs_review"
        ) {
            report.unresolved.push(line(intent.last_error.clone()));
        }
    }
}

fn money(minor: i64, currency: &str) -> (String, String) {
    match currency
        .parse::<Currency>()
        .ok()
        .and_then(|c| Money::from_minor(minor, c).ok())
    {
        Some(m) => (m.amount_string(), m.currency().code().to_string()),
        None => (minor.to_string(), currency.to_ascii_uppercase()),
    }
}

async fn charges_in_scope(db: &Db, scope: Scope, now: i64) -> DomainResult<Vec<String>> {
    let rows = match scope {
        Scope::All => {
            sqlx::query("SELECT DISTINCT charge_id FROM refund_intents ORDER BY charge_id")
                .fetch_all(db.pool())
                .await?
        }
        Scope::Recent | Scope::Open => {
            let window = match scope {
                Scope::Open => OPEN_WINDOW_MS,
                _ => RECENT_WINDOW_MS,
            };
            sqlx::query(
                "SELECT DISTINCT charge_id FROM refund_intents
                 WHERE status IN ('submitting', 'pending', 'pending_verification', 'needs_review') OR updated_at >= $1
                 ORDER BY charge_id",
            )
            .bind(now - window)
            .fetch_all(db.pool())
            .await?
        }
    };
    rows.iter()
        .map(|r| Ok(r.try_get::<String, _>("charge_id")?))
        .collect()
}

async fn intents_on_charge(db: &Db, charge_id: &str) -> DomainResult<Vec<Intent>> {
    let rows = sqlx::query("SELECT id FROM refund_intents WHERE charge_id = $1 ORDER BY id")
        .bind(charge_id)
        .fetch_all(db.pool())
        .await?;
    let mut intents = Vec::with_capacity(rows.len());
    for row in rows {
        let id: String = row.try_get("id")?;
        if let Some(intent) = refunds::load_intent(db, &id).await? {
            intents.push(intent);
        }
    }
    Ok(intents)
}

async fn store_report(db: &Db, clock: &dyn Clock, report: &ReconcileReport) -> DomainResult<()> {
    let text = serde_json::to_string(report).map_err(anyhow::Error::from)?;
    sqlx::query(
        "INSERT INTO job_runs (name, last_run_at, last_report) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET last_report = excluded.last_report",
    )
    .bind(JOB_NAME)
    .bind(clock.now_ms())
    .bind(text)
    .execute(db.pool())
    .await?;
    Ok(())
}
