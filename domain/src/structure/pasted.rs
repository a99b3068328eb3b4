//! Lines pasted from a bank statement, a card SMS or a receipt, told apart from the
//! customer's own sentences by their shape: an amount or a date, together with what
//! records have and sentences lack (a leading date, columns, capitals, a bracketed
//! sender, a masked card number). A line in the first person ("I", "my", "ich", "我",
//! "私" …) is the customer talking, never a record.

use super::fold::fold_words;

/// Words of the first person, folded: a line with one is the customer's own sentence.
const FIRST_PERSON: &[&str] = &[
    "i", "i'm", "i've", "my", "me", "we", "our", "ich", "mein", "meine", "meinen", "mir", "mich",
    "je", "j'ai", "mon", "ma", "mes", "moi", "yo", "mi", "mis", "io", "mio", "mia", "ho", "ik",
    "mijn", "eu", "meu", "minha",
];
const FIRST_PERSON_CJK: &[&str] = &[
    "我", "私", "僕", "저는", "제가", "저의", "제 ", "나는", "내가",
];

/// Phrases of a masked card ("card ending 4242"), folded.
const MASKED: &[&str] = &[
    "ending in",
    "ending",
    "endet auf",
    "endend auf",
    "terminant par",
    "terminee par",
    "terminada en",
    "terminacion",
    "che termina",
    "terminante",
    "eindigend op",
    "eindigend",
    "final ",
    "terminado em",
    "끝자리",
    "尾号",
    "末尾",
    "下4桁",
];

/// Whether a line reads as a pasted record rather than the customer's sentence.
pub(super) fn is_record_line(line: &str) -> bool {
    let folded = fold_words(line);
    if first_person(&folded) {
        return false;
    }
    let (amount, date) = (has_amount(&folded), has_date(&folded));
    if !(amount || date) {
        return false;
    }
    let signs = [
        amount,
        date,
        starts_with_date(&folded),
        bracketed_sender(line),
        mostly_capitals(line),
        columns(line),
        masked_card(&folded),
    ];
    signs.iter().filter(|s| **s).count() >= 3
}

/// Whether a folded text speaks in the first person ("I", "my", "ich", "我", "私", "저").
pub(super) fn first_person(folded: &str) -> bool {
    let words = folded.split(|c: char| !(c.is_alphanumeric() || c == '\''));
    let latin = words.into_iter().any(|w| FIRST_PERSON.contains(&w));
    latin || FIRST_PERSON_CJK.iter().any(|w| folded.contains(w))
}

/// Digit runs of a text with their byte spans.
pub(crate) fn digit_runs(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

const SIGNS: [char; 5] = ['$', '€', '¥', '£', '₩'];
const CODES: [&str; 8] = ["usd", "eur", "jpy", "cny", "rmb", "krw", "gbp", "chf"];
const UNITS: [&str; 11] = [
    "円",
    "元",
    "원",
    "yen",
    "euro",
    "ドル",
    "ユーロ",
    "달러",
    "유로",
    "dollar",
    "위안",
];

/// A currency sign or code next to a number, a number with two decimals, `円`/`元`/`원`.
fn has_amount(folded: &str) -> bool {
    let nums = digit_runs(folded);
    nums.iter().enumerate().any(|(k, &(s, e))| {
        let two_decimals = matches!(folded[e..].chars().next(), Some('.' | ','))
            && nums
                .get(k + 1)
                .is_some_and(|&(s2, e2)| s2 == e + 1 && e2 - s2 == 2);
        two_decimals || money_at(folded, s, e)
    })
}

/// Whether the number at `s..e` carries a currency sign, code or word.
fn money_at(folded: &str, s: usize, e: usize) -> bool {
    let before = folded[..s].trim_end();
    let after = folded[e..].trim_start();
    before.ends_with(SIGNS)
        || CODES
            .iter()
            .any(|c| before.ends_with(c) || after.starts_with(c))
        || UNITS.iter().any(|u| after.starts_with(u))
}

/// `12/03`, `12.03.2026`, `2026-03-12`, `3月12日`, `3월 12일`.
/// An amount (`99.00ドル`, `$12.50`) is not a date, though its digits read like one.
fn has_date(folded: &str) -> bool {
    let nums = digit_runs(folded);
    nums.windows(2).any(|w| {
        let gap = &folded[w[0].1..w[1].0];
        let money = money_at(folded, w[0].0, w[0].1) || money_at(folded, w[1].0, w[1].1);
        let short = w[0].1 - w[0].0 <= 4 && w[1].1 - w[1].0 <= 2 && !money;
        (short && matches!(gap, "/" | "." | "-")) || gap == "月" || gap == "월 " || gap == "월"
    }) || nums
        .iter()
        .any(|&(s, e)| e - s == 4 && folded[e..].starts_with('年'))
}

fn starts_with_date(folded: &str) -> bool {
    let head: String = folded.trim_start().chars().take(12).collect();
    head.starts_with(|c: char| c.is_ascii_digit()) && has_date(&head)
}

fn bracketed_sender(line: &str) -> bool {
    let t = line.trim_start();
    let head: String = t.chars().take(24).collect();
    (t.starts_with('[') && head.contains(']')) || (t.starts_with('【') && head.contains('】'))
}

fn mostly_capitals(line: &str) -> bool {
    let letters: Vec<char> = line.chars().filter(char::is_ascii_alphabetic).collect();
    let upper = letters.iter().filter(|c| c.is_ascii_uppercase()).count();
    letters.len() >= 6 && upper * 10 >= letters.len() * 6
}

fn columns(line: &str) -> bool {
    line.contains('\t') || line.trim().matches("  ").count() >= 2
}

fn masked_card(folded: &str) -> bool {
    let masked_digits = ["**", "xx", "••", "··", "＊＊"].iter().any(|m| {
        folded.contains(m)
            && folded.split(m).skip(1).any(|r| {
                r.trim_start_matches(['*', 'x', '•', '·', '＊', ' '])
                    .starts_with(|c: char| c.is_ascii_digit())
            })
    });
    masked_digits || MASKED.iter().any(|m| contains_word(folded, m))
}

/// `phrase` in `text`, not glued to a letter before it ("ending" is not in "pending").
pub(crate) fn contains_word(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(at, _)| {
        !phrase.is_ascii()
            || !text[..at]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_lines_and_card_messages_are_records() {
        for line in [
            "03/12/2026  TRADER JOE'S #552  -45.12",
            "2026-03-12 SHOP EXAMPLE 12,99 EUR",
            "12.03.2026 Kartenzahlung SHOP.EXAMPLE Berlin -12,99",
            "Chase: A $12.00 transaction with SHOP was made on your card ending 4242 on 03/12.",
            "【招商银行】您尾号1234的卡于03月12日消费人民币120.00元",
            "[Bank] Card ****4242 charged USD 12.00 at SHOP",
        ] {
            assert!(is_record_line(line), "{line}");
        }
    }

    #[test]
    fn the_customers_own_sentences_are_not_records() {
        for line in [
            "On 12/03 you charged me $12.00 twice",
            "On 03/12 my card ending 4242 was charged $12.00 twice",
            "I was charged €12.99 twice on 2026-03-12 for order 65169",
            "Bitte erstatten Sie mir 12,99 €, ich wurde am 12.03. doppelt belastet",
            "我在3月12日被扣了两次120.00元",
            "Please refund order 65169",
            "99.00ドルの注文について、一度しか購入していないのに二度課金されています。",
        ] {
            assert!(!is_record_line(line), "{line}");
        }
    }
}
