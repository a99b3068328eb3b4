//! The decision: which policy versions apply, which rules fire, what may be refunded and
//! who must approve it.
//!
//! [`decide`] is the live decision: the published versions in force on the ticket's
//! (UTC) creation date. [`decide_with`] is a what-if run with some versions pinned (a
//! draft included). Both are pure: same facts and versions, same `Decision`, same hash
//! (docs/spec/invariants.md #9). Every number comes from the rules files; every rule that fires
//! cites `doc@version#section`.
//!
//! Order of the checks: ownership (RP-007) before anything that could reveal an order,
//! then which order (RP-002 §4), then disputes (RP-006), then the remedy (RP-001 for
//! charges, RP-003 for holds, RP-002 for cancellations) and finally approval (RP-004).
//!
//! Long because the decision is one pure function over one set of facts: its parts (charges,
//! windows, approvals) read each other's results in order.

use std::collections::BTreeMap;
use std::fmt;

use rust_decimal::Decimal;
use time::{Date, Duration, OffsetDateTime, UtcOffset};

use crate::decision::{
    Decision, Escalation, FiredRule, Outcome, ReasonCode, RefundLine, Role, Team,
};
use crate::error::PolicyError;
use crate::facts::{ChargeFacts, Facts, OrderFacts, Ownership, RequestKind};
use crate::money::Money;
use crate::policy_set::{Citations, PolicySet};
use crate::rules::{clause, ApprovalRules, ChargeRules, PolicyRules};

/// The documents whose rules the engine applies, by policy id.
const CHARGES_POLICY: &str = "RP-001";
const CANCELLATION_POLICY: &str = "RP-002";
const HOLDS_POLICY: &str = "RP-003";
const APPROVAL_POLICY: &str = "RP-004";
const DISPUTES_POLICY: &str = "RP-006";
const OWNERSHIP_POLICY: &str = "RP-007";

/// The live decision: published versions in force on `facts.reported_at` (UTC date).
/// A draft is never used here (docs/spec/policies.md).
pub fn decide(facts: &Facts, policies: &PolicySet) -> Decision {
    let selection = Selection {
        set: policies,
        on: utc_date(facts.reported_at),
        pins: BTreeMap::new(),
    };
    Engine::new(facts, selection).run()
}

/// A what-if decision: each `"RP-001@3"` in `pinned` replaces the version in force for
/// that document (drafts allowed). An unknown or malformed reference, or two different
/// pins for one document, is an error.
pub fn decide_with(
    facts: &Facts,
    policies: &PolicySet,
    pinned: &[String],
) -> Result<Decision, PolicyError> {
    let mut pins = BTreeMap::new();
    for version_ref in pinned {
        let document = policies.resolve_ref(version_ref)?;
        let index = policies
            .index(&document.meta.id, document.meta.version)
            .ok_or_else(|| PolicyError::UnknownVersion(version_ref.clone()))?;
        if let Some(previous) = pins.insert(document.meta.id.clone(), index) {
            if previous != index {
                return Err(PolicyError::PolicySet(format!(
                    "{} is pinned to two versions",
                    document.meta.id
                )));
            }
        }
    }
    let selection = Selection {
        set: policies,
        on: utc_date(facts.reported_at),
        pins,
    };
    Ok(Engine::new(facts, selection).run())
}

fn utc_date(at: OffsetDateTime) -> Date {
    at.to_offset(UtcOffset::UTC).date()
}

/// Which version of each document this decision uses.
struct Selection<'a> {
    set: &'a PolicySet,
    on: Date,
    pins: BTreeMap<String, usize>,
}

/// A policy version together with its parameters.
#[derive(Clone, Copy)]
struct Bound<'a> {
    rules: &'a PolicyRules,
    citations: &'a Citations,
}

impl<'a> Selection<'a> {
    fn get(&self, doc_id: &str) -> Result<Bound<'a>, Stop> {
        let index = match self.pins.get(doc_id) {
            Some(index) => *index,
            None => self.set.in_force_index(doc_id, self.on).ok_or_else(|| {
                Stop::Unavailable(format!("no version of {doc_id} is in force on {}", self.on))
            })?,
        };
        let (rules, citations) = self.set.at(index);
        let rules = rules.ok_or_else(|| {
            Stop::Unavailable(format!("{} came without a rules file", citations.version()))
        })?;
        Ok(Bound { rules, citations })
    }
}

impl<'a> Bound<'a> {
    /// `RP-001@2`.
    fn version(&self) -> &'a str {
        self.citations.version()
    }

    /// A rules family the engine needs from this version, or why it cannot decide.
    fn family<T>(&self, family: Option<&'a T>, name: &str) -> Result<&'a T, Stop> {
        family.ok_or_else(|| {
            Stop::Unavailable(format!("{} defines no [{name}] rules", self.version()))
        })
    }
}

/// Why a decision could not apply the policy; it becomes an escalation, never a panic.
enum Stop {
    Unavailable(String),
    Inconsistent(String),
}

impl From<PolicyError> for Stop {
    fn from(e: PolicyError) -> Self {
        Stop::Inconsistent(e.to_string())
    }
}

/// The outcome fields of a decision, before the trace and hash are attached.
struct Verdict {
    outcome: Outcome,
    reason_code: ReasonCode,
    refunds: Vec<RefundLine>,
    approver_role: Option<Role>,
    escalation: Option<Escalation>,
    missing: Option<String>,
    hold_release: Option<String>,
}

impl Verdict {
    fn new(outcome: Outcome, reason_code: ReasonCode) -> Self {
        Verdict {
            outcome,
            reason_code,
            refunds: Vec::new(),
            approver_role: None,
            escalation: None,
            missing: None,
            hold_release: None,
        }
    }

