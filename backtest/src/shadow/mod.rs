//! Batch shadow mode: replay historical tickets (docs/spec/interfaces.md format) with the agent, each
//! against its own billing-world snapshot, and compare the agent's outcome with what the
//! humans decided. No live system is touched: replays run through `replay`, which has
//! no database and no provider to reach, so no side effect is possible.
//!
//! The report gives outcome and exact agreement, a confusion matrix, agreement per
//! reason code and per policy version, the money each side would have refunded that the
//! other did not, and every disagreement with the agent's trace and cited policy and
//! its cause (order not found, order ambiguous, request kind misread, policy
//! outcome differs, amounts differ), counted per cause. Fields a history line carries
//! beyond docs/spec/interfaces.md are counted; a `features` object among them (the varied generator
//! writes one) gives agreement per feature value.
//!
//! This module replays and tallies; it renders nothing (the page is
//! `web::pages::shadow_report`'s, askama-escaped) and writes no file (the CLI does).

pub mod classes;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use policy_engine::{Currency, Facts, Ownership, PolicySet, RequestKind};
use rag_index::PolicyIndex;
use rust_decimal::Decimal;
use serde::Serialize;

use classes::{classify, Disagreement};
pub use classes::{Class, ClassSummary, Classified, Group};
use desk::agent::Model;
use shadow::replay::{self, CaseOutcome, CaseVerdict, HistoricalTicket, LineError};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Agreement {
    pub total: usize,
    pub agree: usize,
    pub rate: f64,
}

impl Agreement {
    fn add(&mut self, agree: bool) {
        self.total += 1;
        self.agree += usize::from(agree);
        self.rate = self.agree as f64 / self.total as f64;
    }
}

/// Why the agent's verdict differs from the human's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The agent's case named no order, or one that exists nowhere, among at most one.
    OrderNotFound,
    /// Several orders and the agent named none, or another of the customer's orders
    /// gives the human's verdict.
    OrderAmbiguous,
    /// The same order under another request kind gives the human's verdict.
    RequestKindMisread,
    /// The agent read the ticket as the human did as far as can be told; the policy
    /// engine's outcome differs (or the agent reached no decision).
    PolicyOutcomeDiffers,
    /// Same outcome, other charges or amounts.
    AmountsDiffer,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::OrderNotFound => "order_not_found",
            Cause::OrderAmbiguous => "order_ambiguous",
            Cause::RequestKindMisread => "request_kind_misread",
            Cause::PolicyOutcomeDiffers => "policy_outcome_differs",
            Cause::AmountsDiffer => "amounts_differ",
        }
    }
}

/// Agreement of one group of tickets, outcome and exact.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Breakdown {
    pub total: usize,
    pub outcome_agree: usize,
    pub exact_agree: usize,
    pub outcome_agreement: f64,
    pub exact_agreement: f64,
}

impl Breakdown {
    fn add(&mut self, agree: bool, exact: bool) {
        self.total += 1;
        self.outcome_agree += usize::from(agree);
        self.exact_agree += usize::from(exact);
        self.outcome_agreement = self.outcome_agree as f64 / self.total as f64;
        self.exact_agreement = self.exact_agree as f64 / self.total as f64;
    }
}

