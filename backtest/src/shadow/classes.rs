//! What a backtest disagreement means for the team (docs/guides/backtesting.md, "Reading
//! the report"): every ticket where the agent's verdict is not the team's is put in
//! exactly one [`Class`], with the reading it rests on, the clause that decides it and
//! why, so a lead reads "the team refunded 9 tickets RP-001 §2.3 does not allow" rather
//! than "50% agreement".
//!
//! The classes are tried in a fixed order (the first that fits wins), so the class
//! counts always add up to the disagreements:
//! 1. the team's outcome was inferred from an absence (no refund, no tag) or with
//!    refunds set aside: it may not be what the team did — [`Class::HumanUncertain`];
//! 2. the agent asked or escalated without a policy reason while the team decided —
//!    [`Class::AgentDeferredRecordsDecide`]; both deferred, differently —
//!    [`Class::BothDeferred`];
//! 3. another reading of the same records (another request kind, another of the
//!    customer's orders, another charge) gives the team's verdict —
//!    [`Class::AgentMisread`];
//! 4. the policy escalates and the team decided — [`Class::PolicyHandsToPerson`];
//! 5. the policy decides and the team escalated or asked —
//!    [`Class::TeamEscalatedPolicyDecides`];
//! 6. the team refunded more than the policy allows — [`Class::TeamRefundedOutsidePolicy`],
//!    or less — [`Class::TeamGaveLessThanPolicy`].
//!
//! Pure: the policy engine and the replay's facts; no I/O.

use policy_engine::{Decision, Facts, FiredRule, Ownership, PolicySet, RequestKind};
use serde::Serialize;

use crate::shadow::Cause;
use shadow::replay::{CaseOutcome, CaseVerdict};

/// One class of disagreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    TeamRefundedOutsidePolicy,
    TeamEscalatedPolicyDecides,
    AgentDeferredRecordsDecide,
    AgentMisread,
    HumanUncertain,
    /// Not among the four: the team refused (or refunded less than) what the
    /// policy allows — the mirror of [`Class::TeamRefundedOutsidePolicy`].
    TeamGaveLessThanPolicy,
    /// The policy itself sends the case to a person (a dispute, an amount over a
    /// limit), and the team's person decided: the agent did what the policy says.
    PolicyHandsToPerson,
    /// Both left the decision to someone else, one by asking the customer, the other by
    /// escalating.
    BothDeferred,
}

impl Class {
    /// Every class, in the order the report lists them.
    pub const ALL: [Class; 8] = [
        Class::TeamRefundedOutsidePolicy,
        Class::TeamGaveLessThanPolicy,
        Class::TeamEscalatedPolicyDecides,
        Class::AgentDeferredRecordsDecide,
        Class::AgentMisread,
        Class::PolicyHandsToPerson,
        Class::BothDeferred,
        Class::HumanUncertain,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::TeamRefundedOutsidePolicy => "team_refunded_outside_policy",
            Class::TeamEscalatedPolicyDecides => "team_escalated_policy_decides",
            Class::AgentDeferredRecordsDecide => "agent_deferred_records_decide",
            Class::AgentMisread => "agent_misread",
            Class::HumanUncertain => "human_uncertain",
            Class::TeamGaveLessThanPolicy => "team_gave_less_than_policy",
            Class::PolicyHandsToPerson => "policy_hands_to_person",
            Class::BothDeferred => "both_deferred",
        }
    }

    /// The class in the words a lead reads.
    pub fn title(self) -> &'static str {
        match self {
            Class::TeamRefundedOutsidePolicy => "The team refunded what the policy does not allow",
            Class::TeamEscalatedPolicyDecides => {
                "The team escalated or asked where the policy decides"
            }
            Class::AgentDeferredRecordsDecide => {
                "The agent asked or escalated where the records decide"
            }
            Class::AgentMisread => "The agent misread the ticket",
            Class::HumanUncertain => "The team's outcome is uncertain (inferred from an absence)",
            Class::TeamGaveLessThanPolicy => {
                "The team refused, or refunded less than, what the policy allows"
            }
            Class::PolicyHandsToPerson => "The policy hands it to a person, and the team decided",
            Class::BothDeferred => "Both deferred, one by asking and one by escalating",
        }
    }

    /// What the team could change, one sentence.
    pub fn action(self) -> &'static str {
        match self {
            Class::TeamRefundedOutsidePolicy => "Coach the team on the clause, or change the policy if the team is right.",
            Class::TeamEscalatedPolicyDecides => "The policy already decides these: the agent would save the escalation.",
            Class::AgentDeferredRecordsDecide => "The agent needs the order found from the records (or a clearer ticket) to decide.",
            Class::AgentMisread => "Check the reading shown: a phrase or an order id the agent reads wrongly.",
            Class::HumanUncertain => "Tag these tickets in the helpdesk (or widen --refund-window-days) before trusting them.",
            Class::TeamGaveLessThanPolicy => "Customers got less than the policy promises: check the clause with the team.",
            Class::PolicyHandsToPerson => "Nothing to fix in the agent: the policy wants a person here.",
            Class::BothDeferred => "Decide which the policy wants: asking the customer or escalating.",
        }
    }
}

