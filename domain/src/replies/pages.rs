//! The labels and error messages of the customer's ticket pages, per language.

use super::language::Language;
use crate::ErrorCode;

/// Every label of the customer's ticket list and ticket page, in one language. A struct
/// rather than strings compared in templates: a language without a label does not compile.
#[derive(Debug)]
pub struct PageText {
    pub support: &'static str,
    pub my_tickets: &'static str,
    pub your_ticket: &'static str,
    pub status: &'static str,
    pub write_message: &'static str,
    pub send: &'static str,
    pub withdraw: &'static str,
    pub open_ticket: &'static str,
    pub what_happened: &'static str,
    pub order_number: &'static str,
    pub no_tickets: &'static str,
    pub customer: &'static str,
    pub agent: &'static str,
    pub staff: &'static str,
    pub sign_out: &'static str,
    pub sign_in: &'static str,
    pub sign_in_once: &'static str,
    pub sign_in_continue: &'static str,
    pub signed_out: &'static str,
    pub link_not_valid: &'static str,
    pub open_from_link: &'static str,
    pub no_such_page: &'static str,
    pub talk_to_person: &'static str,
    pub withdraw_confirm: &'static str,
    pub withdraw_yes: &'static str,
    /// The one question after resolution (CSAT), and the word after it is answered.
    pub csat_question: &'static str,
    pub csat_thanks: &'static str,
    /// The label of the CSAT comment box (it had none; a person, and a screen
    /// reader, saw an unnamed box under the ratings).
    pub csat_comment: &'static str,
    /// The ticket page's file upload: its button.
    pub attach: &'static str,
    /// The fold of a message's quoted thread, forwarded mail and signature.
    pub earlier_text: &'static str,
}

const EN_PAGE: PageText = PageText {
    support: "Customer support",
    my_tickets: "My tickets",
    your_ticket: "Your ticket",
    status: "Status",
    write_message: "Write a message",
    send: "Send",
    withdraw: "Withdraw my request",
    open_ticket: "Open a ticket",
    what_happened: "What happened?",
    order_number: "Order number (optional)",
    no_tickets: "No tickets yet.",
    customer: "You",
    agent: "Support",
    staff: "Support team",
    sign_out: "Sign out",
    sign_in: "Sign in",
    sign_in_once: "This link signs you in once and works for 15 minutes.",
    sign_in_continue: "Continue",
    signed_out: "You are signed out. Open the sign-in link we sent you to sign in again.",
    link_not_valid:
        "This link is not valid, was already used or has expired. Ask us for a new one.",
    open_from_link: "Open this page from the link we sent you.",
    no_such_page: "There is no such page.",
    talk_to_person: "Talk to a person",
    withdraw_confirm: "Withdraw this request? Work on it stops; nothing already sent to your bank can be taken back.",
    withdraw_yes: "Yes, withdraw it",
    csat_question: "How did we do? 1 is very unhappy, 5 very happy.",
    csat_thanks: "Thank you for rating us.",
    csat_comment: "Anything to add? (optional)",
    attach: "Attach an image or PDF",
    earlier_text: "Quoted and forwarded text",
};

const ZH_PAGE: PageText = PageText {
    support: "客户服务",
    my_tickets: "我的工单",
    your_ticket: "您的工单",
    status: "状态",
    write_message: "写下您的消息",
    send: "发送",
    withdraw: "撤回请求",
    open_ticket: "提交工单",
    what_happened: "发生了什么？",
    order_number: "订单号（可选）",
    no_tickets: "还没有工单。",
    customer: "您",
    agent: "客服",
    staff: "客服团队",
    sign_out: "退出",
    sign_in: "登录",
    sign_in_once: "此链接仅可使用一次，15 分钟内有效。",
    sign_in_continue: "继续",
    signed_out: "您已退出。请打开我们发给您的登录链接重新登录。",
    link_not_valid: "此链接无效、已被使用或已过期。请联系我们获取新链接。",
    open_from_link: "请通过我们发给您的链接打开此页面。",
    no_such_page: "该页面不存在。",
    talk_to_person: "联系人工客服",
    withdraw_confirm: "确定撤回此请求吗？处理将停止；已提交给银行的款项无法撤回。",
    withdraw_yes: "是的，撤回",
    csat_question: "我们做得怎么样？1 表示非常不满意，5 表示非常满意。",
    csat_thanks: "感谢您的评价。",
    csat_comment: "还有什么想告诉我们的吗？（选填）",
    attach: "添加图片或 PDF",
    earlier_text: "引用和转发的内容",
};

