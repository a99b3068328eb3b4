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
    /// The case is already at its end (closed, replied, failed): nothing is in progress
    /// to withdraw. A ticket joined into another names it: the work goes on there.
    NothingToWithdraw {
        joined_ticket: Option<&'a str>,
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
        (WithdrawalReply::NothingToWithdraw { joined_ticket: Some(t) }, Language::En) => format!("This ticket was added to your open request {t}; nothing is in progress here. To withdraw, use ticket {t}."),
        (WithdrawalReply::NothingToWithdraw { joined_ticket: Some(t) }, Language::Zh) => format!("此工单已并入您正在处理中的请求 {t}，这里没有进行中的处理。如需撤回，请在工单 {t} 中操作。"),
        (WithdrawalReply::NothingToWithdraw { joined_ticket: Some(t) }, Language::Ja) => format!("このチケットは対応中のお問い合わせ {t} にまとめられたため、こちらで進行中の手続きはありません。取り下げはチケット {t} で行ってください。"),
        (WithdrawalReply::NothingToWithdraw { joined_ticket: None }, Language::En) => "This request is already closed; nothing is in progress on it to withdraw.".to_string(),
        (WithdrawalReply::NothingToWithdraw { joined_ticket: None }, Language::Zh) => "此请求已关闭，没有可撤回的进行中处理。".to_string(),
        (WithdrawalReply::NothingToWithdraw { joined_ticket: None }, Language::Ja) => "このお問い合わせはすでに終了しており、取り下げる手続きはありません。".to_string(),
    }
}
