//! The ticket page's status banner, per case status, in each language.

use super::language::Language;
use crate::replies::CustomerRefundView;
use crate::states::CaseStatus;

/// One line for the ticket page's status banner.
pub fn status_text(lang: Language, status: CaseStatus, refunds: &[CustomerRefundView]) -> String {
    status_words(status, refunds)[lang.index()].to_string()
}

/// The banner of each status in every language, in the order of [`Language::ALL`]
/// (EN, ZH, JA, DE, FR, ES, IT, NL, PT, KO): a language added to `ALL` without its
/// words does not compile. RP-005: submitted, being verified and completed are three
/// different words in every language.
// Long because it is a table (ten languages for each status), not logic: split by status
// or language, a missing translation would stop being a compile error in one place.
fn status_words(
    status: CaseStatus,
    refunds: &[CustomerRefundView],
) -> [&'static str; Language::ALL.len()] {
    match status {
        CaseStatus::Open
        | CaseStatus::Investigating
        | CaseStatus::Proposed
        | CaseStatus::Decided => [
            "We are looking into it",
            "正在调查",
            "調査中",
            "Wird geprüft",
            "En cours d'examen",
            "En revisión",
            "In esame",
            "We zoeken het uit",
            "Em análise",
            "확인 중",
        ],
        CaseStatus::AwaitingCustomer => [
            "Waiting for your reply",
            "等待您的回复",
            "お客様のご返信待ち",
            "Wartet auf Ihre Antwort",
            "En attente de votre réponse",
            "Esperando su respuesta",
            "In attesa della sua risposta",
            "Wacht op uw antwoord",
            "A aguardar a sua resposta",
            "고객님의 답변 대기 중",
        ],
        CaseStatus::AwaitingApproval | CaseStatus::Approved => [
            "Refund under review",
            "退款审核中",
            "返金審査中",
            "Erstattung wird geprüft",
            "Remboursement en cours d'examen",
            "Reembolso en revisión",
            "Rimborso in revisione",
            "Terugbetaling wordt beoordeeld",
            "Reembolso em análise",
            "환불 검토 중",
        ],
        CaseStatus::Executing | CaseStatus::RefundPending => [
            "Refund submitted",
            "退款已提交",
            "返金申請済み",
            "Erstattung eingereicht",
            "Remboursement soumis",
            "Reembolso enviado",
            "Rimborso inoltrato",
            "Terugbetaling ingediend",
            "Reembolso submetido",
            "환불 접수됨",
        ],
        CaseStatus::PendingVerification => [
            "Refund being verified",
            "退款核实中",
            "返金確認中",
            "Erstattung wird überprüft",
            "Remboursement en cours de vérification",
            "Reembolso en verificación",
            "Rimborso in verifica",
            "Terugbetaling wordt gecontroleerd",
            "Reembolso em verificação",
            "환불 확인 중",
        ],
        CaseStatus::RefundSucceeded => [
            "Refund completed",
            "退款已完成",
            "返金完了",
            "Erstattung abgeschlossen",
            "Remboursement effectué",
            "Reembolso completado",
            "Rimborso completato",
            "Terugbetaling voltooid",
            "Reembolso concluído",
            "환불 완료",
        ],
        CaseStatus::RefundFailed if refunds.iter().any(|r| r.status == "completed") => [
            "Refund partly completed",
            "部分退款已完成",
            "一部の返金が完了",
            "Erstattung teilweise abgeschlossen",
            "Remboursement partiellement effectué",
            "Reembolso completado en parte",
            "Rimborso completato in parte",
            "Terugbetaling gedeeltelijk voltooid",
            "Reembolso parcialmente concluído",
            "환불 일부 완료",
        ],
        CaseStatus::RefundFailed => [
            "Refund did not go through; we are on it",
            "退款未成功，我们正在处理",
            "返金が完了しませんでした。対応しています",
            "Erstattung nicht durchgegangen; wir kümmern uns darum",
            "Le remboursement n'a pas abouti ; nous nous en occupons",
            "El reembolso no se completó; nos estamos ocupando",
            "Il rimborso non è andato a buon fine; ce ne stiamo occupando",
            "Terugbetaling niet gelukt; we zijn ermee bezig",
            "O reembolso não foi concluído; estamos a tratar do assunto",
            "환불이 완료되지 않았습니다. 처리 중입니다",
        ],
        CaseStatus::Denied => [
            "Not eligible for a refund",
            "不符合退款条件",
            "返金の対象外",
            "Keine Erstattung möglich",
            "Non éligible au remboursement",
            "No cumple los requisitos de reembolso",
            "Non idoneo al rimborso",
            "Komt niet in aanmerking voor terugbetaling",
            "Não elegível para reembolso",
            "환불 대상 아님",
        ],
        CaseStatus::Escalated => [
            "With a specialist team",
            "专门团队审核中",
            "専門チームが確認中",
            "Bei einem Fachteam",
            "Transmis à une équipe spécialisée",
            "Con un equipo especializado",
            "Presso un team specializzato",
            "Bij een gespecialiseerd team",
            "Com uma equipa especializada",
            "전문 팀 검토 중",
        ],
        CaseStatus::Rejected => [
            "Refund not approved",
            "退款未获批准",
            "返金は承認されませんでした",
            "Erstattung nicht genehmigt",
            "Remboursement non approuvé",
            "Reembolso no aprobado",
            "Rimborso non approvato",
            "Terugbetaling niet goedgekeurd",
            "Reembolso não aprovado",
            "환불 미승인",
        ],
        CaseStatus::Cancelled => [
            "Withdrawn",
            "已撤回",
            "取り下げ済み",
            "Zurückgezogen",
            "Retirée",
            "Retirada",
            "Ritirata",
            "Ingetrokken",
            "Retirado",
            "철회됨",
        ],
        CaseStatus::Replied | CaseStatus::Closed => [
            "Closed",
            "已结束",
            "終了",
            "Abgeschlossen",
            "Close",
            "Cerrada",
            "Chiusa",
            "Afgesloten",
            "Encerrado",
            "종료",
        ],
    }
}
