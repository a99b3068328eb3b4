//! What the customer is told after a person looked at the case: a rejection, the live
//! shadow mode's holding reply, and a reviewer's decision by hand.

use super::language::Language;

/// A reviewer rejected the refund the engine allowed (`approvals`).
pub fn rejection_reply(lang: Language) -> String {
    match lang {
        Language::En => "After review by our team, this refund was not approved. If you have more information, reply here.",
        Language::Zh => "经过我们团队的审核，这笔退款未获批准。如果您有更多信息，请直接在此回复。",
        Language::Ja => "担当チームで審査した結果、この返金は承認されませんでした。追加の情報がございましたら、こちらにご返信ください。",
    }
    .to_string()
}

/// The customer asked to talk to a person: the case is in the staff queue now.
pub fn person_reply(lang: Language) -> String {
    match lang {
        Language::En => "A member of our team will take over your request and answer you here.",
        Language::Zh => "我们的团队成员将接手您的请求，并在此回复您。",
        Language::Ja => "担当者がお問い合わせを引き継ぎ、こちらでご回答いたします。",
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
