//! The batch shadow report's page (`refund-agent shadow` writes it beside `report.json`):
//! one self-contained HTML file, rendered by askama from `templates/shadow_report.html`, so
//! every text that comes from a ticket (its id, the human's evidence, a trace, a skipped
//! line's message) is escaped by askama and by nothing else.
//!
//! It renders only: the tallies are `desk::shadow::run`'s, the file is written by the CLI.

use std::collections::BTreeMap;

use askama::Template;
use desk::replay::{CaseOutcome, CaseVerdict};
use desk::shadow::{Agreement, Cause, ShadowReport, ShadowTicket};
use policy_engine::Currency;

/// The page of `report`.
pub fn html(report: &ShadowReport) -> String {
    Page::of(report)
        .render()
        // Writing plain values into a String does not fail; if askama ever did, the file
        // says so rather than being empty.
        .unwrap_or_else(|e| {
            format!("<!doctype html><p>The shadow report was not rendered: {e}</p>")
        })
}

#[derive(Template)]
#[template(path = "shadow_report.html")]
struct Page<'a> {
    r: &'a ShadowReport,
    outcome_pct: String,
    exact_pct: String,
    per_second: String,
    outcomes: Vec<&'static str>,
    confusion: Vec<ConfusionRow>,
    agreements: Vec<AgreementTable<'a>>,
    features: Vec<FeatureRow<'a>>,
    money: Vec<MoneyRow>,
    inferred: Vec<InferredRow<'a>>,
    disagreements: Vec<DisagreementRow<'a>>,
}

/// One human outcome's row of the confusion matrix: a cell per agent outcome.
struct ConfusionRow {
    human: &'static str,
    cells: Vec<ConfusionCell>,
}

struct ConfusionCell {
    n: usize,
    /// Tickets off the diagonal: the two sides disagree.
    bad: bool,
}

/// One "agreement per …" table.
struct AgreementTable<'a> {
    title: &'static str,
    column: &'static str,
    rows: &'a BTreeMap<String, Agreement>,
}

struct FeatureRow<'a> {
    name: &'a str,
    total: usize,
    outcome_pct: String,
    exact_pct: String,
}

/// The money each side alone would have refunded in one currency (amounts of two
/// currencies are never added together).
struct MoneyRow {
    currency: &'static str,
    agent_only: String,
    human_only: String,
}

/// A ticket whose human outcome was inferred from the records (`import history`), with
/// the rule and the evidence: what a lead checks before trusting the agreement figures.
struct InferredRow<'a> {
    id: &'a str,
    agree: bool,
    human: String,
    rule: &'a str,
    evidence: String,
    agent: String,
}

struct DisagreementRow<'a> {
    id: &'a str,
    cause: &'static str,
    human: String,
    agent: String,
    order: String,
    citations: String,
    /// The agent's trace, pretty JSON, or the error that stopped the replay.
    trace: String,
}

impl<'a> Page<'a> {
    fn of(r: &'a ShadowReport) -> Self {
        Page {
            r,
            outcome_pct: format!("{:.1}", r.outcome_agreement * 100.0),
            exact_pct: format!("{:.1}", r.exact_agreement * 100.0),
            per_second: format!("{:.0}", r.tickets_per_second),
            outcomes: CaseOutcome::ALL.iter().map(|o| o.as_str()).collect(),
            confusion: confusion(r),
            agreements: vec![
                AgreementTable {
                    title: "reason code",
                    column: "reason",
                    rows: &r.by_reason,
                },
                AgreementTable {
                    title: "policy version",
                    column: "version",
                    rows: &r.by_policy_version,
                },
                AgreementTable {
                    title: "model, prompt and tool schema version",
                    column: "versions",
                    rows: &r.by_run_versions,
                },
            ],
            features: r
                .by_feature
                .iter()
                .map(|(name, b)| FeatureRow {
                    name,
                    total: b.total,
                    outcome_pct: format!("{:.1}", b.outcome_agreement * 100.0),
                    exact_pct: format!("{:.1}", b.exact_agreement * 100.0),
                })
                .collect(),
            money: money(r),
            inferred: r.tickets.iter().filter_map(inferred).collect(),
            disagreements: r
                .tickets
                .iter()
                .filter(|t| !t.exact)
                .map(disagreement)
                .collect(),
        }
    }
}

fn confusion(r: &ShadowReport) -> Vec<ConfusionRow> {
    CaseOutcome::ALL
        .iter()
        .map(|h| ConfusionRow {
            human: h.as_str(),
            cells: CaseOutcome::ALL
                .iter()
                .map(|a| {
                    let n = r
                        .confusion
                        .get(h.as_str())
                        .and_then(|row| row.get(a.as_str()))
                        .copied()
                        .unwrap_or(0);
                    ConfusionCell {
                        n,
                        bad: h != a && n > 0,
                    }
                })
                .collect(),
        })
        .collect()
}

fn money(r: &ShadowReport) -> Vec<MoneyRow> {
    let mut currencies: Vec<&Currency> = r.agent_only_money.keys().collect();
    currencies.extend(r.human_only_money.keys());
    currencies.sort();
    currencies.dedup();
    let cell = |m: &BTreeMap<Currency, String>, c: &Currency| {
        m.get(c).cloned().unwrap_or_else(|| "0".into())
    };
    currencies
        .into_iter()
        .map(|c| MoneyRow {
            currency: c.code(),
            agent_only: cell(&r.agent_only_money, c),
            human_only: cell(&r.human_only_money, c),
        })
        .collect()
}

fn inferred(t: &ShadowTicket) -> Option<InferredRow<'_>> {
    let inference = t.human_inference.as_ref()?;
    let lines = |name: &str| -> Vec<String> {
        inference
            .get(name)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|l| l.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut evidence = lines("evidence");
    evidence.extend(
        lines("excluded")
            .into_iter()
            .map(|l| format!("not counted: {l}")),
    );
    Some(InferredRow {
        id: &t.id,
        agree: t.agree,
        human: verdict_text(&t.human),
        rule: inference
            .get("rule")
            .and_then(|r| r.as_str())
            .unwrap_or_default(),
        evidence: evidence.join("; "),
        agent: verdict_text(&t.agent),
    })
}

fn disagreement(t: &ShadowTicket) -> DisagreementRow<'_> {
    let order = match (&t.order_id, t.order_source) {
        (Some(id), Some(source)) => format!("{id} ({})", source.as_str()),
        (Some(id), None) => id.clone(),
        (None, _) => "none".to_string(),
    };
    let trace = t
        .trace
        .as_ref()
        .map(|v| serde_json::to_string_pretty(v).unwrap_or_default())
        .unwrap_or_else(|| t.error.clone().unwrap_or_default());
    DisagreementRow {
        id: &t.id,
        cause: t.cause.map_or("", Cause::as_str),
        human: verdict_text(&t.human),
        agent: verdict_text(&t.agent),
        order,
        citations: t.citations.join(", "),
        trace,
    }
}

/// A verdict in one line: outcome, (reason), then each refund's charge, amount and
/// currency. The live shadow page (`reports`) writes verdicts the same way.
pub(super) fn verdict_text(v: &CaseVerdict) -> String {
    let refunds: Vec<String> = v
        .refunds
        .iter()
        .map(|r| format!("{} {} {}", r.charge_id, r.amount, r.currency))
        .collect();
    format!(
        "{} ({}) {}",
        v.outcome.as_str(),
        desk::world::serde_plain(&v.reason),
        refunds.join(", ")
    )
}