/// What the report knows of one replayed ticket that disagrees.
pub struct Disagreement<'a> {
    pub human: &'a CaseVerdict,
    pub agent: &'a CaseVerdict,
    /// The replay's cause ([`crate::shadow::cause`]).
    pub cause: Cause,
    pub facts: Option<&'a Facts>,
    pub request_read: Option<RequestKind>,
    /// The rules the agent's decision fired (none without a decision).
    pub rules: &'a [FiredRule],
    /// The policy's escalation reason, when the decision escalates.
    pub policy_escalation: Option<&'a str>,
    /// The replay's error, when it stopped.
    pub error: Option<&'a str>,
    /// `human.inference` of an imported history.
    pub inference: Option<&'a serde_json::Value>,
}

/// A disagreement's class with what it rests on.
#[derive(Debug, Clone, Serialize)]
pub struct Classified {
    pub class: Class,
    /// Why, in a sentence: the deciding rule's summary, or the inference's doubt.
    pub why: String,
    /// The clauses (`RP-001@2#2.1`) that decide the ticket, for the report's class.
    pub clauses: Vec<String>,
    /// The agent's reading: request kind and order.
    pub reading: String,
    /// Another reading of the same records that gives the team's verdict, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_reading: Option<String>,
}

/// The class of `d`, tried in the module's order.
pub fn classify(policies: &PolicySet, d: &Disagreement<'_>) -> Classified {
    let other = d.facts.and_then(|f| other_reading(policies, f, d.human));
    let (class, why) = class_and_why(d, other.as_ref());
    // Another reading is the point only where the agent's reading is in question.
    let other = other.filter(|_| {
        matches!(
            class,
            Class::AgentMisread | Class::AgentDeferredRecordsDecide
        )
    });
    let clauses = match &other {
        Some(o) => citations(&o.decision.rules),
        None => citations(d.rules),
    };
    Classified {
        class,
        why,
        clauses,
        reading: reading(d),
        records_reading: other.map(|o| o.text),
    }
}

