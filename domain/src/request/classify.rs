//! The request kind from the customer's words, in the ten languages we answer in:
//! phrases and stems per kind, negated holds blanked first, one typo forgiven in a
//! longer word, two prices quoted read as an overcharge. Nothing the customer writes is
//! obeyed here (RP-007): words only pick a kind. The text given is the customer's new
//! words (`structure`): a quoted thread, a pasted statement ("PENDING", "AUTH") or a
//! signature never names the kind.

use policy_engine::RequestKind;

use super::keywords::{KEYWORDS, MONEY_WORDS, NEGATED};
use super::keywords_more::{MONEY_WORDS_MORE, NEGATED_MORE};
use super::keywords_other::MONEY_WORDS_OTHER;
use std::sync::LazyLock;

use crate::phrases::PhraseSet;
use crate::resolve;
use crate::structure::fold_words;

/// Phrases are matched on text folded by `structure::fold_words` (NFKC, lower case,
/// accents dropped), so full-width input (`Ｃａｎｃｅｌ`) reads like ASCII and `RÉTRACTATION`
/// like `retractation`. An ASCII phrase ending in `*` is a stem: it matches at the
/// start of a word and any ending may follow (`debit*`: debit, debits, debited), so one
/// entry covers a word's inflections.
///
/// A phrase with `…` is a verb and its particle or negation that people write apart
/// ("ich brauche mein Abo nicht mehr", "zeg de bestelling op"): its parts match in
/// order within one sentence.
fn contains_phrase(text: &str, phrase: &str) -> bool {
    if phrase.contains('…') {
        return text
            .split(['.', '!', '?', '\n', ',', ';', '。', '！', '？'])
            .any(|sentence| in_order(sentence, phrase));
    }
    let Some(stem) = phrase.strip_suffix('*') else {
        return resolve::contains_phrase(text, phrase);
    };
    text.match_indices(stem).any(|(start, _)| {
        !text[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// Every `…`-separated part of `phrase` in `sentence` as whole words, each after the
/// one before.
fn in_order(sentence: &str, phrase: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let mut rest = sentence;
    for part in phrase.split('…').map(str::trim) {
        let found = rest.match_indices(part).find(|(at, _)| {
            !word(rest[..*at].chars().next_back()) && !word(rest[at + part.len()..].chars().next())
        });
        match found {
            Some((at, _)) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the words speak of money at all (a payment, a charge, a refund), in any
/// language we read; asking for money back always does (`asks`).
pub fn speaks_of_money(text: &str) -> bool {
    let text = fold_words(text);
    super::asks::asks_in_folded(&text)
        || MONEY_WORDS
            .iter()
            .chain(MONEY_WORDS_MORE)
            .chain(MONEY_WORDS_OTHER)
            .any(|w| contains_phrase(&text, w))
}

/// How many texts' kinds each thread remembers ([`classify`]).
const KINDS_REMEMBERED: usize = 8;

thread_local! {
    /// The last texts classified on this thread, with their kinds: the investigator
    /// classifies the same words at every turn of a run (a sixth of a replayed
    /// ticket's time was matching these phrases again).
    static KINDS_SEEN: std::cell::RefCell<Vec<(String, RequestKind)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The request kind the words name (a pure function of them, remembered for the last
/// [`KINDS_REMEMBERED`] texts classified on this thread).
pub fn classify(text: &str) -> RequestKind {
    KINDS_SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if let Some((_, kind)) = seen.iter().find(|(t, _)| t == text) {
            return *kind;
        }
        let kind = classify_words(text);
        if seen.len() >= KINDS_REMEMBERED {
            seen.remove(0);
        }
        seen.push((text.to_string(), kind));
        kind
    })
}

/// The negated holds, in order, as one set (`crate::phrases`).
static NEGATIONS: LazyLock<PhraseSet> =
    LazyLock::new(|| PhraseSet::new(NEGATED.iter().chain(NEGATED_MORE).copied()));

/// Every kind's phrases, in order, by their literal part: a stem without its `*`, a
/// `…` phrase by its first part (each part must occur for the phrase to match).
static PHRASES: LazyLock<PhraseSet> = LazyLock::new(|| {
    let literal = |p: &'static str| match p.contains('…') {
        true => p.split('…').next().unwrap_or("").trim(),
        false => p.strip_suffix('*').unwrap_or(p),
    };
    PhraseSet::new(
        KEYWORDS
            .iter()
            .flat_map(|(_, lists)| lists.iter().flat_map(|l| l.iter()))
            .map(|p| literal(p)),
    )
});

/// `text` with each negated hold blanked, in the list's order (a blanking can make a
/// later hold appear, so the set is looked for again after each one).
fn without_negations(mut text: String) -> String {
    let mut present = NEGATIONS.present(&text);
    for (i, negated) in NEGATED.iter().chain(NEGATED_MORE).enumerate() {
        if present[i] {
            text = text.replace(negated, " ");
            present = NEGATIONS.present(&text);
        }
    }
    text
}

/// The first kind one of whose phrases `text` (folded, holds blanked) holds.
fn phrase_kind(text: &str) -> Option<RequestKind> {
    let mut present = PHRASES.present(text).into_iter();
    KEYWORDS
        .iter()
        .find(|(_, lists)| {
            let mut found = false;
            for phrase in lists.iter().flat_map(|l| l.iter()) {
                // Every phrase takes its place in `present`, found or not, in order.
                let here = present.next().unwrap_or(true);
                found = found || (here && contains_phrase(text, phrase));
            }
            found
        })
        .map(|(kind, _)| *kind)
}

/// Every kind one of whose phrases the words hold, in `KEYWORDS` order (holds blanked
/// first, as `classify`). The first is what `classify` reads; the others are other
/// readings of the same words ("cancel it, I was charged twice"), which the workflow
/// weighs so that a proposal never refunds more than every reading allows.
pub fn kinds_named(text: &str) -> Vec<RequestKind> {
    let text = without_negations(fold_words(text));
    let mut present = PHRASES.present(&text).into_iter();
    KEYWORDS
        .iter()
        .filter_map(|(kind, lists)| {
            let mut found = false;
            for phrase in lists.iter().flat_map(|l| l.iter()) {
                // Every phrase takes its place in `present`, found or not, in order.
                let here = present.next().unwrap_or(true);
                found = found || (here && contains_phrase(&text, phrase));
            }
            found.then_some(*kind)
        })
        .collect()
}

fn classify_words(text: &str) -> RequestKind {
    let text = without_negations(fold_words(text));
    if let Some(kind) = phrase_kind(&text) {
        return kind;
    }
    // Customers mistype ("tiwce", "dulpicate"): one slip in a one-word phrase of five
    // letters or more still reads as that phrase, in the same order of kinds.
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 5)
        .collect();
    for (kind, lists) in KEYWORDS {
        let typed = |p: &&str| {
            p.len() >= 5
                && p.chars().all(|c| c.is_ascii_alphabetic())
                && words.iter().any(|w| one_slip(w, p))
        };
        if lists.iter().flat_map(|l| l.iter()).any(typed) {
            return *kind;
        }
    }
    // "Advertised at $9.99 but charged $19.99": two different prices quoted about one
    // payment is the shape of an overcharge claim in any language.
    let mut amounts = resolve::mentioned_amounts(&text);
    amounts.sort();
    amounts.dedup();
    if amounts.len() >= 2 {
        return RequestKind::Overcharge;
    }
    RequestKind::Unclear
}

/// True when `word` is `phrase` with one letter swapped with its neighbour, replaced,
/// dropped or added (ASCII; an optimal-string-alignment distance of 1), its first
/// letter kept: a slip of the hand rarely touches a word's first letter, while a word one
/// letter from a phrase at its start is mostly another word ("achete", bought, is not
/// "rachete", bought again).
fn one_slip(word: &str, phrase: &str) -> bool {
    let (a, b) = (word.as_bytes(), phrase.as_bytes());
    if a == b || a.len().abs_diff(b.len()) > 1 || a.first() != b.first() {
        return false;
    }
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    match a.len().cmp(&b.len()) {
        std::cmp::Ordering::Equal => {
            a[1..] == b[1..] || (a.len() >= 2 && a[0] == b[1] && a[1] == b[0] && a[2..] == b[2..])
        }
        std::cmp::Ordering::Less => a == &b[1..],
        std::cmp::Ordering::Greater => &a[1..] == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The phrase passes as they were before the one-pass prefilter: every
    /// hold blanked by `str::replace`, every phrase asked by `contains_phrase`.
    fn phrase_kind_one_by_one(text: &str) -> Option<RequestKind> {
        let mut text = fold_words(text);
        for negated in NEGATED.iter().chain(NEGATED_MORE) {
            text = text.replace(negated, " ");
        }
        KEYWORDS
            .iter()
            .find(|(_, lists)| {
                lists
                    .iter()
                    .flat_map(|l| l.iter())
                    .any(|p| contains_phrase(&text, p))
            })
            .map(|(kind, _)| *kind)
    }

    #[test]
    fn the_prefilter_reads_every_phrase_and_hold_as_one_by_one_did() {
        // Every phrase and every negated hold, alone, inside words, glued to another,
        // after a hold, and with `…` and `*` written out: the two must agree on all.
        let phrases = KEYWORDS
            .iter()
            .flat_map(|(_, lists)| lists.iter().flat_map(|l| l.iter()))
            .chain(NEGATED.iter().chain(NEGATED_MORE));
        let mut texts = Vec::new();
        for p in phrases {
            let plain = p.replace('…', " mein Abo ").replace('*', "ed");
            texts.push(plain.clone());
            texts.push(format!("Hello, {plain} yesterday. Thanks"));
            texts.push(format!("x{plain}y"));
            texts.push(format!("{} {plain}", NEGATED[0]));
            texts.push(format!("I was not {plain}, but charged twice"));
        }
        let mut disagreements = Vec::new();
        for text in &texts {
            let now = phrase_kind(&without_negations(fold_words(text)));
            let before = phrase_kind_one_by_one(text);
            if before != now {
                disagreements.push((text.clone(), before, now));
            }
        }
        assert!(texts.len() > 1000, "{}", texts.len());
        assert!(disagreements.is_empty(), "{disagreements:#?}");
    }

    #[test]
    fn a_charge_pointed_at_is_a_duplicate_reading_beside_the_wish_to_cancel() {
        use RequestKind::*;
        for text in [
            "Merci d'annuler le second débit svp",
            "cancelar el segundo cobro por favor",
            "두 번째 결제 취소해 주세요",
            "第二笔扣款请取消",
            "Proszę anulować drugie obciążenie",
        ] {
            assert_eq!(kinds_named(text), [DuplicateCharge, Cancellation], "{text}");
            assert_eq!(classify(text), DuplicateCharge, "{text}");
        }
        assert_eq!(kinds_named("I want to cancel my plan"), [Cancellation]);
    }

    #[test]
    fn a_verb_and_its_particle_written_apart_still_name_the_request() {
        use RequestKind::*;
        let cases = [
            (
                "Ich brauche mein Abo nicht mehr, bekomme ich eine Erstattung?",
                Cancellation,
            ),
            (
                "Zeg de bestelling alstublieft op, ik heb me vergist.",
                Cancellation,
            ),
            (
                "Pela presente comunico que resolvo o meu contrato.",
                Cancellation,
            ),
            // The parts must be in one sentence and in order.
            ("Ich brauche Hilfe. Das Abo geht nicht mehr.", Unclear),
            ("Op mijn rekening staat iets. Zeg het maar.", Unclear),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text), kind, "{text}");
        }
    }

    #[test]
    fn classifies_requests_in_english_and_chinese() {
        let cases = [
            (
                "I was charged twice for my annual plan",
                RequestKind::DuplicateCharge,
            ),
            ("我的年度会员被扣了两次款", RequestKind::DuplicateCharge),
            (
                "There is a pending charge hold on my card",
                RequestKind::AuthorizationHold,
            ),
            ("I want to cancel my annual plan", RequestKind::Cancellation),
            ("我想取消订阅", RequestKind::Cancellation),
            ("You charged more than the price", RequestKind::Overcharge),
            ("年度会员多扣了20元", RequestKind::Overcharge),
            ("信用卡上有一笔预授权冻结", RequestKind::AuthorizationHold),
            (
                "Please cancel the duplicate charge",
                RequestKind::DuplicateCharge,
            ),
            ("hello?", RequestKind::Unclear),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text), kind, "{text}");
        }
    }

    #[test]
    fn words_match_on_boundaries_only() {
        // "cardholder" is no hold, "household" neither.
        assert_eq!(
            classify("As the cardholder of a household account I want to cancel"),
            RequestKind::Cancellation
        );
        assert_eq!(
            classify("the hold is still there"),
            RequestKind::AuthorizationHold
        );
    }

    #[test]
    fn reads_common_paraphrases_beyond_the_fixture_wording() {
        let cases = [
            (
                "I see 2 identical transactions",
                RequestKind::DuplicateCharge,
            ),
            ("you charged me again for it", RequestKind::DuplicateCharge),
            ("被重复收费了", RequestKind::DuplicateCharge),
            ("請求が重なっています", RequestKind::DuplicateCharge),
            ("I paid above the advertised price", RequestKind::Overcharge),
            (
                "表示価格より高い金額が引き落とされました",
                RequestKind::Overcharge,
            ),
            (
                "I'd like to unsubscribe and get refunded",
                RequestKind::Cancellation,
            ),
            ("我要退款，不想用了", RequestKind::Cancellation),
            (
                "退会したいので返金をお願いします",
                RequestKind::Cancellation,
            ),
            (
                "a temporary charge never cleared",
                RequestKind::AuthorizationHold,
            ),
            ("卡里有一笔钱被锁定了", RequestKind::AuthorizationHold),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text), kind, "{text}");
        }
    }

    #[test]
    fn one_typo_in_a_longer_word_still_reads_as_that_word() {
        assert_eq!(
            classify("I was charged tiwce"),
            RequestKind::DuplicateCharge
        );
        assert_eq!(
            classify("a dulpicate purchase"),
            RequestKind::DuplicateCharge
        );
        assert_eq!(classify("please cancle it"), RequestKind::Cancellation);
        assert_eq!(classify("a twin charge"), RequestKind::Unclear);
        assert!(one_slip("twcie", "twice") && !one_slip("twice", "twice"));
        assert!(!one_slip("tciwe", "twice"));
        // A word one letter from a phrase at its start is another word.
        assert!(!one_slip("achete", "rachete") && !one_slip("wtice", "twice"));
        assert_eq!(
            classify("J'ai acheté l'abonnement annuel il y a 4 jours, puis-je être remboursé ?"),
            RequestKind::Unclear
        );
    }

    #[test]
    fn classifies_requests_in_japanese() {
        let cases = [
            (
                "年間プランが二重に請求されました",
                RequestKind::DuplicateCharge,
            ),
            (
                "同じ金額が2回引き落とされています",
                RequestKind::DuplicateCharge,
            ),
            ("請求額が定価より高いです", RequestKind::Overcharge),
            (
                "年間プランを解約して返金してください",
                RequestKind::Cancellation,
            ),
            (
                "カードに仮押さえが残っています",
                RequestKind::AuthorizationHold,
            ),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text), kind, "{text}");
        }
    }

    #[test]
    fn the_statutory_withdrawal_wording_of_each_jurisdiction_is_a_cancellation() {
        for text in [
            "Hiermit widerrufe ich den von mir abgeschlossenen Vertrag über den Kauf der folgenden Waren.",
            "Je souhaite exercer mon droit de rétractation pour l'abonnement annuel.",
            "Por la presente le comunico que desisto de mi contrato (derecho de desistimiento).",
            "Con la presente esercito il diritto di recesso dal contratto.",
            "Hierbij deel ik u mede dat ik onze overeenkomst herroep.",
            "Venho exercer o direito de livre resolução do contrato.",
            "청약철회를 요청합니다.",
            "クーリング・オフをお願いします。",
            "我要七天无理由退货。",
            "I wish to exercise my right to cancel within 14 days.",
        ] {
            assert_eq!(classify(text), RequestKind::Cancellation, "{text}");
        }
    }

    #[test]
    fn request_kinds_are_read_in_every_language_we_answer_in() {
        use RequestKind::{AuthorizationHold, Cancellation, DuplicateCharge, Overcharge};
        let cases = [
            ("Mir wurde der Betrag zweimal abgebucht.", DuplicateCharge),
            (
                "Auf meiner Karte ist noch ein Betrag vorgemerkt.",
                AuthorizationHold,
            ),
            ("Sie haben mir zu viel berechnet.", Overcharge),
            ("Ich möchte mein Abo kündigen.", Cancellation),
            ("Kunnen jullie dat terugdraaien?", Cancellation),
            ("Draai de aankoop alsjeblieft terug.", Cancellation),
            (
                "J'ai été prélevé deux fois pour la même commande.",
                DuplicateCharge,
            ),
            (
                "Il y a une empreinte bancaire sur ma carte.",
                AuthorizationHold,
            ),
            (
                "Le montant débité est plus élevé que le prix affiché.",
                Overcharge,
            ),
            ("Je voudrais résilier mon abonnement.", Cancellation),
            ("Me han cobrado dos veces el mismo pedido.", DuplicateCharge),
            ("Tengo un cargo pendiente en la tarjeta.", AuthorizationHold),
            ("Me cobraron de más.", Overcharge),
            ("Quiero darme de baja.", Cancellation),
            (
                "Mi avete addebitato due volte lo stesso importo.",
                DuplicateCharge,
            ),
            (
                "C'è un importo bloccato sulla mia carta.",
                AuthorizationHold,
            ),
            (
                "L'importo addebitato è più alto del prezzo indicato.",
                Overcharge,
            ),
            ("Vorrei disdire l'abbonamento.", Cancellation),
            ("Er is twee keer afgeschreven.", DuplicateCharge),
            (
                "Er staat een bedrag gereserveerd op mijn kaart.",
                AuthorizationHold,
            ),
            ("Ik heb te veel betaald.", Overcharge),
            ("Ik wil mijn abonnement opzeggen.", Cancellation),
            (
                "Fui cobrado duas vezes pela mesma encomenda.",
                DuplicateCharge,
            ),
            ("Há um valor retido no meu cartão.", AuthorizationHold),
            ("Cobraram um valor errado.", Overcharge),
            ("Quero cancelar a minha assinatura.", Cancellation),
            ("같은 주문이 두 번 결제되었습니다.", DuplicateCharge),
            ("카드에 가승인 금액이 남아 있습니다.", AuthorizationHold),
            ("정가보다 더 많이 청구되었습니다.", Overcharge),
            ("구독을 해지하고 싶습니다.", Cancellation),
        ];
        for (text, kind) in cases {
            assert_eq!(classify(text), kind, "{text}");
        }
    }

    #[test]
    fn negated_holds_in_other_languages_do_not_read_as_holds() {
        assert_eq!(
            classify("Die zweite Abbuchung ist nicht mehr ausstehend, sie wurde zweimal gebucht."),
            RequestKind::DuplicateCharge
        );
        assert_eq!(
            classify("No está pendiente: me cobraron dos veces."),
            RequestKind::DuplicateCharge
        );
    }
}
