//! The words of the mails the product sends (issue 37): each mail's subject line, the
//! sentences of the changes that have no reply text of their own on the ticket (received,
//! approved, reopened, closed, the unknown sender, the sender to confirm) and the frame
//! around every mail (the link, how to answer). Honest per RP-005: approved is not sent,
//! sent is not completed. The refund, decision and staff reply texts a mail carries are
//! the ticket's own (the rest of `replies`).

use super::Language;
use crate::mailbox::MailKind;

/// A mail's subject: what happened, then the ticket's own subject, then its token (the
/// fallback that threads an answer whose client dropped `In-Reply-To`).
pub fn mail_subject(lang: Language, kind: MailKind, ticket_subject: &str, token: &str) -> String {
    let what = headline(lang, kind);
    let about = ticket_subject.trim();
    match (about.is_empty(), token.is_empty()) {
        (true, true) => what.to_string(),
        (true, false) => format!("{what} [#{token}]"),
        (false, true) => format!("{what}: {about}"),
        (false, false) => format!("{what}: {about} [#{token}]"),
    }
}

/// The first line of a mail and its subject's start.
pub fn headline(lang: Language, kind: MailKind) -> &'static str {
    use Language::*;
    use MailKind::*;
    match (lang, kind) {
        (En, Received) => "We received your request",
        (Zh, Received) => "我们已收到您的请求",
        (Ja, Received) => "お問い合わせを受け付けました",
        (En, Reply) => "A reply to your request",
        (Zh, Reply) => "关于您请求的回复",
        (Ja, Reply) => "お問い合わせへの返信",
        (En, Question) => "We need a detail from you",
        (Zh, Question) => "我们需要您补充信息",
        (Ja, Question) => "確認させていただきたいことがあります",
        (En, Approved) => "Your refund was approved",
        (Zh, Approved) => "您的退款已获批准",
        (Ja, Approved) => "返金が承認されました",
        (En, Submitted) => "Your refund was sent to the payment provider",
        (Zh, Submitted) => "您的退款已提交给支付机构",
        (Ja, Submitted) => "返金を決済事業者に送信しました",
        (En, Completed) => "Your refund is completed",
        (Zh, Completed) => "您的退款已完成",
        (Ja, Completed) => "返金が完了しました",
        (En, Verifying) => "Your refund is being verified",
        (Zh, Verifying) => "您的退款正在核实中",
        (Ja, Verifying) => "返金を確認中です",
        (En, Failed) => "Your refund could not be completed",
        (Zh, Failed) => "您的退款未能完成",
        (Ja, Failed) => "返金を完了できませんでした",
        (En, Rejected) => "About your refund request",
        (Zh, Rejected) => "关于您的退款请求",
        (Ja, Rejected) => "返金のご依頼について",
        (En, Closed) => "Your request was closed",
        (Zh, Closed) => "您的请求已关闭",
        (Ja, Closed) => "お問い合わせを終了しました",
        (En, Reopened) => "We are looking at your request again",
        (Zh, Reopened) => "我们正在重新处理您的请求",
        (Ja, Reopened) => "お問い合わせを改めて確認しています",
        (En, UnknownSender) => "Please write from your account's address",
        (Zh, UnknownSender) => "请使用您账户的邮箱地址来信",
        (Ja, UnknownSender) => "ご登録のメールアドレスからお送りください",
        (En, ConfirmSender) => "Please confirm the mail sent in your name",
        (Zh, ConfirmSender) => "请确认以您名义发送的邮件",
        (Ja, ConfirmSender) => "あなたの名前で送られたメールのご確認",
        (_, StaffAssigned) => "A case was assigned to you",
        (_, StaffEscalation) => "An escalation waits for a supervisor",
    }
}

