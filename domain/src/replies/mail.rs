//! The words of the mails the product sends: each mail's subject line, the
//! sentences of the changes that have no reply text of their own on the ticket (received,
//! approved, reopened, closed, the unknown sender, the sender to confirm) and the frame
//! around every mail (the link, how to answer), in the ten languages of
//! [`Language::ALL`], one table per text indexed by [`Language::index`]. Honest per
//! RP-005: approved is not sent, sent is not completed. The refund, decision and staff
//! reply texts a mail carries are the ticket's own (the rest of `replies`). Staff mails
//! are in English, as the console is.

use super::Language;
use crate::notice::Notice as MailKind;

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
    headlines(kind)[lang.index()]
}

/// Each kind's headline in the order of [`Language::ALL`]: en, zh, ja, de, fr, es, it,
/// nl, pt, ko.
// Long because it is a table (ten languages for each kind of mail), not logic: one match
// keeps every kind's ten headlines side by side, where a missing one does not compile.
fn headlines(kind: MailKind) -> [&'static str; 10] {
    use MailKind::*;
    match kind {
        Received => [
            "We received your request",
            "我们已收到您的请求",
            "お問い合わせを受け付けました",
            "Wir haben Ihre Anfrage erhalten",
            "Nous avons bien reçu votre demande",
            "Hemos recibido su solicitud",
            "Abbiamo ricevuto la sua richiesta",
            "We hebben uw verzoek ontvangen",
            "Recebemos o seu pedido",
            "문의를 접수했습니다",
        ],
        Reply => [
            "A reply to your request",
            "关于您请求的回复",
            "お問い合わせへの返信",
            "Eine Antwort auf Ihre Anfrage",
            "Une réponse à votre demande",
            "Una respuesta a su solicitud",
            "Una risposta alla sua richiesta",
            "Een antwoord op uw verzoek",
            "Uma resposta ao seu pedido",
            "문의에 대한 답변",
        ],
        Question => [
            "We need a detail from you",
            "我们需要您补充信息",
            "確認させていただきたいことがあります",
            "Wir benötigen noch eine Angabe von Ihnen",
            "Nous avons besoin d'une précision de votre part",
            "Necesitamos un dato de usted",
            "Abbiamo bisogno di un'informazione da lei",
            "We hebben nog een gegeven van u nodig",
            "Precisamos de uma informação sua",
            "확인이 필요한 사항이 있습니다",
        ],
        Approved => [
            "Your refund was approved",
            "您的退款已获批准",
            "返金が承認されました",
            "Ihre Erstattung wurde genehmigt",
            "Votre remboursement a été approuvé",
            "Su reembolso ha sido aprobado",
            "Il suo rimborso è stato approvato",
            "Uw terugbetaling is goedgekeurd",
            "O seu reembolso foi aprovado",
            "환불이 승인되었습니다",
        ],
        // RP-005: submitted is at the provider and pending, not completed.
        Submitted => [
            "Your refund was sent to the payment provider",
            "您的退款已提交给支付机构",
            "返金を決済事業者に送信しました",
            "Ihre Erstattung wurde beim Zahlungsanbieter eingereicht",
            "Votre remboursement a été transmis au prestataire de paiement",
            "Su reembolso se ha enviado al proveedor de pagos",
            "Il suo rimborso è stato inoltrato al fornitore dei pagamenti",
            "Uw terugbetaling is bij de betaalprovider ingediend",
            "O seu reembolso foi submetido ao prestador de pagamentos",
            "환불이 결제 대행사에 접수되었습니다",
        ],
        Completed => [
            "Your refund is completed",
            "您的退款已完成",
            "返金が完了しました",
            "Ihre Erstattung ist abgeschlossen",
            "Votre remboursement est effectué",
            "Su reembolso se ha completado",
            "Il suo rimborso è stato completato",
            "Uw terugbetaling is voltooid",
            "O seu reembolso foi concluído",
            "환불이 완료되었습니다",
        ],
        // RP-005: an unknown outcome is being verified, never failed.
        Verifying => [
            "Your refund is being verified",
            "您的退款正在核实中",
            "返金を確認中です",
            "Ihre Erstattung wird überprüft",
            "Votre remboursement est en cours de vérification",
            "Su reembolso se está verificando",
            "Il suo rimborso è in verifica",
            "Uw terugbetaling wordt gecontroleerd",
            "O seu reembolso está a ser verificado",
            "환불을 확인하고 있습니다",
        ],
        Failed => [
            "Your refund could not be completed",
            "您的退款未能完成",
            "返金を完了できませんでした",
            "Ihre Erstattung konnte nicht abgeschlossen werden",
            "Votre remboursement n'a pas pu être effectué",
            "No se pudo completar su reembolso",
            "Non è stato possibile completare il suo rimborso",
            "Uw terugbetaling kon niet worden voltooid",
            "Não foi possível concluir o seu reembolso",
            "환불을 완료하지 못했습니다",
        ],
        Rejected => [
            "About your refund request",
            "关于您的退款请求",
            "返金のご依頼について",
            "Zu Ihrer Erstattungsanfrage",
            "Concernant votre demande de remboursement",
            "Sobre su solicitud de reembolso",
            "In merito alla sua richiesta di rimborso",
            "Over uw verzoek om terugbetaling",
            "Sobre o seu pedido de reembolso",
            "환불 요청에 관하여",
        ],
        Closed => [
            "Your request was closed",
            "您的请求已关闭",
            "お問い合わせを終了しました",
            "Ihre Anfrage wurde abgeschlossen",
            "Votre demande a été clôturée",
            "Su solicitud se ha cerrado",
            "La sua richiesta è stata chiusa",
            "Uw verzoek is gesloten",
            "O seu pedido foi encerrado",
            "문의가 종료되었습니다",
        ],
        Reopened => [
            "We are looking at your request again",
            "我们正在重新处理您的请求",
            "お問い合わせを改めて確認しています",
            "Wir prüfen Ihre Anfrage erneut",
            "Nous réexaminons votre demande",
            "Estamos revisando de nuevo su solicitud",
            "Stiamo riesaminando la sua richiesta",
            "We bekijken uw verzoek opnieuw",
            "Estamos a analisar novamente o seu pedido",
            "문의를 다시 확인하고 있습니다",
        ],
        UnknownSender => [
            "Please write from your account's address",
            "请使用您账户的邮箱地址来信",
            "ご登録のメールアドレスからお送りください",
            "Bitte schreiben Sie von der Adresse Ihres Kontos",
            "Merci d'écrire depuis l'adresse de votre compte",
            "Escríbanos desde la dirección de su cuenta",
            "La preghiamo di scrivere dall'indirizzo del suo account",
            "Schrijf ons vanaf het adres van uw account",
            "Escreva-nos a partir do endereço da sua conta",
            "계정에 등록된 주소로 보내 주세요",
        ],
        ConfirmSender => [
            "Please confirm the mail sent in your name",
            "请确认以您名义发送的邮件",
            "あなたの名前で送られたメールのご確認",
            "Bitte bestätigen Sie die in Ihrem Namen gesendete E-Mail",
            "Merci de confirmer l'e-mail envoyé en votre nom",
            "Confirme el correo enviado en su nombre",
            "La preghiamo di confermare l'e-mail inviata a suo nome",
            "Bevestig de e-mail die in uw naam is verstuurd",
            "Confirme o e-mail enviado em seu nome",
            "회원님 이름으로 보낸 메일을 확인해 주세요",
        ],
        StaffAssigned => ["A case was assigned to you"; 10],
        StaffEscalation => ["An escalation waits for a supervisor"; 10],
        StaffInvited => ["You are invited to the refund desk"; 10],
    }
}

