//! What the customer is told, in their language (English or Chinese), per RP-005:
//! only what the records show — submitted, completed, or being verified — amounts with
//! their currency, denials with a plain reason and the policy they come from, and never
//! internal thresholds, staff names or anyone else's data.

use policy_engine::{Decision, ReasonCode};

use crate::cases::CaseStatus;
use crate::refunds::CustomerRefundView;

fn zh(lang: &str) -> bool {
    lang == "zh"
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
pub fn decision_reply(lang: &str, status: CaseStatus, decision: &Decision) -> String {
    let status = customer_status(status, Some(decision.reason_code.as_str()));
    let policy = policy_of(decision);
    match (status, zh(lang)) {
        (CaseStatus::AwaitingApproval, false) => format!(
            "We found what happened and a refund of {} is being reviewed by our team. We will tell you as soon as it is submitted.",
            amounts(decision)
        ),
        (CaseStatus::AwaitingApproval, true) => {
            format!("我们已查明情况，{} 的退款正在由我们的团队审核。退款一经提交，我们会立即通知您。", amounts(decision))
        }
        (CaseStatus::AwaitingCustomer, false) => {
            "You have more than one order with us. Please tell us which order this is about (for example its order number).".to_string()
        }
        (CaseStatus::AwaitingCustomer, true) => "您在我们这里有多个订单。请告诉我们您指的是哪一个订单（例如订单号）。".to_string(),
        (CaseStatus::Denied, false) => format!("{} (policy {policy})", deny_reason_en(decision)),
        (CaseStatus::Denied, true) => format!("{}（依据政策 {policy}）", deny_reason_zh(decision)),
        (CaseStatus::Escalated, false) => escalation_reply(lang),
        (CaseStatus::Escalated, true) => escalation_reply(lang),
        (_, false) => "We are looking into your request.".to_string(),
        (_, true) => "我们正在处理您的请求。".to_string(),
    }
}

fn deny_reason_en(decision: &Decision) -> String {
    match decision.reason_code {
        ReasonCode::AuthorizationHold => format!(
            "The second amount on your card is an authorization hold, not a charge: no money was taken and there is nothing to refund. Your card issuer releases it automatically within {}.",
            decision.hold_release.as_deref().unwrap_or("a few days")
        ),
        ReasonCode::AlreadyRefunded => "This charge has already been refunded (or a refund is already on its way), so there is nothing more to refund.".to_string(),
        ReasonCode::NotDuplicate => "These are two separate purchases, not a duplicate charge, so they are not refunded as a billing error.".to_string(),
        ReasonCode::NotEligible => "This purchase is not eligible for a refund under our refund policy.".to_string(),
        _ => "We could not find a charge that qualifies for a refund.".to_string(),
    }
}

fn deny_reason_zh(decision: &Decision) -> String {
    match decision.reason_code {
        ReasonCode::AuthorizationHold => format!(
            "您卡上的第二笔金额是预授权冻结，并非实际扣款：没有扣走任何资金，因此无需退款。发卡行会在{}内自动释放。",
            decision.hold_release.as_deref().unwrap_or("几天")
        ),
        ReasonCode::AlreadyRefunded => "这笔扣款已经退款（或退款已在处理中），没有可再退的金额。".to_string(),
        ReasonCode::NotDuplicate => "这是两笔独立的购买，不属于重复扣款，因此不作为账单错误退款。".to_string(),
        ReasonCode::NotEligible => "根据我们的退款政策，这笔购买不符合退款条件。".to_string(),
        _ => "我们没有找到符合退款条件的扣款。".to_string(),
    }
}

pub fn escalation_reply(lang: &str) -> String {
    if zh(lang) {
        "您的请求需要专门团队进一步审核。我们会尽快回复您。".to_string()
    } else {
        "Your request needs a closer look by a specialist team. We will get back to you as soon as possible.".to_string()
    }
}

/// The reply after the provider answered (or did not).
pub fn refund_reply(lang: &str, refunds: &[CustomerRefundView]) -> String {
    let z = zh(lang);
    let money = |r: &CustomerRefundView| format!("{} {}", r.amount, r.currency);
    let all = |status: &str| !refunds.is_empty() && refunds.iter().all(|r| r.status == status);
    let list = refunds.iter().map(money).collect::<Vec<_>>().join(", ");
    if refunds.iter().any(|r| r.status == "being_verified") {
        return if z {
            format!("您的 {list} 退款正在核实中，我们确认结果后会立即通知您。")
        } else {
            format!("Your refund of {list} is being verified with the payment provider. We will tell you as soon as we know the outcome.")
        };
    }
    if all("completed") {
        return if z {
            format!("您的 {list} 退款已由支付机构完成，将退回原支付方式。银行卡退款通常在 5 到 10 个工作日内到账，具体取决于您的银行。")
        } else {
            format!("Your refund of {list} has been completed by the payment provider, to your original payment method. Card refunds usually appear within 5 to 10 business days, depending on your bank.")
        };
    }
    if all("submitted") {
        return if z {
            format!("您的 {list} 退款已提交给支付机构，正在处理中。完成后我们会通知您。")
        } else {
            format!("Your refund of {list} has been submitted to the payment provider and is pending. We will tell you when it is completed.")
        };
    }
    // A mix, or refunds the provider did not complete: one plain sentence per refund.
    let phrase = |r: &CustomerRefundView| -> String {
        match (z, r.status.as_str()) {
            (false, "completed") => format!("{} has been completed", money(r)),
            (false, "submitted") => format!("{} has been submitted and is pending", money(r)),
            (false, "in_review") => format!("{} is being reviewed", money(r)),
            (false, _) => format!("{} could not be completed by the payment provider; our team has been notified and will contact you", money(r)),
            (true, "completed") => format!("{} 已完成", money(r)),
            (true, "submitted") => format!("{} 已提交，正在处理中", money(r)),
            (true, "in_review") => format!("{} 正在审核", money(r)),
            (true, _) => format!("{} 未能由支付机构完成，我们的团队已收到通知，会与您联系", money(r)),
        }
    };
    let parts: Vec<String> = refunds.iter().map(phrase).collect();
    if z {
        format!("您的退款进展：{}。", parts.join("；"))
    } else {
        format!("Your refund: {}.", parts.join("; "))
    }
}

/// One line for the ticket page's status banner.
pub fn status_text(lang: &str, status: CaseStatus, refunds: &[CustomerRefundView]) -> String {
    let z = zh(lang);
    let refund_word = |s: &str| refunds.iter().any(|r| r.status == s);
    match status {
        CaseStatus::Open
        | CaseStatus::Investigating
        | CaseStatus::Proposed
        | CaseStatus::Decided => {
            if z {
                "正在调查".into()
            } else {
                "We are looking into it".into()
            }
        }
        CaseStatus::AwaitingCustomer => {
            if z {
                "等待您的回复".into()
            } else {
                "Waiting for your reply".into()
            }
        }
        CaseStatus::AwaitingApproval | CaseStatus::Approved => {
            if z {
                "退款审核中".into()
            } else {
                "Refund under review".into()
            }
        }
        CaseStatus::Executing | CaseStatus::RefundPending => {
            if z {
                "退款已提交".into()
            } else {
                "Refund submitted".into()
            }
        }
        CaseStatus::PendingVerification => {
            if z {
                "退款核实中".into()
            } else {
                "Refund being verified".into()
            }
        }
        CaseStatus::RefundSucceeded => {
            if z {
                "退款已完成".into()
            } else {
                "Refund completed".into()
            }
        }
        CaseStatus::RefundFailed if refund_word("completed") => {
            if z {
                "部分退款已完成".into()
            } else {
                "Refund partly completed".into()
            }
        }
        CaseStatus::RefundFailed => {
            if z {
                "退款未成功，我们正在处理".into()
            } else {
                "Refund did not go through; we are on it".into()
            }
        }
        CaseStatus::Denied => {
            if z {
                "不符合退款条件".into()
            } else {
                "Not eligible for a refund".into()
            }
        }
        CaseStatus::Escalated => {
            if z {
                "专门团队审核中".into()
            } else {
                "With a specialist team".into()
            }
        }
        CaseStatus::Rejected => {
            if z {
                "退款未获批准".into()
            } else {
                "Refund not approved".into()
            }
        }
        CaseStatus::Cancelled => {
            if z {
                "已撤回".into()
            } else {
                "Withdrawn".into()
            }
        }
        CaseStatus::Replied | CaseStatus::Closed => {
            if z {
                "已结束".into()
            } else {
                "Closed".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refund(status: &str) -> CustomerRefundView {
        CustomerRefundView {
            amount: "198.00".into(),
            currency: "CNY".into(),
            status: status.into(),
        }
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
            let text = refund_reply("en", &[refund(status)]);
            assert!(
                text.contains(expected) && text.contains("198.00 CNY"),
                "{status}: {text}"
            );
            assert!(
                !text.contains("not_completed") && !text.contains("_"),
                "no internal words: {text}"
            );
        }
        assert!(refund_reply("zh", &[refund("completed")]).contains("已由支付机构完成"));
        assert!(refund_reply("zh", &[refund("being_verified")]).contains("核实中"));
    }
}
