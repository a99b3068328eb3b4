//! Whether the customer asks for their money back, in every language we read: the one
//! thing left to tell apart when their words name no kind (no duplicate, overcharge,
//! hold or withdrawal) about an order they single out whose records show nothing wrong.
//! "Refund my annual plan 55804" then asks to undo that purchase (RP-002 decides what it
//! is owed); "can you check the payment of my order" asks whether it was charged right
//! (RP-001 answers). Data and one function; matched on folded text (`fold_words`).

use crate::structure::fold_words;
use crate::structure::pasted::contains_word;

/// Asking for money back: refund words, "money back", "pay back", in English, Chinese,
/// Japanese, Korean, German, French, Spanish, Italian, Dutch, Portuguese, then Polish,
/// Swedish, Turkish and Czech.
const MONEY_BACK: &[&str] = &[
    "refund",
    "money back",
    "reimburse",
    "pay me back",
    "give me back",
    "return my money",
    "退款",
    "退钱",
    "退費",
    "退费",
    "退錢",
    "退一下",
    "退回",
    "退给我",
    "退掉",
    "退返",
    // "可以退吗", "还能退吗": whether it can still be refunded.
    "可以退",
    "能退",
    "退吗",
    "帮我退",
    "给我退",
    "申请退",
    "返金",
    "払い戻",
    "返して",
    "환불",
    "돌려",
    "erstatt",
    "ruckerstatt",
    "geld zuruck",
    "zuruckzahl",
    "zuruckbuch",
    "rembours",
    "rendre l'argent",
    "reembols",
    "devolver",
    "devuelv",
    "devolucion",
    "rimbors",
    "restitu",
    "ridate",
    "terugbetal",
    "terugstort",
    "geld terug",
    "reembolso",
    "estorno",
    "estornar",
    "devolucao",
    "devolvam",
    "dinheiro de volta",
    "zwrot",
    "zwroc",
    "aterbetal",
    "betala tillbaka",
    "pengarna tillbaka",
    "iade",
    "paramin",
    "vraceni",
    "vratit",
    "vratte",
];

/// Whether `text` asks for money back (word starts only: `erstatt` in `erstatten`).
pub fn asks_for_money_back(text: &str) -> bool {
    asks_in_folded(&fold_words(text))
}

/// [`asks_for_money_back`] on text already folded (`fold_words`).
pub(super) fn asks_in_folded(folded: &str) -> bool {
    MONEY_BACK.iter().any(|w| contains_word(folded, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_back_is_heard_in_every_language_and_a_check_is_not() {
        for text in [
            "Quedo a la espera del reembolso completo del plan anual",
            "我想退一下上个月买的年费",
            "Proszę o zwrot pieniędzy",
            "Vänligen betala tillbaka 109,00 €",
            "paramın iadesini istiyorum",
            "Ich möchte mein Geld zurück",
            "返金をお願いします",
            "年度会员买了三天，可以退吗？",
            "还能退吗",
            "Quiero la devolución por favor",
        ] {
            assert!(asks_for_money_back(text), "{text}");
        }
        for text in [
            "Pouvez-vous vérifier le paiement de ma commande ?",
            "Can you check my payment?",
            "prerefunded nothing",
        ] {
            assert!(!asks_for_money_back(text), "{text}");
        }
    }
}