/// The body of a mail whose change put no reply text on the ticket ("" for the kinds
/// that carry the ticket's own text).
pub fn mail_body(lang: Language, kind: MailKind) -> &'static str {
    bodies(kind).map_or("", |texts| texts[lang.index()])
}

/// Each own-text kind's body in the order of [`Language::ALL`].
fn bodies(kind: MailKind) -> Option<[&'static str; 10]> {
    use MailKind::*;
    Some(match kind {
        Received => [
            "We have your request and are looking into it. We will write again as soon as there is news.",
            "我们已收到您的请求，正在处理中。一有进展会再次来信。",
            "お問い合わせを受け付け、確認を進めています。進展があり次第、改めてご連絡します。",
            "Wir haben Ihre Anfrage erhalten und sehen sie uns an. Wir schreiben Ihnen wieder, sobald es Neuigkeiten gibt.",
            "Nous avons bien reçu votre demande et l'examinons. Nous vous écrirons dès qu'il y aura du nouveau.",
            "Hemos recibido su solicitud y la estamos revisando. Le escribiremos de nuevo en cuanto haya novedades.",
            "Abbiamo ricevuto la sua richiesta e la stiamo esaminando. Le scriveremo di nuovo non appena ci saranno novità.",
            "We hebben uw verzoek ontvangen en bekijken het. We schrijven u opnieuw zodra er nieuws is.",
            "Recebemos o seu pedido e estamos a analisá-lo. Voltaremos a escrever assim que houver novidades.",
            "문의를 접수하여 확인하고 있습니다. 진행 상황이 있으면 바로 다시 연락드리겠습니다.",
        ],
        // RP-005: approved is not yet sent to the provider; the next mail says when it is.
        Approved => [
            "A member of our team approved your refund. It has not reached the payment provider yet; we will write again when it has.",
            "我们的工作人员已批准您的退款。退款尚未提交给支付机构；提交后我们会再次来信。",
            "担当者が返金を承認しました。まだ決済事業者には送られていません。送信され次第、改めてご連絡します。",
            "Ein Mitglied unseres Teams hat Ihre Erstattung genehmigt. Sie liegt dem Zahlungsanbieter noch nicht vor; wir schreiben Ihnen wieder, sobald das der Fall ist.",
            "Un membre de notre équipe a approuvé votre remboursement. Il n'a pas encore été transmis au prestataire de paiement ; nous vous écrirons dès que ce sera fait.",
            "Un miembro de nuestro equipo ha aprobado su reembolso. Todavía no ha llegado al proveedor de pagos; le escribiremos de nuevo cuando llegue.",
            "Un membro del nostro team ha approvato il suo rimborso. Non è ancora arrivato al fornitore dei pagamenti; le scriveremo di nuovo quando sarà arrivato.",
            "Een medewerker van ons team heeft uw terugbetaling goedgekeurd. Die is nog niet bij de betaalprovider; we schrijven u opnieuw zodra dat wel zo is.",
            "Um membro da nossa equipa aprovou o seu reembolso. Ainda não chegou ao prestador de pagamentos; voltaremos a escrever quando chegar.",
            "담당자가 환불을 승인했습니다. 아직 결제 대행사에 전달되지 않았으며, 전달되면 다시 연락드리겠습니다.",
        ],
        Reopened => [
            "Thank you for your message. We are looking at your request again with what you wrote.",
            "感谢您的来信。我们正在根据您提供的内容重新处理您的请求。",
            "ご連絡ありがとうございます。いただいた内容をもとに改めて確認しています。",
            "Vielen Dank für Ihre Nachricht. Wir prüfen Ihre Anfrage mit Ihren Angaben erneut.",
            "Merci pour votre message. Nous réexaminons votre demande avec ce que vous nous avez écrit.",
            "Gracias por su mensaje. Estamos revisando de nuevo su solicitud con lo que nos ha escrito.",
            "Grazie per il suo messaggio. Stiamo riesaminando la sua richiesta con quanto ci ha scritto.",
            "Bedankt voor uw bericht. We bekijken uw verzoek opnieuw met wat u ons schreef.",
            "Obrigado pela sua mensagem. Estamos a analisar novamente o seu pedido com o que nos escreveu.",
            "메시지 감사합니다. 보내 주신 내용을 바탕으로 문의를 다시 확인하고 있습니다.",
        ],
        Closed => [
            "Your request is closed. If anything is still open for you, reply to this mail.",
            "您的请求已关闭。如仍有未解决的问题，请直接回复此邮件。",
            "お問い合わせを終了しました。まだご不明な点があれば、このメールにご返信ください。",
            "Ihre Anfrage ist abgeschlossen. Falls für Sie noch etwas offen ist, antworten Sie einfach auf diese E-Mail.",
            "Votre demande est clôturée. Si quelque chose reste en suspens pour vous, répondez à cet e-mail.",
            "Su solicitud está cerrada. Si aún tiene algo pendiente, responda a este correo.",
            "La sua richiesta è chiusa. Se per lei c'è ancora qualcosa in sospeso, risponda a questa e-mail.",
            "Uw verzoek is gesloten. Staat er voor u nog iets open, beantwoord dan deze e-mail.",
            "O seu pedido está encerrado. Se ainda tiver alguma questão pendente, responda a este e-mail.",
            "문의가 종료되었습니다. 아직 해결되지 않은 점이 있으면 이 메일에 회신해 주세요.",
        ],
        UnknownSender => [
            "We received your mail, but this address is not on any account with us, so we cannot look at orders or refunds from it. Please write again from the address on your account.",
            "我们收到了您的邮件，但此邮箱地址不属于任何账户，因此无法据此查看订单或退款。请使用您账户登记的邮箱地址重新来信。",
            "メールを受け取りましたが、このアドレスはどのアカウントにも登録されていないため、注文や返金を確認できません。アカウントにご登録のアドレスから改めてお送りください。",
            "Wir haben Ihre E-Mail erhalten, aber diese Adresse gehört zu keinem Konto bei uns, daher können wir darüber keine Bestellungen oder Erstattungen einsehen. Bitte schreiben Sie erneut von der Adresse Ihres Kontos.",
            "Nous avons bien reçu votre e-mail, mais cette adresse ne correspond à aucun compte chez nous : nous ne pouvons donc pas consulter de commandes ni de remboursements à partir d'elle. Merci de nous réécrire depuis l'adresse de votre compte.",
            "Hemos recibido su correo, pero esta dirección no pertenece a ninguna cuenta nuestra, así que no podemos consultar pedidos ni reembolsos desde ella. Escríbanos de nuevo desde la dirección de su cuenta.",
            "Abbiamo ricevuto la sua e-mail, ma questo indirizzo non appartiene a nessun account presso di noi, quindi non possiamo consultare ordini o rimborsi a partire da esso. La preghiamo di riscriverci dall'indirizzo del suo account.",
            "We hebben uw e-mail ontvangen, maar dit adres hoort bij geen enkel account bij ons, dus we kunnen er geen bestellingen of terugbetalingen mee inzien. Schrijf ons opnieuw vanaf het adres van uw account.",
            "Recebemos o seu e-mail, mas este endereço não pertence a nenhuma conta connosco, pelo que não podemos consultar encomendas nem reembolsos a partir dele. Escreva-nos novamente a partir do endereço da sua conta.",
            "메일을 받았지만 이 주소는 저희의 어떤 계정에도 등록되어 있지 않아 주문이나 환불을 확인할 수 없습니다. 계정에 등록된 주소로 다시 보내 주세요.",
        ],
        ConfirmSender => [
            "We received a mail in your name that we could not verify came from your address. Nothing will be done with it until you sign in through the link below. If you did not write to us, ignore this mail.",
            "我们收到一封以您名义发送、但无法确认来自您邮箱的邮件。在您通过下方链接登录之前，我们不会处理该邮件。如果您没有给我们写信，请忽略此邮件。",
            "あなたの名前で、あなたのアドレスから送られたと確認できないメールを受け取りました。下のリンクからサインインしていただくまで、このメールは処理しません。お心当たりがなければ、このメールは無視してください。",
            "Wir haben in Ihrem Namen eine E-Mail erhalten, bei der wir nicht bestätigen konnten, dass sie von Ihrer Adresse stammt. Wir unternehmen nichts damit, bis Sie sich über den Link unten anmelden. Wenn Sie uns nicht geschrieben haben, ignorieren Sie diese E-Mail.",
            "Nous avons reçu en votre nom un e-mail dont nous n'avons pas pu vérifier qu'il venait de votre adresse. Nous n'y donnerons aucune suite tant que vous ne vous serez pas connecté via le lien ci-dessous. Si vous ne nous avez pas écrit, ignorez cet e-mail.",
            "Hemos recibido en su nombre un correo que no pudimos verificar que procediera de su dirección. No haremos nada con él hasta que inicie sesión mediante el enlace de abajo. Si no nos ha escrito, ignore este correo.",
            "Abbiamo ricevuto a suo nome un'e-mail di cui non abbiamo potuto verificare la provenienza dal suo indirizzo. Non ne faremo nulla finché non accederà tramite il link qui sotto. Se non ci ha scritto, ignori questa e-mail.",
            "We hebben in uw naam een e-mail ontvangen waarvan we niet konden nagaan of die van uw adres kwam. We doen er niets mee totdat u zich aanmeldt via de link hieronder. Hebt u ons niet geschreven, negeer deze e-mail dan.",
            "Recebemos em seu nome um e-mail que não conseguimos confirmar ter vindo do seu endereço. Não faremos nada com ele até que inicie sessão através da ligação abaixo. Se não nos escreveu, ignore este e-mail.",
            "회원님 이름으로 보낸 메일을 받았으나 회원님의 주소에서 보낸 것인지 확인할 수 없었습니다. 아래 링크로 로그인하시기 전까지는 이 메일을 처리하지 않습니다. 메일을 보내신 적이 없다면 이 메일은 무시하셔도 됩니다.",
        ],
        _ => return None,
    })
}

