//! Live shadow mode (`SHADOW_MODE=on`): the agent investigates live tickets and its
//! decision is recorded, but nothing reaches the approval queue. A reviewer decides each
//! case by hand without seeing the agent's proposal or decision (no anchoring); the pair
//! is recorded, and only then is the agent's side shown.
//!
//! A hand-made refund passes the same policy check (every line within what the policy
//! engine allows on fresh facts) and the same approval rules (another person approves
//! it, bound to a fingerprint) as the agent's would. One the policy does not allow is
//! still the reviewer's verdict — recorded in the pair, so the statistics count the
//! disagreement — but it moves no money: the case stays with a supervisor.

use policy_engine::{Decision, Outcome, ReasonCode};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use desk::agent::Proposal;
use desk::approvals::Desk;
use desk::auth::Staff;
use desk::cases::{self, Case, CaseStatus};
use desk::error::{DomainError, DomainResult, ErrorCode};
use desk::replies::{self, HandDecision};
use desk::tickets::{self};
use desk::views::CaseView;
use desk::world::{parse_plain, serde_plain};
use domain::verdict::{CaseOutcome, CaseVerdict, RefundRecord};

/// A reviewer's decision, made by hand.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManualDecision {
    #[schema(value_type = desk::schema::Outcome)]
    pub outcome: CaseOutcome,
    #[schema(value_type = desk::schema::ReasonCode)]
    pub reason: ReasonCode,
    #[serde(default)]
    #[schema(value_type = Vec<desk::schema::RefundLine>)]
    pub refunds: Vec<RefundRecord>,
    #[serde(default)]
    pub note: Option<String>,
}

impl ManualDecision {
    /// The reviewer's verdict, as the pair records it.
    pub fn verdict(&self) -> CaseVerdict {
        CaseVerdict {
            outcome: self.outcome,
            reason: self.reason,
            refunds: self.refunds.clone(),
        }
    }
}

/// Records the reviewer's verdict beside the agent's and carries it out: a refund
/// becomes a proposal awaiting somebody else's approval, after the policy check.
// Long because the hand verdict, the pair's human side and each outcome's case update are
// one transaction versioned against the case read at the top: kept whole so the
// rollback covers everything a reviewer sees in one place.
pub async fn decide_by_hand(
    desk: Desk<'_>,
    staff: &Staff,
    case_id: &str,
    manual: ManualDecision,
) -> DomainResult<CaseView> {
    let case = cases::load_case(desk.db, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if case.status != CaseStatus::Escalated
        || !desk::shadow_pairs::pending(desk.db, case_id).await?
    {
        return Err(DomainError::conflict(
            ErrorCode::InvalidState,
            "this case is not waiting for a hand decision",
        ));
    }
    let ticket = tickets::load_ticket(desk.db, &case.ticket_id)
        .await?
        .ok_or(DomainError::NotFound("ticket"))?;
    let proposal = desk::shadow_pairs::agent_proposal(desk.db, case_id).await?;
    if (manual.outcome == CaseOutcome::Refund) == manual.refunds.is_empty() {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidDecision,
            "a refund decision lists its refunds; other decisions list none",
        ));
    }
    let now = desk.clock.now_ms();
    let policy_outcome = desk::shadow_pairs::agent_outcome(desk.db, case_id)
        .await?
        .unwrap_or_else(|| "escalate".to_string());

    // For a refund: the same policy check an agent's proposal passes, on fresh facts.
    let checked = if manual.outcome == CaseOutcome::Refund {
        Some(check_hand_refund(desk.rules, &ticket, &proposal, &manual).await?)
    } else {
        None
    };

    // Every case update below is versioned against `case`, the read the checks above (and
    // the reviewer's policy check) were made on: a case that moved on since (the customer
    // wrote again and it is being re-investigated) fails with `case_changed`, and the
    // transaction, hand verdict included, rolls back.
    let mut tx = desk.db.begin().await?;
    let recorded =
        desk::shadow_pairs::record_human_side(&mut tx, case_id, &manual.verdict(), &staff.id, now)
            .await?;
    if !recorded {
        return Err(DomainError::conflict(
            ErrorCode::AlreadyDecided,
            "another reviewer already decided this case",
        ));
    }
    let lang = ticket.language;
    let hand = HandVerdict {
        staff,
        manual: &manual,
        checked: checked.as_ref(),
        policy_outcome: &policy_outcome,
    };
    record_check(&mut tx, case_id, lang, &hand, now).await?;
    match (manual.outcome, checked) {
        (CaseOutcome::Refund, Some(HandCheck::Allowed(allowed))) => {
            let (facts, decision) = *allowed;
            let hand = HandRefund {
                staff,
                manual: &manual,
                proposal: &proposal,
                facts: &facts,
                decision: &decision,
            };
            propose_hand_refund(&mut tx, &case, &ticket, &hand, now).await?;
        }
        (CaseOutcome::NoRefund, _) => {
            cases::transition(&mut tx, &case, CaseStatus::Denied, now).await?;
            let reply = replies::hand_decision_reply(lang, HandDecision::NotEligible);
            tickets::append_message(&mut tx, &ticket.id, "staff", &reply, now).await?;
            let kind = desk::channels::Notice::Reply;
            desk::channels::tell_customer(&mut tx, kind, &ticket.id, &reply, now).await?;
        }
        (CaseOutcome::RequestInfo, _) => {
            cases::transition(&mut tx, &case, CaseStatus::AwaitingCustomer, now).await?;
            let reply = replies::hand_decision_reply(lang, HandDecision::RequestInfo);
            tickets::append_message(&mut tx, &ticket.id, "staff", &reply, now).await?;
            let kind = desk::channels::Notice::Question;
            desk::channels::tell_customer(&mut tx, kind, &ticket.id, &reply, now).await?;
        }
        (CaseOutcome::Refund, Some(HandCheck::Refused(why))) => {
            // The reviewer's verdict stands in the pair (a disagreement with
            // the policy the statistics must see), but no money moves: the case stays
            // with a person, the refund never becomes a proposal (docs/spec/invariants.md #1).
            let note = format!(
                "the reviewer decided a refund the policy does not allow ({why}): recorded as their decision; no money moves, a supervisor decides the case"
            );
            cases::note_void_reason(&mut tx, &case, &note, now).await?;
        }
        (CaseOutcome::Escalate, _) | (CaseOutcome::Refund, None) => {
            cases::note_void_reason(&mut tx, &case, "escalated by the reviewer", now).await?;
        }
    }
    desk::audit::record(
        &mut tx,
        &staff.id,
        "decided_by_hand",
        &case.id,
        &format!(
            "{} ({})",
            manual.outcome.as_str(),
            serde_plain(&manual.reason)
        ),
        now,
    )
    .await?;
    tx.commit().await?;
    desk::views::current_view(desk.db, case_id).await
}

