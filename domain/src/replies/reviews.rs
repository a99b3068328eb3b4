//! What the customer is told after a person looked at the case: a rejection, the live
//! shadow mode's holding reply, and a reviewer's decision by hand.

use super::language::Language;

/// A reviewer rejected the refund the engine allowed (`approvals`).
pub fn rejection_reply(lang: Language) -> String {
    match lang {
        Language::En => "After review by our team, this refund was not approved. If you have more information, reply here.",
        Language::Zh => "经过我们团队的审核，这笔退款未获批准。如果您有更多信息，请直接在此回复。",
        Language::Ja => "担当チームで審査した結果、この返金は承認されませんでした。追加の情報がございましたら、こちらにご返信ください。",
        Language::De => "Nach Prüfung durch unser Team wurde diese Erstattung nicht genehmigt. Wenn Sie weitere Informationen haben, antworten Sie bitte hier.",
        Language::Fr => "Après examen par notre équipe, ce remboursement n'a pas été approuvé. Si vous avez d'autres informations, répondez ici.",
        Language::Es => "Tras la revisión de nuestro equipo, este reembolso no se ha aprobado. Si tiene más información, responda aquí.",
        Language::It => "Dopo la revisione del nostro team, questo rimborso non è stato approvato. Se ha altre informazioni, risponda qui.",
        Language::Nl => "Na beoordeling door ons team is deze terugbetaling niet goedgekeurd. Heeft u meer informatie, antwoord dan hier.",
        Language::Pt => "Após análise da nossa equipa, este reembolso não foi aprovado. Se tiver mais informações, responda aqui.",
        Language::Ko => "저희 팀의 검토 결과 이 환불은 승인되지 않았습니다. 추가 정보가 있으시면 여기에 답장해 주세요.",
    }
    .to_string()
}