const JA_PAGE: PageText = PageText {
    support: "カスタマーサポート",
    my_tickets: "お問い合わせ一覧",
    your_ticket: "お問い合わせ",
    status: "状況",
    write_message: "メッセージを入力してください",
    send: "送信",
    withdraw: "お問い合わせを取り下げる",
    open_ticket: "お問い合わせを送る",
    what_happened: "どのようなことがありましたか？",
    order_number: "注文番号（任意）",
    no_tickets: "お問い合わせはまだありません。",
    customer: "お客様",
    agent: "サポート",
    staff: "サポートチーム",
    sign_out: "サインアウト",
    sign_in: "サインイン",
    sign_in_once: "このリンクでサインインできるのは1回のみで、有効期限は15分です。",
    sign_in_continue: "続ける",
    signed_out: "サインアウトしました。もう一度サインインするには、お送りしたサインイン用リンクを開いてください。",
    link_not_valid: "このリンクは無効か、使用済みか、有効期限が切れています。新しいリンクをお問い合わせください。",
    open_from_link: "このページは、お送りしたリンクから開いてください。",
    no_such_page: "このページは存在しません。",
    talk_to_person: "担当者と話す",
    withdraw_confirm: "このお問い合わせを取り下げますか？対応は停止します。すでに銀行へ送られた処理は取り消せません。",
    withdraw_yes: "はい、取り下げます",
    csat_question: "今回の対応はいかがでしたか？1 はとても不満、5 はとても満足です。",
    csat_thanks: "ご評価ありがとうございました。",
    csat_comment: "ご意見があればお書きください（任意）",
    attach: "画像または PDF を添付",
    earlier_text: "引用・転送された内容",
};

const DE_PAGE: PageText = PageText {
    support: "Kundenservice",
    my_tickets: "Meine Tickets",
    your_ticket: "Ihr Ticket",
    status: "Status",
    write_message: "Schreiben Sie eine Nachricht",
    send: "Senden",
    withdraw: "Anfrage zurückziehen",
    open_ticket: "Ticket eröffnen",
    what_happened: "Was ist passiert?",
    order_number: "Bestellnummer (optional)",
    no_tickets: "Noch keine Tickets.",
    customer: "Sie",
    agent: "Support",
    staff: "Support-Team",
    sign_out: "Abmelden",
    sign_in: "Anmelden",
    sign_in_once: "Dieser Link meldet Sie einmal an und gilt 15 Minuten.",
    sign_in_continue: "Weiter",
    signed_out: "Sie sind abgemeldet. Öffnen Sie den Anmeldelink, den wir Ihnen geschickt haben, um sich erneut anzumelden.",
    link_not_valid: "Dieser Link ist ungültig, wurde bereits verwendet oder ist abgelaufen. Fragen Sie uns nach einem neuen.",
    open_from_link: "Öffnen Sie diese Seite über den Link, den wir Ihnen geschickt haben.",
    no_such_page: "Diese Seite gibt es nicht.",
    talk_to_person: "Mit einer Person sprechen",
    withdraw_confirm: "Diese Anfrage zurückziehen? Die Bearbeitung endet; was bereits an Ihre Bank gegangen ist, kann nicht zurückgenommen werden.",
    withdraw_yes: "Ja, zurückziehen",
    csat_question: "Wie zufrieden sind Sie mit uns? 1 ist sehr unzufrieden, 5 sehr zufrieden.",
    csat_thanks: "Danke für Ihre Bewertung.",
    csat_comment: "Möchten Sie noch etwas sagen? (optional)",
    attach: "Bild oder PDF anhängen",
    earlier_text: "Zitierter und weitergeleiteter Text",
};

