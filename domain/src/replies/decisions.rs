//! What the customer is told when the policy engine has decided (RP-005): under review,
//! which order, a denial with its plain reason and policy, or a specialist's look.
//!
//! A reason code becomes the customer's words here, by an exhaustive `match`. It never tells a
//! threshold, a rule's own text or anything about another customer's order (RP-007).

use policy_engine::{Decision, ReasonCode};

use super::language::Language;
use crate::states::CaseStatus;

fn policy_of(decision: &Decision) -> String {
    // The document of the most specific rule: the last one that fired, leaving out
    // approval authority (RP-004), which never explains an outcome to a customer.
    decision
        .rules
        .iter()
        .rev()
        .map(|r| r.citation.split('@').next().unwrap_or(""))
        .find(|doc| !doc.is_empty() && *doc != "RP-004")
        .unwrap_or("RP-001")
        .to_string()
}

/// The decided refunds, each with its currency (RP-005: "quote amounts with their
/// currency"), as the customer's language writes it (`CN¥198.00`, `¥19,800`).
fn amounts(lang: Language, decision: &Decision) -> String {
    decision
        .refunds
        .iter()
        .map(|r| crate::money_text::localized(&r.amount, lang.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The status a customer is shown for a case. RP-007 ("confirm or deny nothing"): a
/// case escalated because the named order is someone else's looks exactly like one whose
/// named order does not exist — we ask which order they mean — while a human looks at
/// it inside.
pub fn customer_status(status: CaseStatus, reason_code: Option<&str>) -> CaseStatus {
    if status == CaseStatus::Escalated
        && reason_code == Some(ReasonCode::OwnershipMismatch.as_str())
    {
        CaseStatus::AwaitingCustomer
    } else {
        status
    }
}

/// The reply posted when the policy engine has decided.
pub fn decision_reply(lang: Language, status: CaseStatus, decision: &Decision) -> String {
    let status = customer_status(status, Some(decision.reason_code.as_str()));
    match status {
        CaseStatus::AwaitingApproval => review_reply(lang, &amounts(lang, decision)),
        // The engine says what it is missing (RP-002 §4): the order, or what the request
        // is about when the one order shows nothing the words could name.
        CaseStatus::AwaitingCustomer if decision.missing.as_deref() == Some("request") => {
            what_happened_reply(lang)
        }
        CaseStatus::AwaitingCustomer => which_order_reply(lang),
        CaseStatus::Denied => {
            let policy = policy_of(decision);
            let reason = deny_reason(lang, decision);
            match lang {
                Language::En => format!("{reason} (policy {policy})"),
                Language::Zh => format!("{reason}（依据政策 {policy}）"),
                Language::Ja => format!("{reason}（ポリシー {policy} に基づきます）"),
                Language::De => format!("{reason} (Richtlinie {policy})"),
                Language::Fr => format!("{reason} (politique {policy})"),
                Language::Es => format!("{reason} (política {policy})"),
                Language::It => format!("{reason} (politica {policy})"),
                Language::Nl => format!("{reason} (beleid {policy})"),
                Language::Pt => format!("{reason} (política {policy})"),
                Language::Ko => format!("{reason} (정책 {policy})"),
            }
        }
        CaseStatus::Escalated => escalation_reply(lang),
        _ => match lang {
            Language::En => "We are looking into your request.",
            Language::Zh => "我们正在处理您的请求。",
            Language::Ja => "お問い合わせの内容を確認しています。",
            Language::De => "Wir kümmern uns um Ihr Anliegen.",
            Language::Fr => "Nous examinons votre demande.",
            Language::Es => "Estamos revisando su solicitud.",
            Language::It => "Stiamo esaminando la sua richiesta.",
            Language::Nl => "We zijn uw verzoek aan het bekijken.",
            Language::Pt => "Estamos a analisar o seu pedido.",
            Language::Ko => "요청하신 내용을 확인하고 있습니다.",
        }
        .to_string(),
    }
}

/// A refund the engine allowed, waiting for a person's approval: nothing is submitted
/// yet, and the customer is told exactly that (RP-005).
fn review_reply(lang: Language, amounts: &str) -> String {
    match lang {
        Language::En => format!("We found what happened and a refund of {amounts} is being reviewed by our team. We will tell you as soon as it is submitted."),
        Language::Zh => format!("我们已查明情况，{amounts} 的退款正在由我们的团队审核。退款一经提交，我们会立即通知您。"),
        Language::Ja => format!("状況を確認しました。{amounts} の返金について、担当チームが審査しています。返金を申請した時点で、すぐにお知らせします。"),
        Language::De => format!("Wir haben geklärt, was passiert ist: Eine Erstattung von {amounts} wird von unserem Team geprüft. Wir geben Ihnen Bescheid, sobald sie eingereicht ist."),
        Language::Fr => format!("Nous avons compris ce qui s'est passé : un remboursement de {amounts} est en cours d'examen par notre équipe. Nous vous préviendrons dès qu'il sera soumis."),
        Language::Es => format!("Hemos averiguado lo ocurrido: nuestro equipo está revisando un reembolso de {amounts}. Le avisaremos en cuanto se haya enviado."),
        Language::It => format!("Abbiamo capito cosa è successo: un rimborso di {amounts} è in revisione da parte del nostro team. La avviseremo non appena sarà inoltrato."),
        Language::Nl => format!("We hebben uitgezocht wat er is gebeurd: een terugbetaling van {amounts} wordt door ons team beoordeeld. We laten het u weten zodra die is ingediend."),
        Language::Pt => format!("Descobrimos o que aconteceu: um reembolso de {amounts} está a ser analisado pela nossa equipa. Avisaremos assim que for submetido."),
        Language::Ko => format!("경위를 확인했습니다. {amounts} 환불을 저희 팀에서 검토하고 있습니다. 환불이 접수되는 즉시 알려 드리겠습니다."),
    }
}

fn which_order_reply(lang: Language) -> String {
    match lang {
        Language::En => "You have more than one order with us. Please tell us which order this is about (for example its order number).",
        Language::Zh => "您在我们这里有多个订单。请告诉我们您指的是哪一个订单（例如订单号）。",
        Language::Ja => "お客様には複数のご注文があります。どのご注文についてのお問い合わせか（例：注文番号）をお知らせください。",
        Language::De => "Sie haben mehr als eine Bestellung bei uns. Bitte teilen Sie uns mit, um welche Bestellung es geht (zum Beispiel die Bestellnummer).",
        Language::Fr => "Vous avez plusieurs commandes chez nous. Merci de nous indiquer de quelle commande il s'agit (par exemple son numéro de commande).",
        Language::Es => "Tiene más de un pedido con nosotros. Indíquenos de qué pedido se trata (por ejemplo, su número de pedido).",
        Language::It => "Ha più di un ordine con noi. Ci indichi a quale ordine si riferisce (per esempio il numero d'ordine).",
        Language::Nl => "U heeft meer dan één bestelling bij ons. Laat ons weten om welke bestelling het gaat (bijvoorbeeld het bestelnummer).",
        Language::Pt => "Tem mais do que uma encomenda connosco. Indique-nos de que encomenda se trata (por exemplo, o número da encomenda).",
        Language::Ko => "고객님께서는 주문이 여러 건 있습니다. 어느 주문에 관한 문의인지 (예: 주문 번호) 알려 주세요.",
    }
    .to_string()
}

/// The order is known but not what went wrong with it: the customer is asked, with the
/// kinds of problem we can look into as examples.
fn what_happened_reply(lang: Language) -> String {
    match lang {
        Language::En => "Please tell us a little more about what went wrong with your order: for example a payment you see twice, an amount higher than the price, a hold on your card, or that you want to cancel.",
        Language::Zh => "请再告诉我们一些订单出现的问题，例如：同一笔款项被扣了两次、扣款金额高于价格、卡上有预授权冻结，或者您想取消订单。",
        Language::Ja => "ご注文で何が起きたのか、もう少し詳しくお知らせください（例：同じ支払いが2回ある、価格より高い金額が請求された、カードに仮押さえが残っている、解約したい など）。",
        Language::De => "Bitte schildern Sie uns etwas genauer, was mit Ihrer Bestellung nicht stimmt: zum Beispiel eine doppelte Abbuchung, ein Betrag über dem Preis, eine Vormerkung auf Ihrer Karte oder dass Sie widerrufen möchten.",
        Language::Fr => "Merci de nous préciser ce qui ne va pas avec votre commande : par exemple un paiement débité deux fois, un montant supérieur au prix, une pré-autorisation sur votre carte, ou votre souhait d'annuler.",
        Language::Es => "Cuéntenos un poco más sobre lo que ha fallado con su pedido: por ejemplo un pago cobrado dos veces, un importe mayor que el precio, una retención en su tarjeta o que desea cancelar.",
        Language::It => "Ci dica qualcosa di più su cosa non va con il suo ordine: per esempio un pagamento addebitato due volte, un importo superiore al prezzo, una preautorizzazione sulla carta o che desidera recedere.",
        Language::Nl => "Vertel ons wat meer over wat er mis is met uw bestelling: bijvoorbeeld een dubbele afschrijving, een bedrag hoger dan de prijs, een reservering op uw kaart of dat u wilt annuleren.",
        Language::Pt => "Diga-nos um pouco mais sobre o que correu mal com a sua encomenda: por exemplo um pagamento cobrado duas vezes, um valor superior ao preço, uma cativação no cartão ou que deseja cancelar.",
        Language::Ko => "주문에 어떤 문제가 있는지 조금 더 알려 주세요. 예를 들어 같은 결제가 두 번 되었거나, 가격보다 많은 금액이 청구되었거나, 카드에 승인 보류가 남아 있거나, 취소를 원하시는 경우 등입니다.",
    }
    .to_string()
}

/// A denial in plain words (RP-005), never the threshold behind it. Every reason code
/// is named here, so a new one does not compile until its words are chosen; each
/// sentence below has a line for every language.
fn deny_reason(lang: Language, decision: &Decision) -> String {
    match decision.reason_code {
        ReasonCode::AuthorizationHold => hold_reason(lang, decision.hold_release.as_deref()),
        ReasonCode::AlreadyRefunded => already_refunded(lang).to_string(),
        ReasonCode::NotDuplicate => not_duplicate(lang).to_string(),
        ReasonCode::NotEligible => not_eligible(lang).to_string(),
        // The engine gives these with a refund, a question or an escalation, never with
        // a denial; a denial that carried one says only that nothing qualifies.
        ReasonCode::DuplicateCharge
        | ReasonCode::Overcharge
        | ReasonCode::RepeatPurchase
        | ReasonCode::CoolingOff
        | ReasonCode::OutsideWindow
        | ReasonCode::OwnershipMismatch
        | ReasonCode::DisputeOpen
        | ReasonCode::InsufficientInfo
        | ReasonCode::Other => nothing_to_refund(lang).to_string(),
    }
}

/// An authorization hold is no charge: nothing to refund, and when the issuer releases it.
fn hold_reason(lang: Language, release: Option<&str>) -> String {
    let within = |fallback: &str| release.map_or(fallback.to_string(), |p| period(lang, p));
    match lang {
        Language::En => format!("The second amount on your card is an authorization hold, not a charge: no money was taken and there is nothing to refund. Your card issuer releases it automatically within {}.", within("a few days")),
        Language::Zh => format!("您卡上的第二笔金额是预授权冻结，并非实际扣款：没有扣走任何资金，因此无需退款。发卡行会在{}内自动释放。", within("几天")),
        Language::Ja => format!("カードに表示されている2件目の金額はオーソリ（与信枠の一時的な確保）で、請求ではありません。代金は引き落とされておらず、返金するものはありません。カード会社により{}以内に自動的に解除されます。", within("数日")),
        Language::De => format!("Der zweite Betrag auf Ihrer Karte ist eine Autorisierung (Vormerkung), keine Abbuchung: Es wurde kein Geld eingezogen, daher gibt es nichts zu erstatten. Ihre Bank gibt ihn automatisch innerhalb von {} frei.", within("wenigen Tagen")),
        Language::Fr => format!("Le second montant sur votre carte est une pré-autorisation, pas un débit : aucun argent n'a été prélevé et il n'y a rien à rembourser. Votre banque la libère automatiquement sous {}.", within("quelques jours")),
        Language::Es => format!("El segundo importe en su tarjeta es una retención (preautorización), no un cargo: no se ha cobrado dinero y no hay nada que reembolsar. Su banco la libera automáticamente en un plazo de {}.", within("unos días")),
        Language::It => format!("Il secondo importo sulla sua carta è una preautorizzazione, non un addebito: non è stato prelevato denaro e non c'è nulla da rimborsare. La sua banca la sblocca automaticamente entro {}.", within("pochi giorni")),
        Language::Nl => format!("Het tweede bedrag op uw kaart is een reservering (autorisatie), geen afschrijving: er is geen geld afgeschreven en er valt niets terug te betalen. Uw bank geeft het automatisch vrij binnen {}.", within("enkele dagen")),
        Language::Pt => format!("O segundo valor no seu cartão é uma pré-autorização (cativação), não uma cobrança: não foi retirado dinheiro e não há nada a reembolsar. O seu banco liberta-a automaticamente no prazo de {}.", within("alguns dias")),
        Language::Ko => format!("카드에 표시된 두 번째 금액은 결제가 아니라 승인 보류(가승인)입니다. 돈이 빠져나가지 않았으므로 환불할 금액이 없습니다. 카드사에서 {} 이내에 자동으로 해제합니다.", within("며칠")),
    }
}

fn already_refunded(lang: Language) -> &'static str {
    match lang {
        Language::En => "This charge has already been refunded (or a refund is already on its way), so there is nothing more to refund.",
        Language::Zh => "这笔扣款已经退款（或退款已在处理中），没有可再退的金额。",
        Language::Ja => "このご請求はすでに返金済み（または返金の手続き中）のため、これ以上返金できる金額はありません。",
        Language::De => "Diese Abbuchung wurde bereits erstattet (oder eine Erstattung ist schon unterwegs), daher gibt es nichts weiter zu erstatten.",
        Language::Fr => "Ce débit a déjà été remboursé (ou un remboursement est déjà en cours), il n'y a donc plus rien à rembourser.",
        Language::Es => "Este cargo ya se ha reembolsado (o ya hay un reembolso en curso), así que no queda nada más que reembolsar.",
        Language::It => "Questo addebito è già stato rimborsato (o un rimborso è già in corso), quindi non c'è altro da rimborsare.",
        Language::Nl => "Deze afschrijving is al terugbetaald (of een terugbetaling is al onderweg), dus er valt niets meer terug te betalen.",
        Language::Pt => "Esta cobrança já foi reembolsada (ou já há um reembolso a caminho), por isso não há mais nada a reembolsar.",
        Language::Ko => "이 결제는 이미 환불되었거나 환불이 진행 중이므로 더 환불할 금액이 없습니다.",
    }
}

fn not_duplicate(lang: Language) -> &'static str {
    match lang {
        Language::En => "These are two separate purchases, not a duplicate charge, so they are not refunded as a billing error.",
        Language::Zh => "这是两笔独立的购买，不属于重复扣款，因此不作为账单错误退款。",
        Language::Ja => "これらは二重請求ではなく別々のご購入のため、請求の誤りとしての返金の対象にはなりません。",
        Language::De => "Es handelt sich um zwei getrennte Käufe und nicht um eine doppelte Abbuchung, daher werden sie nicht als Abrechnungsfehler erstattet.",
        Language::Fr => "Il s'agit de deux achats distincts et non d'un double débit : ils ne sont donc pas remboursés comme une erreur de facturation.",
        Language::Es => "Se trata de dos compras distintas, no de un cargo duplicado, por lo que no se reembolsan como un error de facturación.",
        Language::It => "Si tratta di due acquisti distinti e non di un addebito duplicato, quindi non vengono rimborsati come errore di fatturazione.",
        Language::Nl => "Dit zijn twee afzonderlijke aankopen en geen dubbele afschrijving, dus ze worden niet als factuurfout terugbetaald.",
        Language::Pt => "Trata-se de duas compras distintas e não de uma cobrança duplicada, pelo que não são reembolsadas como erro de faturação.",
        Language::Ko => "이는 중복 결제가 아니라 별개의 두 구매이므로 결제 오류로 환불되지 않습니다.",
    }
}

fn not_eligible(lang: Language) -> &'static str {
    match lang {
        Language::En => "This purchase is not eligible for a refund under our refund policy.",
        Language::Zh => "根据我们的退款政策，这笔购买不符合退款条件。",
        Language::Ja => "このご購入は、当社の返金ポリシーにより返金の対象外です。",
        Language::De => "Dieser Kauf kann nach unserer Erstattungsrichtlinie nicht erstattet werden.",
        Language::Fr => "Cet achat ne peut pas être remboursé selon notre politique de remboursement.",
        Language::Es => "Esta compra no cumple los requisitos de reembolso de nuestra política de reembolsos.",
        Language::It => "Questo acquisto non è rimborsabile secondo la nostra politica di rimborso.",
        Language::Nl => "Deze aankoop komt volgens ons terugbetalingsbeleid niet in aanmerking voor terugbetaling.",
        Language::Pt => "Esta compra não é elegível para reembolso segundo a nossa política de reembolsos.",
        Language::Ko => "이 구매는 당사 환불 정책에 따라 환불 대상이 아닙니다.",
    }
}

