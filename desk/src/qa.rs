//! Quality review of every decision (docs/spec/interfaces.md, "QA"): each person's
//! approval, rejection and hand decision, and each agent proposal, checked against the
//! policy in force when it was made — the same deterministic engine the desk decides
//! with — and recorded in `decision_checks` (this module is its one owner), in the
//! decision's own transaction, so the lead's page is current the moment a decision is.
//!
//! What "within the policy" means per decision:
//! - the agent's proposal: every refund it proposed is one the engine's decision on the
//!   fresh facts allows, and none of its evidence was rejected;
//! - an approval: the approved refund is the engine's decision (bound by fingerprint);
//! - a rejection: the engine did not allow a refund (rejecting an allowed refund gives
//!   the customer less than the policy promises);
//! - a hand decision (shadow mode): a refund passes the hand check (each line on a
//!   charge the policy allows, at most what it allows); any other outcome is the
//!   policy's own, or the policy hands the case to a person.
//!
//! What it deliberately does not do: judge replies' words (a reply is not a decision the
//! engine can check), or change any decision.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::Row;

use crate::error::DomainResult;
use store::{Db, Tx};

/// What a decision was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Proposal,
    Approve,
    Reject,
    HandDecision,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Proposal => "proposal",
            Action::Approve => "approve",
            Action::Reject => "reject",
            Action::HandDecision => "hand_decision",
        }
    }
}

/// One decision and its check.
#[derive(Debug, Clone)]
pub struct Check<'a> {
    pub case_id: &'a str,
    /// A staff id, or [`AGENT`].
    pub actor: &'a str,
    pub action: Action,
    pub outcome: &'a str,
    pub reason: &'a str,
    pub language: &'a str,
    pub within_policy: bool,
    pub policy_outcome: &'a str,
    pub why: &'a str,
    pub now: i64,
}

/// The actor of the agent's proposals.
pub const AGENT: &str = "agent";

/// Records `check` in the decision's transaction.
pub async fn record(tx: &mut Tx<'_>, check: &Check<'_>) -> DomainResult<()> {
    sqlx::query(
        "INSERT INTO decision_checks (id, case_id, actor, action, outcome, reason, language, within_policy, policy_outcome, why, decided_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(store::new_id("qa"))
    .bind(check.case_id)
    .bind(check.actor)
    .bind(check.action.as_str())
    .bind(check.outcome)
    .bind(check.reason)
    .bind(check.language)
    .bind(i64::from(check.within_policy))
    .bind(check.policy_outcome)
    .bind(check.why)
    .bind(check.now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The outcome word of an engine decision, as checks store it.
pub fn outcome_word(decision: &policy_engine::Decision) -> &'static str {
    domain::verdict::CaseVerdict::from_decision(decision)
        .outcome
        .as_str()
}

/// The rules a decision fired, as a check's `why`.
pub fn rules_why(decision: &policy_engine::Decision) -> String {
    let rules: Vec<String> = decision
        .rules
        .iter()
        .map(|r| format!("{} ({})", r.summary, r.citation))
        .collect();
    rules.join("; ")
}

/// Decisions of one group (a person, a reason, a language, a week).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tally {
    pub decisions: usize,
    pub within_policy: usize,
}

/// A decision outside the policy, for the page's list.
#[derive(Debug, Clone, Serialize)]
pub struct Breach {
    pub case_id: String,
    pub who: String,
    pub action: String,
    pub outcome: String,
    pub policy_outcome: String,
    pub why: String,
    pub decided_at: i64,
}

/// The lead's QA report over the last [`WEEKS`] weeks.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub total: Tally,
    pub by_person: BTreeMap<String, Tally>,
    pub by_reason: BTreeMap<String, Tally>,
    pub by_language: BTreeMap<String, Tally>,
    /// `2026-W49` → tally, oldest first.
    pub by_week: BTreeMap<String, Tally>,
    /// Newest first, at most [`BREACHES`].
    pub breaches: Vec<Breach>,
    /// Decisions made this ISO week.
    pub this_week: usize,
}

/// How far back the report reads.
pub const WEEKS: i64 = 12;
/// How many breaches the page lists (all are counted).
pub const BREACHES: usize = 100;

