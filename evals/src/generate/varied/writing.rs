//! How a customer writes an order id, an amount and a date, in the bank's language,
//! and the typos and full-width characters they type.

use super::super::rng::SplitMix64;
use super::vocabulary::Bank;

/// The id as a customer types it: after an order word, `#` or not, any case, sometimes
/// full width.
pub(super) fn write_id(rng: &mut SplitMix64, bank: &Bank, id: &str) -> String {
    let template = rng.pick_str(&bank.refs.id).to_string();
    let mut written = id.to_string();
    if template.contains("#{id}") || (written.starts_with('#') && rng.chance(40)) {
        written = written.trim_start_matches('#').to_string();
    }
    if rng.chance(20) {
        written = written.to_lowercase();
    }
    if rng.chance(10) {
        written = full_width(&written);
    }
    template.replace("{id}", &written)
}

pub(super) fn write_amount(
    rng: &mut SplitMix64,
    bank: &Bank,
    amount: &str,
    currency: &str,
) -> String {
    let word = match (bank.language.as_str(), currency) {
        ("zh", "CNY") => "元",
        ("zh", "USD") => "美元",
        ("zh", "EUR") => "欧元",
        ("zh", "JPY") | ("ja", "JPY") => "円",
        ("ja", "CNY") => "元",
        ("ja", "USD") => "ドル",
        ("ja", "EUR") => "ユーロ",
        _ => "",
    };
    match (word, currency) {
        ("", "USD") if rng.chance(50) => format!("${amount}"),
        ("", "EUR") if rng.chance(50) => format!("€{amount}"),
        ("", code) => format!("{amount} {code}"),
        (word, _) => format!("{amount}{word}"),
    }
}

pub(super) fn write_date(rng: &mut SplitMix64, bank: &Bank, date: time::Date) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (y, m, d) = (date.year(), u8::from(date.month()), date.day());
    match (bank.language.as_str(), rng.below(3)) {
        ("en", 0) => format!("{} {d}", &MONTHS[m as usize - 1][..3]),
        ("en", 1) => format!("{d} {}", MONTHS[m as usize - 1]),
        (_, 0 | 1) => format!("{m}月{d}日"),
        (_, _) => format!("{y}-{m:02}-{d:02}"),
    }
}

/// Two neighbouring letters of one longer word swapped ("charegd").
pub(super) fn with_typo(rng: &mut SplitMix64, template: &str) -> String {
    let words: Vec<&str> = template.split(' ').collect();
    let long: Vec<usize> = (0..words.len())
        .filter(|i| words[*i].len() >= 5 && words[*i].chars().all(|c| c.is_ascii_alphabetic()))
        .collect();
    if long.is_empty() {
        return template.to_string();
    }
    let at = long[rng.below(long.len() as u64) as usize];
    let mut chars: Vec<char> = words[at].chars().collect();
    let i = 1 + rng.below(chars.len() as u64 - 2) as usize;
    chars.swap(i, i + 1);
    let swapped: String = chars.into_iter().collect();
    let mut out: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    out[at] = swapped;
    out.join(" ")
}

/// ASCII to full width (`Ｏ－１２３`), as CJK keyboards type it.
pub(super) fn full_width(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(c as u32 + 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .collect()
}