const FR_PAGE: PageText = PageText {
    support: "Service client",
    my_tickets: "Mes tickets",
    your_ticket: "Votre ticket",
    status: "Statut",
    write_message: "Écrivez un message",
    send: "Envoyer",
    withdraw: "Retirer ma demande",
    open_ticket: "Ouvrir un ticket",
    what_happened: "Que s'est-il passé ?",
    order_number: "Numéro de commande (facultatif)",
    no_tickets: "Aucun ticket pour l'instant.",
    customer: "Vous",
    agent: "Assistance",
    staff: "Équipe d'assistance",
    sign_out: "Se déconnecter",
    sign_in: "Se connecter",
    sign_in_once: "Ce lien vous connecte une seule fois et reste valable 15 minutes.",
    sign_in_continue: "Continuer",
    signed_out: "Vous êtes déconnecté. Ouvrez le lien de connexion que nous vous avons envoyé pour vous reconnecter.",
    link_not_valid: "Ce lien n'est pas valide, a déjà été utilisé ou a expiré. Demandez-nous-en un nouveau.",
    open_from_link: "Ouvrez cette page depuis le lien que nous vous avons envoyé.",
    no_such_page: "Cette page n'existe pas.",
    talk_to_person: "Parler à une personne",
    withdraw_confirm: "Retirer cette demande ? Son traitement s'arrête ; ce qui a déjà été envoyé à votre banque ne peut pas être annulé.",
    withdraw_yes: "Oui, la retirer",
    csat_question: "Êtes-vous satisfait de notre aide ? 1 : très insatisfait, 5 : très satisfait.",
    csat_thanks: "Merci pour votre évaluation.",
    csat_comment: "Un commentaire ? (facultatif)",
    attach: "Joindre une image ou un PDF",
    earlier_text: "Texte cité et transféré",
};

const ES_PAGE: PageText = PageText {
    support: "Atención al cliente",
    my_tickets: "Mis tickets",
    your_ticket: "Su ticket",
    status: "Estado",
    write_message: "Escriba un mensaje",
    send: "Enviar",
    withdraw: "Retirar mi solicitud",
    open_ticket: "Abrir un ticket",
    what_happened: "¿Qué ha pasado?",
    order_number: "Número de pedido (opcional)",
    no_tickets: "Todavía no hay tickets.",
    customer: "Usted",
    agent: "Soporte",
    staff: "Equipo de soporte",
    sign_out: "Cerrar sesión",
    sign_in: "Iniciar sesión",
    sign_in_once: "Este enlace inicia su sesión una sola vez y es válido durante 15 minutos.",
    sign_in_continue: "Continuar",
    signed_out: "Ha cerrado la sesión. Abra el enlace de acceso que le enviamos para volver a entrar.",
    link_not_valid: "Este enlace no es válido, ya se ha usado o ha caducado. Pídanos uno nuevo.",
    open_from_link: "Abra esta página desde el enlace que le enviamos.",
    no_such_page: "Esta página no existe.",
    talk_to_person: "Hablar con una persona",
    withdraw_confirm: "¿Retirar esta solicitud? Su tramitación se detiene; lo que ya se haya enviado a su banco no se puede deshacer.",
    withdraw_yes: "Sí, retirarla",
    csat_question: "¿Qué tal lo hicimos? 1 es muy insatisfecho, 5 muy satisfecho.",
    csat_thanks: "Gracias por su valoración.",
    csat_comment: "¿Algún comentario? (opcional)",
    attach: "Adjuntar una imagen o un PDF",
    earlier_text: "Texto citado y reenviado",
};

const IT_PAGE: PageText = PageText {
    support: "Assistenza clienti",
    my_tickets: "I miei ticket",
    your_ticket: "Il suo ticket",
    status: "Stato",
    write_message: "Scriva un messaggio",
    send: "Invia",
    withdraw: "Ritira la mia richiesta",
    open_ticket: "Apri un ticket",
    what_happened: "Che cosa è successo?",
    order_number: "Numero d'ordine (facoltativo)",
    no_tickets: "Ancora nessun ticket.",
    customer: "Lei",
    agent: "Assistenza",
    staff: "Team di assistenza",
    sign_out: "Esci",
    sign_in: "Accedi",
    sign_in_once: "Questo link la fa accedere una sola volta ed è valido per 15 minuti.",
    sign_in_continue: "Continua",
    signed_out: "È uscito dall'account. Apra il link di accesso che le abbiamo inviato per accedere di nuovo.",
    link_not_valid: "Questo link non è valido, è già stato usato o è scaduto. Ce ne chieda uno nuovo.",
    open_from_link: "Apra questa pagina dal link che le abbiamo inviato.",
    no_such_page: "Questa pagina non esiste.",
    talk_to_person: "Parla con una persona",
    withdraw_confirm: "Ritirare questa richiesta? La lavorazione si interrompe; ciò che è già stato inviato alla sua banca non può essere annullato.",
    withdraw_yes: "Sì, ritirala",
    csat_question: "Com'è andata? 1 è molto insoddisfatto, 5 molto soddisfatto.",
    csat_thanks: "Grazie per la sua valutazione.",
    csat_comment: "Qualche commento? (facoltativo)",
    attach: "Allega un'immagine o un PDF",
    earlier_text: "Testo citato e inoltrato",
};