fn nothing_to_refund(lang: Language) -> &'static str {
    match lang {
        Language::En => "We could not find a charge that qualifies for a refund.",
        Language::Zh => "我们没有找到符合退款条件的扣款。",
        Language::Ja => "返金の対象となるご請求が見つかりませんでした。",
        Language::De => "Wir konnten keine Abbuchung finden, die erstattet werden kann.",
        Language::Fr => "Nous n'avons trouvé aucun débit pouvant être remboursé.",
        Language::Es => "No hemos encontrado ningún cargo que se pueda reembolsar.",
        Language::It => "Non abbiamo trovato alcun addebito rimborsabile.",
        Language::Nl => {
            "We hebben geen afschrijving gevonden die voor terugbetaling in aanmerking komt."
        }
        Language::Pt => "Não encontrámos nenhuma cobrança elegível para reembolso.",
        Language::Ko => "환불 대상이 되는 결제를 찾지 못했습니다.",
    }
}

/// A hold-release period as the rules write it for customers (`7 days`, `5 business
/// days`, RP-003), in the customer's language; any other wording is quoted as written.
fn period(lang: Language, text: &str) -> String {
    let (count, unit) = text.split_once(' ').unwrap_or((text, ""));
    let Ok(n) = count.parse::<u32>() else {
        return text.to_string();
    };
    let business = match unit {
        "day" | "days" => false,
        "business day" | "business days" => true,
        _ => return text.to_string(),
    };
    let (days, business_days) = match lang {
        Language::En => return text.to_string(),
        Language::Zh => return format!("{n} {}", if business { "个工作日" } else { "天" }),
        Language::Ja => return format!("{n}{}", if business { "営業日" } else { "日" }),
        Language::Ko => return format!("{n}{}", if business { "영업일" } else { "일" }),
        Language::De => ("Tagen", "Werktagen"),
        Language::Fr => ("jours", "jours ouvrés"),
        Language::Es => ("días", "días hábiles"),
        Language::It => ("giorni", "giorni lavorativi"),
        Language::Nl => ("dagen", "werkdagen"),
        Language::Pt => ("dias", "dias úteis"),
    };
    format!("{n} {}", if business { business_days } else { days })
}

