//! The labels and error messages of the customer's ticket pages, per language.

use super::language::Language;
use crate::error::DomainError;

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
    pub no_such_page: &'static str,
    pub talk_to_person: &'static str,
    pub withdraw_confirm: &'static str,
    pub withdraw_yes: &'static str,
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
    no_such_page: "There is no such page.",
    talk_to_person: "Talk to a person",
    withdraw_confirm: "Withdraw this request? Work on it stops; nothing already sent to your bank can be taken back.",
    withdraw_yes: "Yes, withdraw it",
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
    no_such_page: "该页面不存在。",
    talk_to_person: "联系人工客服",
    withdraw_confirm: "确定撤回此请求吗？处理将停止；已提交给银行的款项无法撤回。",
    withdraw_yes: "是的，撤回",
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
    no_such_page: "このページは存在しません。",
    talk_to_person: "担当者と話す",
    withdraw_confirm: "このお問い合わせを取り下げますか？対応は停止します。すでに銀行へ送られた処理は取り消せません。",
    withdraw_yes: "はい、取り下げます",
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
pub fn page_error(lang: Language, error: &DomainError) -> String {
    match (lang, error.code()) {
        (Language::En, "empty_message") => "The message is empty.".to_string(),
        (Language::Zh, "empty_message") => "消息为空。".to_string(),
        (Language::Ja, "empty_message") => "メッセージが入力されていません。".to_string(),
        (Language::En, "payload_too_large") => format!(
            "Messages are at most {} characters.",
            super::MAX_MESSAGE_CHARS
        ),
        (Language::Zh, "payload_too_large") => {
            format!("消息最多 {} 个字符。", super::MAX_MESSAGE_CHARS)
        }
        (Language::Ja, "payload_too_large") => format!(
            "メッセージは{}文字以内で入力してください。",
            super::MAX_MESSAGE_CHARS
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