const NL_PAGE: PageText = PageText {
    support: "Klantenservice",
    my_tickets: "Mijn tickets",
    your_ticket: "Uw ticket",
    status: "Status",
    write_message: "Schrijf een bericht",
    send: "Versturen",
    withdraw: "Mijn verzoek intrekken",
    open_ticket: "Ticket openen",
    what_happened: "Wat is er gebeurd?",
    order_number: "Bestelnummer (optioneel)",
    no_tickets: "Nog geen tickets.",
    customer: "U",
    agent: "Support",
    staff: "Supportteam",
    sign_out: "Afmelden",
    sign_in: "Aanmelden",
    sign_in_once: "Met deze link meldt u zich één keer aan; hij is 15 minuten geldig.",
    sign_in_continue: "Doorgaan",
    signed_out: "U bent afgemeld. Open de aanmeldlink die we u stuurden om opnieuw aan te melden.",
    link_not_valid: "Deze link is ongeldig, al gebruikt of verlopen. Vraag ons om een nieuwe.",
    open_from_link: "Open deze pagina via de link die we u stuurden.",
    no_such_page: "Deze pagina bestaat niet.",
    talk_to_person: "Met een medewerker praten",
    withdraw_confirm: "Dit verzoek intrekken? De behandeling stopt; wat al naar uw bank is gestuurd, kan niet worden teruggedraaid.",
    withdraw_yes: "Ja, intrekken",
    csat_question: "Hoe hebben we het gedaan? 1 is zeer ontevreden, 5 zeer tevreden.",
    csat_thanks: "Bedankt voor uw beoordeling.",
    csat_comment: "Nog iets toe te voegen? (optioneel)",
    attach: "Afbeelding of pdf bijvoegen",
    earlier_text: "Geciteerde en doorgestuurde tekst",
};

const PT_PAGE: PageText = PageText {
    support: "Apoio ao cliente",
    my_tickets: "Os meus tickets",
    your_ticket: "O seu ticket",
    status: "Estado",
    write_message: "Escreva uma mensagem",
    send: "Enviar",
    withdraw: "Retirar o meu pedido",
    open_ticket: "Abrir um ticket",
    what_happened: "O que aconteceu?",
    order_number: "Número da encomenda (opcional)",
    no_tickets: "Ainda não há tickets.",
    customer: "Você",
    agent: "Apoio",
    staff: "Equipa de apoio",
    sign_out: "Terminar sessão",
    sign_in: "Iniciar sessão",
    sign_in_once: "Este link inicia a sua sessão uma única vez e é válido durante 15 minutos.",
    sign_in_continue: "Continuar",
    signed_out: "A sua sessão terminou. Abra o link de acesso que lhe enviámos para entrar de novo.",
    link_not_valid: "Este link não é válido, já foi usado ou expirou. Peça-nos um novo.",
    open_from_link: "Abra esta página a partir do link que lhe enviámos.",
    no_such_page: "Esta página não existe.",
    talk_to_person: "Falar com uma pessoa",
    withdraw_confirm: "Retirar este pedido? O tratamento para; o que já foi enviado ao seu banco não pode ser anulado.",
    withdraw_yes: "Sim, retirar",
    csat_question: "Como correu? 1 é muito insatisfeito, 5 muito satisfeito.",
    csat_thanks: "Obrigado pela sua avaliação.",
    csat_comment: "Algum comentário? (opcional)",
    attach: "Anexar uma imagem ou um PDF",
    earlier_text: "Texto citado e encaminhado",
};

