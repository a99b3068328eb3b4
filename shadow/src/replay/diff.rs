//! Policy what-ifs: the same historical tickets decided under two policy versions, and
//! what changed between them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use desk::agent::investigator::Investigator;
use desk::agent::Model;
use policy_engine::{Currency, Decision, Facts, PolicyError, PolicySet, Role};
use rag_index::PolicyIndex;
use rust_decimal::Decimal;
use serde::Serialize;
use time::OffsetDateTime;

use super::history::HistoricalTicket;
use super::ticket::{decide, investigate, verdict, Investigation, ReplayError};
use domain::verdict::CaseVerdict;

/// One side of a diff: the verdict and what else a reviewer needs to see.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffSide {
    #[serde(flatten)]
    pub verdict: CaseVerdict,
    pub approver_role: Option<Role>,
    pub policy_versions: Vec<String>,
}

/// Money per currency, as decimal strings in the currency's scale. `delta` is `to - from`
/// and may be negative.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoneyChange {
    pub currency: Currency,
    pub from: String,
    pub to: String,
    pub delta: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffEntry {
    pub id: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub human: CaseVerdict,
    pub from: DiffSide,
    pub to: DiffSide,
    /// What differs: `outcome`, `reason`, `refunds`, `approver_role`.
    pub changes: Vec<String>,
    /// Money refunded under each side, per currency (only currencies involved).
    pub money: Vec<MoneyChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TicketError {
    pub id: String,
    pub message: String,
}

/// `refund-agent policy diff --from … --to … HISTORY.jsonl`, as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    pub from: Vec<String>,
    pub to: Vec<String>,
    /// Tickets replayed (errors included).
    pub total: usize,
    /// Tickets whose decision differs.
    pub changed: usize,
    /// How many changed tickets differ in each field (`outcome`, `refunds`…).
    pub changes: BTreeMap<String, usize>,
    /// Outcome transitions among changed tickets: `"escalate -> refund": 3`.
    pub transitions: BTreeMap<String, usize>,
    /// Money refunded over all changed tickets under each side, per currency.
    pub money: Vec<MoneyChange>,
    pub tickets: Vec<DiffEntry>,
    pub errors: Vec<TicketError>,
}

/// What the decisions on `tickets` would have been under `from` and under `to` (each a
/// list of pins such as `["RP-001@2"]`; documents not pinned use the version in force
/// on each ticket's date), listing every ticket whose decision differs. The built-in
/// investigator reads each ticket once; both sides decide on the same facts, so every
/// difference comes from the policy change alone. `progress(done, total)` is called
/// after each ticket (the command line draws it as a bar).
pub async fn policy_diff(
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    tickets: &[HistoricalTicket],
    from: &[String],
    to: &[String],
    progress: impl FnMut(usize, usize),
) -> Result<DiffReport, ReplayError> {
    policy_diff_with_model(
        &Investigator,
        policies,
        index,
        tickets,
        (from, to),
        progress,
    )
    .await
}

/// [`policy_diff`] with another model doing the investigation; `pins` is `(from, to)`.
pub async fn policy_diff_with_model(
    model: &dyn Model,
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    tickets: &[HistoricalTicket],
    (from, to): (&[String], &[String]),
    mut progress: impl FnMut(usize, usize),
) -> Result<DiffReport, ReplayError> {
    // Bad pins fail the whole run up front, not once per ticket.
    for pin in from.iter().chain(to) {
        policies.resolve_ref(pin)?;
    }
    let mut tally = Tally::new(from, to, tickets.len());
    for (done, ticket) in tickets.iter().enumerate() {
        match investigate(model, index, ticket).await {
            Ok(investigation) => {
                if let Some(entry) = compare(&investigation, ticket, policies, from, to)? {
                    tally.add(entry);
                }
            }
            Err(e) => tally.report.errors.push(TicketError {
                id: ticket.id.clone(),
                message: e.to_string(),
            }),
        }
        progress(done + 1, tickets.len());
    }
    Ok(tally.finish())
}

/// One ticket decided on the same facts under both sides; `None` when nothing differs
/// or the agent gave up (no decision on either side). The entry's money is per side.
fn compare(
    investigation: &Investigation,
    ticket: &HistoricalTicket,
    policies: &PolicySet,
    from: &[String],
    to: &[String],
) -> Result<Option<DiffEntry>, ReplayError> {
    let (Some(a), Some(b)) = (
        decide(investigation, policies, from)?,
        decide(investigation, policies, to)?,
    ) else {
        return Ok(None);
    };
    let side = |d: &Decision| DiffSide {
        verdict: verdict(investigation, Some(d)),
        approver_role: d.approver_role,
        policy_versions: d.policy_versions.clone(),
    };
    Ok(entry(
        (&ticket.id, ticket.created_at, ticket.human.verdict()),
        side(&a),
        side(&b),
    ))
}