/// The case needs a person; the customer is told no more than that.
pub fn escalation_reply(lang: Language) -> String {
    match lang {
        Language::En => "Your request needs a closer look by a specialist team. We will get back to you as soon as possible.",
        Language::Zh => "您的请求需要专门团队进一步审核。我们会尽快回复您。",
        Language::Ja => "お問い合わせは、専門チームによる詳しい確認が必要です。できるだけ早くご連絡いたします。",
        Language::De => "Ihr Anliegen muss von einem Fachteam genauer geprüft werden. Wir melden uns so schnell wie möglich bei Ihnen.",
        Language::Fr => "Votre demande doit être examinée de plus près par une équipe spécialisée. Nous reviendrons vers vous dès que possible.",
        Language::Es => "Su solicitud necesita una revisión más detallada por parte de un equipo especializado. Le responderemos lo antes posible.",
        Language::It => "La sua richiesta deve essere esaminata più a fondo da un team specializzato. Le risponderemo il prima possibile.",
        Language::Nl => "Uw verzoek moet nader worden bekeken door een gespecialiseerd team. We nemen zo snel mogelijk contact met u op.",
        Language::Pt => "O seu pedido precisa de uma análise mais detalhada por uma equipa especializada. Responderemos o mais depressa possível.",
        Language::Ko => "요청하신 내용은 전문 팀의 자세한 검토가 필요합니다. 최대한 빨리 연락드리겠습니다.",
    }
    .to_string()
}