const KO_PAGE: PageText = PageText {
    support: "고객 지원",
    my_tickets: "내 문의",
    your_ticket: "문의 내용",
    status: "상태",
    write_message: "메시지를 입력하세요",
    send: "보내기",
    withdraw: "요청 철회",
    open_ticket: "문의하기",
    what_happened: "무슨 일이 있었나요?",
    order_number: "주문 번호 (선택)",
    no_tickets: "아직 문의가 없습니다.",
    customer: "고객님",
    agent: "지원",
    staff: "지원 팀",
    sign_out: "로그아웃",
    sign_in: "로그인",
    sign_in_once: "이 링크로는 한 번만 로그인할 수 있으며 15분 동안 유효합니다.",
    sign_in_continue: "계속",
    signed_out: "로그아웃되었습니다. 다시 로그인하려면 보내 드린 로그인 링크를 여세요.",
    link_not_valid: "이 링크는 유효하지 않거나 이미 사용되었거나 만료되었습니다. 새 링크를 요청해 주세요.",
    open_from_link: "보내 드린 링크로 이 페이지를 여세요.",
    no_such_page: "존재하지 않는 페이지입니다.",
    talk_to_person: "상담원과 이야기하기",
    withdraw_confirm: "이 요청을 철회하시겠습니까? 처리가 중단되며, 이미 은행으로 전송된 처리는 되돌릴 수 없습니다.",
    withdraw_yes: "예, 철회합니다",
    csat_question: "저희 응대는 어떠셨나요? 1은 매우 불만족, 5는 매우 만족입니다.",
    csat_thanks: "평가해 주셔서 감사합니다.",
    csat_comment: "덧붙이실 말씀이 있나요? (선택)",
    attach: "이미지 또는 PDF 첨부",
    earlier_text: "인용 및 전달된 내용",
};

pub fn page_text(lang: Language) -> &'static PageText {
    match lang {
        Language::En => &EN_PAGE,
        Language::Zh => &ZH_PAGE,
        Language::Ja => &JA_PAGE,
        Language::De => &DE_PAGE,
        Language::Fr => &FR_PAGE,
        Language::Es => &ES_PAGE,
        Language::It => &IT_PAGE,
        Language::Nl => &NL_PAGE,
        Language::Pt => &PT_PAGE,
        Language::Ko => &KO_PAGE,
    }
}

impl PageText {
    /// Who wrote a message (`messages.author`), as the customer sees it.
    pub fn author(&self, author: &str) -> &'static str {
        match author {
            "customer" => self.customer,
            "staff" => self.staff,
            _ => self.agent,
        }
    }
}

/// Why a customer's action on the ticket pages failed, in their language. Built from the
/// error's code, so the API keeps its English messages while the pages speak the
/// customer's language; internal errors stay opaque.
pub fn page_error(lang: Language, code: ErrorCode) -> String {
    let max = super::MAX_MESSAGE_CHARS;
    let [empty, too_long, long_order, rate_limited, changed, generic] = error_words(lang);
    match code {
        ErrorCode::EmptyMessage => empty.to_string(),
        ErrorCode::PayloadTooLarge => too_long.replace("{max}", &max.to_string()),
        ErrorCode::InvalidOrderId => long_order.to_string(),
        ErrorCode::RateLimited => rate_limited.to_string(),
        ErrorCode::NotFound => ticket_not_found(lang).to_string(),
        ErrorCode::CaseChanged => changed.to_string(),
        _ => generic.to_string(),
    }
}

/// A customer's form refused because its token is not the session's (an old tab, another
/// site's form): reload and try again, in their language.
pub fn form_expired(lang: Language) -> String {
    match lang {
        Language::En => "This form has expired. Reload the page and try again.",
        Language::Zh => "此表单已过期，请刷新页面后重试。",
        Language::Ja => {
            "このフォームの有効期限が切れました。ページを再読み込みして、もう一度お試しください。"
        }
        Language::De => {
            "Dieses Formular ist abgelaufen. Laden Sie die Seite neu und versuchen Sie es erneut."
        }
        Language::Fr => "Ce formulaire a expiré. Rechargez la page et réessayez.",
        Language::Es => "Este formulario ha caducado. Recargue la página y vuelva a intentarlo.",
        Language::It => "Questo modulo è scaduto. Ricarichi la pagina e riprovi.",
        Language::Nl => {
            "Dit formulier is verlopen. Laad de pagina opnieuw en probeer het nog eens."
        }
        Language::Pt => "Este formulário expirou. Recarregue a página e tente de novo.",
        Language::Ko => "이 양식은 만료되었습니다. 페이지를 새로 고친 뒤 다시 시도해 주세요.",
    }
    .to_string()
}

