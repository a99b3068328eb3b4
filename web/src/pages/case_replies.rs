//! What the case page offers around a reply: the saved replies in the
//! ticket's language (a select that pre-fills the reply through a GET, so it works
//! without a script), and the exact message the customer will receive when the case is
//! approved, rejected or decided by hand — the text `replies` would send, in their
//! language (a close sends the staff member's own reply, as written).
//!
//! The saved replies come filled for the case (`saved_replies::fill`), and
//! are offered in the reply, reject and close forms; a rejection's message is the
//! reviewer's to edit, the standard one to start from.

use crate::state::AppState;
use desk::cases::{Case, CaseStatus};
use desk::error::DomainResult;
use desk::replies::{self, CustomerRefundView, HandDecision, Language};
use desk::saved_replies;

/// A saved reply as the case page offers it: filled for the case.
/// What the case page's forms held when one was refused.
#[derive(Default)]
pub(super) struct Kept {
    pub reply: Option<String>,
    pub note: String,
    pub reason: String,
    pub reject_reply: Option<String>,
    pub close_reason: String,
    pub close_reply: Option<String>,
}

pub(super) struct FilledReply {
    pub id: String,
    pub name: String,
    pub text: String,
    /// The variables this case has no value for (left as `{name}`), in words.
    pub missing: String,
}

/// The saved reply picked through the page's GET (`?saved=ID&into=FORM`).
pub(super) struct Chosen<'a> {
    pub saved: Option<&'a str>,
    pub into: Option<&'a str>,
}

pub(super) struct ReplyTools {
    /// The saved replies in the ticket's language, filled for the case.
    pub saved: Vec<FilledReply>,
    /// The reply form's text: what was typed (a refused submit), else the chosen saved
    /// reply's, else empty.
    pub prefill: String,
    /// The rejection's message to the customer: likewise, else the standard rejection.
    pub reject_prefill: String,
    /// The close form's reply: likewise, else empty.
    pub close_prefill: String,
    pub chosen: String,
    /// The chosen saved reply goes into the rejection (its form is shown open).
    pub chosen_into_reject: bool,
    pub language: &'static str,
    /// The message an approval leads to: the refund submitted to the provider.
    pub on_approve: Option<String>,
    /// The message a rejection sends.
    pub on_reject: Option<String>,
    /// Live shadow mode's hand decision: (outcome, the message it sends), each outcome
    /// that sends one; a refund's amounts are the reviewer's, shown as `[amounts]`.
    pub on_hand: Vec<(&'static str, String)>,
}

/// The tools for `case`'s page; `chosen` is the saved reply picked and the form it goes
/// into. A reply of another language, or an unknown id, pre-fills nothing; what a
/// refused form held (`kept`) comes back as it was typed.
pub(super) async fn reply_tools(
    state: &AppState,
    case: &Case,
    chosen: Chosen<'_>,
    kept: &Kept,
) -> DomainResult<ReplyTools> {
    let db = &state.db;
    let language = desk::tickets::load_ticket(db, &case.ticket_id)
        .await?
        .map_or(Language::En, |t| t.language);
    let values = saved_replies::values_for_case(db, case, &state.channels.mail.public_url).await?;
    let saved: Vec<FilledReply> = saved_replies::list(db, Some(language))
        .await?
        .into_iter()
        .map(|r| {
            let filled = saved_replies::fill(&r.text, &values);
            let missing: Vec<&str> = filled.missing.iter().map(|v| v.name()).collect();
            FilledReply {
                id: r.id,
                name: r.name,
                text: filled.text,
                missing: missing.join(", "),
            }
        })
        .collect();
    let id = chosen.saved.unwrap_or_default();
    let picked = saved.iter().find(|r| r.id == id).map(|r| r.text.clone());
    let into = |form: &str| {
        picked
            .clone()
            .filter(|_| chosen.into.unwrap_or("reply") == form)
    };
    let awaiting = case.status == CaseStatus::AwaitingApproval;
    let on_approve = awaiting.then(|| approve_message(language, case)).flatten();
    let on_reject = awaiting.then(|| replies::rejection_reply(language));
    Ok(ReplyTools {
        prefill: kept.reply.clone().or(into("reply")).unwrap_or_default(),
        reject_prefill: kept
            .reject_reply
            .clone()
            .or(into("reject"))
            .or(on_reject.clone())
            .unwrap_or_default(),
        close_prefill: kept
            .close_reply
            .clone()
            .or(into("close"))
            .unwrap_or_default(),
        saved,
        chosen_into_reject: picked.is_some() && chosen.into == Some("reject"),
        chosen: id.to_string(),
        language: language.as_str(),
        on_approve,
        on_reject,
        on_hand: hand_messages(language),
    })
}

/// What each hand decision tells the customer (`shadow::live::decide_by_hand`); an
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