/// The report at `now`: the checks of the last [`WEEKS`] weeks, grouped.
pub async fn report(db: &Db, now: i64) -> DomainResult<Report> {
    let since = now - WEEKS * 7 * 24 * 3_600_000;
    let rows = sqlx::query(
        "SELECT c.case_id, c.actor, c.action, c.outcome, c.reason, c.language, c.within_policy, c.policy_outcome, c.why, c.decided_at,
                s.email
         FROM decision_checks c LEFT JOIN staff s ON s.id = c.actor
         WHERE c.decided_at >= $1 ORDER BY c.decided_at DESC",
    )
    .bind(since)
    .fetch_all(db.reader())
    .await?;
    let mut report = Report::default();
    let this_week = week_of(now);
    for r in &rows {
        let actor: String = r.try_get("actor")?;
        let who = match r.try_get::<Option<String>, _>("email")? {
            Some(email) => email,
            None if actor == AGENT => "the agent".to_string(),
            None => actor,
        };
        let within = r.try_get::<i64, _>("within_policy")? == 1;
        let decided_at: i64 = r.try_get("decided_at")?;
        let week = week_of(decided_at);
        report.this_week += usize::from(week == this_week);
        let groups = [
            &mut report.total,
            report.by_person.entry(who.clone()).or_default(),
            report.by_reason.entry(r.try_get("reason")?).or_default(),
            report
                .by_language
                .entry(r.try_get("language")?)
                .or_default(),
            report.by_week.entry(week).or_default(),
        ];
        for tally in groups {
            tally.decisions += 1;
            tally.within_policy += usize::from(within);
        }
        if !within && report.breaches.len() < BREACHES {
            report.breaches.push(Breach {
                case_id: r.try_get("case_id")?,
                who,
                action: r.try_get("action")?,
                outcome: r.try_get("outcome")?,
                policy_outcome: r.try_get("policy_outcome")?,
                why: r.try_get("why")?,
                decided_at,
            });
        }
    }
    Ok(report)
}

/// `2026-W49`: the ISO week of a time in milliseconds.
pub fn week_of(ms: i64) -> String {
    let (year, week, _) = crate::clock::from_ms(ms).to_iso_week_date();
    format!("{year}-W{week:02}")
}

/// The check of a verdict on the refund `decided` (the case's decision, bound by its
/// fingerprint): the policy in force now is asked again on the case's facts. An approval
/// is within it when that decision is the same refund; a rejection when it allows none.
pub fn check_verdict(
    policies: &policy_engine::PolicySet,
    facts: Option<&str>,
    decided: &policy_engine::Decision,
    approved: bool,
) -> (bool, &'static str, String) {
    use domain::verdict::{CaseOutcome, CaseVerdict};
    let facts: Option<policy_engine::Facts> = facts.and_then(|f| serde_json::from_str(f).ok());
    let now = match &facts {
        Some(f) => policy_engine::decide(f, policies),
        // No facts to ask again (a case recorded before facts were kept): the decision
        // the fingerprint binds is the policy's answer.
        None => decided.clone(),
    };
    let policy = CaseVerdict::from_decision(&now);
    let bound = CaseVerdict::from_decision(decided);
    let allows = policy.outcome == CaseOutcome::Refund;
    let why = rules_why(&now);
    match (approved, allows) {
        (true, true) if policy.agrees_exactly(&bound) => (true, policy.outcome.as_str(), why),
        (true, _) => (
            false,
            policy.outcome.as_str(),
            format!("approved a refund the policy in force does not decide: {why}"),
        ),
        (false, false) => (true, policy.outcome.as_str(), why),
        (false, true) => (
            false,
            policy.outcome.as_str(),
            format!("rejected a refund the policy allows: {why}"),
        ),
    }
}

/// The stored language of a ticket (`en` when it has none).
pub async fn ticket_language(tx: &mut Tx<'_>, ticket_id: &str) -> DomainResult<String> {
    let language: Option<String> = sqlx::query_scalar("SELECT language FROM tickets WHERE id = $1")
        .bind(ticket_id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(language.unwrap_or_else(|| "en".to_string()))
}

/// The agent's proposal checked against the engine's decision on the fresh facts, and
/// recorded in the decision's transaction: within the policy when none of its evidence
/// was rejected and every refund it proposed is on a charge the decision refunds.
pub async fn record_proposal(
    tx: &mut Tx<'_>,
    case_id: &str,
    language: &str,
    proposal: &crate::agent::Proposal,
    decision: &policy_engine::Decision,
    invalid: &[String],
    now: i64,
) -> DomainResult<()> {
    let refunded = |charge: &str| decision.refunds.iter().any(|r| r.charge_id == charge);
    let beyond: Vec<&str> = proposal
        .refunds
        .iter()
        .map(|r| r.charge_id.as_str())
        .filter(|c| !refunded(c))
        .collect();
    let (within, why) = if !invalid.is_empty() {
        // Counted, not quoted: a reference is the model's text (docs/spec/data.md).
        let why = format!(
            "{} of its evidence references name no record a tool returned",
            invalid.len()
        );
        (false, why)
    } else if !beyond.is_empty() {
        let why = format!(
            "proposed a refund on {} the policy does not allow: {}",
            beyond.join(", "),
            rules_why(decision)
        );
        (false, why)
    } else {
        (true, rules_why(decision))
    };
    let outcome = if proposal.refunds.is_empty() {
        outcome_word(decision)
    } else {
        "refund"
    };
    let reason = crate::world::serde_plain(&decision.reason_code);
    let check = Check {
        case_id,
        actor: AGENT,
        action: Action::Proposal,
        outcome,
        reason: &reason,
        language,
        within_policy: within,
        policy_outcome: outcome_word(decision),
        why: &why,
        now,
    };
    record(tx, &check).await
}
