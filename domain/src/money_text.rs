//! An amount of money as a customer's language writes it: `¥19,800`, `1.234,56 €`,
//! `$12.34`, `1 234,56 €` — the symbol on its side, the separators of the language, and
//! exactly the currency's decimals (none for JPY). Used where staff words reach a
//! customer (a saved reply's `{refund_amount}`).
//!
//! Deliberately small: the four currencies of the desk (docs/spec/domain.md) and the ten
//! languages of its replies, written out as data; no locale database, no rounding (a
//! `Money` is already in its currency's scale), and no parsing back.

use policy_engine::{Currency, Money};

/// How one language lays an amount out.
struct Layout {
    group: &'static str,
    decimal: char,
    /// The symbol after the number (`1.234,56 €`) rather than before (`€1,234.56`).
    symbol_after: bool,
    /// What goes between symbol and number (a no-break space in most of Europe).
    gap: &'static str,
    /// Four-digit amounts keep no group separator (`1234,56 €` in Spanish).
    group_from_five_digits: bool,
}

const NBSP: &str = "\u{a0}";
const NARROW_NBSP: &str = "\u{202f}";

fn layout(language: &str) -> Layout {
    let european = |group, symbol_after, gap| Layout {
        group,
        decimal: ',',
        symbol_after,
        gap,
        group_from_five_digits: false,
    };
    match language {
        "de" | "it" => european(".", true, NBSP),
        "fr" => european(NARROW_NBSP, true, NBSP),
        "es" => Layout {
            group_from_five_digits: true,
            ..european(".", true, NBSP)
        },
        "nl" | "pt" => european(".", false, NBSP),
        _ => Layout {
            group: ",",
            decimal: '.',
            symbol_after: false,
            gap: "",
            group_from_five_digits: false,
        },
    }
}

/// The currency's sign as `language` writes it: a reader's own currency gets the bare
/// sign (`¥` is yuan in Chinese, yen in Japanese), another's a prefixed one (`CN¥`).
fn symbol(currency: Currency, language: &str) -> &'static str {
    match (currency, language) {
        (Currency::USD, "zh" | "ko") => "US$",
        (Currency::USD, _) => "$",
        (Currency::EUR, _) => "€",
        (Currency::JPY, "ja" | "en") => "¥",
        (Currency::JPY, _) => "JP¥",
        (Currency::CNY, "zh") => "¥",
        (Currency::CNY, "ja") => "元",
        (Currency::CNY, _) => "CN¥",
    }
}

/// `money` as a customer writing `language` (`en`, `ja`, `de`, …) reads it; a language
/// of none of ours is written as English.
pub fn localized(money: &Money, language: &str) -> String {
    let currency = money.currency();
    let layout = layout(language);
    let plain = money.amount_string();
    let (whole, fraction) = match plain.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (plain.as_str(), None),
    };
    let mut number = grouped(whole, &layout);
    if let Some(fraction) = fraction {
        number.push(layout.decimal);
        number.push_str(fraction);
    }
    let sign = symbol(currency, language);
    // Japanese writes yuan after the number (`1,234.56元`), as it writes yen in words.
    if sign == "元" {
        return format!("{number}{sign}");
    }
    match layout.symbol_after {
        true => format!("{number}{}{sign}", layout.gap),
        false => format!("{sign}{}{number}", layout.gap),
    }
}

/// The whole part with the language's thousands separator.
fn grouped(whole: &str, layout: &Layout) -> String {
    let digits: Vec<char> = whole.chars().collect();
    if digits.len() <= 3 || (layout.group_from_five_digits && digits.len() == 4) {
        return whole.to_string();
    }
    let mut out = String::new();
    for (i, digit) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(layout.group);
        }
        out.push(*digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn money(amount: &str, currency: Currency) -> Money {
        Money::parse(amount, currency).unwrap()
    }

    #[test]
    fn each_language_writes_an_amount_as_its_readers_do() {
        let cases = [
            ("19800", Currency::JPY, "ja", "¥19,800"),
            ("19800", Currency::JPY, "en", "¥19,800"),
            ("19800", Currency::JPY, "zh", "JP¥19,800"),
            ("1234.56", Currency::EUR, "de", "1.234,56\u{a0}€"),
            ("1234.56", Currency::EUR, "fr", "1\u{202f}234,56\u{a0}€"),
            ("1234.56", Currency::EUR, "es", "1234,56\u{a0}€"),
            ("12345.60", Currency::EUR, "es", "12.345,60\u{a0}€"),
            ("1234.56", Currency::EUR, "nl", "€\u{a0}1.234,56"),
            ("1234.56", Currency::EUR, "en", "€1,234.56"),
            ("12.34", Currency::USD, "en", "$12.34"),
            ("198.00", Currency::CNY, "zh", "¥198.00"),
            ("198.00", Currency::CNY, "en", "CN¥198.00"),
            ("198.00", Currency::CNY, "ja", "198.00元"),
            ("1234567.89", Currency::USD, "ko", "US$1,234,567.89"),
            ("0.50", Currency::USD, "xx", "$0.50"),
        ];
        for (amount, currency, language, written) in cases {
            assert_eq!(
                localized(&money(amount, currency), language),
                written,
                "{amount} {currency:?} in {language}"
            );
        }
    }

    proptest! {
        /// Whatever the language, the digits are the amount's, in order, and a JPY
        /// amount has no decimals.
        #[test]
        fn the_digits_are_always_the_amounts(minor in 0i64..10_000_000_000, jpy: bool, lang in 0usize..11) {
            let languages = ["en", "zh", "ja", "de", "fr", "es", "it", "nl", "pt", "ko", "xx"];
            let currency = if jpy { Currency::JPY } else { Currency::EUR };
            let m = Money::from_minor(minor, currency).unwrap();
            let text = localized(&m, languages[lang]);
            let digits: String = text.chars().filter(char::is_ascii_digit).collect();
            let expected: String = m.amount_string().chars().filter(char::is_ascii_digit).collect();
            prop_assert_eq!(digits, expected);
        }
    }
}
