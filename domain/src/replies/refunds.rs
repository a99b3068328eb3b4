//! What the customer is told about their refunds once the provider answered (RP-005:
//! submitted, completed or being verified, never failed while unknown).

use super::language::Language;
use serde::Serialize;

/// The reply after the provider answered (or did not).
pub fn refund_reply(lang: Language, refunds: &[CustomerRefundView]) -> String {
    let all = |status: &str| !refunds.is_empty() && refunds.iter().all(|r| r.status == status);
    let list = refunds
        .iter()
        .map(|r| money(lang, r))
        .collect::<Vec<_>>()
        .join(", ");
    // RP-005: while an outcome is unknown, the refund is being verified — never failed.
    if refunds.iter().any(|r| r.status == "being_verified") {
        return being_verified(lang, &list);
    }
    // RP-005: completed is not arrived; we say when card refunds usually appear.
    if all("completed") {
        return completed(lang, &list);
    }
    if all("submitted") {
        return submitted(lang, &list);
    }
    // A mix, or refunds the provider did not complete: one plain sentence per refund.
    let parts: Vec<String> = refunds.iter().map(|r| refund_phrase(lang, r)).collect();
    match lang {
        Language::En => format!("Your refund: {}.", parts.join("; ")),
        Language::Zh => format!("您的退款进展：{}。", parts.join("；")),
        Language::Ja => format!("返金の状況：{}。", parts.join("。")),
        Language::De => format!("Ihre Erstattung: {}.", parts.join("; ")),
        Language::Fr => format!("Votre remboursement : {}.", parts.join(" ; ")),
        Language::Es => format!("Su reembolso: {}.", parts.join("; ")),
        Language::It => format!("Il suo rimborso: {}.", parts.join("; ")),
        Language::Nl => format!("Uw terugbetaling: {}.", parts.join("; ")),
        Language::Pt => format!("O seu reembolso: {}.", parts.join("; ")),
        Language::Ko => format!("환불 현황: {}.", parts.join("; ")),
    }
}

fn being_verified(lang: Language, list: &str) -> String {
    match lang {
        Language::En => format!("Your refund of {list} is being verified with the payment provider. We will tell you as soon as we know the outcome."),
        Language::Zh => format!("您的 {list} 退款正在核实中，我们确认结果后会立即通知您。"),
        Language::Ja => format!("{list} の返金について、現在決済事業者に結果を確認しています。結果が分かり次第お知らせします。"),
        Language::De => format!("Ihre Erstattung von {list} wird gerade beim Zahlungsanbieter überprüft. Wir melden uns, sobald wir das Ergebnis kennen."),
        Language::Fr => format!("Votre remboursement de {list} est en cours de vérification auprès du prestataire de paiement. Nous vous informerons dès que nous connaîtrons le résultat."),
        Language::Es => format!("Su reembolso de {list} se está verificando con el proveedor de pagos. Le avisaremos en cuanto sepamos el resultado."),
        Language::It => format!("Il suo rimborso di {list} è in verifica presso il fornitore dei pagamenti. La informeremo non appena conosceremo l'esito."),
        Language::Nl => format!("Uw terugbetaling van {list} wordt gecontroleerd bij de betaalprovider. We laten het u weten zodra we de uitkomst kennen."),
        Language::Pt => format!("O seu reembolso de {list} está a ser verificado junto do prestador de pagamentos. Avisaremos assim que soubermos o resultado."),
        Language::Ko => format!("{list} 환불을 결제 대행사에서 확인하고 있습니다. 결과를 알게 되는 즉시 알려 드리겠습니다."),
    }
}

