//! What the customer is told, in their language (English, Chinese or Japanese), per
//! RP-005: only what the records show — submitted, completed, or being verified —
//! amounts with their currency, denials with a plain reason and the policy they come
//! from, and never internal thresholds, staff names or anyone else's data.
//!
//! Every customer-facing sentence and page label lives here, and every one is a `match`
//! on [`Language`] (or a [`PageText`] with one field per label), so a language added
//! without its text does not compile. What it does not do: pick the language (that is
//! `detect_language`) or store anything.

mod decisions;
mod joined;
mod language;
mod mail;
mod pages;
mod refunds;
mod repeats;
mod reviews;
mod status;
mod unclaimed;
mod waiting;
mod withdrawal;

pub use decisions::{customer_status, decision_reply, escalation_reply};
pub use joined::joined_reply;
pub use language::{detect_language, detect_language_of, written_in, Language, UnknownLanguage};
pub use mail::{headline, mail_body, mail_frame, mail_subject, MailFrame};
pub use pages::{form_expired, page_error, page_text, ticket_not_found, upload_error, PageText};
pub use refunds::{refund_reply, refund_status_text, CustomerRefundView};
pub use repeats::repeats_an_earlier_answer;
pub use reviews::{
    hand_decision_reply, person_reply, rejection_reply, shadow_review_reply, HandDecision,
};
pub use status::status_text;
pub use waiting::reply_time_text;
pub use withdrawal::{withdrawal_reply, WithdrawalReply};

/// Longest message a customer may send, in characters: the limit `tickets` enforces and
/// the pages state.
pub const MAX_MESSAGE_CHARS: usize = 4000;

/// An amount as the customer's language writes it (`crate::money_text`: ¥19,800,
/// 1.234,56 €); as stored when it is not a known currency's amount.
pub fn money_text(lang: Language, amount: &str, currency: &str) -> String {
    currency
        .parse::<policy_engine::Currency>()
        .ok()
        .and_then(|c| policy_engine::Money::parse(amount, c).ok())
        .map_or_else(
            || format!("{amount} {currency}"),
            |m| crate::money_text::localized(&m, lang.as_str()),
        )
}

#[cfg(test)]
mod tests {
    use policy_engine::{Currency, FiredRule, Money, Outcome, RefundLine};

    use policy_engine::{Decision, ReasonCode};

    use super::*;
    use crate::replies::CustomerRefundView;
    use crate::states::CaseStatus;
    use crate::ErrorCode;

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
        detect_language(text, None, Language::En)
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
                text.contains(expected) && text.contains("CN¥198.00"),
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
                assert!(
                    text.contains(&money_text(lang, "198.00", "CNY")),
                    "amount and currency: {text}"
                );
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
            (
                Language::De,
                "wurde abgeschlossen",
                "nicht abgeschlossen werden",
            ),
            (Language::Fr, "a été effectué", "n'a pas pu être effectué"),
            (Language::Es, "se ha completado", "no se pudo completar"),
            (Language::It, "è stato completato", "non è stato completato"),
            (Language::Nl, "is voltooid", "kon niet"),
            (Language::Pt, "foi concluído", "não pôde ser concluído"),
            (Language::Ko, "완료되었습니다", "완료되지 못했습니다"),
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
    fn every_refund_reply_says_the_true_status_in_the_seven_languages_of_issue_34() {
        use Language::{De, Es, Fr, It, Ko, Nl, Pt};
        // (language, submitted, completed, being verified). RP-005: a refund that is only
        // submitted or being verified never reads as completed, nor one being verified
        // as submitted.
        let words = [
            (
                De,
                "eingereicht und ist in Bearbeitung",
                "vom Zahlungsanbieter auf Ihr ursprüngliches Zahlungsmittel abgeschlossen",
                "überprüft",
            ),
            (
                Fr,
                "a été soumis au prestataire",
                "a été effectué par le prestataire",
                "en cours de vérification",
            ),
            (
                Es,
                "se ha enviado al proveedor",
                "ha completado su reembolso",
                "se está verificando",
            ),
            (
                It,
                "è stato inoltrato",
                "è stato completato dal fornitore",
                "è in verifica",
            ),
            (
                Nl,
                "is bij de betaalprovider ingediend",
                "is door de betaalprovider voltooid",
                "wordt gecontroleerd",
            ),
            (
                Pt,
                "foi submetido",
                "foi concluído pelo prestador",
                "está a ser verificado",
            ),
            (
                Ko,
                "접수되어 처리 대기 중",
                "원래 결제 수단으로 완료되었습니다",
                "확인하고 있습니다",
            ),
        ];
        for (lang, submitted, completed, verified) in words {
            let text = |status| refund_reply(lang, &[refund(status)]);
            let (s, c, v) = (text("submitted"), text("completed"), text("being_verified"));
            for t in [&s, &c, &v] {
                assert_eq!(written_in(t), lang, "{t}");
                assert!(
                    t.contains(&money_text(lang, "198.00", "CNY")),
                    "amount and currency: {t}"
                );
            }
            assert!(
                s.contains(submitted) && !s.contains(completed),
                "{lang}: {s}"
            );
            assert!(c.contains(completed), "{lang}: {c}");
            assert!(v.contains(verified), "{lang}: {v}");
            assert!(
                !v.contains(completed) && !v.contains(submitted),
                "{lang}: {v}"
            );
        }
    }