    fn deny(reason_code: ReasonCode) -> Self {
        Verdict::new(Outcome::Deny, reason_code)
    }

    fn request_info(missing: &str) -> Self {
        Verdict {
            missing: Some(missing.to_string()),
            ..Verdict::new(Outcome::RequestInfo, ReasonCode::InsufficientInfo)
        }
    }

    fn escalate(team: Team, reason_code: ReasonCode, reason: String) -> Self {
        Verdict {
            escalation: Some(Escalation { team, reason }),
            ..Verdict::new(Outcome::Escalate, reason_code)
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RemedyKind {
    Duplicate,
    RepeatPurchase,
    Overcharge,
    CoolingOff,
}

/// A charge some rule says to refund, before refunds already made are subtracted.
struct Finding<'a> {
    order: &'a OrderFacts,
    charge: &'a ChargeFacts,
    kind: RemedyKind,
    /// What the rule refunds before subtracting what was already refunded.
    gross: Money,
}

/// An order the decision looks at, with the earlier order it repeats (RP-001 v2 §1).
struct Involved<'a> {
    order: &'a OrderFacts,
    repeat_of: Option<&'a OrderFacts>,
}

struct Engine<'a> {
    facts: &'a Facts,
    policies: Selection<'a>,
    rules: Vec<FiredRule>,
    /// The versions rules fired from, once each (sorted when the decision is built).
    versions: Vec<&'a str>,
    facts_used: Vec<String>,
}

impl<'a> Engine<'a> {
    fn new(facts: &'a Facts, policies: Selection<'a>) -> Self {
        Engine {
            facts,
            policies,
            // Sized for a typical decision, so neither grows: a handful of rules from
            // two or three versions, and about eight facts.
            rules: Vec::with_capacity(8),
            versions: Vec::with_capacity(4),
            facts_used: Vec::with_capacity(12),
        }
    }

    fn run(mut self) -> Decision {
        let verdict = match self.evaluate() {
            Ok(verdict) => verdict,
            // Facts or policies we cannot apply go to a person, with the reason.
            Err(Stop::Unavailable(why)) => Verdict::escalate(
                Team::Supervisor,
                ReasonCode::Other,
                format!("policy unavailable: {why}"),
            ),
            Err(Stop::Inconsistent(why)) => Verdict::escalate(
                Team::Supervisor,
                ReasonCode::Other,
                format!("inconsistent billing facts: {why}"),
            ),
        };
        self.versions.sort_unstable();
        let mut decision = Decision {
            outcome: verdict.outcome,
            reason_code: verdict.reason_code,
            refunds: verdict.refunds,
            approver_role: verdict.approver_role,
            escalation: verdict.escalation,
            missing: verdict.missing,
            rules: self.rules,
            policy_versions: self.versions.iter().map(|v| v.to_string()).collect(),
            facts_used: self.facts_used,
            hold_release: verdict.hold_release,
            hash: String::new(),
        };
        decision.hash = decision.compute_hash();
        decision
    }

    /// Records a rule that fired, citing the clause its rules file maps `key` to.
    fn fire(&mut self, policy: Bound<'a>, key: &str, summary: String) {
        self.rules.push(FiredRule {
            citation: policy.citations.clause(key).to_string(),
            summary,
        });
        let version = policy.version();
        if !self.versions.contains(&version) {
            self.versions.push(version);
        }
    }

    fn note(&mut self, line: String) {
        if !self.facts_used.contains(&line) {
            self.facts_used.push(line);
        }
    }

    /// The facts lines of an order, its charges and their refunds. These lines (and the
    /// three every decision starts with) are appended piece by piece rather than
    /// formatted: they are most of a decision's text, and `format!` spent a noticeable
    /// share of a decision on them. The comment above each line shows its shape.
    fn note_order(&mut self, order: &OrderFacts) {
        // order {id}: {product} {amount} created {created_at}
        let mut line = String::with_capacity(LINE_CAPACITY);
        line.push_str("order ");
        line.push_str(&order.id);
        line.push_str(": ");
        line.push_str(order.product.as_str());
        line.push(' ');
        order.amount.push_to(&mut line);
        line.push_str(" created ");
        Timestamp(order.created_at).push_to(&mut line);
        self.note(line);
        for charge in sorted_charges(order) {
            // charge {id} on {order}: {amount} captured|uncaptured, {status},
            // created {created_at}, payment method {method}, amount_refunded {amount}
            // [, disputed]
            let mut line = String::with_capacity(LINE_CAPACITY);
            line.push_str("charge ");
            line.push_str(&charge.id);
            line.push_str(" on ");
            line.push_str(&order.id);
            line.push_str(": ");
            charge.amount.push_to(&mut line);
            line.push_str(if charge.captured {
                " captured, "
            } else {
                " uncaptured, "
            });
            line.push_str(match charge.status {
                crate::facts::ChargeStatus::Succeeded => "succeeded",
                crate::facts::ChargeStatus::Pending => "pending",
                crate::facts::ChargeStatus::Failed => "failed",
            });
            line.push_str(", created ");
            Timestamp(charge.created_at).push_to(&mut line);
            line.push_str(", payment method ");
            line.push_str(&charge.payment_method);
            line.push_str(", amount_refunded ");
            charge.amount_refunded.push_to(&mut line);
            if charge.disputed {
                line.push_str(", disputed");
            }
            self.note(line);
            for refund in &charge.refunds {
                // refund {id} on {charge}: {amount} {status}
                let mut line = String::with_capacity(LINE_CAPACITY);
                line.push_str("refund ");
                line.push_str(&refund.id);
                line.push_str(" on ");
                line.push_str(&charge.id);
                line.push_str(": ");
                refund.amount.push_to(&mut line);
                line.push(' ');
                line.push_str(refund.status.as_str());
                self.note(line);
            }
        }
    }