fn completed(lang: Language, list: &str) -> String {
    match lang {
        Language::En => format!("Your refund of {list} has been completed by the payment provider, to your original payment method. Card refunds usually appear within 5 to 10 business days, depending on your bank."),
        Language::Zh => format!("您的 {list} 退款已由支付机构完成，将退回原支付方式。银行卡退款通常在 5 到 10 个工作日内到账，具体取决于您的银行。"),
        Language::Ja => format!("{list} の返金は決済事業者で完了し、元のお支払い方法に返金されます。カードへの返金が反映されるまでには、通常5〜10営業日ほどかかります（カード会社により異なります）。"),
        Language::De => format!("Ihre Erstattung von {list} wurde vom Zahlungsanbieter auf Ihr ursprüngliches Zahlungsmittel abgeschlossen. Kartenerstattungen erscheinen je nach Bank meist innerhalb von 5 bis 10 Werktagen."),
        Language::Fr => format!("Votre remboursement de {list} a été effectué par le prestataire de paiement, sur votre moyen de paiement d'origine. Les remboursements par carte apparaissent généralement sous 5 à 10 jours ouvrés, selon votre banque."),
        Language::Es => format!("El proveedor de pagos ha completado su reembolso de {list} a su método de pago original. Los reembolsos con tarjeta suelen aparecer en un plazo de 5 a 10 días hábiles, según su banco."),
        Language::It => format!("Il suo rimborso di {list} è stato completato dal fornitore dei pagamenti sul metodo di pagamento originale. I rimborsi su carta compaiono di solito entro 5-10 giorni lavorativi, a seconda della banca."),
        Language::Nl => format!("Uw terugbetaling van {list} is door de betaalprovider voltooid naar uw oorspronkelijke betaalmethode. Terugbetalingen op een kaart verschijnen meestal binnen 5 tot 10 werkdagen, afhankelijk van uw bank."),
        Language::Pt => format!("O seu reembolso de {list} foi concluído pelo prestador de pagamentos, para o seu meio de pagamento original. Os reembolsos em cartão costumam aparecer em 5 a 10 dias úteis, consoante o seu banco."),
        Language::Ko => format!("{list} 환불이 결제 대행사에서 원래 결제 수단으로 완료되었습니다. 카드 환불은 카드사에 따라 보통 영업일 기준 5~10일 이내에 반영됩니다."),
    }
}

fn submitted(lang: Language, list: &str) -> String {
    match lang {
        Language::En => format!("Your refund of {list} has been submitted to the payment provider and is pending. We will tell you when it is completed."),
        Language::Zh => format!("您的 {list} 退款已提交给支付机构，正在处理中。完成后我们会通知您。"),
        Language::Ja => format!("{list} の返金を決済事業者に申請しました。現在処理中です。完了しだいお知らせします。"),
        Language::De => format!("Ihre Erstattung von {list} wurde beim Zahlungsanbieter eingereicht und ist in Bearbeitung. Wir melden uns, wenn sie abgeschlossen ist."),
        Language::Fr => format!("Votre remboursement de {list} a été soumis au prestataire de paiement et est en attente. Nous vous informerons lorsqu'il sera effectué."),
        Language::Es => format!("Su reembolso de {list} se ha enviado al proveedor de pagos y está pendiente. Le avisaremos cuando se complete."),
        Language::It => format!("Il suo rimborso di {list} è stato inoltrato al fornitore dei pagamenti ed è in attesa. La avviseremo quando sarà completato."),
        Language::Nl => format!("Uw terugbetaling van {list} is bij de betaalprovider ingediend en staat in behandeling. We laten het u weten wanneer die is voltooid."),
        Language::Pt => format!("O seu reembolso de {list} foi submetido ao prestador de pagamentos e está pendente. Avisaremos quando for concluído."),
        Language::Ko => format!("{list} 환불이 결제 대행사에 접수되어 처리 대기 중입니다. 완료되면 알려 드리겠습니다."),
    }
}

/// A refund's amount as the customer's language writes it (¥19,800).
fn money(lang: Language, r: &CustomerRefundView) -> String {
    super::money_text(lang, &r.amount, &r.currency)
}

/// One refund of a mixed outcome, in RP-005's words.
fn refund_phrase(lang: Language, r: &CustomerRefundView) -> String {
    let m = money(lang, r);
    let [completed, submitted, in_review, not_completed] = phrase_words(lang);
    let words = match r.status.as_str() {
        "completed" => completed,
        "submitted" => submitted,
        "in_review" => in_review,
        _ => not_completed,
    };
    format!("{m} {words}")
}