    #[test]
    fn every_decision_and_staff_reply_exists_in_every_language() {
        let allow = decision(Outcome::Allow, ReasonCode::DuplicateCharge);
        let hold = decision(Outcome::Deny, ReasonCode::AuthorizationHold);
        let needs_order = decision(Outcome::RequestInfo, ReasonCode::InsufficientInfo);
        let needs_request = Decision {
            missing: Some("request".into()),
            ..decision(Outcome::RequestInfo, ReasonCode::InsufficientInfo)
        };
        // RP-002 §4: asked for what is missing, the order or what happened, never the
        // order when it is known.
        for lang in Language::ALL {
            let which = decision_reply(lang, CaseStatus::AwaitingCustomer, &needs_order);
            let what = decision_reply(lang, CaseStatus::AwaitingCustomer, &needs_request);
            assert_ne!(which, what, "{lang}");
        }
        assert!(
            decision_reply(Language::En, CaseStatus::AwaitingCustomer, &needs_request)
                .contains("what went wrong")
        );
        for lang in Language::ALL {
            let under_review = decision_reply(lang, CaseStatus::AwaitingApproval, &allow);
            let yen = money_text(lang, "19800", "JPY");
            assert!(under_review.contains(&yen), "{lang}: {under_review}");
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
                decision_reply(lang, CaseStatus::AwaitingCustomer, &needs_request),
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
            ErrorCode::EmptyMessage,
            ErrorCode::PayloadTooLarge,
            ErrorCode::InvalidOrderId,
            ErrorCode::RateLimited,
            ErrorCode::NotFound,
            ErrorCode::CaseChanged,
            ErrorCode::Internal,
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
                t.earlier_text,
            ]
        };
        let english = labels(page_text(Language::En));
        for lang in Language::ALL.into_iter().skip(1) {
            let own = labels(page_text(lang));
            // A short Japanese label may be all kanji (送信); the page as a whole is not.
            assert_eq!(written_in(&own.join(" ")), lang, "{own:?}");
            let cjk = matches!(lang, Language::Zh | Language::Ja | Language::Ko);
            // A few words are the same in English and German or Dutch ("Status").
            let same = own.iter().zip(english).filter(|(l, en)| *l == en).count();
            assert!(same <= 2, "{lang}: {same} labels left in English");
            for label in own {
                assert!(!label.is_empty(), "{lang}");
                let ascii_letters = label.chars().any(|c| c.is_ascii_alphabetic());
                assert!(!cjk || !ascii_letters, "{lang}: {label}");
            }
            for code in errors {
                let text = page_error(lang, code);
                assert_eq!(written_in(&text), lang, "{code}: {text}");
            }
            // An internal error says only that something went wrong, as any other
            // code the pages have no words of their own for.
            assert_eq!(
                page_error(lang, ErrorCode::Internal),
                page_error(lang, ErrorCode::DatabaseUnavailable)
            );
        }
        assert_eq!(
            page_error(Language::Ja, ErrorCode::NotFound),
            ticket_not_found(Language::Ja)
        );
        assert!(page_error(Language::En, errors[0]).contains("empty"));
    }
}
