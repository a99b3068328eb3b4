//! What the customer is told, in their language (English, Chinese or Japanese), per
//! RP-005: only what the records show — submitted, completed, or being verified —
//! amounts with their currency, denials with a plain reason and the policy they come
//! from, and never internal thresholds, staff names or anyone else's data.
//!
//! Every customer-facing sentence and page label lives here, and every one is a `match`
//! on [`Language`] (or a [`PageText`] with one field per label), so a language added
//! without its text does not compile. What it does not do: pick the language (that is
//! `tickets::detect_language`) or store anything.

use std::fmt;
use std::str::FromStr;

use policy_engine::{Decision, ReasonCode, Region};
use serde::{Deserialize, Serialize};

use crate::cases::CaseStatus;
use crate::error::AppError;
use crate::refunds::CustomerRefundView;

/// The language of a ticket and of everything its customer is told. Stored as its code
/// (`en`, `zh`, `ja`) in `tickets.language`, the column's values since the first
/// migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    En,
    Zh,
    Ja,
}

/// A language code that is none of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown language '{0}' (expected en, zh or ja)")]
pub struct UnknownLanguage(pub String);

impl Language {
    pub const ALL: [Language; 3] = [Language::En, Language::Zh, Language::Ja];

    pub fn as_str(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Zh => "zh",
            Language::Ja => "ja",
        }
    }

    /// A stored code. English is the fallback for any other language (issue 15), so a
    /// code this build does not know (written by a newer one) still gets answers.
    pub fn from_stored(code: &str) -> Language {
        code.parse().unwrap_or_else(|e: UnknownLanguage| {
            tracing::warn!(error = %e, "stored language falls back to English");
            Language::En
        })
    }

    /// The language of a page shown before we know who the customer is (the sign-in
    /// page): the first of the browser's `Accept-Language` choices, by weight, that is
    /// one of ours; English when none is.
    pub fn from_accept_language(header: Option<&str>) -> Language {
        let mut choices: Vec<(f32, Language)> = header
            .unwrap_or_default()
            .split(',')
            .filter_map(|item| {
                let mut parts = item.split(';');
                let tag = parts.next()?.trim().to_ascii_lowercase();
                let primary = tag.split('-').next()?;
                let weight = parts
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())?;
                let lang = primary.parse::<Language>().ok()?;
                (weight > 0.0).then_some((weight, lang))
            })
            .collect();
        // A stable sort: equal weights keep the browser's order.
        choices.sort_by(|a, b| b.0.total_cmp(&a.0));
        choices.first().map_or(Language::En, |(_, lang)| *lang)
    }

    /// The language a customer is addressed in before they have written anything.
    pub fn of_region(region: Region) -> Language {
        match region {
            Region::CN => Language::Zh,
            Region::JP => Language::Ja,
            Region::US | Region::EU => Language::En,
        }
    }
}

