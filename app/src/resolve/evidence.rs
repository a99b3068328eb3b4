//! Secondary evidence in the customer's text: the products, money amounts, currencies
//! and explicit dates they write, used to choose among their orders when no id is named.

use rust_decimal::Decimal;

use super::normalise::{contains_phrase, fold};

/// Product words, folded, per product (EN, ZH, JA).
const PRODUCT_WORDS: &[(&str, &[&str])] = &[
    (
        "annual_plan",
        &[
            "annual",
            "yearly",
            "year plan",
            "year subscription",
            "1-year",
            "one-year",
            "12-month",
            "年度",
            "年费",
            "包年",
            "年卡",
            "年会员",
            "年付",
            "年間",
            "年額",
            "年払い",
            "1年プラン",
        ],
    ),
    (
        "monthly_plan",
        &[
            "monthly",
            "month plan",
            "month subscription",
            "month-to-month",
            "月度",
            "月费",
            "包月",
            "月卡",
            "月会员",
            "月付",
            "月額",
            "月払い",
            "マンスリー",
            "月間プラン",
        ],
    ),
    (
        "addon",
        &[
            "add-on",
            "addon",
            "add on",
            "extra pack",
            "附加",
            "插件",
            "扩展包",
            "加购",
            "增值包",
            "アドオン",
            "追加オプション",
            "オプション",
            "拡張パック",
        ],
    ),
];

/// The products the text names (`annual_plan`…); `text` need not be folded.
pub fn mentioned_products(text: &str) -> Vec<&'static str> {
    let text = fold(text);
    PRODUCT_WORDS
        .iter()
        .filter(|(_, words)| words.iter().any(|w| contains_phrase(&text, w)))
        .map(|(product, _)| *product)
        .collect()
}

/// Money amounts the text writes with a currency sign, code or decimals (`19.80`,
/// `¥9800`, `9800円`, `$12`): a bare small number ("2 times") is no amount.
pub fn mentioned_amounts(text: &str) -> Vec<Decimal> {
    let mut amounts = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && chars[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        let mut raw = String::new();
        while i < chars.len()
            && (chars[i].is_ascii_digit()
                || (matches!(chars[i], '.' | ',')
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
        {
            if chars[i] != ',' {
                raw.push(chars[i]);
            }
            i += 1;
        }
        if i < chars.len() && chars[i].is_ascii_alphabetic() && !text_has_currency_at(&chars, i) {
            continue;
        }
        let sign_before = chars[..start]
            .iter()
            .rev()
            .find(|c| !c.is_whitespace())
            .is_some_and(|c| matches!(c, '$' | '€' | '¥' | '£'));
        let marked = sign_before || text_has_currency_at(&chars, i) || raw.contains('.');
        if marked {
            if let Ok(d) = raw.parse::<Decimal>() {
                amounts.push(d.normalize());
            }
        }
    }
    amounts
}

fn text_has_currency_at(chars: &[char], i: usize) -> bool {
    let rest: String = chars[i..]
        .iter()
        .skip_while(|c| c.is_whitespace())
        .take(7)
        .collect();
    [
        "usd", "eur", "cny", "jpy", "rmb", "yen", "dollar", "euro", "円", "元", "块", "美元",
        "欧元", "日元",
    ]
    .iter()
    .any(|w| rest.starts_with(w))
}

/// Currencies the text names by sign, code or word.
pub(super) fn mentioned_currencies(text: &str) -> Vec<&'static str> {
    let table: &[(&str, &[&str])] = &[
        ("USD", &["$", "usd", "dollar", "美元", "ドル"]),
        ("EUR", &["€", "eur", "euro", "欧元", "ユーロ"]),
        ("JPY", &["円", "jpy", "yen", "日元"]),
        ("CNY", &["cny", "rmb", "人民币", "元"]),
    ];
    table
        .iter()
        .filter(|(code, words)| {
            words.iter().any(|w| {
                if w.is_ascii() && w.chars().all(|c| c.is_ascii_alphabetic()) {
                    contains_phrase(text, w)
                } else if *code == "CNY" && *w == "元" {
                    // 元 is also the second character of 美元 / 欧元 / 日元.
                    text.match_indices('元').any(|(at, _)| {
                        !text[..at].ends_with('美')
                            && !text[..at].ends_with('欧')
                            && !text[..at].ends_with('日')
                    })
                } else {
                    text.contains(w)
                }
            })
        })
        .map(|(code, _)| *code)
        .collect()
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Explicit dates (`2026-12-05`, `2026/12/05`, `12月5日`, `Dec 5`, `5 December`) as
/// `(year if written, month, day)`.
pub(super) fn mentioned_dates(text: &str) -> Vec<(Option<i32>, u8, u8)> {
    let mut dates = Vec::new();
    let numbers = |s: &str| -> Vec<(usize, usize, u32)> {
        let mut out = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i].is_ascii_digit() {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if let Ok(n) = s[start..i].parse::<u32>() {
                    out.push((start, i, n));
                }
            } else {
                i += 1;
            }
        }
        out
    };
    let nums = numbers(text);
    let ok = |m: u32, d: u32| (1..=12).contains(&m) && (1..=31).contains(&d);
    for w in nums.windows(3) {
        let [(_, e1, y), (s2, e2, m), (s3, _, d)] = [w[0], w[1], w[2]];
        let sep1 = &text[e1..s2];
        let sep2 = &text[e2..s3];
        let dated = |a: &str, b: &str| {
            (a == "-" && b == "-") || (a == "/" && b == "/") || (a == "年" && b == "月")
        };
        if (2000..=2100).contains(&y) && ok(m, d) && dated(sep1, sep2) {
            dates.push((Some(y as i32), m as u8, d as u8));
        }
    }
    for w in nums.windows(2) {
        let [(_, e1, m), (s2, e2, d)] = [w[0], w[1]];
        if &text[e1..s2] == "月" && text[e2..].starts_with('日') && ok(m, d) {
            dates.push((None, m as u8, d as u8));
        }
    }
    for (month0, name) in MONTHS.iter().enumerate() {
        for (at, _) in text.match_indices(name) {
            if text[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphabetic())
            {
                continue;
            }
            let word_end = at
                + text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphabetic())
                    .map(char::len_utf8)
                    .sum::<usize>();
            let day_after = nums
                .iter()
                .find(|(s, _, _)| *s > word_end && text[word_end..*s].trim().is_empty());
            let day_before = nums.iter().rev().find(|(_, e, _)| {
                *e <= at && {
                    let gap = text[*e..at].trim();
                    gap.is_empty() || matches!(gap, "st" | "nd" | "rd" | "th" | "of" | "th of")
                }
            });
            if let Some((_, _, d)) = day_after.or(day_before) {
                if ok(month0 as u32 + 1, *d) {
                    dates.push((None, month0 as u8 + 1, *d as u8));
                }
            }
        }
    }
    dates
}