fn class_and_why(d: &Disagreement<'_>, other: Option<&OtherReading>) -> (Class, String) {
    use CaseOutcome::*;
    if let Some(doubt) = d.inference.and_then(uncertain) {
        return (Class::HumanUncertain, doubt);
    }
    let (h, a) = (d.human.outcome, d.agent.outcome);
    let deferred = |o: CaseOutcome| matches!(o, RequestInfo | Escalate);
    let by_policy = a == Escalate && d.policy_escalation.is_some() && d.error.is_none();
    if deferred(a) && !by_policy {
        if deferred(h) {
            return (Class::BothDeferred, agent_why(d));
        }
        let why = match other {
            Some(o) => format!("{}; the records decide: {}", agent_why(d), o.text),
            None => agent_why(d),
        };
        return (Class::AgentDeferredRecordsDecide, why);
    }
    let misread = matches!(
        d.cause,
        Cause::OrderNotFound | Cause::OrderAmbiguous | Cause::RequestKindMisread
    ) || (h == Refund && a == Refund && other_charges(d.human, d.agent));
    if misread && !deferred(h) {
        let why = match other {
            Some(o) => format!(
                "the agent's reading gives {}: {}; the team's verdict follows from {}",
                a.as_str(),
                rules_why(d),
                o.text
            ),
            None => format!(
                "the team refunded other charges than the agent: {}",
                rules_why(d)
            ),
        };
        return (Class::AgentMisread, why);
    }
    if by_policy {
        let class = if deferred(h) {
            Class::BothDeferred
        } else {
            Class::PolicyHandsToPerson
        };
        return (class, rules_why(d));
    }
    if deferred(h) {
        return (Class::TeamEscalatedPolicyDecides, rules_why(d));
    }
    let class = match (h, a) {
        (Refund, NoRefund) => Class::TeamRefundedOutsidePolicy,
        (Refund, Refund) if more_than(d.human, d.agent) => Class::TeamRefundedOutsidePolicy,
        _ => Class::TeamGaveLessThanPolicy,
    };
    (class, rules_why(d))
}

/// Why the team's inferred outcome is in doubt, if it is: it rests on an absence (no
/// refund in the window, no tag), or refunds in the window were set aside.
fn uncertain(inference: &serde_json::Value) -> Option<String> {
    let rule = inference.get("rule").and_then(|r| r.as_str())?;
    let excluded = inference
        .get("excluded")
        .and_then(|e| e.as_array())
        .filter(|e| !e.is_empty());
    if rule == "no_refund_in_window" {
        return Some(
            "no refund and no mapped tag: \"no_refund\" is inferred from an absence".to_string(),
        );
    }
    excluded.map(|e| {
        let first = e.first().and_then(|l| l.as_str()).unwrap_or_default();
        format!("refunds in the window were set aside ({first})")
    })
}

fn agent_why(d: &Disagreement<'_>) -> String {
    if let Some(error) = d.error {
        return format!("the replay stopped: {error}");
    }
    match (d.facts, d.request_read) {
        (None, _) => "the agent found no order to decide on".to_string(),
        (_, Some(RequestKind::Unclear)) => "the agent could not tell what was asked".to_string(),
        (Some(f), _) if f.order_id.is_none() => "the agent found no order named".to_string(),
        _ => rules_why(d),
    }
}

fn rules_why(d: &Disagreement<'_>) -> String {
    let mut parts: Vec<String> = d
        .rules
        .iter()
        .map(|r| format!("{} ({})", r.summary, r.citation))
        .collect();
    if let Some(reason) = d.policy_escalation {
        parts.push(format!("escalation: {reason}"));
    }
    if parts.is_empty() {
        "no rule fired".to_string()
    } else {
        parts.join("; ")
    }
}

fn citations(rules: &[FiredRule]) -> Vec<String> {
    let mut out: Vec<String> = rules.iter().map(|r| r.citation.clone()).collect();
    out.dedup();
    out
}

/// The agent's reading in words: `duplicate_charge, order #40001 (message)`.
fn reading(d: &Disagreement<'_>) -> String {
    let kind = d
        .request_read
        .map_or("no request read", RequestKind::as_str);
    match d.facts.and_then(|f| f.order_id.as_deref()) {
        Some(order) => format!("{kind}, order {order}"),
        None => format!("{kind}, no order"),
    }
}

/// Whether the two refund on charges they share none of.
fn other_charges(human: &CaseVerdict, agent: &CaseVerdict) -> bool {
    !human
        .refunds
        .iter()
        .any(|h| agent.refunds.iter().any(|a| a.charge_id == h.charge_id))
}

/// Whether `human` sends more money than `agent` in some currency.
fn more_than(human: &CaseVerdict, agent: &CaseVerdict) -> bool {
    let theirs = agent.totals();
    human
        .totals()
        .iter()
        .any(|(c, amount)| *amount > theirs.get(c).copied().unwrap_or_default())
}

