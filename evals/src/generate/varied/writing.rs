//! How a customer writes an order id, an amount and a date, in the bank's language,
//! and the typos and full-width characters they type.

use super::super::rng::SplitMix64;
use super::vocabulary::Bank;

/// The id as a customer types it: after an order word, `#` or not, in one of the id
/// forms (`ID_FORMS`), any case, sometimes full width. `others` are the world's other
/// order ids: a form whose pieces would read as one of them is not used (a careful
/// person could not tell which was meant). Returns the reference and its form.
pub(super) fn write_id(
    rng: &mut SplitMix64,
    bank: &Bank,
    id: &str,
    others: &[String],
) -> (String, &'static str) {
    let template = rng.pick_str(&bank.refs.id).to_string();
    let mut written = id.to_string();
    if template.contains("#{id}") || (written.starts_with('#') && rng.chance(40)) {
        written = written.trim_start_matches('#').to_string();
    }
    let form = ID_FORMS[rng.below(ID_FORMS.len() as u64) as usize];
    let lower = rng.chance(20);
    let wide = rng.chance(10);
    if form.starts_with("url") {
        let url = id_in_url(rng, id, form, lower);
        let generic = rng.pick_str(&bank.refs.generic).to_string();
        let around = match rng.below(3) {
            0 => format!("{generic} ({url})"),
            1 => format!("{generic} <{url}>"),
            _ => format!("{generic}: {url} "),
        };
        return (around, form);
    }
    let (shaped, form) = match id_form(rng, &written, form) {
        Some(pieces) if !pieces_name_another(&pieces, others) => (pieces.concat(), form),
        _ => (written, "plain"),
    };
    let mut shaped = shaped;
    if lower {
        shaped = shaped.to_lowercase();
    }
    if wide {
        shaped = full_width(&shaped);
    }
    (template.replace("{id}", &shaped), form)
}

/// The ways an id is written: as given, in groups, broken over a line, with
/// another dash (or one more), with thousands separators, inside a URL path or query.
pub(super) const ID_FORMS: [&str; 7] = [
    "plain",
    "spaced",
    "line_break",
    "dash",
    "thousands",
    "url_path",
    "url_query",
];

/// Every dash a keyboard or a word processor types, the katakana long vowel mark among
/// them (Japanese IMEs give `ー` for `-`).
const DASHES: [char; 11] = [
    '-', '\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2014}', '\u{2015}', '\u{2212}',
    '\u{FF0D}', '\u{30FC}', '\u{FE63}',
];

/// The id cut into pieces with their separators, for the forms that cut it (`None`:
/// this form does not fit this id).
fn id_form(rng: &mut SplitMix64, id: &str, form: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = id.chars().collect();
    let digits = chars.iter().all(char::is_ascii_digit);
    let cut = |at: &[usize], sep: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut from = 0;
        for &i in at {
            out.push(chars[from..i].iter().collect::<String>());
            out.push(sep.to_string());
            from = i;
        }
        out.push(chars[from..].iter().collect());
        out
    };
    let dashes: Vec<usize> = (0..chars.len()).filter(|i| chars[*i] == '-').collect();
    match form {
        "spaced" if !dashes.is_empty() => Some(
            id.split('-')
                .flat_map(|p| [p.to_string(), " ".into()])
                .take(2 * id.split('-').count() - 1)
                .collect(),
        ),
        "spaced" if chars.len() >= 6 => {
            let size = rng.range(3, 4) as usize;
            Some(cut(
                &(size..chars.len()).step_by(size).collect::<Vec<_>>(),
                " ",
            ))
        }
        "line_break" if chars.len() >= 4 => {
            let at = match dashes.last() {
                Some(&d) if rng.chance(50) => d + 1,
                _ => rng.range(2, chars.len() as i64 - 2) as usize,
            };
            Some(cut(&[at], "\n"))
        }
        "dash" if !dashes.is_empty() => {
            let dash = DASHES[rng.below(DASHES.len() as u64) as usize].to_string();
            Some(
                id.split('-')
                    .flat_map(|p| [p.to_string(), dash.clone()])
                    .take(2 * id.split('-').count() - 1)
                    .collect(),
            )
        }
        "dash" if chars.len() >= 5 => {
            let dash = DASHES[rng.below(DASHES.len() as u64) as usize].to_string();
            let letters = chars.iter().take_while(|c| c.is_ascii_alphabetic()).count();
            let at = if (1..chars.len() - 1).contains(&letters) {
                letters
            } else {
                3
            };
            Some(cut(&[at], &dash))
        }
        "thousands" if digits && chars.len() >= 4 => {
            let sep = [",", ".", " ", "\u{202F}", "'"][rng.below(5) as usize];
            let at: Vec<usize> = (1..chars.len())
                .filter(|i| (chars.len() - i).is_multiple_of(3))
                .collect();
            Some(cut(&at, sep))
        }
        _ => None,
    }
}

/// Whether a piece of a cut id reads, alone, as another order of the world.
fn pieces_name_another(pieces: &[String], others: &[String]) -> bool {
    pieces.iter().step_by(2).any(|piece| {
        let piece = letters_and_digits(piece);
        others.iter().any(|o| letters_and_digits(o) == piece)
    })
}

/// An order page's address with the id in its path or in a query value.
fn id_in_url(rng: &mut SplitMix64, id: &str, form: &str, lower: bool) -> String {
    let mut bare = id.trim_start_matches('#').to_string();
    if lower {
        bare = bare.to_lowercase();
    }
    let host = ["shop.example", "www.shop.example", "account.shop.example"][rng.below(3) as usize];
    let query = [
        "ref=mail",
        "utm_source=email&utm_medium=receipt",
        "lang=en&src=app",
    ][rng.below(3) as usize];
    if form == "url_path" {
        let path = ["account/orders", "orders", "my/orders/view"][rng.below(3) as usize];
        format!("https://{host}/{path}/{bare}?{query}")
    } else {
        let key = ["order", "orderId", "order_no", "id"][rng.below(4) as usize];
        format!("https://{host}/orders/view?{key}={bare}&{query}")
    }
}

/// A text read as letters and digits only, in one case and width: how the guarantee
/// that decoys never equal nor contain an order id is checked.
pub(super) fn letters_and_digits(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
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
        ("ko", "JPY") => "엔",
        ("ko", "CNY") => "위안",
        ("ko", "EUR") => "유로",
        ("ko", "USD") => "달러",
        _ => "",
    };
    if bank.decimal_comma {
        let comma = amount.replace('.', ",");
        return match currency {
            "EUR" if rng.chance(50) => format!("{comma} €"),
            "EUR" => format!("€{comma}"),
            "USD" if rng.chance(50) => format!("{comma} $"),
            code => format!("{comma} {code}"),
        };
    }
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
    let month = bank.months.get(m as usize - 1).map(String::as_str);
    match (bank.language.as_str(), rng.below(3), month) {
        ("en", 0, _) => format!("{} {d}", &MONTHS[m as usize - 1][..3]),
        ("en", 1, _) => format!("{d} {}", MONTHS[m as usize - 1]),
        ("zh" | "ja", 0 | 1, _) => format!("{m}月{d}日"),
        ("ko", 0 | 1, _) => format!("{m}월 {d}일"),
        ("de", 0, Some(name)) => format!("{d}. {name}"),
        ("de", 1, _) => format!("{d:02}.{m:02}.{y}"),
        ("es" | "pt", 0 | 1, Some(name)) => format!("{d} de {name}"),
        (_, 0 | 1, Some(name)) => format!("{d} {name}"),
        (_, _, _) => format!("{y}-{m:02}-{d:02}"),
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