/// The cause of a disagreement, tried in this order on the agent's own facts: same
/// outcome (amounts), no or unknown order, another request kind that gives the human's
/// verdict, another of the customer's orders that does, else the policy outcome.
pub fn cause(
    policies: &PolicySet,
    human: &CaseVerdict,
    agent: &CaseVerdict,
    facts: Option<&Facts>,
    request_read: Option<RequestKind>,
) -> Cause {
    if agent.outcome == human.outcome {
        return Cause::AmountsDiffer;
    }
    let Some(facts) = facts else {
        return Cause::PolicyOutcomeDiffers;
    };
    let gives_human = |f: &Facts| {
        CaseVerdict::from_decision(&policy_engine::decide(f, policies)).outcome == human.outcome
    };
    let owned = |id: &str| facts.orders.iter().any(|o| o.id == id);
    match facts.order_id.as_deref() {
        None if facts.orders.len() > 1 => return Cause::OrderAmbiguous,
        None => return Cause::OrderNotFound,
        Some(id) if !owned(id) && facts.order_ownership == Ownership::Owned => {
            return Cause::OrderNotFound
        }
        Some(_) => {}
    }
    let kinds = [
        RequestKind::DuplicateCharge,
        RequestKind::Overcharge,
        RequestKind::Cancellation,
        RequestKind::AuthorizationHold,
    ];
    let other_kind = kinds.iter().filter(|k| **k != facts.request).any(|k| {
        gives_human(&Facts {
            request: *k,
            ..facts.clone()
        })
    });
    if request_read == Some(RequestKind::Unclear) || other_kind {
        return Cause::RequestKindMisread;
    }
    let other_order = facts
        .orders
        .iter()
        .filter(|o| Some(o.id.as_str()) != facts.order_id.as_deref())
        .any(|o| {
            gives_human(&Facts {
                order_id: Some(o.id.clone()),
                order_ownership: Ownership::Owned,
                repeat_of: None,
                ..facts.clone()
            })
        });
    if other_order {
        Cause::OrderAmbiguous
    } else {
        Cause::PolicyOutcomeDiffers
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ShadowTicket {
    pub id: String,
    pub human: CaseVerdict,
    pub agent: CaseVerdict,
    /// Same outcome.
    pub agree: bool,
    /// Same outcome, charges and amounts.
    pub exact: bool,
    /// Why they differ (disagreements only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// The order the agent's case is about and where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_source: Option<domain::resolve::OrderSource>,
    pub policy_versions: Vec<String>,
    pub citations: Vec<String>,
    /// How the human outcome was inferred, when the history line says (`import history`
    /// writes `human.inference`: the rule and its evidence), so a lead can check it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human_inference: Option<serde_json::Value>,
    /// The agent's trace (tool calls and results), kept for disagreements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The disagreement's class, what it rests on and the clause (disagreements only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Classified>,
    /// The language of the customer's first message (`en`, `de`…).
    pub language: String,
    /// Who made the team's decision, when the history says (`human.assignee`, else
    /// `human.decided_by` unless it was inferred from the records).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ShadowReport {
    pub total: usize,
    pub outcome_agreement: f64,
    pub exact_agreement: f64,
    /// `confusion[human][agent]` = count.
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
    pub by_reason: BTreeMap<String, Agreement>,
    pub by_policy_version: BTreeMap<String, Agreement>,
    /// Agreement per `model · prompt version · tool schema version` the runs were made
    /// with (one entry for an offline replay; the live report can hold several).
    pub by_run_versions: BTreeMap<String, Agreement>,
    /// Disagreements per cause (`order_not_found`…).
    pub causes: BTreeMap<String, usize>,
    /// Tickets whose verdicts differ (outcome, charges or amounts): the class counts
    /// add up to it.
    pub disagreements: usize,
    /// Every class with at least one disagreement, in [`Class::ALL`]'s order.
    pub classes: Vec<ClassSummary>,
    /// Agreement and classes per language of the customer's first message.
    pub by_language: BTreeMap<String, Group>,
    /// Agreement and classes per person who made the team's decision (when known).
    pub by_person: BTreeMap<String, Group>,
    /// Agreement per `feature=value` of the lines' `features` field, when they have one.
    pub by_feature: BTreeMap<String, Breakdown>,
    /// Tickets carrying each field beyond docs/spec/interfaces.md (ignored by the replay).
    pub extra_fields: BTreeMap<String, usize>,
    /// Money the agent would have refunded that the humans did not, per currency.
    pub agent_only_money: BTreeMap<Currency, String>,
    /// Money the humans refunded that the agent would not have.
    pub human_only_money: BTreeMap<Currency, String>,
    pub tickets: Vec<ShadowTicket>,
    pub bad_lines: Vec<LineError>,
    pub seconds: f64,
    pub tickets_per_second: f64,
}

fn add_money(
    into: &mut BTreeMap<Currency, Decimal>,
    from: &BTreeMap<Currency, Decimal>,
    minus: &BTreeMap<Currency, Decimal>,
) {
    for (currency, amount) in from {
        let other = minus.get(currency).copied().unwrap_or(Decimal::ZERO);
        if *amount > other {
            *into.entry(*currency).or_insert(Decimal::ZERO) += *amount - other;
        }
    }
}

/// One ticket's replay, as the report reads it: the agent's verdict, the policy versions
/// and citations it was decided under, its trace, or the error that stopped it.
struct Replayed {
    agent: CaseVerdict,
    versions: Vec<String>,
    citations: Vec<String>,
    /// The investigation as the report's trace, kept only where the verdicts differ
    /// (the rest is dropped at once: a run holds no investigation it will not show).
    trace: Option<serde_json::Value>,
    error: Option<String>,
    /// The rules the decision fired and its escalation reason, for the class.
    rules: Vec<policy_engine::FiredRule>,
    escalation: Option<String>,
    /// What the agent read: the facts, the request kind, the order and where it came from.
    read: (
        Option<Facts>,
        Option<RequestKind>,
        Option<String>,
        Option<domain::resolve::OrderSource>,
    ),
}

async fn replay_one(
    model: &dyn Model,
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    ticket: &HistoricalTicket,
) -> Replayed {
    match replay::replay_ticket(model, policies, index, ticket).await {
        Ok(result) => {
            let decision = result.decision.as_ref();
            Replayed {
                read: (
                    result.investigation.facts.clone(),
                    result.investigation.proposal.as_ref().map(|p| p.request),
                    result.investigation.order_id.clone(),
                    result.investigation.order_source,
                ),
                versions: decision
                    .map(|d| d.policy_versions.clone())
                    .unwrap_or_default(),
                citations: decision
                    .map(|d| d.rules.iter().map(|r| r.citation.clone()).collect())
                    .unwrap_or_default(),
                rules: decision.map(|d| d.rules.clone()).unwrap_or_default(),
                escalation: decision
                    .and_then(|d| d.escalation.as_ref())
                    .map(|e| e.reason.clone()),
                trace: (!result.agent.agrees_exactly(&ticket.human.verdict()))
                    .then(|| serde_json::to_value(&result.investigation).ok())
                    .flatten(),
                agent: result.agent,
                error: None,
            }
        }
        Err(e) => failed(e.to_string()),
    }
}

/// A replay that stopped with `error`: the agent escalates, as live hands over.
fn failed(error: String) -> Replayed {
    Replayed {
        agent: CaseVerdict {
            outcome: CaseOutcome::Escalate,
            reason: policy_engine::ReasonCode::Other,
            refunds: vec![],
        },
        versions: vec![],
        citations: vec![],
        trace: None,
        error: Some(error),
        rules: vec![],
        escalation: None,
        read: (None, None, None, None),
    }
}

/// Every ticket replayed, each result at its ticket's place, on every core the machine
/// has (a replay is a batch job, and tickets are independent: each has its
/// own world snapshot, nothing is written). Each worker thread takes the next ticket
/// not taken yet, on a runtime of its own, and sends its results a few at a time
/// ([`SEND_EVERY`], [`SEND_AFTER`]); `progress` hears of each result as it comes.
/// It holds the calling thread until done.
fn replay_all(
    model: &dyn Model,
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    tickets: &[HistoricalTicket],
    progress: &mut impl FnMut(usize, usize),
) -> Vec<Replayed> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let workers = cores.min(tickets.len()).max(1);
    let next = AtomicUsize::new(0);
    let (sent, results) = std::sync::mpsc::channel();
    let mut slots: Vec<Option<Replayed>> = tickets.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (sent, next) = (sent.clone(), &next);
            let share = Share {
                model,
                policies,
                index,
                tickets,
                next,
            };
            scope.spawn(move || share.replay(sent));
        }
        drop(sent);
        for (done, (at, replayed)) in results.iter().flatten().enumerate() {
            slots[at] = Some(replayed);
            progress(done + 1, tickets.len());
        }
    });
    slots
        .into_iter()
        .map(|slot| slot.unwrap_or_else(|| failed("the replay's worker stopped".into())))
        .collect()
}