struct OtherReading {
    text: String,
    decision: Decision,
}

/// Another reading of the same records — the same order as another request kind, or
/// another of the customer's orders — whose decision is the team's outcome (and, when
/// the team refunded, refunds one of the charges it refunded).
fn other_reading(policies: &PolicySet, facts: &Facts, team: &CaseVerdict) -> Option<OtherReading> {
    let want = team.outcome;
    let same_charges = |decision: &Decision| {
        team.refunds.is_empty()
            || decision
                .refunds
                .iter()
                .any(|r| team.refunds.iter().any(|t| t.charge_id == r.charge_id))
    };
    const KINDS: [RequestKind; 4] = [
        RequestKind::DuplicateCharge,
        RequestKind::Overcharge,
        RequestKind::Cancellation,
        RequestKind::AuthorizationHold,
    ];
    let mut candidates: Vec<Facts> = Vec::new();
    if facts.order_id.is_some() {
        candidates.extend(
            KINDS
                .iter()
                .filter(|k| **k != facts.request)
                .map(|k| Facts {
                    request: *k,
                    ..facts.clone()
                }),
        );
    }
    for order in &facts.orders {
        if Some(order.id.as_str()) == facts.order_id.as_deref() {
            continue;
        }
        candidates.extend(KINDS.iter().map(|k| Facts {
            request: *k,
            order_id: Some(order.id.clone()),
            order_ownership: Ownership::Owned,
            repeat_of: None,
            ..facts.clone()
        }));
    }
    candidates.into_iter().find_map(|f| {
        let decision = policy_engine::decide(&f, policies);
        let gives = CaseVerdict::from_decision(&decision).outcome == want;
        (gives && same_charges(&decision)).then(|| OtherReading {
            text: format!(
                "{} on order {}",
                f.request.as_str(),
                f.order_id.as_deref().unwrap_or("none")
            ),
            decision,
        })
    })
}

/// How many examples a class keeps in `report.json` and the page; every disagreement is
/// in `report.csv`.
pub const EXAMPLES: usize = 5;

/// One class of the report: its count, the clauses that decide its tickets (most
/// frequent first) and a few examples.
#[derive(Debug, Clone, Serialize)]
pub struct ClassSummary {
    pub class: Class,
    pub title: &'static str,
    pub action: &'static str,
    pub count: usize,
    /// `(clause, tickets)`, most tickets first.
    pub clauses: Vec<(String, usize)>,
    /// The first [`EXAMPLES`] tickets' ids, in the history's order.
    pub examples: Vec<String>,
}

/// Agreement and disagreements per class of one group of tickets (a language, a person).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Group {
    pub total: usize,
    pub agree: usize,
    pub disagreements: usize,
    pub classes: std::collections::BTreeMap<String, usize>,
}

/// The classes, and the groups per language and per person, of a report's rows.
pub fn tally(
    rows: &[crate::shadow::ShadowTicket],
) -> (
    Vec<ClassSummary>,
    std::collections::BTreeMap<String, Group>,
    std::collections::BTreeMap<String, Group>,
) {
    use std::collections::BTreeMap;
    // Per class: its count, its tickets per clause, its first examples.
    type Tallied = (usize, BTreeMap<String, usize>, Vec<String>);
    let mut per_class: BTreeMap<Class, Tallied> = BTreeMap::new();
    let (mut by_language, mut by_person) = (BTreeMap::new(), BTreeMap::new());
    for t in rows {
        let class = t.class.as_ref();
        let add = |group: &mut Group| {
            group.total += 1;
            group.agree += usize::from(t.exact);
            if let Some(c) = class {
                group.disagreements += 1;
                *group
                    .classes
                    .entry(c.class.as_str().to_string())
                    .or_default() += 1;
            }
        };
        add(by_language.entry(t.language.clone()).or_default());
        if let Some(person) = &t.decided_by {
            add(by_person.entry(person.clone()).or_default());
        }
        if let Some(c) = class {
            let entry = per_class.entry(c.class).or_default();
            entry.0 += 1;
            for clause in &c.clauses {
                *entry.1.entry(clause.clone()).or_default() += 1;
            }
            if entry.2.len() < EXAMPLES {
                entry.2.push(t.id.clone());
            }
        }
    }
    let classes = Class::ALL
        .iter()
        .filter_map(|class| {
            let (count, clauses, examples) = per_class.remove(class)?;
            let mut clauses: Vec<(String, usize)> = clauses.into_iter().collect();
            clauses.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Some(ClassSummary {
                class: *class,
                title: class.title(),
                action: class.action(),
                count,
                clauses,
                examples,
            })
        })
        .collect();
    (classes, by_language, by_person)
}