/// A hand decision as the quality review checks it.
struct HandVerdict<'a> {
    staff: &'a Staff,
    manual: &'a ManualDecision,
    /// The hand check of a refund.
    checked: Option<&'a HandCheck>,
    /// The policy engine's outcome when the agent decided the case.
    policy_outcome: &'a str,
}

/// The hand decision checked against the policy (`qa`): a refund by the hand check; any
/// other outcome is within the policy when it is the policy's own, when the policy
/// hands the case to a person, or when the reviewer escalates.
async fn record_check(
    tx: &mut store::Tx<'_>,
    case_id: &str,
    language: replies::Language,
    hand: &HandVerdict<'_>,
    now: i64,
) -> DomainResult<()> {
    let outcome = hand.manual.outcome.as_str();
    let (within, why) = match hand.checked {
        Some(HandCheck::Allowed(allowed)) => (true, desk::qa::rules_why(&allowed.1)),
        Some(HandCheck::Refused(why)) => {
            (false, format!("a refund the policy does not allow: {why}"))
        }
        None if outcome == hand.policy_outcome => (true, "the policy's own outcome".to_string()),
        None if hand.policy_outcome == "escalate" || outcome == "escalate" => {
            (true, "the policy hands the case to a person".to_string())
        }
        None => (
            false,
            format!("the policy decides {} on these facts", hand.policy_outcome),
        ),
    };
    let reason = serde_plain(&hand.manual.reason);
    let check = desk::qa::Check {
        case_id,
        actor: &hand.staff.id,
        action: desk::qa::Action::HandDecision,
        outcome,
        reason: &reason,
        language: language.as_str(),
        within_policy: within,
        policy_outcome: hand.policy_outcome,
        why: &why,
        now,
    };
    desk::qa::record(tx, &check).await
}

/// What the policy check made of a reviewer's refund.
enum HandCheck {
    /// The facts and the decision carrying the reviewer's amounts.
    Allowed(Box<(policy_engine::Facts, Decision)>),
    /// What the policy does not allow, in words.
    Refused(String),
}

