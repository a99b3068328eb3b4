//! RP-004, refund approval authority: which role must approve each refund (up to the
//! threshold, above it, or reported outside the window), and the draft's automatic
//! approval of small duplicate refunds.
//!
//! Reached by the remedies (RP-001, RP-002) once their refunds are known. It names the
//! role a decision needs; who approves, and that nobody approves their own proposal, is
//! checked by the desk when the approval is given.

use crate::decision::{RefundLine, Role};
use crate::parameters::{clause, ApprovalRules, ChargeRules};
use crate::selection::{Bound, Stop};
use crate::trace::Trace;

/// The document whose rules this file applies.
pub(crate) const POLICY: &str = "RP-004";

/// Which rule found a refund: a duplicate refund may need no human under a draft of
/// RP-001 (`auto_approve_below`), every other refund follows the thresholds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RemedyKind {
    Duplicate,
    RepeatPurchase,
    Overcharge,
    CoolingOff,
}

/// The version of RP-004 in force and its `[approval]` rules.
pub(crate) fn rules<'a>(trace: &Trace<'a>) -> Result<(Bound<'a>, &'a ApprovalRules), Stop> {
    let policy = trace.policy(POLICY)?;
    let approval = policy.family(policy.rules.approval.as_ref(), "approval")?;
    Ok((policy, approval))
}

/// The role the whole decision needs: the highest any refund needs (RP-004 §1), except
/// duplicate refunds a what-if draft of RP-001 approves automatically (`charges`).
pub(crate) fn approver<'a>(
    trace: &mut Trace<'a>,
    approval_policy: Bound<'a>,
    approval: &ApprovalRules,
    charges: Option<(Bound<'a>, &ChargeRules)>,
    lines: &[(RefundLine, RemedyKind)],
) -> Option<Role> {
    let mut needed: Option<Role> = None;
    for (line, kind) in lines {
        let automatic = charges.and_then(|(policy, rules)| {
            let limit = rules.auto_approve_below.get(&line.amount.currency())?;
            let is_duplicate = matches!(kind, RemedyKind::Duplicate | RemedyKind::RepeatPurchase);
            (is_duplicate && line.amount.amount() < limit.amount()).then_some((policy, limit))
        });
        if let Some((policy, limit)) = automatic {
            trace.fire(
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
        trace.fire(
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

/// RP-004 §1: a refund reported outside the policy window needs this role, whatever its
/// amount.
pub(crate) fn outside_window<'a>(
    trace: &mut Trace<'a>,
    approval_policy: Bound<'a>,
    approval: &ApprovalRules,
) -> Role {
    trace.fire(
        approval_policy,
        clause::OUTSIDE_WINDOW_APPROVAL,
        "a refund reported outside the policy window needs a supervisor, whatever its \
         amount"
            .into(),
    );
    approval.outside_window
}
