//! What the customer is told when a second ticket about an order joins the case already
//! working on it.

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
        Language::De => format!(
            "Zu dieser Bestellung haben Sie bereits eine offene Anfrage (Ticket {ticket_id}). Wir haben Ihre Nachricht dort hinzugefügt, damit eine Person alles zusammen ansieht; wir antworten Ihnen dort."
        ),
        Language::Fr => format!(
            "Vous avez déjà une demande ouverte concernant cette commande (ticket {ticket_id}). Nous y avons ajouté votre message afin qu'une seule personne examine l'ensemble ; nous vous répondrons là-bas."
        ),
        Language::Es => format!(
            "Ya tiene una solicitud abierta sobre este pedido (ticket {ticket_id}). Hemos añadido su mensaje a ella para que una sola persona lo revise todo junto; le responderemos allí."
        ),
        Language::It => format!(
            "Ha già una richiesta aperta su questo ordine (ticket {ticket_id}). Abbiamo aggiunto lì il suo messaggio, così una sola persona esamina tutto insieme; le risponderemo lì."
        ),
        Language::Nl => format!(
            "U heeft al een openstaand verzoek over deze bestelling (ticket {ticket_id}). We hebben uw bericht daaraan toegevoegd, zodat één persoon alles samen bekijkt; we antwoorden u daar."
        ),
        Language::Pt => format!(
            "Já tem um pedido em aberto sobre esta encomenda (ticket {ticket_id}). Acrescentámos lá a sua mensagem, para que uma só pessoa veja tudo em conjunto; responderemos por lá."
        ),
        Language::Ko => format!(
            "이 주문에 대해 이미 처리 중인 문의(티켓 {ticket_id})가 있습니다. 한 담당자가 함께 확인할 수 있도록 메시지를 그 문의에 추가했으며, 답변은 그곳에서 드리겠습니다."
        ),
    }
}