/// The frame around every customer mail: the sign-in link (single use, how long it
/// works) and how to answer.
pub struct MailFrame {
    pub open_ticket: &'static str,
    pub link_note: &'static str,
    pub reply_note: &'static str,
    pub ticket_label: &'static str,
}

/// `[open the ticket, the link's note, how to answer, the ticket's label]` per language.
const FRAMES: [[&str; 4]; 10] = [
    [
        "See your request",
        "This link signs you in once and works for 3 days.",
        "You can answer by replying to this mail.",
        "Ticket",
    ],
    [
        "查看您的请求",
        "此链接仅可登录一次，3 天内有效。",
        "您可以直接回复此邮件。",
        "工单",
    ],
    [
        "お問い合わせを見る",
        "このリンクは一度だけサインインに使え、3 日間有効です。",
        "このメールに返信してご連絡いただけます。",
        "お問い合わせ番号",
    ],
    [
        "Ihre Anfrage ansehen",
        "Mit diesem Link melden Sie sich einmal an; er gilt 3 Tage.",
        "Sie können antworten, indem Sie auf diese E-Mail antworten.",
        "Ticket",
    ],
    [
        "Voir votre demande",
        "Ce lien vous connecte une seule fois et reste valable 3 jours.",
        "Vous pouvez répondre directement à cet e-mail.",
        "Dossier",
    ],
    [
        "Ver su solicitud",
        "Este enlace inicia sesión una sola vez y es válido durante 3 días.",
        "Puede contestar respondiendo a este correo.",
        "Caso",
    ],
    [
        "Vedere la sua richiesta",
        "Questo link consente un solo accesso ed è valido per 3 giorni.",
        "Può rispondere direttamente a questa e-mail.",
        "Pratica",
    ],
    [
        "Uw verzoek bekijken",
        "Met deze link meldt u zich één keer aan; hij is 3 dagen geldig.",
        "U kunt antwoorden door deze e-mail te beantwoorden.",
        "Ticket",
    ],
    [
        "Ver o seu pedido",
        "Esta ligação inicia sessão uma única vez e é válida durante 3 dias.",
        "Pode responder respondendo a este e-mail.",
        "Pedido",
    ],
    [
        "문의 보기",
        "이 링크로 한 번 로그인할 수 있으며 3일 동안 유효합니다.",
        "이 메일에 회신하여 답변하실 수 있습니다.",
        "문의 번호",
    ],
];

