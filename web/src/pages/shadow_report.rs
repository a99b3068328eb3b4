//! The batch shadow report's page (`refund-agent shadow` writes it beside `report.json`):
//! one self-contained HTML file, rendered by askama from `templates/shadow_report.html`, so
//! every text that comes from a ticket (its id, the human's evidence, a trace, a skipped
//! line's message) is escaped by askama and by nothing else.
//!
//! A summary that fits one screen (the headline, one row per class of disagreement),
//! then drill-down in `<details>`: each class's clause, action and first examples (the
//! rest are in `report.csv`), per language and per person, the tallies. The page grows
//! with the number of classes, never with the number of tickets.
//!
//! It renders only: the tallies are `backtest::shadow::run`'s and `backtest::shadow::classes`',
//! the file is written by the CLI.

use std::collections::{BTreeMap, HashMap};

use askama::Template;
use backtest::shadow::{Agreement, ClassSummary, Classified, Group, ShadowReport, ShadowTicket};
use policy_engine::Currency;
use shadow::replay::{CaseOutcome, CaseVerdict};

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
    /// The headline, in words: never a percentage of nothing.
    headline: String,
    per_second: String,
    classified: usize,
    classes: Vec<ClassBlock<'a>>,
    class_columns: Vec<&'static str>,
    languages: Vec<GroupRow<'a>>,
    people: Vec<GroupRow<'a>>,
    inference_rules: Vec<(String, usize)>,
    outcomes: Vec<&'static str>,
    confusion: Vec<ConfusionRow>,
    agreements: Vec<AgreementTable<'a>>,
    features: Vec<FeatureRow<'a>>,
    money: Vec<MoneyRow>,
}

/// One class: its summary line and its examples.
struct ClassBlock<'a> {
    s: &'a ClassSummary,
    anchor: &'static str,
    share: String,
    top_clause: String,
    examples: Vec<Example<'a>>,
    /// How many of the class's tickets are only in `report.csv`.
    more: usize,
}

/// One example ticket of a class.
struct Example<'a> {
    id: &'a str,
    team: String,
    agent: String,
    c: &'a Classified,
    inference: String,
    /// The agent's trace, pretty JSON, or the error that stopped the replay.
    trace: String,
}

/// A language's or a person's row: agreement and a count per class column.
struct GroupRow<'a> {
    name: &'a str,
    g: &'a Group,
    agreement: String,
    cells: Vec<usize>,
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

fn pct(n: usize, of: usize) -> String {
    format!("{:.1}%", n as f64 * 100.0 / of as f64)
}

/// The headline: how many tickets agree, in counts and share; with no ticket, says so.
fn headline(r: &ShadowReport) -> String {
    if r.total == 0 {
        return "No tickets were replayed: the history held none that could be read.".into();
    }
    let agree = r.tickets.iter().filter(|t| t.agree).count();
    let exact = r.tickets.iter().filter(|t| t.exact).count();
    format!(
        "{} tickets · the agent reached the team's outcome on {agree} ({}) and the same refunds on {exact} ({}) · {} disagreements",
        r.total,
        pct(agree, r.total),
        pct(exact, r.total),
        r.disagreements
    )
}

impl<'a> Page<'a> {
    fn of(r: &'a ShadowReport) -> Self {
        let by_id: HashMap<&str, &ShadowTicket> =
            r.tickets.iter().map(|t| (t.id.as_str(), t)).collect();
        let class_columns: Vec<&'static str> = r.classes.iter().map(|c| c.class.as_str()).collect();
        Page {
            r,
            headline: headline(r),
            per_second: format!("{:.0}", r.tickets_per_second),
            classified: r.classes.iter().map(|c| c.count).sum(),
            classes: r
                .classes
                .iter()
                .map(|s| class_block(r, s, &by_id))
                .collect(),
            languages: groups(&r.by_language, &class_columns),
            people: groups(&r.by_person, &class_columns),
            class_columns,
            inference_rules: inference_rules(r),
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
        }
    }
}

fn class_block<'a>(
    r: &'a ShadowReport,
    s: &'a ClassSummary,
    by_id: &HashMap<&str, &'a ShadowTicket>,
) -> ClassBlock<'a> {
    let examples: Vec<Example<'a>> = s
        .examples
        .iter()
        .filter_map(|id| by_id.get(id.as_str()).copied())
        .filter_map(example)
        .collect();
    ClassBlock {
        s,
        anchor: s.class.as_str(),
        share: pct(s.count, r.disagreements.max(1)),
        top_clause: s
            .clauses
            .first()
            .map(|(c, n)| format!("{c} ({n})"))
            .unwrap_or_else(|| "no clause: no decision was reached".into()),
        more: s.count - examples.len(),
        examples,
    }
}

fn example(t: &ShadowTicket) -> Option<Example<'_>> {
    let c = t.class.as_ref()?;
    Some(Example {
        id: &t.id,
        team: verdict_text(&t.human),
        agent: verdict_text(&t.agent),
        c,
        inference: t
            .human_inference
            .as_ref()
            .map(backtest::shadow::classes::evidence_text)
            .unwrap_or_default(),
        trace: t
            .trace
            .as_ref()
            .map(|v| serde_json::to_string_pretty(v).unwrap_or_default())
            .unwrap_or_else(|| t.error.clone().unwrap_or_default()),
    })
}

fn groups<'a>(groups: &'a BTreeMap<String, Group>, columns: &[&'static str]) -> Vec<GroupRow<'a>> {
    groups
        .iter()
        .map(|(name, g)| GroupRow {
            name,
            g,
            agreement: pct(g.agree, g.total.max(1)),
            cells: columns
                .iter()
                .map(|c| g.classes.get(*c).copied().unwrap_or(0))
                .collect(),
        })
        .collect()
}

/// How many team outcomes each inference rule gave (imported histories only).
fn inference_rules(r: &ShadowReport) -> Vec<(String, usize)> {
    let mut rules: BTreeMap<String, usize> = BTreeMap::new();
    for t in &r.tickets {
        if let Some(rule) = t
            .human_inference
            .as_ref()
            .and_then(|i| i.get("rule"))
            .and_then(|r| r.as_str())
        {
            *rules.entry(rule.to_string()).or_default() += 1;
        }
    }
    rules.into_iter().collect()
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