/// The page errors of one language: empty message, message too long (`{max}`
/// characters), order number too long, rate limited, the case changed, anything else.
fn error_words(lang: Language) -> [&'static str; 6] {
    match lang {
        Language::En => ["The message is empty.", "Messages are at most {max} characters.", "Order numbers are at most 64 characters.", "You have sent many messages in a short time. Please wait a moment and try again.", "Your request changed meanwhile. Reload the page and try again.", "Something went wrong. Please try again."],
        Language::Zh => ["消息为空。", "消息最多 {max} 个字符。", "订单号最多 64 个字符。", "您在短时间内发送了太多消息，请稍后再试。", "您的请求状态已更新，请刷新页面后重试。", "出现了问题，请重试。"],
        Language::Ja => ["メッセージが入力されていません。", "メッセージは{max}文字以内で入力してください。", "注文番号は64文字以内で入力してください。", "短時間に多くのメッセージが送信されました。しばらくしてから、もう一度お試しください。", "お問い合わせの状況が更新されました。ページを再読み込みして、もう一度お試しください。", "問題が発生しました。もう一度お試しください。"],
        Language::De => ["Die Nachricht ist leer.", "Nachrichten dürfen höchstens {max} Zeichen lang sein.", "Bestellnummern dürfen höchstens 64 Zeichen lang sein.", "Sie haben in kurzer Zeit viele Nachrichten gesendet. Bitte warten Sie einen Moment und versuchen Sie es erneut.", "Ihre Anfrage hat sich inzwischen geändert. Laden Sie die Seite neu und versuchen Sie es erneut.", "Etwas ist schiefgelaufen. Bitte versuchen Sie es erneut."],
        Language::Fr => ["Le message est vide.", "Les messages font au plus {max} caractères.", "Les numéros de commande font au plus 64 caractères.", "Vous avez envoyé beaucoup de messages en peu de temps. Patientez un instant puis réessayez.", "Votre demande a changé entre-temps. Rechargez la page et réessayez.", "Un problème est survenu. Veuillez réessayer."],
        Language::Es => ["El mensaje está vacío.", "Los mensajes tienen como máximo {max} caracteres.", "Los números de pedido tienen como máximo 64 caracteres.", "Ha enviado muchos mensajes en poco tiempo. Espere un momento y vuelva a intentarlo.", "Su solicitud ha cambiado mientras tanto. Recargue la página y vuelva a intentarlo.", "Algo ha salido mal. Vuelva a intentarlo."],
        Language::It => ["Il messaggio è vuoto.", "I messaggi possono avere al massimo {max} caratteri.", "I numeri d'ordine possono avere al massimo 64 caratteri.", "Ha inviato molti messaggi in poco tempo. Attenda un momento e riprovi.", "La sua richiesta è cambiata nel frattempo. Ricarichi la pagina e riprovi.", "Qualcosa è andato storto. Riprovi."],
        Language::Nl => ["Het bericht is leeg.", "Berichten zijn maximaal {max} tekens lang.", "Bestelnummers zijn maximaal 64 tekens lang.", "U heeft in korte tijd veel berichten gestuurd. Wacht even en probeer het opnieuw.", "Uw verzoek is intussen gewijzigd. Laad de pagina opnieuw en probeer het nog eens.", "Er ging iets mis. Probeer het opnieuw."],
        Language::Pt => ["A mensagem está vazia.", "As mensagens têm no máximo {max} caracteres.", "Os números de encomenda têm no máximo 64 caracteres.", "Enviou muitas mensagens em pouco tempo. Aguarde um momento e tente de novo.", "O seu pedido mudou entretanto. Recarregue a página e tente de novo.", "Algo correu mal. Tente de novo."],
        Language::Ko => ["메시지가 비어 있습니다.", "메시지는 최대 {max}자까지 입력할 수 있습니다.", "주문 번호는 최대 64자까지 입력할 수 있습니다.", "짧은 시간에 너무 많은 메시지를 보내셨습니다. 잠시 후 다시 시도해 주세요.", "그동안 요청 상태가 바뀌었습니다. 페이지를 새로 고친 뒤 다시 시도해 주세요.", "문제가 발생했습니다. 다시 시도해 주세요."],
    }
}

