//! The request kind from the customer's words: phrases and stems per kind, negated holds
//! blanked first, one typo forgiven in a longer word, two prices quoted read as an
//! overcharge. Nothing the customer writes is obeyed here (RP-007): words only pick a kind.

use policy_engine::RequestKind;

use super::keywords::{KEYWORDS, MONEY_WORDS, NEGATED};
use crate::resolve;

/// Phrases are matched on text folded by `resolve::fold` (NFKC, ASCII lower case), so
/// full-width input (`Ｃａｎｃｅｌ`) reads like ASCII. An ASCII phrase ending in `*` is
/// a stem: it matches at the start of a word and any ending may follow (`debit*`:
/// debit, debits, debited), so one entry covers a word's inflections.
fn contains_phrase(text: &str, phrase: &str) -> bool {
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

pub(super) fn speaks_of_money(text: &str) -> bool {
    let text = resolve::fold(text);
    MONEY_WORDS.iter().any(|w| contains_phrase(&text, w))
}

pub fn classify(text: &str) -> RequestKind {
    let mut text = resolve::fold(text);
    for negated in NEGATED {
        text = text.replace(negated, " ");
    }
    for (kind, phrases) in KEYWORDS {
        if phrases.iter().any(|p| contains_phrase(&text, p)) {
            return *kind;
        }
    }
    // Customers mistype ("tiwce", "dulpicate"): one slip in a one-word phrase of five
    // letters or more still reads as that phrase, in the same order of kinds.
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 5)
        .collect();
    for (kind, phrases) in KEYWORDS {
        let typed = |p: &&str| {
            p.len() >= 5
                && p.chars().all(|c| c.is_ascii_alphabetic())
                && words.iter().any(|w| one_slip(w, p))
        };
        if phrases.iter().any(typed) {
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
/// dropped or added (ASCII; an optimal-string-alignment distance of 1).
fn one_slip(word: &str, phrase: &str) -> bool {
    let (a, b) = (word.as_bytes(), phrase.as_bytes());
    if a == b || a.len().abs_diff(b.len()) > 1 {
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
}