/// The diff entry of one ticket or case, `None` when both sides agree.
fn entry(
    (id, created_at, human): (&str, OffsetDateTime, CaseVerdict),
    from_side: DiffSide,
    to_side: DiffSide,
) -> Option<DiffEntry> {
    let mut changes = Vec::new();
    if from_side.verdict.outcome != to_side.verdict.outcome {
        changes.push("outcome".to_string());
    }
    if from_side.verdict.reason != to_side.verdict.reason {
        changes.push("reason".to_string());
    }
    if !from_side.verdict.same_refunds(&to_side.verdict.refunds) {
        changes.push("refunds".to_string());
    }
    if from_side.approver_role != to_side.approver_role {
        changes.push("approver_role".to_string());
    }
    if changes.is_empty() {
        return None;
    }
    let money = money_changes(&from_side.verdict.totals(), &to_side.verdict.totals());
    Some(DiffEntry {
        id: id.to_string(),
        created_at,
        human,
        money,
        from: from_side,
        to: to_side,
        changes,
    })
}

/// A live case as a what-if of recent decisions reads it: the facts the
/// policy engine decided it on, as the case recorded them, and what it came to.
#[derive(Debug, Clone)]
pub struct RecordedCase {
    pub id: String,
    pub facts: Facts,
    /// The recorded decision's verdict (the report's `human` field: what was decided).
    pub recorded: CaseVerdict,
}

/// [`policy_diff`] over recorded facts instead of replayed tickets: no investigation,
/// both sides decide the very facts the engine saw, so every difference is the policy
/// change's.
pub fn facts_diff(
    policies: &PolicySet,
    cases: &[RecordedCase],
    from: &[String],
    to: &[String],
) -> Result<DiffReport, ReplayError> {
    let decide = |facts: &Facts, pins: &[String]| -> Result<Decision, PolicyError> {
        match pins.is_empty() {
            true => Ok(policy_engine::decide(facts, policies)),
            false => policy_engine::decide_with(facts, policies, pins),
        }
    };
    for pin in from.iter().chain(to) {
        policies.resolve_ref(pin)?;
    }
    let side = |d: Decision| DiffSide {
        verdict: CaseVerdict::from_decision(&d),
        approver_role: d.approver_role,
        policy_versions: d.policy_versions,
    };
    let mut tally = Tally::new(from, to, cases.len());
    for case in cases {
        let (a, b) = (decide(&case.facts, from)?, decide(&case.facts, to)?);
        let about = (
            case.id.as_str(),
            case.facts.reported_at,
            case.recorded.clone(),
        );
        if let Some(entry) = entry(about, side(a), side(b)) {
            tally.add(entry);
        }
    }
    Ok(tally.finish())
}

/// The report being built, and the money moved under each side over all changes.
struct Tally {
    report: DiffReport,
    money_from: BTreeMap<Currency, Decimal>,
    money_to: BTreeMap<Currency, Decimal>,
}

impl Tally {
    fn new(from: &[String], to: &[String], total: usize) -> Tally {
        Tally {
            report: DiffReport {
                from: from.to_vec(),
                to: to.to_vec(),
                total,
                changed: 0,
                changes: BTreeMap::new(),
                transitions: BTreeMap::new(),
                money: Vec::new(),
                tickets: Vec::new(),
                errors: Vec::new(),
            },
            money_from: BTreeMap::new(),
            money_to: BTreeMap::new(),
        }
    }

    fn add(&mut self, entry: DiffEntry) {
        for (c, v) in entry.from.verdict.totals() {
            *self.money_from.entry(c).or_insert(Decimal::ZERO) += v;
        }
        for (c, v) in entry.to.verdict.totals() {
            *self.money_to.entry(c).or_insert(Decimal::ZERO) += v;
        }
        let report = &mut self.report;
        report.changed += 1;
        for c in &entry.changes {
            *report.changes.entry(c.clone()).or_insert(0) += 1;
        }
        let transition = format!(
            "{} -> {}",
            entry.from.verdict.outcome.as_str(),
            entry.to.verdict.outcome.as_str()
        );
        *report.transitions.entry(transition).or_insert(0) += 1;
        report.tickets.push(entry);
    }

    fn finish(mut self) -> DiffReport {
        self.report.money = money_changes(&self.money_from, &self.money_to);
        self.report
    }
}

fn money_changes(
    from: &BTreeMap<Currency, Decimal>,
    to: &BTreeMap<Currency, Decimal>,
) -> Vec<MoneyChange> {
    let currencies: BTreeSet<Currency> = from.keys().chain(to.keys()).copied().collect();
    currencies
        .into_iter()
        .map(|c| {
            let a = from.get(&c).copied().unwrap_or(Decimal::ZERO);
            let b = to.get(&c).copied().unwrap_or(Decimal::ZERO);
            MoneyChange {
                currency: c,
                from: in_scale(a, c),
                to: in_scale(b, c),
                delta: in_scale(b - a, c),
            }
        })
        .collect()
}

/// A decimal in the currency's scale (`"-30.00"`, `"9800"`); may be negative.
fn in_scale(mut amount: Decimal, currency: Currency) -> String {
    amount.rescale(currency.decimals());
    amount.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_deltas_keep_the_currency_scale() {
        assert_eq!(in_scale(Decimal::new(-30, 0), Currency::EUR), "-30.00");
        assert_eq!(in_scale(Decimal::new(9800, 0), Currency::JPY), "9800");
    }
}