/// The policy check of a reviewer's refund, on fresh facts: each line on a charge the
/// policy allows a refund on, at most what it allows, in its currency. An allowed
/// decision carries the reviewer's amounts, rehashed.
async fn check_hand_refund(
    rules: desk::workflow::Rules<'_>,
    ticket: &desk::tickets::Ticket,
    proposal: &Proposal,
    manual: &ManualDecision,
) -> DomainResult<HandCheck> {
    let (facts, decision) =
        desk::workflow::decide_now(rules, ticket, proposal.request, proposal.target()).await?;
    let mut lines = Vec::new();
    for r in &manual.refunds {
        let amount = r
            .money()
            .map_err(|e| DomainError::bad_request(ErrorCode::InvalidAmount, e.to_string()))?;
        let Some(limit) = decision.refunds.iter().find(|l| l.charge_id == r.charge_id) else {
            let why = format!("the policy allows no refund on {}", r.charge_id);
            return Ok(HandCheck::Refused(why));
        };
        if limit.amount.currency() != amount.currency() || amount > limit.amount || amount.is_zero()
        {
            let why = format!(
                "the policy allows at most {} on {}",
                limit.amount, r.charge_id
            );
            return Ok(HandCheck::Refused(why));
        }
        let mut line = limit.clone();
        line.amount = amount;
        lines.push(line);
    }
    if !matches!(decision.outcome, Outcome::Allow | Outcome::Escalate) {
        let why = "the policy allows no refund on these facts";
        return Ok(HandCheck::Refused(why.into()));
    }
    let mut decision = decision;
    decision.outcome = Outcome::Allow;
    decision.refunds = lines;
    decision.approver_role = Some(decision.approver_role.unwrap_or(policy_engine::Role::Agent));
    decision.hash = decision.compute_hash();
    Ok(HandCheck::Allowed(Box::new((facts, decision))))
}

/// A reviewer's allowed refund, for `propose_hand_refund`.
struct HandRefund<'a> {
    staff: &'a Staff,
    manual: &'a ManualDecision,
    proposal: &'a Proposal,
    facts: &'a policy_engine::Facts,
    decision: &'a Decision,
}