/// A worker sends its results once it has this many, or once [`SEND_AFTER`] has passed
/// since it last sent: waking the collecting thread for every ticket was a twentieth of
/// a replay's time, and a slow model's replay still reports as it goes.
const SEND_EVERY: usize = 32;
const SEND_AFTER: std::time::Duration = std::time::Duration::from_millis(100);

/// Results with their tickets' places, as a worker sends them.
type Batch = Vec<(usize, Replayed)>;

/// What one worker thread of [`replay_all`] works through.
struct Share<'a> {
    model: &'a dyn Model,
    policies: &'a PolicySet,
    index: &'a Arc<PolicyIndex>,
    tickets: &'a [HistoricalTicket],
    /// The next ticket nobody has taken.
    next: &'a AtomicUsize,
}

impl Share<'_> {
    /// Takes ticket after ticket until none is left, sending the results with their
    /// places.
    fn replay(self, sent: Sender<Batch>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let runtime = match runtime {
            Ok(runtime) => runtime,
            Err(e) => {
                let why = format!("no runtime for the replay: {e}");
                let failed: Batch = std::iter::from_fn(|| self.take())
                    .map(|at| (at, failed(why.clone())))
                    .collect();
                let _ = sent.send(failed);
                return;
            }
        };
        runtime.block_on(async {
            let (mut batch, mut sent_at) = (Batch::new(), Instant::now());
            while let Some(at) = self.take() {
                let ticket = &self.tickets[at];
                batch.push((
                    at,
                    replay_one(self.model, self.policies, self.index, ticket).await,
                ));
                if batch.len() >= SEND_EVERY || sent_at.elapsed() >= SEND_AFTER {
                    if sent.send(std::mem::take(&mut batch)).is_err() {
                        return;
                    }
                    sent_at = Instant::now();
                }
            }
            let _ = sent.send(batch);
        });
    }

    fn take(&self) -> Option<usize> {
        let at = self.next.fetch_add(1, Ordering::Relaxed);
        (at < self.tickets.len()).then_some(at)
    }
}

