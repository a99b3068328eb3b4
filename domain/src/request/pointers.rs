//! Words that point at one charge among several — "the second charge", "le second
//! débit", "el segundo cobro", "두 번째 결제", "第二笔" — read as a duplicate complaint in
//! every language we read (docs/spec/domain.md, "Never more than the text supports"):
//! "cancel the second charge" asks for that charge back, not for the plan, so the
//! charge reading comes before the cancellation one (`keywords::KEYWORDS` order). Data
//! only, folded as `structure::fold_words` folds text.

pub const CHARGE_POINTERS: &[&str] = &[
    // English
    "second charge",
    "second payment",
    "second transaction",
    "second debit",
    "extra charge",
    "extra payment",
    "the other charge",
    "repeated charge",
    "charged again",
    // Chinese, Japanese
    "第二笔",
    "第二次扣",
    "第二次的扣",
    "多扣的",
    "多出来的那笔",
    "2回目の請求",
    "二回目の請求",
    "2回目の引き落とし",
    "2回目の決済",
    "二回目の決済",
    // German
    "zweite buchung",
    "zweiten buchung",
    "zweite belastung",
    "zweiten betrag",
    "zusatzliche abbuchung",
    // French
    "second debit",
    "second prelevement",
    "second paiement",
    "deuxieme debit",
    "deuxieme prelevement",
    "deuxieme paiement",
    "prelevement en trop",
    "debit en trop",
    // Spanish
    "segundo cobro",
    "segundo cargo",
    "segundo pago",
    "cobro repetido",
    "cargo repetido",
    // Italian
    "secondo addebito",
    "secondo pagamento",
    "addebito in piu",
    "addebito ripetuto",
    // Dutch
    "tweede afschrijving",
    "tweede betaling",
    "tweede boeking",
    // Portuguese
    "segunda cobranca",
    "segundo debito",
    "segundo pagamento",
    "cobranca repetida",
    // Korean
    "두 번째 결제",
    "두번째 결제",
    "두 번째 청구",
    // Polish, Swedish, Turkish, Czech
    "drugie obciazenie",
    "drugiej platnosci",
    "drugie pobranie",
    "andra dragningen",
    "andra debiteringen",
    "andra betalningen",
    "ikinci cekim",
    "ikinci odeme",
    "druhou platbu",
    "druha platba",
];