/// The language of the ticket's first customer message (`other` for a language the
/// desk does not answer in).
pub fn language(ticket: &shadow::replay::HistoricalTicket) -> String {
    let text = ticket
        .messages
        .iter()
        .find(|m| m.from == "customer")
        .map_or("", |m| m.text.as_str());
    let region = ticket
        .world
        .customers
        .iter()
        .find(|c| c.id == ticket.customer_id)
        .map(|c| c.region);
    desk::replies::written_in(text, text, region)
        .map_or_else(|| "other".to_string(), |l| l.as_str().to_string())
}

/// Who made the team's decision: `human.assignee` (what `import history` reads from the
/// helpdesk), else `human.decided_by` unless that only says it was inferred.
pub fn decided_by(ticket: &shadow::replay::HistoricalTicket) -> Option<String> {
    let human = &ticket.human;
    if let Some(who) = human.extra.get("assignee").and_then(|a| a.as_str()) {
        return Some(who.to_string());
    }
    let by = human.decided_by.trim();
    (!by.is_empty() && by != crate::history_import::INFERRED_BY).then(|| by.to_string())
}

/// Every disagreement of `report` as CSV (`report.csv`), one row each with its class,
/// both verdicts, the reading, why and the clauses, the language, the person and how
/// the team's outcome was inferred. Cells never start a formula (`audit::search`).
pub fn csv(report: &crate::shadow::ShadowReport) -> String {
    let mut out = String::from(
        "ticket_id,class,class_title,team,agent,agent_reading,records_reading,why,clauses,language,decided_by,inference_rule,inference_evidence\r\n",
    );
    for t in report.tickets.iter() {
        let Some(c) = &t.class else { continue };
        let inference = t.human_inference.as_ref();
        let rule = inference
            .and_then(|i| i.get("rule"))
            .and_then(|r| r.as_str())
            .unwrap_or_default();
        let evidence = inference.map(evidence_text).unwrap_or_default();
        let row = [
            t.id.as_str(),
            c.class.as_str(),
            c.class.title(),
            &verdict_words(&t.human),
            &verdict_words(&t.agent),
            &c.reading,
            c.records_reading.as_deref().unwrap_or_default(),
            &c.why,
            &c.clauses.join(" "),
            &t.language,
            t.decided_by.as_deref().unwrap_or_default(),
            rule,
            &evidence,
        ];
        let fields: Vec<String> = row.iter().map(|f| desk::audit::csv_field(f)).collect();
        out += &fields.join(",");
        out += "\r\n";
    }
    out
}

/// `human.inference`'s evidence and what it set aside, in one line.
pub fn evidence_text(inference: &serde_json::Value) -> String {
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
    evidence.join("; ")
}

/// A verdict in one line: outcome (reason) and each refund's charge, amount, currency.
pub fn verdict_words(v: &CaseVerdict) -> String {
    let refunds: Vec<String> = v
        .refunds
        .iter()
        .map(|r| format!("{} {} {}", r.charge_id, r.amount, r.currency))
        .collect();
    let text = format!(
        "{} ({})",
        v.outcome.as_str(),
        desk::world::serde_plain(&v.reason)
    );
    if refunds.is_empty() {
        text
    } else {
        format!("{text} {}", refunds.join(", "))
    }
}