    fn evaluate(&mut self) -> Result<Verdict, Stop> {
        let facts = self.facts;
        // reported at {reported_at}
        let mut line = String::with_capacity(LINE_CAPACITY);
        line.push_str("reported at ");
        Timestamp(facts.reported_at).push_to(&mut line);
        self.note(line);
        self.note(
            [
                "customer ",
                &facts.customer.id,
                " in region ",
                facts.customer.region.code(),
            ]
            .concat(),
        );
        self.note(["request: ", facts.request.as_str()].concat());

        // RP-007: nothing about another customer's order may reach the decision, so this
        // check comes before any order is looked at.
        if facts.order_ownership == Ownership::OtherCustomer {
            let policy = self.policies.get(OWNERSHIP_POLICY)?;
            let team = policy
                .family(policy.rules.ownership.as_ref(), "ownership")?
                .escalate_to;
            self.note("the order named in the request belongs to another customer".into());
            self.fire(
                policy,
                clause::OTHER_CUSTOMER,
                "the order belongs to a different customer: confirm or deny nothing about it \
                 and escalate to the security team"
                    .into(),
            );
            return Ok(Verdict::escalate(
                team,
                ReasonCode::OwnershipMismatch,
                "the order named in the request belongs to another customer".into(),
            ));
        }

        let target = match self.resolve_order()? {
            Ok(order) => order,
            Err(ask) => return Ok(ask),
        };
        match facts.request {
            // One thing bought twice is weighed as RP-001 says first, whatever the words
            // called it ("cancel the second one"): §1, then §4.1.
            RequestKind::Cancellation if facts.repeat_of.is_none() => self.cancellation(target),
            _ => self.charges(target),
        }
    }