/// A reviewer's refund becomes a proposal awaiting somebody else's approval: recorded
/// like any decision, audited as proposed by the reviewer, and the customer told.
async fn propose_hand_refund(
    tx: &mut store::Tx<'_>,
    case: &Case,
    ticket: &desk::tickets::Ticket,
    hand: &HandRefund<'_>,
    now: i64,
) -> DomainResult<()> {
    let HandRefund {
        staff,
        manual,
        proposal,
        facts,
        decision,
    } = *hand;
    let lang = ticket.language;
    let evidence_hash = desk::workflow::evidence_hash(facts);
    let human_proposal = Proposal {
        request: proposal.request,
        order_id: facts.order_id.clone(),
        reason_code: serde_plain(&manual.reason),
        refunds: manual
            .refunds
            .iter()
            .map(|r| desk::agent::ProposedRefund {
                charge_id: r.charge_id.clone(),
                amount: r.amount.clone(),
                currency: r.currency.code().into(),
            })
            .collect(),
        evidence: vec![],
        citations: decision.rules.iter().map(|r| r.citation.clone()).collect(),
        summary: format!(
            "decided by hand by {}{}",
            staff.email,
            manual
                .note
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default()
        ),
        order_source: proposal.order_source,
        request_source: proposal.request_source,
        repeat_of: proposal.repeat_of.clone(),
        other_readings: Vec::new(),
        reading: proposal.reading.clone(),
    };
    let record = cases::DecisionRecord {
        status: CaseStatus::AwaitingApproval,
        proposal: cases::ProposalChange::Replaces(&human_proposal),
        facts,
        decision,
        evidence_hash: &evidence_hash,
        required_role: decision.approver_role,
        reason_code: manual.reason,
        void_reason: cases::VoidReason::Clear,
        policy_index: None,
        now,
    };
    // The reviewer proposed it: somebody else must approve it.
    desk::approvals::record_staff_proposal(tx, case, &record, staff, "shadow hand decision")
        .await?;
    let amounts = decision
        .refunds
        .iter()
        .map(|r| r.amount.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let reply =
        replies::hand_decision_reply(lang, HandDecision::AwaitingApproval { amounts: &amounts });
    tickets::append_message(tx, &ticket.id, "staff", &reply, now).await?;
    let kind = desk::channels::Notice::Reply;
    desk::channels::tell_customer(tx, kind, &ticket.id, &reply, now).await?;
    Ok(())
}

/// One decided pair.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub case_id: String,
    pub agent: CaseVerdict,
    pub human: CaseVerdict,
    pub agree: bool,
    pub exact: bool,
    pub decided_at: i64,
    /// `model · prompt version · tool schema version` of the agent run that decided.
    pub run_versions: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveShadowReport {
    pub decided: usize,
    pub pending: usize,
    pub outcome_agreement: f64,
    pub exact_agreement: f64,
    pub confusion: std::collections::BTreeMap<String, std::collections::BTreeMap<String, usize>>,
    /// Per UTC day: (day, agreed, total).
    pub by_day: Vec<(String, usize, usize)>,
    /// Per `model · prompt version · tool schema version`: (versions, agreed, total).
    pub by_run_versions: Vec<(String, usize, usize)>,
    pub disagreements: Vec<Pair>,
}

pub async fn report(db: &store::Db) -> DomainResult<LiveShadowReport> {
    let rows = sqlx::query(
        "SELECT case_id, agent_outcome, agent_reason, agent_refunds, human_outcome, human_reason, human_refunds, decided_at,
                (SELECT r.model || ' · ' || r.prompt_version || ' · ' || r.tool_schema_version FROM runs r
                  WHERE r.case_id = shadow_pairs.case_id AND r.parent_run_id IS NULL ORDER BY r.created_at DESC, r.id DESC LIMIT 1) AS run_versions
         FROM shadow_pairs ORDER BY created_at",
    )
    .fetch_all(db.pool())
    .await?;
    let mut pairs = Vec::new();
    let mut pending = 0;
    for r in &rows {
        let Some(decided_at) = r.try_get::<Option<i64>, _>("decided_at")? else {
            pending += 1;
            continue;
        };
        let verdict = |o: &str, reason: &str, refunds: &str| -> DomainResult<CaseVerdict> {
            Ok(CaseVerdict {
                outcome: parse_plain(o)?,
                reason: parse_plain(reason)?,
                refunds: serde_json::from_str(refunds).map_err(|e| anyhow::anyhow!("{e}"))?,
            })
        };
        let agent = verdict(
            &r.try_get::<String, _>("agent_outcome")?,
            &r.try_get::<String, _>("agent_reason")?,
            &r.try_get::<String, _>("agent_refunds")?,
        )?;
        let human = verdict(
            &r.try_get::<Option<String>, _>("human_outcome")?
                .unwrap_or_default(),
            &r.try_get::<Option<String>, _>("human_reason")?
                .unwrap_or_default(),
            &r.try_get::<Option<String>, _>("human_refunds")?
                .unwrap_or_else(|| "[]".into()),
        )?;
        pairs.push(Pair {
            case_id: r.try_get("case_id")?,
            agree: agent.outcome == human.outcome,
            exact: agent.agrees_exactly(&human),
            agent,
            human,
            decided_at,
            run_versions: r
                .try_get::<Option<String>, _>("run_versions")?
                .unwrap_or_else(|| "unrecorded".into()),
        });
    }
    let decided = pairs.len();
    let rate = |n: usize| {
        if decided == 0 {
            0.0
        } else {
            n as f64 / decided as f64
        }
    };
    let mut confusion: std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, usize>,
    > = Default::default();
    let mut days: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    let mut versions: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for p in &pairs {
        let v = versions.entry(p.run_versions.clone()).or_default();
        v.0 += usize::from(p.agree);
        v.1 += 1;
        *confusion
            .entry(p.human.outcome.as_str().into())
            .or_default()
            .entry(p.agent.outcome.as_str().into())
            .or_default() += 1;
        let day = desk::clock::from_ms(p.decided_at).date().to_string();
        let e = days.entry(day).or_default();
        e.0 += usize::from(p.agree);
        e.1 += 1;
    }
    Ok(LiveShadowReport {
        decided,
        pending,
        outcome_agreement: rate(pairs.iter().filter(|p| p.agree).count()),
        exact_agreement: rate(pairs.iter().filter(|p| p.exact).count()),
        confusion,
        by_day: days.into_iter().map(|(d, (a, t))| (d, a, t)).collect(),
        by_run_versions: versions.into_iter().map(|(v, (a, t))| (v, a, t)).collect(),
        disagreements: pairs.into_iter().filter(|p| !p.exact).collect(),
    })
}

/// An SVG bar chart of agreement per day (no scripts, no external resources).
pub fn agreement_chart(by_day: &[(String, usize, usize)]) -> String {
    let width = 40 * by_day.len().max(1) + 60;
    let mut svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="180" role="img" aria-label="agreement per day"><line x1="40" y1="150" x2="{width}" y2="150" stroke="#999"/><text x="0" y="20" font-size="10">100%</text><text x="0" y="150" font-size="10">0%</text>"##
    );
    for (i, (day, agree, total)) in by_day.iter().enumerate() {
        let rate = if *total == 0 {
            0.0
        } else {
            *agree as f64 / *total as f64
        };
        let h = (rate * 130.0).round();
        let x = 50 + i * 40;
        svg += &format!(
            r##"<rect x="{x}" y="{}" width="28" height="{h}" fill="#3b6fd6"><title>{day}: {agree}/{total}</title></rect><text x="{x}" y="165" font-size="8">{}</text>"##,
            150.0 - h,
            day.get(5..).unwrap_or(day)
        );
    }
    svg + "</svg>"
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_chart_has_one_bar_per_day_and_no_scripts() {
        let svg =
            super::agreement_chart(&[("2026-11-28".into(), 3, 4), ("2026-11-29".into(), 1, 1)]);
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("2026-11-28: 3/4") && !svg.contains("<script"));
    }
}