impl FromStr for Language {
    type Err = UnknownLanguage;
    fn from_str(code: &str) -> Result<Self, Self::Err> {
        Language::ALL
            .into_iter()
            .find(|l| l.as_str() == code)
            .ok_or_else(|| UnknownLanguage(code.to_string()))
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn policy_of(decision: &Decision) -> String {
    // The document of the most specific rule: the last one that fired, leaving out
    // approval authority (RP-004), which never explains an outcome to a customer.
    decision
        .rules
        .iter()
        .rev()
        .map(|r| r.citation.split('@').next().unwrap_or(""))
        .find(|doc| !doc.is_empty() && *doc != "RP-004")
        .unwrap_or("RP-001")
        .to_string()
}

/// The decided refunds, each with its currency (RP-005: "quote amounts with their
/// currency"; `Money` displays as `198.00 CNY`).
fn amounts(decision: &Decision) -> String {
    decision
        .refunds
        .iter()
        .map(|r| r.amount.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The status a customer is shown for a case. RP-007 ("confirm or deny nothing"): a
/// case escalated because the named order is someone else's looks exactly like one whose
/// named order does not exist — we ask which order they mean — while a human looks at
/// it inside.
pub fn customer_status(status: CaseStatus, reason_code: Option<&str>) -> CaseStatus {
    if status == CaseStatus::Escalated
        && reason_code == Some(ReasonCode::OwnershipMismatch.as_str())
    {
        CaseStatus::AwaitingCustomer
    } else {
        status
    }
}

/// The reply posted when the policy engine has decided.
pub fn decision_reply(lang: Language, status: CaseStatus, decision: &Decision) -> String {
    let status = customer_status(status, Some(decision.reason_code.as_str()));
    match status {
        CaseStatus::AwaitingApproval => review_reply(lang, &amounts(decision)),
        CaseStatus::AwaitingCustomer => which_order_reply(lang),
        CaseStatus::Denied => {
            let policy = policy_of(decision);
            let reason = deny_reason(lang, decision);
            match lang {
                Language::En => format!("{reason} (policy {policy})"),
                Language::Zh => format!("{reason}（依据政策 {policy}）"),
                Language::Ja => format!("{reason}（ポリシー {policy} に基づきます）"),
            }
        }
        CaseStatus::Escalated => escalation_reply(lang),
        _ => match lang {
            Language::En => "We are looking into your request.",
            Language::Zh => "我们正在处理您的请求。",
            Language::Ja => "お問い合わせの内容を確認しています。",
        }
        .to_string(),
    }
}

/// A refund the engine allowed, waiting for a person's approval: nothing is submitted
/// yet, and the customer is told exactly that (RP-005).
fn review_reply(lang: Language, amounts: &str) -> String {
    match lang {
        Language::En => format!("We found what happened and a refund of {amounts} is being reviewed by our team. We will tell you as soon as it is submitted."),
        Language::Zh => format!("我们已查明情况，{amounts} 的退款正在由我们的团队审核。退款一经提交，我们会立即通知您。"),
        Language::Ja => format!("状況を確認しました。{amounts} の返金について、担当チームが審査しています。返金を申請した時点で、すぐにお知らせします。"),
    }
}

fn which_order_reply(lang: Language) -> String {
    match lang {
        Language::En => "You have more than one order with us. Please tell us which order this is about (for example its order number).",
        Language::Zh => "您在我们这里有多个订单。请告诉我们您指的是哪一个订单（例如订单号）。",
        Language::Ja => "お客様には複数のご注文があります。どのご注文についてのお問い合わせか（例：注文番号）をお知らせください。",
    }
    .to_string()
}

/// A denial in plain words (RP-005), never the threshold behind it.
fn deny_reason(lang: Language, decision: &Decision) -> String {
    let release = decision.hold_release.as_deref();
    match (lang, decision.reason_code) {
        (Language::En, ReasonCode::AuthorizationHold) => format!(
            "The second amount on your card is an authorization hold, not a charge: no money was taken and there is nothing to refund. Your card issuer releases it automatically within {}.",
            release.map_or("a few days".to_string(), |p| period(lang, p))
        ),
        (Language::Zh, ReasonCode::AuthorizationHold) => format!(
            "您卡上的第二笔金额是预授权冻结，并非实际扣款：没有扣走任何资金，因此无需退款。发卡行会在{}内自动释放。",
            release.map_or("几天".to_string(), |p| period(lang, p))
        ),
        (Language::Ja, ReasonCode::AuthorizationHold) => format!(
            "カードに表示されている2件目の金額はオーソリ（与信枠の一時的な確保）で、請求ではありません。代金は引き落とされておらず、返金するものはありません。カード会社により{}以内に自動的に解除されます。",
            release.map_or("数日".to_string(), |p| period(lang, p))
        ),
        (Language::En, ReasonCode::AlreadyRefunded) => "This charge has already been refunded (or a refund is already on its way), so there is nothing more to refund.".to_string(),
        (Language::Zh, ReasonCode::AlreadyRefunded) => "这笔扣款已经退款（或退款已在处理中），没有可再退的金额。".to_string(),
        (Language::Ja, ReasonCode::AlreadyRefunded) => "このご請求はすでに返金済み（または返金の手続き中）のため、これ以上返金できる金額はありません。".to_string(),
        (Language::En, ReasonCode::NotDuplicate) => "These are two separate purchases, not a duplicate charge, so they are not refunded as a billing error.".to_string(),
        (Language::Zh, ReasonCode::NotDuplicate) => "这是两笔独立的购买，不属于重复扣款，因此不作为账单错误退款。".to_string(),
        (Language::Ja, ReasonCode::NotDuplicate) => "これらは二重請求ではなく別々のご購入のため、請求の誤りとしての返金の対象にはなりません。".to_string(),
        (Language::En, ReasonCode::NotEligible) => "This purchase is not eligible for a refund under our refund policy.".to_string(),
        (Language::Zh, ReasonCode::NotEligible) => "根据我们的退款政策，这笔购买不符合退款条件。".to_string(),
        (Language::Ja, ReasonCode::NotEligible) => "このご購入は、当社の返金ポリシーにより返金の対象外です。".to_string(),
        (Language::En, _) => "We could not find a charge that qualifies for a refund.".to_string(),
        (Language::Zh, _) => "我们没有找到符合退款条件的扣款。".to_string(),
        (Language::Ja, _) => "返金の対象となるご請求が見つかりませんでした。".to_string(),
    }
}

/// A hold-release period as the rules write it for customers (`7 days`, `5 business
/// days`, RP-003), in the customer's language; any other wording is quoted as written.
fn period(lang: Language, text: &str) -> String {
    let (count, unit) = text.split_once(' ').unwrap_or((text, ""));
    let Ok(n) = count.parse::<u32>() else {
        return text.to_string();
    };
    match (lang, unit) {
        (Language::En, _) => text.to_string(),
        (Language::Zh, "day" | "days") => format!("{n} 天"),
        (Language::Zh, "business day" | "business days") => format!("{n} 个工作日"),
        (Language::Ja, "day" | "days") => format!("{n}日"),
        (Language::Ja, "business day" | "business days") => format!("{n}営業日"),
        (Language::Zh | Language::Ja, _) => text.to_string(),
    }
}

/// The case needs a person; the customer is told no more than that.
pub fn escalation_reply(lang: Language) -> String {
    match lang {
        Language::En => "Your request needs a closer look by a specialist team. We will get back to you as soon as possible.",
        Language::Zh => "您的请求需要专门团队进一步审核。我们会尽快回复您。",
        Language::Ja => "お問い合わせは、専門チームによる詳しい確認が必要です。できるだけ早くご連絡いたします。",
    }
    .to_string()
}

/// The reply after the provider answered (or did not).
pub fn refund_reply(lang: Language, refunds: &[CustomerRefundView]) -> String {
    let all = |status: &str| !refunds.is_empty() && refunds.iter().all(|r| r.status == status);
    let list = refunds.iter().map(money).collect::<Vec<_>>().join(", ");
    // RP-005: while an outcome is unknown, the refund is being verified — never failed.
    if refunds.iter().any(|r| r.status == "being_verified") {
        return match lang {
            Language::En => format!("Your refund of {list} is being verified with the payment provider. We will tell you as soon as we know the outcome."),
            Language::Zh => format!("您的 {list} 退款正在核实中，我们确认结果后会立即通知您。"),
            Language::Ja => format!("{list} の返金について、現在決済事業者に結果を確認しています。結果が分かり次第お知らせします。"),
        };
    }
    // RP-005: completed is not arrived; we say when card refunds usually appear.
    if all("completed") {
        return match lang {
            Language::En => format!("Your refund of {list} has been completed by the payment provider, to your original payment method. Card refunds usually appear within 5 to 10 business days, depending on your bank."),
            Language::Zh => format!("您的 {list} 退款已由支付机构完成，将退回原支付方式。银行卡退款通常在 5 到 10 个工作日内到账，具体取决于您的银行。"),
            Language::Ja => format!("{list} の返金は決済事業者で完了し、元のお支払い方法に返金されます。カードへの返金が反映されるまでには、通常5〜10営業日ほどかかります（カード会社により異なります）。"),
        };
    }
    if all("submitted") {
        return match lang {
            Language::En => format!("Your refund of {list} has been submitted to the payment provider and is pending. We will tell you when it is completed."),
            Language::Zh => format!("您的 {list} 退款已提交给支付机构，正在处理中。完成后我们会通知您。"),
            Language::Ja => format!("{list} の返金を決済事業者に申請しました。現在処理中です。完了しだいお知らせします。"),
        };
    }
    // A mix, or refunds the provider did not complete: one plain sentence per refund.
    let parts: Vec<String> = refunds.iter().map(|r| refund_phrase(lang, r)).collect();
    match lang {
        Language::En => format!("Your refund: {}.", parts.join("; ")),
        Language::Zh => format!("您的退款进展：{}。", parts.join("；")),
        Language::Ja => format!("返金の状況：{}。", parts.join("。")),
    }
}

fn money(r: &CustomerRefundView) -> String {
    format!("{} {}", r.amount, r.currency)
}

/// One refund of a mixed outcome, in RP-005's words.
fn refund_phrase(lang: Language, r: &CustomerRefundView) -> String {
    let m = money(r);
    match (lang, r.status.as_str()) {
        (Language::En, "completed") => format!("{m} has been completed"),
        (Language::En, "submitted") => format!("{m} has been submitted and is pending"),
        (Language::En, "in_review") => format!("{m} is being reviewed"),
        (Language::En, _) => format!("{m} could not be completed by the payment provider; our team has been notified and will contact you"),
        (Language::Zh, "completed") => format!("{m} 已完成"),
        (Language::Zh, "submitted") => format!("{m} 已提交，正在处理中"),
        (Language::Zh, "in_review") => format!("{m} 正在审核"),
        (Language::Zh, _) => format!("{m} 未能由支付机构完成，我们的团队已收到通知，会与您联系"),
        (Language::Ja, "completed") => format!("{m} は完了しました"),
        (Language::Ja, "submitted") => format!("{m} は申請済みで、処理中です"),
        (Language::Ja, "in_review") => format!("{m} は審査中です"),
        (Language::Ja, _) => format!("{m} は決済事業者での返金が完了しませんでした。担当チームに通知済みで、こちらからご連絡いたします"),
    }
}

/// A refund's customer status (`CustomerRefundView::status`) as a short label for the
/// ticket page's refund table.
pub fn refund_status_text(lang: Language, status: &str) -> &'static str {
    match (lang, status) {
        (Language::En, "completed") => "Completed",
        (Language::En, "submitted") => "Submitted",
        (Language::En, "in_review") => "Under review",
        (Language::En, "being_verified") => "Being verified",
        (Language::En, _) => "Not completed",
        (Language::Zh, "completed") => "已完成",
        (Language::Zh, "submitted") => "已提交",
        (Language::Zh, "in_review") => "审核中",
        (Language::Zh, "being_verified") => "核实中",
        (Language::Zh, _) => "未完成",
        (Language::Ja, "completed") => "完了",
        (Language::Ja, "submitted") => "申請済み",
        (Language::Ja, "in_review") => "審査中",
        (Language::Ja, "being_verified") => "確認中",
        (Language::Ja, _) => "未完了",
    }
}

/// One line for the ticket page's status banner.
pub fn status_text(lang: Language, status: CaseStatus, refunds: &[CustomerRefundView]) -> String {
    let (en, zh, ja) = status_words(status, refunds);
    match lang {
        Language::En => en,
        Language::Zh => zh,
        Language::Ja => ja,
    }
    .to_string()
}

/// The banner of each status in English, Chinese and Japanese.
fn status_words(
    status: CaseStatus,
    refunds: &[CustomerRefundView],
) -> (&'static str, &'static str, &'static str) {
    match status {
        CaseStatus::Open
        | CaseStatus::Investigating
        | CaseStatus::Proposed
        | CaseStatus::Decided => ("We are looking into it", "正在调查", "調査中"),
        CaseStatus::AwaitingCustomer => (
            "Waiting for your reply",
            "等待您的回复",
            "お客様のご返信待ち",
        ),
        CaseStatus::AwaitingApproval | CaseStatus::Approved => {
            ("Refund under review", "退款审核中", "返金審査中")
        }
        CaseStatus::Executing | CaseStatus::RefundPending => {
            ("Refund submitted", "退款已提交", "返金申請済み")
        }
        CaseStatus::PendingVerification => ("Refund being verified", "退款核实中", "返金確認中"),
        CaseStatus::RefundSucceeded => ("Refund completed", "退款已完成", "返金完了"),
        CaseStatus::RefundFailed if refunds.iter().any(|r| r.status == "completed") => (
            "Refund partly completed",
            "部分退款已完成",
            "一部の返金が完了",
        ),
        CaseStatus::RefundFailed => (
            "Refund did not go through; we are on it",
            "退款未成功，我们正在处理",
            "返金が完了しませんでした。対応しています",
        ),
        CaseStatus::Denied => (
            "Not eligible for a refund",
            "不符合退款条件",
            "返金の対象外",
        ),
        CaseStatus::Escalated => (
            "With a specialist team",
            "专门团队审核中",
            "専門チームが確認中",
        ),
        CaseStatus::Rejected => (
            "Refund not approved",
            "退款未获批准",
            "返金は承認されませんでした",
        ),
        CaseStatus::Cancelled => ("Withdrawn", "已撤回", "取り下げ済み"),
        CaseStatus::Replied | CaseStatus::Closed => ("Closed", "已结束", "終了"),
    }
}

/// A reviewer rejected the refund the engine allowed (`approvals`).
pub fn rejection_reply(lang: Language) -> String {
    match lang {
        Language::En => "After review by our team, this refund was not approved. If you have more information, reply here.",
        Language::Zh => "经过我们团队的审核，这笔退款未获批准。如果您有更多信息，请直接在此回复。",
        Language::Ja => "担当チームで審査した結果、この返金は承認されませんでした。追加の情報がございましたら、こちらにご返信ください。",
    }
    .to_string()
}

/// Live shadow mode: the agent's decision is hidden until a person decides.
pub fn shadow_review_reply(lang: Language) -> String {
    match lang {
        Language::En => {
            "A member of our team will review your request and get back to you shortly."
        }
        Language::Zh => "我们的团队成员会审核您的请求，并尽快回复您。",
        Language::Ja => "担当者がお問い合わせを確認し、追ってご連絡いたします。",
    }
    .to_string()
}

/// What a reviewer decided by hand in live shadow mode, as the customer is told.
#[derive(Debug, Clone, Copy)]
pub enum HandDecision<'a> {
    /// A refund of these amounts waits for someone else's approval.
    AwaitingApproval {
        amounts: &'a str,
    },
    NotEligible,
    /// The reviewer needs to know which order.
    RequestInfo,
}

pub fn hand_decision_reply(lang: Language, decision: HandDecision<'_>) -> String {
    match (decision, lang) {
        (HandDecision::AwaitingApproval { amounts }, Language::En) => format!("We reviewed your request; a refund of {amounts} is awaiting approval. We will tell you as soon as it is submitted."),
        (HandDecision::AwaitingApproval { amounts }, Language::Zh) => format!("我们已审核您的请求，{amounts} 的退款正在等待批准。退款一经提交，我们会立即通知您。"),
        (HandDecision::AwaitingApproval { amounts }, Language::Ja) => format!("お問い合わせを確認しました。{amounts} の返金は承認待ちです。返金を申請した時点で、すぐにお知らせします。"),
        (HandDecision::NotEligible, Language::En) => "We reviewed your request. Unfortunately it is not eligible for a refund under our refund policy.".to_string(),
        (HandDecision::NotEligible, Language::Zh) => "我们已审核您的请求，很遗憾这笔购买不符合我们退款政策的退款条件。".to_string(),
        (HandDecision::NotEligible, Language::Ja) => "お問い合わせを確認しました。申し訳ございませんが、当社の返金ポリシーにより返金の対象外です。".to_string(),
        (HandDecision::RequestInfo, Language::En) => "To go on, please tell us which order this is about (for example its order number).".to_string(),
        (HandDecision::RequestInfo, Language::Zh) => "为了继续处理，请告诉我们您指的是哪一个订单（例如订单号）。".to_string(),
        (HandDecision::RequestInfo, Language::Ja) => "手続きを進めるため、どのご注文についてのお問い合わせか（例：注文番号）をお知らせください。".to_string(),
    }
}

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

/// Every label of the customer's ticket list and ticket page, in one language. A struct
/// rather than strings compared in templates: a language without a label does not compile.
#[derive(Debug)]
pub struct PageText {
    pub support: &'static str,
    pub my_tickets: &'static str,
    pub your_ticket: &'static str,
    pub status: &'static str,
    pub write_message: &'static str,
    pub send: &'static str,
    pub withdraw: &'static str,
    pub open_ticket: &'static str,
    pub what_happened: &'static str,
    pub order_number: &'static str,
    pub no_tickets: &'static str,
    pub customer: &'static str,
    pub agent: &'static str,
    pub staff: &'static str,
    pub sign_out: &'static str,
    pub sign_in: &'static str,
    pub sign_in_once: &'static str,
    pub sign_in_continue: &'static str,
    pub signed_out: &'static str,
    pub link_not_valid: &'static str,
    pub open_from_link: &'static str,
}

const EN_PAGE: PageText = PageText {
    support: "Customer support",
    my_tickets: "My tickets",
    your_ticket: "Your ticket",
    status: "Status",
    write_message: "Write a message",
    send: "Send",
    withdraw: "Withdraw my request",
    open_ticket: "Open a ticket",
    what_happened: "What happened?",
    order_number: "Order number (optional)",
    no_tickets: "No tickets yet.",
    customer: "You",
    agent: "Support",
    staff: "Support team",
    sign_out: "Sign out",
    sign_in: "Sign in",
    sign_in_once: "This link signs you in once and works for 15 minutes.",
    sign_in_continue: "Continue",
    signed_out: "You are signed out. Open the sign-in link we sent you to sign in again.",
    link_not_valid:
        "This link is not valid, was already used or has expired. Ask us for a new one.",
    open_from_link: "Open this page from the link we sent you.",
};

const ZH_PAGE: PageText = PageText {
    support: "客户服务",
    my_tickets: "我的工单",
    your_ticket: "您的工单",
    status: "状态",
    write_message: "写下您的消息",
    send: "发送",
    withdraw: "撤回请求",
    open_ticket: "提交工单",
    what_happened: "发生了什么？",
    order_number: "订单号（可选）",
    no_tickets: "还没有工单。",
    customer: "您",
    agent: "客服",
    staff: "客服团队",
    sign_out: "退出",
    sign_in: "登录",
    sign_in_once: "此链接仅可使用一次，15 分钟内有效。",
    sign_in_continue: "继续",
    signed_out: "您已退出。请打开我们发给您的登录链接重新登录。",
    link_not_valid: "此链接无效、已被使用或已过期。请联系我们获取新链接。",
    open_from_link: "请通过我们发给您的链接打开此页面。",
};

const JA_PAGE: PageText = PageText {
    support: "カスタマーサポート",
    my_tickets: "お問い合わせ一覧",
    your_ticket: "お問い合わせ",
    status: "状況",
    write_message: "メッセージを入力してください",
    send: "送信",
    withdraw: "お問い合わせを取り下げる",
    open_ticket: "お問い合わせを送る",
    what_happened: "どのようなことがありましたか？",
    order_number: "注文番号（任意）",
    no_tickets: "お問い合わせはまだありません。",
    customer: "お客様",
    agent: "サポート",
    staff: "サポートチーム",
    sign_out: "サインアウト",
    sign_in: "サインイン",
    sign_in_once: "このリンクでサインインできるのは1回のみで、有効期限は15分です。",
    sign_in_continue: "続ける",
    signed_out: "サインアウトしました。もう一度サインインするには、お送りしたサインイン用リンクを開いてください。",
    link_not_valid: "このリンクは無効か、使用済みか、有効期限が切れています。新しいリンクをお問い合わせください。",
    open_from_link: "このページは、お送りしたリンクから開いてください。",
};

pub fn page_text(lang: Language) -> &'static PageText {
    match lang {
        Language::En => &EN_PAGE,
        Language::Zh => &ZH_PAGE,
        Language::Ja => &JA_PAGE,
    }
}

impl PageText {
    /// Who wrote a message (`messages.author`), as the customer sees it.
    pub fn author(&self, author: &str) -> &'static str {
        match author {
            "customer" => self.customer,
            "staff" => self.staff,
            _ => self.agent,
        }
    }
}