/// Replays every ticket (on every core: [`replay_all`]) and tallies the report.
/// `progress(done, total)` is called as the replays go.
///
/// Long because it is one pass that feeds a dozen tallies (confusion, reasons, versions,
/// causes, features, money either way) from each ticket's replay; the replay itself is
/// `replay_one`.
pub async fn run(
    model: &dyn Model,
    policies: &PolicySet,
    index: &Arc<PolicyIndex>,
    tickets: &[HistoricalTicket],
    bad_lines: Vec<LineError>,
    mut progress: impl FnMut(usize, usize),
) -> ShadowReport {
    let started = Instant::now();
    let mut confusion: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut by_reason: BTreeMap<String, Agreement> = BTreeMap::new();
    let mut by_version: BTreeMap<String, Agreement> = BTreeMap::new();
    let mut by_run_versions: BTreeMap<String, Agreement> = BTreeMap::new();
    let run_versions = desk::agent::versions(model).label();
    let (mut agent_only, mut human_only) = (BTreeMap::new(), BTreeMap::new());
    let (mut agree_count, mut exact_count) = (0usize, 0usize);
    let mut causes: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_feature: BTreeMap<String, Breakdown> = BTreeMap::new();
    let mut rows = Vec::with_capacity(tickets.len());
    let replayed = replay_all(model, policies, index, tickets, &mut progress);
    for (ticket, replayed) in tickets.iter().zip(replayed) {
        let human = ticket.human.verdict();
        let Replayed {
            agent,
            versions,
            citations,
            trace,
            error,
            rules,
            escalation,
            read,
        } = replayed;
        let agree = agent.outcome == human.outcome;
        let exact = agent.agrees_exactly(&human);
        let (facts, request_read, order_id, order_source) = read;
        let why = (!exact).then(|| cause(policies, &human, &agent, facts.as_ref(), request_read));
        if let Some(why) = why {
            *causes.entry(why.as_str().to_string()).or_default() += 1;
        }
        let inference = ticket.human.extra.get("inference");
        let class = why.map(|cause| {
            classify(
                policies,
                &Disagreement {
                    human: &human,
                    agent: &agent,
                    cause,
                    facts: facts.as_ref(),
                    request_read,
                    rules: &rules,
                    policy_escalation: escalation.as_deref(),
                    error: error.as_deref(),
                    inference,
                },
            )
        });
        if let Some(features) = ticket.extra.get("features").and_then(|f| f.as_object()) {
            for (name, value) in features {
                let value = value
                    .as_str()
                    .map_or_else(|| value.to_string(), String::from);
                by_feature
                    .entry(format!("{name}={value}"))
                    .or_default()
                    .add(agree, exact);
            }
        }
        agree_count += usize::from(agree);
        exact_count += usize::from(exact);
        *confusion
            .entry(human.outcome.as_str().into())
            .or_default()
            .entry(agent.outcome.as_str().into())
            .or_default() += 1;
        by_reason
            .entry(desk::world::serde_plain(&human.reason))
            .or_default()
            .add(agree);
        for v in &versions {
            by_version.entry(v.clone()).or_default().add(agree);
        }
        by_run_versions
            .entry(run_versions.clone())
            .or_default()
            .add(agree);
        add_money(&mut agent_only, &agent.totals(), &human.totals());
        add_money(&mut human_only, &human.totals(), &agent.totals());
        rows.push(ShadowTicket {
            id: ticket.id.clone(),
            agree,
            exact,
            cause: why,
            order_id,
            order_source,
            human,
            agent,
            policy_versions: versions,
            citations,
            human_inference: inference.cloned(),
            trace,
            error,
            class,
            language: classes::language(ticket),
            decided_by: classes::decided_by(ticket),
        });
    }
    let (classes, by_language, by_person) = classes::tally(&rows);
    let total = tickets.len();
    let rate = |n: usize| {
        if total == 0 {
            0.0
        } else {
            n as f64 / total as f64
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let money =
        |m: BTreeMap<Currency, Decimal>| m.into_iter().map(|(c, d)| (c, d.to_string())).collect();
    ShadowReport {
        total,
        outcome_agreement: rate(agree_count),
        exact_agreement: rate(exact_count),
        confusion,
        by_reason,
        by_policy_version: by_version,
        by_run_versions,
        causes,
        disagreements: rows.iter().filter(|t| !t.exact).count(),
        classes,
        by_language,
        by_person,
        by_feature,
        extra_fields: replay::extra_field_counts(tickets),
        agent_only_money: money(agent_only),
        human_only_money: money(human_only),
        tickets: rows,
        bad_lines,
        seconds,
        tickets_per_second: if seconds > 0.0 {
            total as f64 / seconds
        } else {
            0.0
        },
    }
}
