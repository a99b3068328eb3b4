//! The ticket page's status banner, per case status, in each language.

use super::language::Language;
use crate::replies::CustomerRefundView;
use crate::states::CaseStatus;

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