/// Why a customer's action on the ticket pages failed, in their language. Built from the
/// error's code, so the API keeps its English messages while the pages speak the
/// customer's language; internal errors stay opaque.
pub fn page_error(lang: Language, error: &AppError) -> String {
    match (lang, error.code()) {
        (Language::En, "empty_message") => "The message is empty.".to_string(),
        (Language::Zh, "empty_message") => "消息为空。".to_string(),
        (Language::Ja, "empty_message") => "メッセージが入力されていません。".to_string(),
        (Language::En, "payload_too_large") => format!(
            "Messages are at most {} characters.",
            crate::tickets::MAX_MESSAGE_CHARS
        ),
        (Language::Zh, "payload_too_large") => {
            format!("消息最多 {} 个字符。", crate::tickets::MAX_MESSAGE_CHARS)
        }
        (Language::Ja, "payload_too_large") => format!(
            "メッセージは{}文字以内で入力してください。",
            crate::tickets::MAX_MESSAGE_CHARS
        ),
        (Language::En, "invalid_order_id") => {
            "Order numbers are at most 64 characters.".to_string()
        }
        (Language::Zh, "invalid_order_id") => "订单号最多 64 个字符。".to_string(),
        (Language::Ja, "invalid_order_id") => {
            "注文番号は64文字以内で入力してください。".to_string()
        }
        (Language::En, "rate_limited") => {
            "You have sent many messages in a short time. Please wait a moment and try again."
                .to_string()
        }
        (Language::Zh, "rate_limited") => "您在短时间内发送了太多消息，请稍后再试。".to_string(),
        (Language::Ja, "rate_limited") => {
            "短時間に多くのメッセージが送信されました。しばらくしてから、もう一度お試しください。"
                .to_string()
        }
        (lang, "not_found") => ticket_not_found(lang).to_string(),
        (Language::En, "case_changed" | "conflict") => {
            "Your request changed meanwhile. Reload the page and try again.".to_string()
        }
        (Language::Zh, "case_changed" | "conflict") => {
            "您的请求状态已更新，请刷新页面后重试。".to_string()
        }
        (Language::Ja, "case_changed" | "conflict") => {
            "お問い合わせの状況が更新されました。ページを再読み込みして、もう一度お試しください。"
                .to_string()
        }
        (Language::En, _) => "Something went wrong. Please try again.".to_string(),
        (Language::Zh, _) => "出现了问题，请重试。".to_string(),
        (Language::Ja, _) => "問題が発生しました。もう一度お試しください。".to_string(),
    }
}

