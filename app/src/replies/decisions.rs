//! What the customer is told when the policy engine has decided (RP-005): under review,
//! which order, a denial with its plain reason and policy, or a specialist's look.

use policy_engine::{Decision, ReasonCode};

use super::language::Language;
use crate::states::CaseStatus;

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
