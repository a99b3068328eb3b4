//! What the customer is told when a second ticket about an order joins the case already
//! working on it (issue 17).

use super::language::Language;

/// The ticket's message went on to `ticket_id`, the customer's open ticket on the order.
pub fn joined_reply(lang: Language, ticket_id: &str) -> String {
    match lang {
        Language::En => format!(
            "You already have an open request about this order (ticket {ticket_id}). We have added your message to it, so one person looks at everything together; we will answer you there."
        ),
        Language::Zh => format!(
            "您已就此订单提交过一个尚在处理中的请求（工单 {ticket_id}）。我们已将您的留言添加到该工单，以便统一处理，并将在那里回复您。"
        ),
        Language::Ja => format!(
            "このご注文については、対応中のお問い合わせ（チケット {ticket_id}）がございます。ご連絡内容をそちらに追加し、まとめて確認いたします。回答はそちらのチケットでお送りします。"
        ),
    }
}
