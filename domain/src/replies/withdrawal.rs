//! What the customer is told when they withdraw their request.

use super::language::Language;

/// What a withdrawal did, as the customer is told.
#[derive(Debug, Clone, Copy)]
pub enum WithdrawalReply<'a> {
    AlreadyWithdrawn,
    Withdrawn,
    /// A refund already reached the provider (its status banner given): it cannot be
    /// withdrawn, and the customer is told so truthfully (RP-005).
    TooLate {
        status: &'a str,
    },
    /// The case is already at its end (closed, replied, failed): nothing is in progress
    /// to withdraw. A ticket joined into another names it: the work goes on there.
    NothingToWithdraw {
        joined_ticket: Option<&'a str>,
    },
}

pub fn withdrawal_reply(lang: Language, outcome: WithdrawalReply<'_>) -> String {
    match outcome {
        WithdrawalReply::AlreadyWithdrawn => already_withdrawn(lang).to_string(),
        WithdrawalReply::Withdrawn => withdrawn(lang).to_string(),
        WithdrawalReply::TooLate { status } => too_late(lang, status),
        WithdrawalReply::NothingToWithdraw {
            joined_ticket: Some(t),
        } => joined_elsewhere(lang, t),
        WithdrawalReply::NothingToWithdraw {
            joined_ticket: None,
        } => already_closed(lang).to_string(),
    }
}

fn already_withdrawn(lang: Language) -> &'static str {
    match lang {
        Language::En => "Your request was already withdrawn.",
        Language::Zh => "您的请求已撤回。",
        Language::Ja => "お問い合わせはすでに取り下げられています。",
        Language::De => "Ihre Anfrage wurde bereits zurückgezogen.",
        Language::Fr => "Votre demande a déjà été retirée.",
        Language::Es => "Su solicitud ya se había retirado.",
        Language::It => "La sua richiesta era già stata ritirata.",
        Language::Nl => "Uw verzoek was al ingetrokken.",
        Language::Pt => "O seu pedido já tinha sido retirado.",
        Language::Ko => "요청은 이미 철회되었습니다.",
    }
}

fn withdrawn(lang: Language) -> &'static str {
    match lang {
        Language::En => "Your request has been withdrawn. Nothing more will be done on it.",
        Language::Zh => "您的请求已撤回，我们不会再处理。",
        Language::Ja => {
            "お問い合わせを取り下げました。この件について、これ以上の手続きは行いません。"
        }
        Language::De => {
            "Ihre Anfrage wurde zurückgezogen. Es wird nichts weiter daran unternommen."
        }
        Language::Fr => "Votre demande a été retirée. Plus rien ne sera fait à son sujet.",
        Language::Es => "Su solicitud se ha retirado. No se hará nada más con ella.",
        Language::It => "La sua richiesta è stata ritirata. Non verrà fatto altro.",
        Language::Nl => "Uw verzoek is ingetrokken. Er wordt verder niets mee gedaan.",
        Language::Pt => "O seu pedido foi retirado. Nada mais será feito a respeito.",
        Language::Ko => "요청이 철회되었습니다. 더 이상 처리하지 않습니다.",
    }
}

fn too_late(lang: Language, status: &str) -> String {
    match lang {
        Language::En => format!("Your refund was already submitted to the payment provider, so it can no longer be withdrawn. Current status: {status}."),
        Language::Zh => format!("您的退款已提交给支付机构，无法再撤回。当前状态：{status}。"),
        Language::Ja => format!("返金はすでに決済事業者に申請済みのため、取り下げできません。現在の状況：{status}。"),
        Language::De => format!("Ihre Erstattung wurde bereits beim Zahlungsanbieter eingereicht und kann nicht mehr zurückgezogen werden. Aktueller Stand: {status}."),
        Language::Fr => format!("Votre remboursement a déjà été soumis au prestataire de paiement et ne peut plus être retiré. Statut actuel : {status}."),
        Language::Es => format!("Su reembolso ya se envió al proveedor de pagos, por lo que ya no se puede retirar. Estado actual: {status}."),
        Language::It => format!("Il suo rimborso è già stato inoltrato al fornitore dei pagamenti e non può più essere ritirato. Stato attuale: {status}."),
        Language::Nl => format!("Uw terugbetaling is al bij de betaalprovider ingediend en kan niet meer worden ingetrokken. Huidige status: {status}."),
        Language::Pt => format!("O seu reembolso já foi submetido ao prestador de pagamentos e já não pode ser retirado. Estado atual: {status}."),
        Language::Ko => format!("환불이 이미 결제 대행사에 접수되어 더 이상 철회할 수 없습니다. 현재 상태: {status}."),
    }
}

fn joined_elsewhere(lang: Language, t: &str) -> String {
    match lang {
        Language::En => format!("This ticket was added to your open request {t}; nothing is in progress here. To withdraw, use ticket {t}."),
        Language::Zh => format!("此工单已并入您正在处理中的请求 {t}，这里没有进行中的处理。如需撤回，请在工单 {t} 中操作。"),
        Language::Ja => format!("このチケットは対応中のお問い合わせ {t} にまとめられたため、こちらで進行中の手続きはありません。取り下げはチケット {t} で行ってください。"),
        Language::De => format!("Dieses Ticket wurde Ihrer offenen Anfrage {t} hinzugefügt; hier läuft nichts. Zum Zurückziehen verwenden Sie bitte Ticket {t}."),
        Language::Fr => format!("Ce ticket a été rattaché à votre demande ouverte {t} ; rien n'est en cours ici. Pour retirer votre demande, utilisez le ticket {t}."),
        Language::Es => format!("Este ticket se añadió a su solicitud abierta {t}; aquí no hay nada en curso. Para retirarla, use el ticket {t}."),
        Language::It => format!("Questo ticket è stato aggiunto alla sua richiesta aperta {t}; qui non c'è nulla in corso. Per ritirarla, usi il ticket {t}."),
        Language::Nl => format!("Dit ticket is toegevoegd aan uw openstaande verzoek {t}; hier loopt niets. Gebruik ticket {t} om het in te trekken."),
        Language::Pt => format!("Este ticket foi juntado ao seu pedido em aberto {t}; aqui não há nada em curso. Para o retirar, use o ticket {t}."),
        Language::Ko => format!("이 티켓은 처리 중인 요청 {t}에 추가되어 여기서는 진행 중인 처리가 없습니다. 철회하려면 티켓 {t}을(를) 이용해 주세요."),
    }
}

fn already_closed(lang: Language) -> &'static str {
    match lang {
        Language::En => "This request is already closed; nothing is in progress on it to withdraw.",
        Language::Zh => "此请求已关闭，没有可撤回的进行中处理。",
        Language::Ja => "このお問い合わせはすでに終了しており、取り下げる手続きはありません。",
        Language::De => "Diese Anfrage ist bereits abgeschlossen; es läuft nichts, was zurückgezogen werden könnte.",
        Language::Fr => "Cette demande est déjà close ; rien n'est en cours qui puisse être retiré.",
        Language::Es => "Esta solicitud ya está cerrada; no hay nada en curso que retirar.",
        Language::It => "Questa richiesta è già chiusa; non c'è nulla in corso da ritirare.",
        Language::Nl => "Dit verzoek is al afgesloten; er loopt niets meer dat kan worden ingetrokken.",
        Language::Pt => "Este pedido já está encerrado; não há nada em curso para retirar.",
        Language::Ko => "이 요청은 이미 종료되어 철회할 진행 중인 처리가 없습니다.",
    }
}