/// The page for a ticket that does not exist or is not the customer's: the same words
/// for both (RP-007: never confirm another customer's records).
pub fn ticket_not_found(lang: Language) -> &'static str {
    match lang {
        Language::En => "Ticket not found.",
        Language::Zh => "未找到该工单。",
        Language::Ja => "お問い合わせが見つかりません。",
    }
}

#[cfg(test)]
mod tests {
    use policy_engine::{Currency, FiredRule, Money, Outcome, RefundLine};

    use super::*;

    fn refund(status: &str) -> CustomerRefundView {
        CustomerRefundView {
            amount: "198.00".into(),
            currency: "CNY".into(),
            status: status.into(),
        }
    }

    fn decision(outcome: Outcome, reason_code: ReasonCode) -> Decision {
        let refunds = match outcome {
            Outcome::Allow => vec![RefundLine {
                order_id: "O-4001".into(),
                charge_id: "ch_4001b".into(),
                amount: Money::parse("19800", Currency::JPY).expect("a JPY amount"),
                payment_method: "card".into(),
            }],
            _ => vec![],
        };
        Decision {
            outcome,
            reason_code,
            refunds,
            approver_role: None,
            escalation: None,
            missing: None,
            rules: vec![FiredRule {
                citation: "RP-003@1#1".into(),
                summary: "hold".into(),
            }],
            policy_versions: vec!["RP-003@1".into()],
            facts_used: vec![],
            hold_release: Some("5 business days".into()),
            hash: String::new(),
        }
    }