/// A refused file upload in the customer's words, by the API error's code (the ticket
/// page's script shows it in place of the API's English message): too large, not an
/// image or PDF, empty; anything else is the page's generic error. `max_bytes` is the
/// limit the files module enforces (the words know no limit of their own).
pub fn upload_error(lang: Language, code: ErrorCode, max_bytes: usize) -> String {
    let max_mb = max_bytes / (1024 * 1024);
    let [too_large, wrong_type, empty] = upload_words(lang);
    match code {
        ErrorCode::PayloadTooLarge => too_large.replace("{max}", &max_mb.to_string()),
        ErrorCode::UnsupportedMediaType => wrong_type.to_string(),
        ErrorCode::InvalidBody => empty.to_string(),
        _ => error_words(lang)[5].to_string(),
    }
}

/// The upload errors of one language: too large (`{max}` MB), the wrong type, empty.
fn upload_words(lang: Language) -> [&'static str; 3] {
    match lang {
        Language::En => [
            "A file is at most {max} MB.",
            "Only images (PNG, JPEG, GIF, WebP) and PDF files can be attached.",
            "The file is empty.",
        ],
        Language::Zh => [
            "文件最大为 {max} MB。",
            "只能附加图片（PNG、JPEG、GIF、WebP）和 PDF 文件。",
            "文件为空。",
        ],
        Language::Ja => [
            "ファイルは{max} MBまでです。",
            "添付できるのは画像（PNG、JPEG、GIF、WebP）とPDFファイルのみです。",
            "ファイルが空です。",
        ],
        Language::De => [
            "Eine Datei darf höchstens {max} MB groß sein.",
            "Nur Bilder (PNG, JPEG, GIF, WebP) und PDF-Dateien können angehängt werden.",
            "Die Datei ist leer.",
        ],
        Language::Fr => [
            "Un fichier fait au plus {max} Mo.",
            "Seules les images (PNG, JPEG, GIF, WebP) et les fichiers PDF peuvent être joints.",
            "Le fichier est vide.",
        ],
        Language::Es => [
            "Un archivo tiene como máximo {max} MB.",
            "Solo se pueden adjuntar imágenes (PNG, JPEG, GIF, WebP) y archivos PDF.",
            "El archivo está vacío.",
        ],
        Language::It => [
            "Un file può avere al massimo {max} MB.",
            "Si possono allegare solo immagini (PNG, JPEG, GIF, WebP) e file PDF.",
            "Il file è vuoto.",
        ],
        Language::Nl => [
            "Een bestand is maximaal {max} MB.",
            "Alleen afbeeldingen (PNG, JPEG, GIF, WebP) en pdf-bestanden kunnen worden bijgevoegd.",
            "Het bestand is leeg.",
        ],
        Language::Pt => [
            "Um ficheiro tem no máximo {max} MB.",
            "Só é possível anexar imagens (PNG, JPEG, GIF, WebP) e ficheiros PDF.",
            "O ficheiro está vazio.",
        ],
        Language::Ko => [
            "파일은 최대 {max}MB까지 첨부할 수 있습니다.",
            "이미지(PNG, JPEG, GIF, WebP)와 PDF 파일만 첨부할 수 있습니다.",
            "파일이 비어 있습니다.",
        ],
    }
}

/// The page for a ticket that does not exist or is not the customer's: the same words
/// for both (RP-007: never confirm another customer's records).
pub fn ticket_not_found(lang: Language) -> &'static str {
    match lang {
        Language::En => "Ticket not found.",
        Language::Zh => "未找到该工单。",
        Language::Ja => "お問い合わせが見つかりません。",
        Language::De => "Ticket nicht gefunden.",
        Language::Fr => "Ticket introuvable.",
        Language::Es => "No se ha encontrado el ticket.",
        Language::It => "Ticket non trovato.",
        Language::Nl => "Ticket niet gevonden.",
        Language::Pt => "Ticket não encontrado.",
        Language::Ko => "문의를 찾을 수 없습니다.",
    }
}