    /// RP-002 §4: the request must name or clearly point at one order.
    fn resolve_order(&mut self) -> Result<Result<&'a OrderFacts, Verdict>, Stop> {
        let facts = self.facts;
        if let Some(id) = &facts.order_id {
            if let Some(order) = facts.orders.iter().find(|o| &o.id == id) {
                return Ok(Ok(order));
            }
            let policy = self.policies.get(CANCELLATION_POLICY)?;
            self.note(format!("order {id} is not among the customer's orders"));
            self.fire(
                policy,
                clause::AMBIGUOUS_ORDER,
                format!("order {id} is not one of the customer's orders: ask which order it is"),
            );
            return Ok(Err(Verdict::request_info("order_id")));
        }
        let candidates = self.candidates()?;
        if let [only] = candidates.as_slice() {
            self.note(format!(
                "order_id not given; the one order that could match is {}",
                only.id
            ));
            return Ok(Ok(only));
        }
        let policy = self.policies.get(CANCELLATION_POLICY)?;
        if candidates.is_empty() {
            self.note("order_id not given; the customer has no orders".into());
            self.fire(
                policy,
                clause::AMBIGUOUS_ORDER,
                "the request points at no order: ask for the order".into(),
            );
        } else {
            let ids: Vec<&str> = candidates.iter().map(|o| o.id.as_str()).collect();
            self.note(format!(
                "order_id not given; {} orders could match: {}",
                ids.len(),
                ids.join(", ")
            ));
            self.fire(
                policy,
                clause::AMBIGUOUS_ORDER,
                "several orders could match and the customer did not say which: ask for the \
                 order before anything else"
                    .into(),
            );
        }
        Ok(Err(Verdict::request_info("order_id")))
    }

    /// The orders a request without an order id could be about. For charge complaints
    /// these are the orders whose records show such a problem, for holds the orders with
    /// a hold; when none does, every order could be meant.
    fn candidates(&self) -> Result<Vec<&'a OrderFacts>, Stop> {
        let mut orders: Vec<&'a OrderFacts> = self.facts.orders.iter().collect();
        orders.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        if orders.len() <= 1 {
            return Ok(orders);
        }
        let matching: Vec<&'a OrderFacts> = match self.facts.request {
            RequestKind::AuthorizationHold => orders
                .iter()
                .copied()
                .filter(|o| o.charges.iter().any(ChargeFacts::is_hold))
                .collect(),
            RequestKind::DuplicateCharge | RequestKind::Overcharge => {
                let policy = self.policies.get(CHARGES_POLICY)?;
                let rules = policy.family(policy.rules.charges.as_ref(), "charges")?;
                orders
                    .iter()
                    .copied()
                    .filter(|o| self.shows_charge_problem(o, rules))
                    .collect()
            }
            RequestKind::Cancellation | RequestKind::Unclear => Vec::new(),
        };
        Ok(if matching.is_empty() {
            orders
        } else {
            matching
        })
    }

    /// True when an order's records show what RP-001 refunds: more captured than the
    /// order amount, or being the later order of an accidental repeat purchase.
    fn shows_charge_problem(&self, order: &OrderFacts, rules: &ChargeRules) -> bool {
        let paid: Vec<&ChargeFacts> = order.charges.iter().filter(|c| c.took_money()).collect();
        if paid
            .iter()
            .any(|c| c.amount.currency() != order.amount.currency())
        {
            return true; // inconsistent records: let a person see them
        }
        let total: Decimal = paid.iter().map(|c| c.amount.amount()).sum();
        if total > order.amount.amount() {
            return true;
        }
        match rules.repeat_purchase_window() {
            Some(window) if order.is_paid() => self.facts.orders.iter().any(|earlier| {
                earlier.id != order.id
                    && same_purchase(earlier, order)
                    && earlier.is_paid()
                    && (earlier.created_at, &earlier.id) < (order.created_at, &order.id)
                    && order.created_at - earlier.created_at < window
            }),
            _ => false,
        }
    }

    /// RP-006: a disputed charge is never refunded; the ticket goes to the disputes team.
    fn dispute_check(
        &mut self,
        orders: &[&OrderFacts],
        charges_policy: Option<Bound<'a>>,
    ) -> Result<Option<Verdict>, Stop> {
        // The common case, without sorting anything.
        if !orders.iter().any(|o| o.charges.iter().any(|c| c.disputed)) {
            return Ok(None);
        }
        let disputed: Vec<&str> = orders
            .iter()
            .flat_map(|o| sorted_charges(o))
            .filter(|c| c.disputed)
            .map(|c| c.id.as_str())
            .collect();
        if disputed.is_empty() {
            return Ok(None);
        }
        let ids = disputed.join(", ");
        let policy = self.policies.get(DISPUTES_POLICY)?;
        let team = policy
            .family(policy.rules.disputes.as_ref(), "disputes")?
            .escalate_to;
        if let Some(charges_policy) = charges_policy {
            self.fire(
                charges_policy,
                clause::DISPUTE,
                format!("{ids} has an open dispute: handled under the disputes policy, never refunded here"),
            );
        }
        self.fire(
            policy,
            clause::DISPUTE_ESCALATION,
            format!(
                "{ids} is disputed: a refund could pay the customer twice; escalate to the \
                 disputes team and let the bank's dispute process decide"
            ),
        );
        Ok(Some(Verdict::escalate(
            team,
            ReasonCode::DisputeOpen,
            format!("open dispute on {ids}"),
        )))
    }

    /// A paid order for which the provider shows no charge at all — not a failed one,
    /// not a hold — has no payment records to decide on: the charge of RP-001 §1 ("a
    /// payment attempt recorded by the payment provider") is missing, not absent. Most
    /// often the records are not linked (a charge naming its order under another key, a
    /// customer not linked to the provider), and a denial ("two purchases", "nothing is
    /// duplicated", "nothing was captured") would rest on that gap, so the request goes
    /// to the payments team with the reason, never to an automatic denial (issue 36).
    /// A free order (amount zero) expects no charge and is decided as before.
    fn missing_records(&mut self, target: &'a OrderFacts) -> Result<Option<Verdict>, Stop> {
        if !target.charges.is_empty() || target.amount.is_zero() {
            return Ok(None);
        }
        let policy = self.policies.get(CHARGES_POLICY)?;
        self.note_order(target);
        self.note(format!(
            "the payment provider shows no charge for order {}",
            target.id
        ));
        self.fire(
            policy,
            clause::DEFINITIONS,
            format!(
                "order {} ({}) has no charge recorded by the payment provider: its payment \
                 records are missing, so nothing can be decided on them; a person checks them",
                target.id, target.amount
            ),
        );
        Ok(Some(Verdict::escalate(
            Team::Payments,
            ReasonCode::Other,
            format!(
                "payment records missing: the payment provider shows no charge for order {}",
                target.id
            ),
        )))
    }

    /// Duplicate charges, overcharges, repeat purchases and holds (RP-001, RP-003).
    fn charges(&mut self, target: &'a OrderFacts) -> Result<Verdict, Stop> {
        if let Some(verdict) = self.missing_records(target)? {
            return Ok(verdict);
        }
        let policy = self.policies.get(CHARGES_POLICY)?;
        let rules = policy.family(policy.rules.charges.as_ref(), "charges")?;
        let involved = self.involved_orders(target, rules);
        for item in &involved {
            self.note_order(item.order);
        }
        let orders: Vec<&OrderFacts> = involved.iter().map(|i| i.order).collect();
        if let Some(verdict) = self.dispute_check(&orders, Some(policy))? {
            return Ok(verdict);
        }

        let mut findings: Vec<Finding<'a>> = Vec::new();
        let mut unexplained: Vec<&str> = Vec::new();
        for item in &involved {
            let order = item.order;
            let mut paid: Vec<&'a ChargeFacts> = sorted_charges(order);
            paid.retain(|c| c.took_money());
            if let Some(c) = paid
                .iter()
                .find(|c| c.amount.currency() != order.amount.currency())
            {
                return Err(Stop::Inconsistent(format!(
                    "charge {} is in {} but order {} is in {}",
                    c.id,
                    c.amount.currency(),
                    order.id,
                    order.amount.currency()
                )));
            }
            if let Some(first) = item.repeat_of {
                let minutes = rules.repeat_purchase_window_minutes.unwrap_or_default();
                self.fire(
                    policy,
                    clause::REPEAT_PURCHASE,
                    format!(
                        "order {} repeats order {} (same product, amount and currency, created \
                         less than {minutes} minutes later, both paid): an accidental repeat \
                         purchase",
                        order.id, first.id
                    ),
                );
                findings.extend(paid.iter().map(|charge| Finding {
                    order,
                    charge,
                    kind: RemedyKind::RepeatPurchase,
                    gross: charge.amount,
                }));
                continue;
            }
            let total: Decimal = paid.iter().map(|c| c.amount.amount()).sum();
            if total <= order.amount.amount() {
                continue;
            }
            // RP-001 §1: the earliest of identical charges is the payment, every later
            // one a duplicate.
            let duplicates: Vec<&'a ChargeFacts> = paid
                .iter()
                .enumerate()
                .filter(|(i, c)| paid[..*i].iter().any(|e| e.amount == c.amount))
                .map(|(_, c)| *c)
                .collect();
            if !duplicates.is_empty() {
                findings.extend(duplicates.into_iter().map(|charge| Finding {
                    order,
                    charge,
                    kind: RemedyKind::Duplicate,
                    gross: charge.amount,
                }));
            } else if let [only] = paid.as_slice() {
                findings.push(Finding {
                    order,
                    charge: only,
                    kind: RemedyKind::Overcharge,
                    gross: only.amount.saturating_sub(&order.amount)?,
                });
            } else {
                unexplained.push(&order.id);
            }
        }

        if findings.is_empty() {
            if !unexplained.is_empty() {
                let ids = unexplained.join(", ");
                self.fire(
                    policy,
                    clause::DEFINITIONS,
                    format!(
                        "more was captured on {ids} than the order amount, but the charges are \
                         neither identical duplicates nor a single overcharge"
                    ),
                );
                return Ok(Verdict::escalate(
                    Team::Supervisor,
                    ReasonCode::Other,
                    format!("captured total on {ids} exceeds the order amount; no rule covers it"),
                ));
            }
            let holds: Vec<&ChargeFacts> = sorted_charges(target)
                .into_iter()
                .filter(|c| c.is_hold())
                .collect();
            if !holds.is_empty() {
                return self.hold_verdict(&holds, Some(policy));
            }
            return self.no_finding(policy, rules, target);
        }

        let mut lines: Vec<(RefundLine, RemedyKind)> = Vec::with_capacity(findings.len());
        for finding in &findings {
            let charge = finding.charge;
            let already = charge.already_refunded()?;
            let refundable = charge.refundable()?;
            let wanted = match finding.kind {
                RemedyKind::Overcharge => finding.gross.saturating_sub(&already)?,
                _ => refundable,
            };
            // RP-001 §2.4: never more than is left on the charge.
            let amount = if wanted.amount() > refundable.amount() {
                refundable
            } else {
                wanted
            };
            let summary = match finding.kind {
                RemedyKind::Duplicate => format!(
                    "{} on order {} repeats an earlier identical charge: refund it in full, less \
                     anything already refunded or pending",
                    charge.id, finding.order.id
                ),
                RemedyKind::RepeatPurchase => format!(
                    "{} paid the repeated order {}: refund it in full as a duplicate charge, \
                     less anything already refunded or pending",
                    charge.id, finding.order.id
                ),
                RemedyKind::Overcharge | RemedyKind::CoolingOff => format!(
                    "{} is {} above the amount of order {}: refund the difference, less \
                     anything already refunded or pending",
                    charge.id, finding.gross, finding.order.id
                ),
            };
            let key = match finding.kind {
                RemedyKind::Overcharge => clause::OVERCHARGE,
                _ => clause::DUPLICATE,
            };
            self.fire(policy, key, summary);
            if !already.is_zero() {
                self.fire(
                    policy,
                    clause::CAP,
                    format!(
                        "{already} is already refunded or pending on {}: {amount} is left to refund",
                        charge.id
                    ),
                );
            }
            if !amount.is_zero() {
                lines.push((
                    RefundLine {
                        order_id: finding.order.id.clone(),
                        charge_id: charge.id.clone(),
                        amount,
                        payment_method: charge.payment_method.clone(),
                    },
                    finding.kind,
                ));
            }
        }
        if lines.is_empty() {
            return Ok(Verdict::deny(ReasonCode::AlreadyRefunded));
        }
        self.fire(
            policy,
            clause::CURRENCY,
            "each refund goes in the charge's currency to its original payment method".into(),
        );

        // RP-001 §3: reported less than N × 24h after the charge to refund was created.
        let reported_at = self.facts.reported_at;
        let late: Vec<&ChargeFacts> = findings
            .iter()
            .filter(|f| lines.iter().any(|(l, _)| l.charge_id == f.charge.id))
            .map(|f| f.charge)
            .filter(|c| reported_at >= c.created_at + rules.reporting_window())
            .collect();
        let approval_policy = self.policies.get(APPROVAL_POLICY)?;
        let approval =
            approval_policy.family(approval_policy.rules.approval.as_ref(), "approval")?;
        if !late.is_empty() {
            let days = rules.reporting_window_days;
            for charge in &late {
                self.fire(
                    policy,
                    clause::WINDOW,
                    format!(
                        "{} was created {} and reported {} later, not within {days} days: \
                         escalate for supervisor review",
                        charge.id,
                        Timestamp(charge.created_at),
                        Elapsed(reported_at - charge.created_at)
                    ),
                );
            }
            self.fire(
                approval_policy,
                clause::OUTSIDE_WINDOW_APPROVAL,
                "a refund reported outside the policy window needs a supervisor, whatever its \
                 amount"
                    .into(),
            );
            let ids: Vec<&str> = late.iter().map(|c| c.id.as_str()).collect();
            return Ok(Verdict {
                refunds: lines.into_iter().map(|(l, _)| l).collect(),
                approver_role: Some(approval.outside_window),
                ..Verdict::escalate(
                    rules.outside_window_escalate_to,
                    ReasonCode::OutsideWindow,
                    format!("{} reported outside the {days}-day window", ids.join(", ")),
                )
            });
        }

        let approver = self.approver(approval_policy, approval, Some((policy, rules)), &lines);
        let any = |kind: RemedyKind| lines.iter().any(|(_, k)| *k == kind);
        let reason_code = if any(RemedyKind::Duplicate) {
            ReasonCode::DuplicateCharge
        } else if any(RemedyKind::RepeatPurchase) {
            ReasonCode::RepeatPurchase
        } else {
            ReasonCode::Overcharge
        };
        Ok(Verdict {
            refunds: lines.into_iter().map(|(l, _)| l).collect(),
            approver_role: approver,
            ..Verdict::new(Outcome::Allow, reason_code)
        })
    }

    /// The target plus, under a version with the repeat-purchase rule, every paid order
    /// for the same product and amount created less than the window apart from it.
    fn involved_orders(&self, target: &'a OrderFacts, rules: &ChargeRules) -> Vec<Involved<'a>> {
        let alone = || {
            vec![Involved {
                order: target,
                repeat_of: None,
            }]
        };
        let Some(window) = rules.repeat_purchase_window() else {
            return alone();
        };
        if !target.is_paid() {
            return alone();
        }
        let mut group: Vec<&'a OrderFacts> = vec![target];
        group.extend(self.facts.orders.iter().filter(|o| {
            o.id != target.id
                && same_purchase(o, target)
                && o.is_paid()
                && (o.created_at - target.created_at).abs() < window
        }));
        group.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        (0..group.len())
            .map(|i| Involved {
                order: group[i],
                // The nearest earlier order less than the window before it.
                repeat_of: group[..i]
                    .iter()
                    .rev()
                    .find(|e| group[i].created_at - e.created_at < window)
                    .copied(),
            })
            .collect()
    }

    /// The role the whole decision needs: the highest any refund needs (RP-004), except
    /// duplicate refunds a what-if draft approves automatically.
    fn approver(
        &mut self,
        approval_policy: Bound<'a>,
        approval: &ApprovalRules,
        charges: Option<(Bound<'a>, &ChargeRules)>,
        lines: &[(RefundLine, RemedyKind)],
    ) -> Option<Role> {
        let mut needed: Option<Role> = None;
        for (line, kind) in lines {
            let automatic = charges.and_then(|(policy, rules)| {
                let limit = rules.auto_approve_below.get(&line.amount.currency())?;
                let is_duplicate =
                    matches!(kind, RemedyKind::Duplicate | RemedyKind::RepeatPurchase);
                (is_duplicate && line.amount.amount() < limit.amount()).then_some((policy, limit))
            });
            if let Some((policy, limit)) = automatic {
                self.fire(
                    policy,
                    clause::AUTO_APPROVE,
                    format!(
                        "duplicate refund {} on {} is below {limit}: no human approval needed",
                        line.amount, line.charge_id
                    ),
                );
                continue;
            }
            let role = approval.role_for(&line.amount);
            let within = role == approval.up_to_threshold;
            self.fire(
                approval_policy,
                clause::THRESHOLD,
                format!(
                    "refund {} on {} is {} the {} approval threshold: {} approval",
                    line.amount,
                    line.charge_id,
                    if within { "within" } else { "above" },
                    line.amount.currency(),
                    role.as_str()
                ),
            );
            needed = needed.max(Some(role));
        }
        needed
    }

    /// RP-003: a hold is never refunded; the issuer releases it. Overdue → payments team.
    fn hold_verdict(
        &mut self,
        holds: &[&ChargeFacts],
        charges_policy: Option<Bound<'a>>,
    ) -> Result<Verdict, Stop> {
        let policy = self.policies.get(HOLDS_POLICY)?;
        let rules = policy.family(policy.rules.holds.as_ref(), "holds")?;
        let region = self.facts.customer.region;
        let release = rules.release.get(&region).ok_or_else(|| {
            Stop::Unavailable(format!(
                "{} has no hold release for {region}",
                policy.version()
            ))
        })?;
        if let Some(charges_policy) = charges_policy {
            if self.facts.request != RequestKind::AuthorizationHold {
                self.fire(
                    charges_policy,
                    clause::HOLD,
                    "an authorization hold is not a charge: it took no money".into(),
                );
            }
        }
        let ids: Vec<&str> = holds.iter().map(|c| c.id.as_str()).collect();
        let ids = ids.join(", ");
        self.fire(
            policy,
            clause::HOLD_RELEASE,
            format!(
                "{ids} is an authorization hold: never refunded; the card issuer releases it \
                 within {} in {region}",
                release.text
            ),
        );
        let reported_at = self.facts.reported_at;
        let period = Duration::days(i64::from(release.days));
        let overdue: Vec<&&ChargeFacts> = holds
            .iter()
            .filter(|c| reported_at >= c.created_at + period)
            .collect();
        let hold_release = Some(release.text.clone());
        if overdue.is_empty() {
            return Ok(Verdict {
                hold_release,
                ..Verdict::deny(ReasonCode::AuthorizationHold)
            });
        }
        let overdue_ids: Vec<&str> = overdue.iter().map(|c| c.id.as_str()).collect();
        let overdue_ids = overdue_ids.join(", ");
        self.fire(
            policy,
            clause::HOLD_OVERDUE,
            format!(
                "{overdue_ids} is still on record {} after it was placed, beyond {}: escalate \
                 to the payments team",
                Elapsed(reported_at - overdue[0].created_at),
                release.text
            ),
        );
        Ok(Verdict {
            hold_release,
            ..Verdict::escalate(
                rules.overdue_escalate_to,
                ReasonCode::AuthorizationHold,
                format!("hold {overdue_ids} still visible after {}", release.text),
            )
        })
    }

    /// Nothing on the order is refundable under RP-001 and there is no hold.
    /// RP-001 §4.1 for a later order the customer says repeats an earlier one of theirs
    /// (`Facts::repeat_of`) and that is no accidental repeat purchase under the version in
    /// force (none defined, or placed too long after): the same purchase bought twice "may
    /// still qualify under RP-002", so the later order is weighed as a cancellation; two
    /// different purchases get nothing here. `None` when the request names no repeat.
    fn repeat_claim(
        &mut self,
        policy: Bound<'a>,
        target: &'a OrderFacts,
    ) -> Result<Option<Verdict>, Stop> {
        let facts = self.facts;
        let Some(earlier) = facts.repeat_of.as_ref().and_then(|id| {
            facts
                .orders
                .iter()
                .find(|o| &o.id == id && o.id != target.id)
        }) else {
            return Ok(None);
        };
        self.note_order(earlier);
        let repeat = same_purchase(earlier, target)
            && earlier.is_paid()
            && (earlier.created_at, &earlier.id) < (target.created_at, &target.id);
        if !repeat {
            self.fire(
                policy,
                clause::DIFFERENT_ORDERS,
                format!(
                    "orders {} and {} are two different purchases, not one bought twice: no \
                     refund under RP-001",
                    earlier.id, target.id
                ),
            );
            return Ok(Some(Verdict::deny(ReasonCode::NotDuplicate)));
        }
        self.fire(
            policy,
            clause::DIFFERENT_ORDERS,
            format!(
                "order {} repeats order {} but is not an accidental repeat purchase: the later \
                 order may still be cancelled under RP-002",
                target.id, earlier.id
            ),
        );
        // What was asked is a duplicate refund: where RP-002 refunds nothing either, the
        // answer stays that the later order is no duplicate (both rules are in the trace).
        let verdict = self.cancellation(target)?;
        Ok(Some(match (verdict.outcome, verdict.reason_code) {
            (Outcome::Deny, ReasonCode::NotEligible) => Verdict::deny(ReasonCode::NotDuplicate),
            _ => verdict,
        }))
    }

    fn no_finding(
        &mut self,
        policy: Bound<'a>,
        rules: &ChargeRules,
        target: &'a OrderFacts,
    ) -> Result<Verdict, Stop> {
        for failed in sorted_charges(target)
            .into_iter()
            .filter(|c| c.status == crate::facts::ChargeStatus::Failed)
        {
            self.fire(
                policy,
                clause::DEFINITIONS,
                format!("{} failed and took no money", failed.id),
            );
        }
        if let Some(verdict) = self.repeat_claim(policy, target)? {
            return Ok(verdict);
        }
        match self.facts.request {
            RequestKind::DuplicateCharge => {
                let amounts: Vec<Money> = target
                    .charges
                    .iter()
                    .filter(|c| c.took_money())
                    .map(|c| c.amount)
                    .collect();
                let mut others: Vec<&'a OrderFacts> = self
                    .facts
                    .orders
                    .iter()
                    .filter(|o| {
                        o.id != target.id
                            && o.charges
                                .iter()
                                .any(|c| c.took_money() && amounts.contains(&c.amount))
                    })
                    .collect();
                others.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
                if let Some(other) = others.first() {
                    self.note_order(other);
                    let repeat = if rules.repeat_purchase_window_minutes.is_some() {
                        " and not an accidental repeat purchase"
                    } else {
                        ""
                    };
                    self.fire(
                        policy,
                        clause::DIFFERENT_ORDERS,
                        format!(
                            "the charges on orders {} and {} are two purchases{repeat}: no \
                             duplicate-charge refund",
                            target.id, other.id
                        ),
                    );
                } else {
                    self.fire(
                        policy,
                        clause::DEFINITIONS,
                        format!(
                            "order {} has no second captured charge of the same amount: nothing \
                             is duplicated",
                            target.id
                        ),
                    );
                }
                Ok(Verdict::deny(ReasonCode::NotDuplicate))
            }
            RequestKind::Unclear => {
                self.fire(
                    policy,
                    clause::DEFINITIONS,
                    format!(
                        "order {} shows no duplicate charge, overcharge or repeat purchase: ask \
                         what the customer is asking about",
                        target.id
                    ),
                );
                Ok(Verdict::request_info("request"))
            }
            RequestKind::Overcharge
            | RequestKind::AuthorizationHold
            | RequestKind::Cancellation => {
                self.fire(
                    policy,
                    clause::DEFINITIONS,
                    format!(
                        "order {} shows no hold and no charge above the order amount: nothing to \
                         refund",
                        target.id
                    ),
                );
                Ok(Verdict::deny(ReasonCode::NotEligible))
            }
        }
    }

    /// RP-002: cooling-off refunds of annual plans; other products are not refunded.
    fn cancellation(&mut self, target: &'a OrderFacts) -> Result<Verdict, Stop> {
        let policy = self.policies.get(CANCELLATION_POLICY)?;
        let rules = policy.family(policy.rules.cancellation.as_ref(), "cancellation")?;
        self.note_order(target);
        if let Some(verdict) = self.dispute_check(&[target], None)? {
            return Ok(verdict);
        }
        let product = target.product;
        if !rules.cooling_off_products.contains(&product) {
            self.fire(
                policy,
                product.as_str(),
                format!(
                    "{} of order {} has no cooling-off refund: a cancellation refunds nothing",
                    product, target.id
                ),
            );
            return Ok(Verdict::deny(ReasonCode::NotEligible));
        }
        let region = self.facts.customer.region;
        let days = *rules.cooling_off_days.get(&region).ok_or_else(|| {
            Stop::Unavailable(format!(
                "{} has no cooling-off period for {region}",
                policy.version()
            ))
        })?;
        let reported_at = self.facts.reported_at;
        let since_order = reported_at - target.created_at;
        if reported_at >= target.created_at + Duration::days(i64::from(days)) {
            self.fire(
                policy,
                clause::COOLING_OFF,
                format!(
                    "asked {} after order {} was created, not within the {days}-day cooling-off \
                     period in {region}: no refund, the plan stays active until the end of its \
                     term",
                    Elapsed(since_order),
                    target.id
                ),
            );
            return Ok(Verdict::deny(ReasonCode::NotEligible));
        }
        self.fire(
            policy,
            clause::COOLING_OFF,
            format!(
                "asked {} after order {} was created, within the {days}-day cooling-off period \
                 in {region}: full refund of the plan's captured charges, less anything already \
                 refunded or pending",
                Elapsed(since_order),
                target.id
            ),
        );
        if let Some(verdict) = self.missing_records(target)? {
            return Ok(verdict);
        }
        let charges = sorted_charges(target);
        let paid: Vec<&ChargeFacts> = charges.iter().copied().filter(|c| c.took_money()).collect();
        if paid.is_empty() {
            let holds: Vec<&ChargeFacts> =
                charges.iter().copied().filter(|c| c.is_hold()).collect();
            if !holds.is_empty() {
                return self.hold_verdict(&holds, None);
            }
            self.fire(
                policy,
                clause::COOLING_OFF,
                format!(
                    "nothing was captured on order {}: nothing to refund",
                    target.id
                ),
            );
            return Ok(Verdict::deny(ReasonCode::NotEligible));
        }
        let mut lines = Vec::new();
        for charge in paid {
            let already = charge.already_refunded()?;
            let amount = charge.refundable()?;
            if !already.is_zero() {
                self.fire(
                    policy,
                    clause::COOLING_OFF,
                    format!(
                        "{already} is already refunded or pending on {}: {amount} is left to refund",
                        charge.id
                    ),
                );
            }
            if !amount.is_zero() {
                lines.push((
                    RefundLine {
                        order_id: target.id.clone(),
                        charge_id: charge.id.clone(),
                        amount,
                        payment_method: charge.payment_method.clone(),
                    },
                    RemedyKind::CoolingOff,
                ));
            }
        }
        if lines.is_empty() {
            return Ok(Verdict::deny(ReasonCode::AlreadyRefunded));
        }
        let approval_policy = self.policies.get(APPROVAL_POLICY)?;
        let approval =
            approval_policy.family(approval_policy.rules.approval.as_ref(), "approval")?;
        let approver = self.approver(approval_policy, approval, None, &lines);
        Ok(Verdict {
            refunds: lines.into_iter().map(|(l, _)| l).collect(),
            approver_role: approver,
            ..Verdict::new(Outcome::Allow, ReasonCode::CoolingOff)
        })
    }
}

/// Room for a facts line, so it is allocated once: nearly every line is shorter.
const LINE_CAPACITY: usize = 192;

/// Same product, amount and currency (RP-001 v2 §1).
fn same_purchase(a: &OrderFacts, b: &OrderFacts) -> bool {
    a.product == b.product && a.amount == b.amount
}

/// Charges in a deterministic order whatever order the caller listed them in.
fn sorted_charges(order: &OrderFacts) -> Vec<&ChargeFacts> {
    let mut charges: Vec<&ChargeFacts> = order.charges.iter().collect();
    charges.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    charges
}

/// An instant as RFC 3339 in UTC (`2026-11-20T09:00:05Z`, `…05.25Z` with a fraction).
/// The same text as the time crate's `format(&Rfc3339)` (`tests::timestamps` checks it),
/// written by hand because that call's many small writes were a tenth of a decision's
/// cost.
struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// Appends the text to a trace line.
    fn push_to(&self, line: &mut String) {
        match self.rfc3339() {
            Some((text, len)) => line.push_str(ascii(&text[..len])),
            None => line.push_str(&self.0.to_string()),
        }
    }

    /// The text and its length, or `None` for a year RFC 3339 cannot show (before 0000
    /// or after 9999), which keeps the instant's own text, as it always has.
    fn rfc3339(&self) -> Option<([u8; 30], usize)> {
        let utc = self.0.to_offset(UtcOffset::UTC);
        let (year, month, day) = utc.to_calendar_date();
        let year = u32::try_from(year).ok().filter(|year| *year <= 9999)?;
        let (hour, minute, second, nanosecond) = utc.to_hms_nano();
        let mut text = *b"0000-00-00T00:00:00.000000000Z";
        put_digits(&mut text[0..4], year);
        put_digits(&mut text[5..7], u8::from(month).into());
        put_digits(&mut text[8..10], day.into());
        put_digits(&mut text[11..13], hour.into());
        put_digits(&mut text[14..16], minute.into());
        put_digits(&mut text[17..19], second.into());
        // A fraction only when there is one, without trailing zeros (`.25`, not `.250`).
        let mut len = 19;
        if nanosecond > 0 {
            put_digits(&mut text[20..29], nanosecond);
            len = 29;
            while text[len - 1] == b'0' {
                len -= 1;
            }
        }
        text[len] = b'Z';
        Some((text, len + 1))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rfc3339() {
            Some((text, len)) => f.write_str(ascii(&text[..len])),
            None => write!(f, "{}", self.0),
        }
    }
}

/// Text this module wrote from ASCII digits and punctuation.
fn ascii(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("digits and punctuation are ASCII")
}

/// Writes `value` in decimal into all of `digits`, zero-padded on the left.
fn put_digits(digits: &mut [u8], mut value: u32) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// [`Timestamp`] as a string, for tests that build expected trace lines.
#[cfg(test)]
fn timestamp(at: OffsetDateTime) -> String {
    Timestamp(at).to_string()
}

/// `"9d 1h 0m 0s"`: exact, so boundary cases read clearly in the trace.
struct Elapsed(Duration);

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0.is_negative() { "-" } else { "" };
        let s = self.0.whole_seconds().unsigned_abs();
        write!(
            f,
            "{sign}{}d {}h {}m {}s",
            s / 86_400,
            s % 86_400 / 3_600,
            s % 3_600 / 60,
            s % 60
        )
    }
}

#[cfg(test)]
pub(crate) mod tests;