pub fn mail_frame(lang: Language) -> MailFrame {
    let [open_ticket, link_note, reply_note, ticket_label] = FRAMES[lang.index()];
    MailFrame {
        open_ticket,
        link_note,
        reply_note,
        ticket_label,
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
    fn every_own_text_mail_and_frame_is_written_in_every_language() {
        use MailKind::*;
        for lang in Language::ALL {
            for kind in [
                Received,
                Approved,
                Reopened,
                Closed,
                UnknownSender,
                ConfirmSender,
            ] {
                assert!(!mail_body(lang, kind).is_empty(), "{lang} {kind:?}");
            }
            let frame = mail_frame(lang);
            assert!(!frame.open_ticket.is_empty() && !frame.link_note.contains("15"));
        }
        // A language that is not English says it in its own words, not English ones.
        for lang in &Language::ALL[1..] {
            for kind in MailKind::ALL
                .iter()
                .filter(|k| !k.as_str().starts_with("staff"))
            {
                assert_ne!(
                    headline(*lang, *kind),
                    headline(Language::En, *kind),
                    "{lang} {kind:?}"
                );
            }
        }
    }

    #[test]
    fn an_approved_mail_never_says_the_money_was_sent_in_any_language() {
        // RP-005: approved is neither submitted nor completed; each language says the
        // refund has not reached the provider yet, in its own words.
        let not_yet = [
            "has not reached the payment provider",
            "尚未提交",
            "まだ決済事業者には送られていません",
            "noch nicht vor",
            "pas encore été transmis",
            "Todavía no ha llegado",
            "Non è ancora arrivato",
            "nog niet bij de betaalprovider",
            "Ainda não chegou",
            "아직 결제 대행사에 전달되지 않았",
        ];
        for lang in Language::ALL {
            let body = mail_body(lang, MailKind::Approved);
            assert!(body.contains(not_yet[lang.index()]), "{lang}: {body}");
            // The approved mail never reuses the completed headline's words.
            assert!(
                !body.contains(headline(lang, MailKind::Completed)),
                "{lang}: {body}"
            );
        }
        let en = mail_body(Language::En, MailKind::Approved);
        assert!(
            !en.contains("completed") && !en.contains("was sent"),
            "{en}"
        );
    }
}