/// What follows the amount in a mixed outcome: completed, submitted, in review, not
/// completed.
fn phrase_words(lang: Language) -> [&'static str; 4] {
    match lang {
        Language::En => ["has been completed", "has been submitted and is pending", "is being reviewed", "could not be completed by the payment provider; our team has been notified and will contact you"],
        Language::Zh => ["已完成", "已提交，正在处理中", "正在审核", "未能由支付机构完成，我们的团队已收到通知，会与您联系"],
        Language::Ja => ["は完了しました", "は申請済みで、処理中です", "は審査中です", "は決済事業者での返金が完了しませんでした。担当チームに通知済みで、こちらからご連絡いたします"],
        Language::De => ["wurde abgeschlossen", "wurde eingereicht und ist in Bearbeitung", "wird geprüft", "konnte vom Zahlungsanbieter nicht abgeschlossen werden; unser Team ist informiert und meldet sich bei Ihnen"],
        Language::Fr => ["a été effectué", "a été soumis et est en attente", "est en cours d'examen", "n'a pas pu être effectué par le prestataire de paiement ; notre équipe a été prévenue et vous contactera"],
        Language::Es => ["se ha completado", "se ha enviado y está pendiente", "está en revisión", "no se pudo completar en el proveedor de pagos; nuestro equipo está avisado y se pondrá en contacto con usted"],
        Language::It => ["è stato completato", "è stato inoltrato ed è in attesa", "è in revisione", "non è stato completato dal fornitore dei pagamenti; il nostro team è stato avvisato e la contatterà"],
        Language::Nl => ["is voltooid", "is ingediend en staat in behandeling", "wordt beoordeeld", "kon niet door de betaalprovider worden voltooid; ons team is op de hoogte en neemt contact met u op"],
        Language::Pt => ["foi concluído", "foi submetido e está pendente", "está em análise", "não pôde ser concluído pelo prestador de pagamentos; a nossa equipa foi avisada e irá contactá-lo"],
        Language::Ko => ["완료되었습니다", "접수되어 처리 대기 중입니다", "검토 중입니다", "결제 대행사에서 완료되지 못했습니다. 저희 팀이 통보를 받았으며 연락드리겠습니다"],
    }
}

/// A refund's customer status (`CustomerRefundView::status`) as a short label for the
/// ticket page's refund table.
pub fn refund_status_text(lang: Language, status: &str) -> &'static str {
    let [completed, submitted, in_review, being_verified, not_completed] = match lang {
        Language::En => [
            "Completed",
            "Submitted",
            "Under review",
            "Being verified",
            "Not completed",
        ],
        Language::Zh => ["已完成", "已提交", "审核中", "核实中", "未完成"],
        Language::Ja => ["完了", "申請済み", "審査中", "確認中", "未完了"],
        Language::De => [
            "Abgeschlossen",
            "Eingereicht",
            "In Prüfung",
            "Wird überprüft",
            "Nicht abgeschlossen",
        ],
        Language::Fr => [
            "Effectué",
            "Soumis",
            "En cours d'examen",
            "En vérification",
            "Non effectué",
        ],
        Language::Es => [
            "Completado",
            "Enviado",
            "En revisión",
            "En verificación",
            "No completado",
        ],
        Language::It => [
            "Completato",
            "Inoltrato",
            "In revisione",
            "In verifica",
            "Non completato",
        ],
        Language::Nl => [
            "Voltooid",
            "Ingediend",
            "In beoordeling",
            "Wordt gecontroleerd",
            "Niet voltooid",
        ],
        Language::Pt => [
            "Concluído",
            "Submetido",
            "Em análise",
            "Em verificação",
            "Não concluído",
        ],
        Language::Ko => ["완료", "접수됨", "검토 중", "확인 중", "미완료"],
    };
    match status {
        "completed" => completed,
        "submitted" => submitted,
        "in_review" => in_review,
        "being_verified" => being_verified,
        _ => not_completed,
    }
}

/// A refund as the customer may see it, in RP-005's words.
#[derive(Debug, Clone, Serialize)]
pub struct CustomerRefundView {
    pub amount: String,
    pub currency: String,
    /// `in_review`, `submitted`, `completed`, `being_verified`, `not_completed`.
    pub status: String,
}