/// The body of a mail whose change put no reply text on the ticket.
pub fn mail_body(lang: Language, kind: MailKind) -> &'static str {
    use Language::*;
    use MailKind::*;
    match (lang, kind) {
        (En, Received) => "We have your request and are looking into it. We will write again as soon as there is news.",
        (Zh, Received) => "我们已收到您的请求，正在处理中。一有进展会再次来信。",
        (Ja, Received) => "お問い合わせを受け付け、確認を進めています。進展があり次第、改めてご連絡します。",
        // RP-005: approved is not yet sent to the provider; the next mail says when it is.
        (En, Approved) => "A member of our team approved your refund. It has not reached the payment provider yet; we will write again when it has.",
        (Zh, Approved) => "我们的工作人员已批准您的退款。退款尚未提交给支付机构；提交后我们会再次来信。",
        (Ja, Approved) => "担当者が返金を承認しました。まだ決済事業者には送られていません。送信され次第、改めてご連絡します。",
        (En, Reopened) => "Thank you for your message. We are looking at your request again with what you wrote.",
        (Zh, Reopened) => "感谢您的来信。我们正在根据您提供的内容重新处理您的请求。",
        (Ja, Reopened) => "ご連絡ありがとうございます。いただいた内容をもとに改めて確認しています。",
        (En, Closed) => "Your request is closed. If anything is still open for you, reply to this mail.",
        (Zh, Closed) => "您的请求已关闭。如仍有未解决的问题，请直接回复此邮件。",
        (Ja, Closed) => "お問い合わせを終了しました。まだご不明な点があれば、このメールにご返信ください。",
        (En, UnknownSender) => "We received your mail, but this address is not on any account with us, so we cannot look at orders or refunds from it. Please write again from the address on your account.",
        (Zh, UnknownSender) => "我们收到了您的邮件，但此邮箱地址不属于任何账户，因此无法据此查看订单或退款。请使用您账户登记的邮箱地址重新来信。",
        (Ja, UnknownSender) => "メールを受け取りましたが、このアドレスはどのアカウントにも登録されていないため、注文や返金を確認できません。アカウントにご登録のアドレスから改めてお送りください。",
        (En, ConfirmSender) => "We received a mail in your name that we could not verify came from your address. Nothing will be done with it until you sign in through the link below. If you did not write to us, ignore this mail.",
        (Zh, ConfirmSender) => "我们收到一封以您名义发送、但无法确认来自您邮箱的邮件。在您通过下方链接登录之前，我们不会处理该邮件。如果您没有给我们写信，请忽略此邮件。",
        (Ja, ConfirmSender) => "あなたの名前で、あなたのアドレスから送られたと確認できないメールを受け取りました。下のリンクからサインインしていただくまで、このメールは処理しません。お心当たりがなければ、このメールは無視してください。",
        (_, _) => "",
    }
}

/// The frame around every customer mail: the sign-in link (single use, how long it
/// works) and how to answer.
pub struct MailFrame {
    pub open_ticket: &'static str,
    pub link_note: &'static str,
    pub reply_note: &'static str,
    pub ticket_label: &'static str,
}

pub fn mail_frame(lang: Language) -> MailFrame {
    match lang {
        Language::En => MailFrame {
            open_ticket: "See your request",
            link_note: "This link signs you in once and works for 3 days.",
            reply_note: "You can answer by replying to this mail.",
            ticket_label: "Ticket",
        },
        Language::Zh => MailFrame {
            open_ticket: "查看您的请求",
            link_note: "此链接仅可登录一次，3 天内有效。",
            reply_note: "您可以直接回复此邮件。",
            ticket_label: "工单",
        },
        Language::Ja => MailFrame {
            open_ticket: "お問い合わせを見る",
            link_note: "このリンクは一度だけサインインに使え、3 日間有効です。",
            reply_note: "このメールに返信してご連絡いただけます。",
            ticket_label: "お問い合わせ番号",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mail_has_a_headline_and_a_subject_carries_the_ticket_token() {
        for lang in Language::ALL {
            for kind in MailKind::ALL {
                assert!(!headline(lang, *kind).is_empty(), "{lang} {kind:?}");
            }
            let subject = mail_subject(lang, MailKind::Completed, "Charged twice", "tkt_1");
            assert!(subject.ends_with("[#tkt_1]"), "{subject}");
            assert!(subject.contains("Charged twice"), "{subject}");
        }
    }

    #[test]
    fn an_approved_mail_never_says_the_money_was_sent() {
        // RP-005: approved is neither submitted nor completed.
        let en = mail_body(Language::En, MailKind::Approved);
        assert!(en.contains("has not reached the payment provider"), "{en}");
        assert!(
            !en.contains("completed") && !en.contains("was sent"),
            "{en}"
        );
        assert!(mail_body(Language::Zh, MailKind::Approved).contains("尚未提交"));
        assert!(mail_body(Language::Ja, MailKind::Approved)
            .contains("まだ決済事業者には送られていません"));
    }
}