/// The customer asked to talk to a person: the case is in the staff queue now.
pub fn person_reply(lang: Language) -> String {
    match lang {
        Language::En => "A member of our team will take over your request and answer you here.",
        Language::Zh => "我们的团队成员将接手您的请求，并在此回复您。",
        Language::Ja => "担当者がお問い合わせを引き継ぎ、こちらでご回答いたします。",
        Language::De => {
            "Eine Person aus unserem Team übernimmt Ihre Anfrage und antwortet Ihnen hier."
        }
        Language::Fr => {
            "Un membre de notre équipe va reprendre votre demande et vous répondre ici."
        }
        Language::Es => {
            "Una persona de nuestro equipo se hará cargo de su solicitud y le responderá aquí."
        }
        Language::It => {
            "Una persona del nostro team prenderà in carico la sua richiesta e le risponderà qui."
        }
        Language::Nl => "Een medewerker van ons team neemt uw verzoek over en antwoordt u hier.",
        Language::Pt => "Um membro da nossa equipa vai assumir o seu pedido e responder-lhe aqui.",
        Language::Ko => "저희 팀 담당자가 요청을 이어받아 여기에서 답변드리겠습니다.",
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
        Language::De => {
            "Eine Person aus unserem Team prüft Ihre Anfrage und meldet sich in Kürze bei Ihnen."
        }
        Language::Fr => {
            "Un membre de notre équipe va examiner votre demande et vous répondra sous peu."
        }
        Language::Es => {
            "Una persona de nuestro equipo revisará su solicitud y le responderá en breve."
        }
        Language::It => {
            "Una persona del nostro team esaminerà la sua richiesta e le risponderà a breve."
        }
        Language::Nl => {
            "Een medewerker van ons team bekijkt uw verzoek en neemt binnenkort contact met u op."
        }
        Language::Pt => {
            "Um membro da nossa equipa vai analisar o seu pedido e responder-lhe em breve."
        }
        Language::Ko => "저희 팀 담당자가 요청을 검토한 뒤 곧 연락드리겠습니다.",
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
    match decision {
        HandDecision::AwaitingApproval { amounts } => awaiting_approval(lang, amounts),
        HandDecision::NotEligible => hand_not_eligible(lang).to_string(),
        HandDecision::RequestInfo => hand_request_info(lang).to_string(),
    }
}

fn awaiting_approval(lang: Language, amounts: &str) -> String {
    match lang {
        Language::En => format!("We reviewed your request; a refund of {amounts} is awaiting approval. We will tell you as soon as it is submitted."),
        Language::Zh => format!("我们已审核您的请求，{amounts} 的退款正在等待批准。退款一经提交，我们会立即通知您。"),
        Language::Ja => format!("お問い合わせを確認しました。{amounts} の返金は承認待ちです。返金を申請した時点で、すぐにお知らせします。"),
        Language::De => format!("Wir haben Ihre Anfrage geprüft; eine Erstattung von {amounts} wartet auf Genehmigung. Wir geben Ihnen Bescheid, sobald sie eingereicht ist."),
        Language::Fr => format!("Nous avons examiné votre demande ; un remboursement de {amounts} attend une approbation. Nous vous préviendrons dès qu'il sera soumis."),
        Language::Es => format!("Hemos revisado su solicitud; un reembolso de {amounts} está pendiente de aprobación. Le avisaremos en cuanto se haya enviado."),
        Language::It => format!("Abbiamo esaminato la sua richiesta; un rimborso di {amounts} è in attesa di approvazione. La avviseremo non appena sarà inoltrato."),
        Language::Nl => format!("We hebben uw verzoek bekeken; een terugbetaling van {amounts} wacht op goedkeuring. We laten het u weten zodra die is ingediend."),
        Language::Pt => format!("Analisámos o seu pedido; um reembolso de {amounts} aguarda aprovação. Avisaremos assim que for submetido."),
        Language::Ko => format!("요청을 검토했습니다. {amounts} 환불이 승인을 기다리고 있습니다. 환불이 접수되는 즉시 알려 드리겠습니다."),
    }
}

fn hand_not_eligible(lang: Language) -> &'static str {
    match lang {
        Language::En => "We reviewed your request. Unfortunately it is not eligible for a refund under our refund policy.",
        Language::Zh => "我们已审核您的请求，很遗憾这笔购买不符合我们退款政策的退款条件。",
        Language::Ja => "お問い合わせを確認しました。申し訳ございませんが、当社の返金ポリシーにより返金の対象外です。",
        Language::De => "Wir haben Ihre Anfrage geprüft. Leider kann sie nach unserer Erstattungsrichtlinie nicht erstattet werden.",
        Language::Fr => "Nous avons examiné votre demande. Malheureusement, elle n'est pas éligible à un remboursement selon notre politique de remboursement.",
        Language::Es => "Hemos revisado su solicitud. Lamentablemente no cumple los requisitos de reembolso de nuestra política de reembolsos.",
        Language::It => "Abbiamo esaminato la sua richiesta. Purtroppo non è rimborsabile secondo la nostra politica di rimborso.",
        Language::Nl => "We hebben uw verzoek bekeken. Helaas komt het volgens ons terugbetalingsbeleid niet in aanmerking voor terugbetaling.",
        Language::Pt => "Analisámos o seu pedido. Infelizmente não é elegível para reembolso segundo a nossa política de reembolsos.",
        Language::Ko => "요청을 검토했습니다. 죄송하지만 당사 환불 정책에 따라 환불 대상이 아닙니다.",
    }
}

fn hand_request_info(lang: Language) -> &'static str {
    match lang {
        Language::En => "To go on, please tell us which order this is about (for example its order number).",
        Language::Zh => "为了继续处理，请告诉我们您指的是哪一个订单（例如订单号）。",
        Language::Ja => "手続きを進めるため、どのご注文についてのお問い合わせか（例：注文番号）をお知らせください。",
        Language::De => "Damit wir weitermachen können, teilen Sie uns bitte mit, um welche Bestellung es geht (zum Beispiel die Bestellnummer).",
        Language::Fr => "Pour continuer, merci de nous indiquer de quelle commande il s'agit (par exemple son numéro de commande).",
        Language::Es => "Para continuar, indíquenos de qué pedido se trata (por ejemplo, su número de pedido).",
        Language::It => "Per procedere, ci indichi a quale ordine si riferisce (per esempio il numero d'ordine).",
        Language::Nl => "Om verder te gaan, laat ons weten om welke bestelling het gaat (bijvoorbeeld het bestelnummer).",
        Language::Pt => "Para continuar, indique-nos de que encomenda se trata (por exemplo, o número da encomenda).",
        Language::Ko => "계속 진행하려면 어느 주문에 관한 문의인지 (예: 주문 번호) 알려 주세요.",
    }
}
