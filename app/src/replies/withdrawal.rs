//! What the customer is told when they withdraw their request.

use super::language::Language;

/// What a withdrawal did, as the customer is told.
#[derive(Debug, Clone, Copy)]
pub enum WithdrawalReply<'a> {
    AlreadyWithdrawn,
    Withdrawn,
    /// A refund already reached the provider (its status banner given): it cannot be
    /// withdrawn, and the customer is told so truthfully (RP-005).
    TooLate {
        status: &'a str,
    },
}

pub fn withdrawal_reply(lang: Language, outcome: WithdrawalReply<'_>) -> String {
    match (outcome, lang) {
        (WithdrawalReply::AlreadyWithdrawn, Language::En) => "Your request was already withdrawn.".to_string(),
        (WithdrawalReply::AlreadyWithdrawn, Language::Zh) => "您的请求已撤回。".to_string(),
        (WithdrawalReply::AlreadyWithdrawn, Language::Ja) => "お問い合わせはすでに取り下げられています。".to_string(),
        (WithdrawalReply::Withdrawn, Language::En) => "Your request has been withdrawn. Nothing more will be done on it.".to_string(),
        (WithdrawalReply::Withdrawn, Language::Zh) => "您的请求已撤回，我们不会再处理。".to_string(),
        (WithdrawalReply::Withdrawn, Language::Ja) => "お問い合わせを取り下げました。この件について、これ以上の手続きは行いません。".to_string(),
        (WithdrawalReply::TooLate { status }, Language::En) => format!("Your refund was already submitted to the payment provider, so it can no longer be withdrawn. Current status: {status}."),
        (WithdrawalReply::TooLate { status }, Language::Zh) => format!("您的退款已提交给支付机构，无法再撤回。当前状态：{status}。"),
        (WithdrawalReply::TooLate { status }, Language::Ja) => format!("返金はすでに決済事業者に申請済みのため、取り下げできません。現在の状況：{status}。"),
    }
}
