//! What the customer is told about their refunds once the provider answered (RP-005:
//! submitted, completed or being verified, never failed while unknown).

use super::language::Language;
use serde::Serialize;

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

/// A refund as the customer may see it, in RP-005's words.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CustomerRefundView {
    pub amount: String,
    pub currency: String,
    /// `in_review`, `submitted`, `completed`, `being_verified`, `not_completed`.
    pub status: String,
}