    /// The script a text is written in, the way a reader tells the three apart: kana
    /// only in Japanese, Han without kana in Chinese, neither in English.
    fn written_in(text: &str) -> Language {
        crate::tickets::detect_language(text, None)
    }

    #[test]
    fn refund_replies_say_only_what_the_records_show() {
        let cases = [
            ("completed", "has been completed by the payment provider"),
            (
                "submitted",
                "has been submitted to the payment provider and is pending",
            ),
            ("being_verified", "is being verified"),
            (
                "not_completed",
                "could not be completed by the payment provider",
            ),
        ];
        for (status, expected) in cases {
            let text = refund_reply(Language::En, &[refund(status)]);
            assert!(
                text.contains(expected) && text.contains("198.00 CNY"),
                "{status}: {text}"
            );
            assert!(
                !text.contains("not_completed") && !text.contains("_"),
                "no internal words: {text}"
            );
        }
        assert!(refund_reply(Language::Zh, &[refund("completed")]).contains("已由支付机构完成"));
        assert!(refund_reply(Language::Zh, &[refund("being_verified")]).contains("核实中"));
    }

    #[test]
    fn every_refund_reply_says_the_true_status_in_every_language() {
        // (status, what each language must say, what it must never say). RP-005:
        // submitted is not completed, being verified is neither failed nor succeeded,
        // completed is not arrived.
        type Words = [(Language, &'static str, &'static [&'static str]); 3];
        let cases: [(&str, Words); 3] = [
            (
                "submitted",
                [
                    (Language::En, "has been submitted", &["has been completed"]),
                    (Language::Zh, "已提交", &["已由支付机构完成"]),
                    (
                        Language::Ja,
                        "申請しました",
                        &["完了し、", "返金されます", "完了しました"],
                    ),
                ],
            ),
            (
                "completed",
                [
                    (
                        Language::En,
                        "has been completed",
                        &["arrived", "in your account"],
                    ),
                    (Language::Zh, "已由支付机构完成", &["已到账"]),
                    (
                        Language::Ja,
                        "決済事業者で完了",
                        &["着金しました", "入金されました"],
                    ),
                ],
            ),
            (
                "being_verified",
                [
                    (
                        Language::En,
                        "being verified",
                        &["failed", "has been completed"],
                    ),
                    (Language::Zh, "核实中", &["失败", "已完成"]),
                    (Language::Ja, "確認しています", &["失敗", "完了しました"]),
                ],
            ),
        ];
        for (status, words) in cases {
            for (lang, must, never) in words {
                let text = refund_reply(lang, &[refund(status)]);
                assert_eq!(written_in(&text), lang, "{status} in {lang}: {text}");
                assert!(text.contains(must), "{status} in {lang}: {text}");
                assert!(text.contains("198.00 CNY"), "amount and currency: {text}");
                for word in never {
                    assert!(
                        !text.contains(word),
                        "{status} in {lang} says {word}: {text}"
                    );
                }
            }
        }
        let mixed = [refund("completed"), refund("not_completed")];
        for (lang, done, not_done) in [
            (Language::En, "has been completed", "could not be completed"),
            (Language::Zh, "已完成", "未能由支付机构完成"),
            (Language::Ja, "は完了しました", "返金が完了しませんでした"),
        ] {
            let text = refund_reply(lang, &mixed);
            assert_eq!(written_in(&text), lang, "{text}");
            assert!(
                text.contains(done) && text.contains(not_done),
                "{lang}: {text}"
            );
        }
    }

    #[test]
    fn every_decision_and_staff_reply_exists_in_every_language() {
        let allow = decision(Outcome::Allow, ReasonCode::DuplicateCharge);
        let hold = decision(Outcome::Deny, ReasonCode::AuthorizationHold);
        let needs_order = decision(Outcome::RequestInfo, ReasonCode::InsufficientInfo);
        for lang in Language::ALL {
            let under_review = decision_reply(lang, CaseStatus::AwaitingApproval, &allow);
            assert!(under_review.contains("19800 JPY"), "{lang}: {under_review}");
            let denied = decision_reply(lang, CaseStatus::Denied, &hold);
            assert!(denied.contains("RP-003"), "the policy is named: {denied}");
            assert!(
                lang == Language::En || !denied.contains("days"),
                "the period is translated: {denied}"
            );
            let replies = [
                under_review,
                denied,
                decision_reply(lang, CaseStatus::AwaitingCustomer, &needs_order),
                decision_reply(lang, CaseStatus::Escalated, &needs_order),
                decision_reply(lang, CaseStatus::Investigating, &needs_order),
                escalation_reply(lang),
                rejection_reply(lang),
                shadow_review_reply(lang),
                hand_decision_reply(
                    lang,
                    HandDecision::AwaitingApproval {
                        amounts: "19800 JPY",
                    },
                ),
                hand_decision_reply(lang, HandDecision::NotEligible),
                hand_decision_reply(lang, HandDecision::RequestInfo),
                withdrawal_reply(lang, WithdrawalReply::AlreadyWithdrawn),
                withdrawal_reply(lang, WithdrawalReply::Withdrawn),
                withdrawal_reply(lang, WithdrawalReply::TooLate { status: "x" }),
            ];
            for text in replies {
                assert_eq!(written_in(&text), lang, "{text}");
            }
            for code in ReasonCode::ALL {
                let text = decision_reply(lang, CaseStatus::Denied, &decision(Outcome::Deny, code));
                assert_eq!(written_in(&text), lang, "{code:?}: {text}");
            }
        }
        // A refund under review is not submitted yet (RP-005): no Japanese status phrase.
        for text in [
            decision_reply(Language::Ja, CaseStatus::AwaitingApproval, &allow),
            hand_decision_reply(
                Language::Ja,
                HandDecision::AwaitingApproval { amounts: "1 JPY" },
            ),
        ] {
            for claim in [
                "申請しました",
                "申請済み",
                "完了しました",
                "決済事業者で完了",
            ] {
                assert!(!text.contains(claim), "{claim}: {text}");
            }
        }
        assert!(decision_reply(Language::Ja, CaseStatus::Denied, &hold).contains("5営業日以内"));
        assert!(decision_reply(Language::Zh, CaseStatus::Denied, &hold).contains("5 个工作日内"));
    }

    #[test]
    fn the_japanese_status_banner_tells_submitted_completed_and_being_verified_apart() {
        let ja = |status| status_text(Language::Ja, status, &[]);
        assert_eq!(ja(CaseStatus::RefundPending), "返金申請済み");
        assert_eq!(ja(CaseStatus::RefundSucceeded), "返金完了");
        assert_eq!(ja(CaseStatus::PendingVerification), "返金確認中");
        assert_eq!(ja(CaseStatus::AwaitingApproval), "返金審査中");
        assert_eq!(
            status_text(
                Language::Ja,
                CaseStatus::RefundFailed,
                &[refund("completed")]
            ),
            "一部の返金が完了"
        );
        for lang in Language::ALL {
            let banners: Vec<String> = [
                CaseStatus::RefundPending,
                CaseStatus::RefundSucceeded,
                CaseStatus::PendingVerification,
            ]
            .into_iter()
            .map(|s| status_text(lang, s, &[]))
            .collect();
            assert!(
                banners[0] != banners[1] && banners[1] != banners[2] && banners[0] != banners[2],
                "{lang}: {banners:?}"
            );
        }
    }

    #[test]
    fn page_labels_and_errors_exist_in_every_language() {
        let errors = [
            AppError::bad_request("empty_message", "the message is empty"),
            AppError::PayloadTooLarge("too long".into()),
            AppError::bad_request("invalid_order_id", "too long"),
            AppError::TooManyRequests,
            AppError::NotFound("ticket"),
            crate::cases::case_changed(),
            AppError::Internal(anyhow::anyhow!("secret detail")),
        ];
        let labels = |t: &PageText| {
            [
                t.support,
                t.my_tickets,
                t.your_ticket,
                t.status,
                t.write_message,
                t.send,
                t.withdraw,
                t.open_ticket,
                t.what_happened,
                t.order_number,
                t.no_tickets,
                t.customer,
                t.agent,
                t.staff,
                t.sign_out,
                t.sign_in,
                t.sign_in_once,
                t.sign_in_continue,
                t.signed_out,
                t.link_not_valid,
                t.open_from_link,
            ]
        };
        let english = labels(page_text(Language::En));
        for lang in [Language::Zh, Language::Ja] {
            let own = labels(page_text(lang));
            // A short Japanese label may be all kanji (送信); the page as a whole is not.
            assert_eq!(written_in(&own.join(" ")), lang, "{own:?}");
            for (label, en) in own.iter().zip(english) {
                assert!(!label.is_empty() && *label != en, "{lang}: {label}");
                assert!(
                    !label.chars().any(|c| c.is_ascii_alphabetic()),
                    "{lang}: {label}"
                );
            }
            for e in &errors {
                let text = page_error(lang, e);
                assert_eq!(written_in(&text), lang, "{}: {text}", e.code());
                assert!(!text.contains("secret"), "internal errors stay opaque");
            }
        }
        assert_eq!(
            page_error(Language::Ja, &AppError::NotFound("ticket")),
            ticket_not_found(Language::Ja)
        );
        assert!(page_error(Language::En, &errors[0]).contains("empty"));
    }

    #[test]
    fn language_codes_round_trip_and_unknown_codes_fall_back_to_english() {
        for lang in Language::ALL {
            assert_eq!(lang.as_str().parse::<Language>(), Ok(lang));
            assert_eq!(serde_json::to_value(lang).unwrap(), lang.as_str());
        }
        assert_eq!("jp".parse::<Language>(), Err(UnknownLanguage("jp".into())));
        assert_eq!(Language::from_stored("ko"), Language::En);
        let accept = |h: &str| Language::from_accept_language(Some(h));
        assert_eq!(accept("ja,en-US;q=0.9,en;q=0.8"), Language::Ja);
        assert_eq!(accept("en-US;q=0.5, zh-CN"), Language::Zh);
        assert_eq!(accept("fr-FR, ja;q=0.3"), Language::Ja);
        assert_eq!(accept("ja;q=0, de"), Language::En);
        assert_eq!(accept("ja;q=oops"), Language::En);
        assert_eq!(Language::from_accept_language(None), Language::En);
        assert_eq!(Language::of_region(Region::JP), Language::Ja);
        assert_eq!(Language::of_region(Region::CN), Language::Zh);
        assert_eq!(Language::of_region(Region::EU), Language::En);
    }
}
