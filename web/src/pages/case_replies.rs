//! What the case page offers around a reply (issue 17): the saved replies in the
//! ticket's language (a select that pre-fills the reply through a GET, so it works
//! without a script), and the exact message the customer will receive when the case is
//! approved, rejected or decided by hand — the text `replies` would send, in their
//! language (a close sends the staff member's own reply, as written).

use desk::cases::{Case, CaseStatus};
use desk::error::DomainResult;
use desk::replies::{self, CustomerRefundView, HandDecision, Language};
use desk::saved_replies::{self, SavedReply};
use store::Db;

pub(super) struct ReplyTools {
    /// The saved replies in the ticket's language.
    pub saved: Vec<SavedReply>,
    /// The reply form's text: the chosen saved reply's, else empty.
    pub prefill: String,
    pub chosen: String,
    pub language: &'static str,
    /// The message an approval leads to: the refund submitted to the provider.
    pub on_approve: Option<String>,
    /// The message a rejection sends.
    pub on_reject: Option<String>,
    /// Live shadow mode's hand decision: (outcome, the message it sends), each outcome
    /// that sends one; a refund's amounts are the reviewer's, shown as `[amounts]`.
    pub on_hand: Vec<(&'static str, String)>,
}

/// The tools for `case`'s page; `chosen` is the saved reply picked (`?saved=ID`). A
/// reply of another language, or an unknown id, pre-fills nothing.
pub(super) async fn reply_tools(
    db: &Db,
    case: &Case,
    chosen: Option<&str>,
) -> DomainResult<ReplyTools> {
    let language = desk::tickets::load_ticket(db, &case.ticket_id)
        .await?
        .map_or(Language::En, |t| t.language);
    let saved = saved_replies::list(db, Some(language)).await?;
    let chosen = chosen.unwrap_or_default();
    let prefill = saved
        .iter()
        .find(|r| r.id == chosen)
        .map(|r| r.text.clone())
        .unwrap_or_default();
    let awaiting = case.status == CaseStatus::AwaitingApproval;
    let on_approve = awaiting.then(|| approve_message(language, case)).flatten();
    Ok(ReplyTools {
        saved,
        prefill,
        chosen: chosen.to_string(),
        language: language.as_str(),
        on_approve,
        on_reject: awaiting.then(|| replies::rejection_reply(language)),
        on_hand: hand_messages(language),
    })
}

/// What each hand decision tells the customer (`shadow_live::decide_by_hand`); an
/// escalation sends nothing.
fn hand_messages(language: Language) -> Vec<(&'static str, String)> {
    let amounts = HandDecision::AwaitingApproval {
        amounts: "[amounts]",
    };
    vec![
        ("refund", replies::hand_decision_reply(language, amounts)),
        (
            "no_refund",
            replies::hand_decision_reply(language, HandDecision::NotEligible),
        ),
        (
            "request_info",
            replies::hand_decision_reply(language, HandDecision::RequestInfo),
        ),
    ]
}

/// After an approval the customer hears from us once the provider has the refund:
/// `refund_reply` over the approved refunds, each submitted (RP-005).
fn approve_message(language: Language, case: &Case) -> Option<String> {
    let decision = case.decision()?;
    let refunds: Vec<CustomerRefundView> = decision
        .refunds
        .iter()
        .map(|r| CustomerRefundView {
            amount: r.amount.amount_string(),
            currency: r.amount.currency().code().to_string(),
            status: "submitted".into(),
        })
        .collect();
    (!refunds.is_empty()).then(|| replies::refund_reply(language, &refunds))
}
