//! Money as the customer's language writes it (issue 38: ¥19,800, 1.234,56 €): the
//! symbol, where it goes, the group and decimal marks. `Decimal` in, text out — never a
//! float. What it does not do: convert currencies, or round beyond the currency's own
//! minor unit (JPY none, the others two: SPEC §3).

use rust_decimal::Decimal;

use super::language::Language;

/// How one language writes an amount: marks, and the symbol before or after.
struct Style {
    group: &'static str,
    decimal: &'static str,
    symbol_first: bool,
    /// Between the number and a symbol written after it (or before, for `nl`).
    gap: &'static str,
}

fn style(lang: Language) -> Style {
    let (group, decimal, symbol_first, gap) = match lang {
        Language::En | Language::Zh | Language::Ja | Language::Ko => (",", ".", true, ""),
        Language::De | Language::Es | Language::It => (".", ",", false, "\u{a0}"),
        Language::Nl => (".", ",", true, "\u{a0}"),
        Language::Fr => ("\u{202f}", ",", false, "\u{a0}"),
        Language::Pt => ("\u{a0}", ",", false, "\u{a0}"),
    };
    Style {
        group,
        decimal,
        symbol_first,
        gap,
    }
}

/// The currency's symbol in `lang`: the local currency bare, another one told apart
/// (`CN¥` beside `¥` for the yen, `US$`).
fn symbol(lang: Language, currency: &str) -> String {
    match (currency, lang) {
        ("JPY", Language::Zh) => "JP¥".into(),
        ("JPY", _) => "¥".into(),
        ("CNY", Language::Zh) => "¥".into(),
        ("CNY", _) => "CN¥".into(),
        ("USD", Language::En) => "$".into(),
        ("USD", Language::Zh | Language::Ko) => "US$".into(),
        ("USD", _) => "$".into(),
        ("EUR", _) => "€".into(),
        (other, _) => other.to_string(),
    }
}

/// Digits of the currency's minor unit.
fn places(currency: &str) -> u32 {
    match currency {
        "JPY" | "KRW" => 0,
        _ => 2,
    }
}

fn grouped(digits: &str, mark: &str) -> String {
    let mut out = String::new();
    for (n, d) in digits.chars().enumerate() {
        if n > 0 && (digits.len() - n).is_multiple_of(3) {
            out.push_str(mark);
        }
        out.push(d);
    }
    out
}

/// `amount` (a decimal string, `"19800"`, `"1234.56"`) in `currency`, as `lang` writes
/// it. Text that is not a decimal is shown as it came, with its currency code.
pub fn money_text(lang: Language, amount: &str, currency: &str) -> String {
    let Ok(value) = amount.trim().parse::<Decimal>() else {
        return format!("{amount} {currency}");
    };
    let s = style(lang);
    let places = places(currency);
    let rounded = value.abs().round_dp(places);
    let plain = format!("{rounded:.0$}", places as usize);
    let (whole, fraction) = plain.split_once('.').unwrap_or((&plain, ""));
    let mut number = grouped(whole, s.group);
    if !fraction.is_empty() {
        number = format!("{number}{}{fraction}", s.decimal);
    }
    let sign = if value.is_sign_negative() && !rounded.is_zero() {
        "-"
    } else {
        ""
    };
    let symbol = symbol(lang, currency);
    match (s.symbol_first, lang) {
        (true, Language::Nl) => format!("{sign}{symbol}{}{number}", s.gap),
        (true, _) => format!("{sign}{symbol}{number}"),
        (false, _) => format!("{sign}{number}{}{symbol}", s.gap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_language_writes_money_its_own_way() {
        let cases = [
            (Language::Ja, "19800", "JPY", "¥19,800"),
            (Language::En, "19800", "JPY", "¥19,800"),
            (Language::De, "1234.56", "EUR", "1.234,56\u{a0}€"),
            (Language::En, "1234.5", "USD", "$1,234.50"),
            (Language::Zh, "198", "CNY", "¥198.00"),
            (Language::En, "198.00", "CNY", "CN¥198.00"),
            (
                Language::Fr,
                "1234567.8",
                "EUR",
                "1\u{202f}234\u{202f}567,80\u{a0}€",
            ),
            (Language::Nl, "12.5", "EUR", "€\u{a0}12,50"),
            (Language::Ko, "5", "USD", "US$5.00"),
            (Language::De, "999", "JPY", "999\u{a0}¥"),
        ];
        for (lang, amount, currency, want) in cases {
            assert_eq!(
                money_text(lang, amount, currency),
                want,
                "{lang:?} {amount} {currency}"
            );
        }
    }

    #[test]
    fn text_that_is_not_an_amount_is_shown_as_it_came() {
        assert_eq!(money_text(Language::En, "n/a", "EUR"), "n/a EUR");
    }
}
