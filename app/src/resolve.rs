//! Which order a ticket is about, resolved against the customer's own records rather
//! than against a pattern of what order ids look like (issue 15; SPEC §3: ids are
//! opaque strings chosen by the shop).
//!
//! Order of evidence, strongest first:
//! 1. the order the customer picked in the ticket form (`form`), when it is theirs;
//! 2. one of their real order ids written anywhere in the conversation (`message`):
//!    Unicode NFKC (full-width to ASCII), case-insensitive, `#` optional, bounded (an id
//!    never matches inside a longer token) and the longest id wins where ids are
//!    prefixes of one another;
//! 3. reference-like tokens that match none of their orders are handed back
//!    ([`Resolution::unmatched`]) for the workflow to look up among all orders (RP-007:
//!    someone else's order goes to security; the model is never trusted with that);
//! 4. secondary evidence the customer wrote (`message`): product names, amounts,
//!    currencies, explicit dates;
//! 5. the billing records (`records`): their only order, or the one order whose charges
//!    show the problem described;
//! 6. otherwise no order, and [`Resolution::missing`] says what to ask (RP-002 §4).
//!
//! Pure functions over plain data: no I/O, no clock, deterministic. Nothing a customer
//! writes is obeyed here; text only selects among records that exist.

use policy_engine::{OrderFacts, RequestKind};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

/// Where the order of a decision came from, recorded with the case so a reviewer sees
/// why this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderSource {
    /// Picked by the customer in the ticket form.
    Form,
    /// Written by the customer (an id, or a product, amount or date that singles it out).
    Message,
    /// The billing records single it out (the only order, the one showing the problem).
    Records,
    /// Named by the model and verified to be one of the customer's orders; used only
    /// when neither text nor records settle it.
    Agent,
}

impl OrderSource {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderSource::Form => "form",
            OrderSource::Message => "message",
            OrderSource::Records => "records",
            OrderSource::Agent => "agent",
        }
    }
}

/// Where the request kind of a proposal came from, recorded next to [`OrderSource`] so a
/// reviewer sees why the case was read as this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestSource {
    /// The customer's words name the kind.
    Text,
    /// The words left it unclear or the order's charges contradict them, and the
    /// charges fit exactly one kind (`agent::records_kind`).
    Records,
}

impl RequestSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestSource::Text => "text",
            RequestSource::Records => "records",
        }
    }
}

/// A charge as resolution needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChargeSummary {
    pub amount: Decimal,
    /// Captured and succeeded: money was taken (RP-001 §1).
    pub took_money: bool,
    /// Uncaptured and not failed: an authorization hold.
    pub hold: bool,
}

/// One of the customer's orders, as resolution needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderCandidate {
    pub id: String,
    /// `annual_plan`, `monthly_plan`, `addon`.
    pub product: String,
    pub amount: Decimal,
    /// ISO 4217, upper case.
    pub currency: String,
    /// `(year, month, day)` the order was placed.
    pub date: (i32, u8, u8),
    /// The order's charges; `None` when not read yet.
    pub charges: Option<Vec<ChargeSummary>>,
}

impl OrderCandidate {
    /// From the policy engine's facts (every charge is known there).
    pub fn from_facts(order: &OrderFacts) -> Self {
        let d = order.created_at.date();
        OrderCandidate {
            id: order.id.clone(),
            product: order.product.as_str().to_string(),
            amount: order.amount.amount(),
            currency: order.amount.currency().code().to_string(),
            date: (d.year(), u8::from(d.month()), d.day()),
            charges: Some(
                order
                    .charges
                    .iter()
                    .map(|c| ChargeSummary {
                        amount: c.amount.amount(),
                        took_money: c.took_money(),
                        hold: !c.captured && c.status != policy_engine::ChargeStatus::Failed,
                    })
                    .collect(),
            ),
        }
    }
}

/// What resolution needs to know about the ticket.
pub struct ResolveInput<'a> {
    /// Every customer message, oldest first.
    pub messages: &'a [String],
    /// The order picked in the ticket form.
    pub form_order: Option<&'a str>,
    pub request: RequestKind,
    pub orders: &'a [OrderCandidate],
}

/// A token that reads like an order reference but is none of the customer's orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// As written, after NFKC (case kept), without a leading `#`.
    pub text: String,
    /// After `#` or an order word ("order no.", "订单号", "注文番号"), or letters and
    /// digits mixed (`MX5H38`): a customer naming an order. A bare number is weak: it is
    /// used only if an order with that id exists.
    pub strong: bool,
}

/// The outcome of resolution.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resolution {
    pub order_id: Option<String>,
    pub source: Option<OrderSource>,
    /// Reference-like tokens matching none of the customer's orders, in order of
    /// appearance (at most [`MAX_REFERENCES`]); set only when no own order was named.
    pub unmatched: Vec<Reference>,
    /// Orders whose charges must be read before the records can settle it.
    pub needs_charges: Vec<String>,
    /// What the customer must tell us when no order could be chosen.
    pub missing: Option<&'static str>,
}

/// At most this many unmatched references are handed back (bounded lookups).
pub const MAX_REFERENCES: usize = 5;

/// NFKC, dashes folded to `-`, ASCII lower case: the form both text and ids are
/// compared in. ASCII lower-casing keeps byte offsets, so spans map back to the NFKC
/// text (case kept) for reporting.
pub fn fold(text: &str) -> String {
    nfkc(text).to_ascii_lowercase()
}

fn nfkc(text: &str) -> String {
    text.nfkc()
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE63}' => '-',
            '\u{2018}' | '\u{2019}' => '\'',
            _ => c,
        })
        .collect()
}

/// Characters an id token is made of: ASCII letters and digits, joined by `-`, `_`,
/// `/` or `.` when another letter or digit follows.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '_' | '/' | '.')
}

/// True when `text[start..end]` is a whole token: not glued to a letter or digit, nor
/// joined (`-`, `_`, `/`, `.`) to one, on either side.
fn bounded(text: &str, start: usize, end: usize) -> bool {
    let before: Vec<char> = text[..start].chars().rev().take(2).collect();
    let after: Vec<char> = text[end..].chars().take(2).collect();
    let glued = |near: &[char]| match near {
        [a, ..] if is_word(*a) => true,
        [a, b, ..] => is_joiner(*a) && is_word(*b),
        _ => false,
    };
    !glued(&before) && !glued(&after)
}

/// The folded form of an order id for matching: `#` is optional, so a leading one is
/// dropped (the customer may or may not type it).
fn id_key(id: &str) -> String {
    let folded = fold(id.trim());
    folded.trim_start_matches('#').to_string()
}

/// Byte spans of bounded occurrences of `key` in `text`.
fn occurrences(text: &str, key: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    if key.is_empty() {
        return spans;
    }
    let mut from = 0;
    while let Some(pos) = text[from..].find(key) {
        let start = from + pos;
        let end = start + key.len();
        if bounded(text, start, end) {
            spans.push((start, end));
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    spans
}

/// The customer's order ids written in the messages, in order of first appearance.
/// Longer ids claim their spans first, so `#10012` is never also read as `#1001` and
/// `O-0001-2` never as `O-0001`.
pub fn mentioned_ids(messages: &[String], ids: &[&str]) -> Vec<String> {
    let mut keyed: Vec<(String, &str)> = ids.iter().map(|id| (id_key(id), *id)).collect();
    keyed.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(b.1)));
    let mut found: Vec<((usize, usize), String)> = Vec::new();
    for (m, message) in messages.iter().enumerate() {
        let text = fold(message);
        let mut claimed: Vec<(usize, usize)> = Vec::new();
        for (key, id) in &keyed {
            for (start, end) in occurrences(&text, key) {
                if claimed.iter().any(|(s, e)| start < *e && *s < end) {
                    continue;
                }
                claimed.push((start, end));
                found.push(((m, start), id.to_string()));
            }
        }
    }
    found.sort();
    let mut ids_in_order: Vec<String> = Vec::new();
    for (_, id) in found {
        if !ids_in_order.contains(&id) {
            ids_in_order.push(id);
        }
    }
    ids_in_order
}

/// Words after which a token names an order ("order no. 10234", "订单号：10234",
/// "注文番号は10234"), folded.
const ORDER_WORDS: &[&str] = &[
    "order",
    "order no",
    "order number",
    "order id",
    "order ref",
    "order nr",
    "orden",
    "bestellung",
    "commande",
    "reference",
    "ref",
    "invoice",
    "订单",
    "单号",
    "编号",
    "注文",
    "番号",
    "オーダー",
    "注文id",
    "注文no",
];

/// Characters between an order word and the id that do not break the link.
fn is_filler(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            ':' | '#'
                | '.'
                | '='
                | '('
                | '['
                | '「'
                | '【'
                | '"'
                | '\''
                | 'は'
                | 'が'
                | 'の'
                | '是'
                | '为'
        )
}

fn after_order_word(text: &str, start: usize) -> bool {
    let before = text[..start].trim_end_matches(is_filler);
    ORDER_WORDS.iter().any(|w| {
        before.ends_with(w)
            && !before[..before.len() - w.len()]
                .chars()
                .next_back()
                .is_some_and(|c| w.is_ascii() && is_word(c))
    })
}

/// Suffixes that make a number a quantity, not an id (`2nd`, `24h`, `12gb`).
const UNIT_SUFFIXES: &[&str] = &[
    "st", "nd", "rd", "th", "am", "pm", "h", "hr", "hrs", "min", "mins", "x", "k", "gb", "mb",
    "kb", "day", "days", "yen", "usd", "eur", "cny", "rmb", "jpy", "pc", "pcs",
];

/// Reference-like tokens in one folded message, with their spans (`#` excluded).
fn reference_tokens(nfkc_text: &str, text: &str) -> Vec<((usize, usize), Reference)> {
    let mut tokens = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !(bytes[i] as char).is_ascii_alphanumeric() || (i > 0 && is_word(bytes[i - 1] as char)) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < bytes.len() {
            let c = bytes[end] as char;
            let joined = is_joiner(c) && bytes.get(end + 1).is_some_and(|n| is_word(*n as char));
            if !(is_word(c) || joined) {
                break;
            }
            end += 1;
        }
        let token = &text[i..end];
        let hashed = i > 0 && bytes[i - 1] == b'#';
        if let Some(strong) = reference_strength(token, hashed || after_order_word(text, i)) {
            tokens.push((
                (i, end),
                Reference {
                    text: nfkc_text[i..end].to_string(),
                    strong,
                },
            ));
        }
        i = end.max(i + 1);
    }
    tokens
}

/// `Some(strong)` when the token could be an order id: it has digits and is not a
/// money amount, a date, a quantity or a provider record id (`ch_…`).
fn reference_strength(token: &str, named: bool) -> Option<bool> {
    let digits = token.chars().filter(char::is_ascii_digit).count();
    let letters = token.chars().filter(char::is_ascii_alphabetic).count();
    if digits == 0 || token.contains('_') || token.len() > 40 {
        return None;
    }
    if letters == 0 {
        // Amounts (19.80, 1.980) and dates (2026/12/05) are not ids; a bare number is.
        if token.contains('.') || token.contains('/') {
            return None;
        }
        if named && digits >= 3 {
            return Some(true);
        }
        // A bare number of four or more digits may be an id (`10234` for `#10234`): weak,
        // looked up only.
        return (digits >= 4).then_some(false);
    }
    let trailing_letters: String = token
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .to_string();
    if token.starts_with(|c: char| c.is_ascii_digit())
        && UNIT_SUFFIXES.contains(&trailing_letters.as_str())
    {
        return None;
    }
    Some(named || (digits >= 2 && token.len() >= 5))
}

/// Reference-like tokens across the messages that match none of `ids`, in order.
pub fn unmatched_references(messages: &[String], ids: &[&str]) -> Vec<Reference> {
    let keys: Vec<String> = ids.iter().map(|id| id_key(id)).collect();
    let mut out: Vec<Reference> = Vec::new();
    for message in messages {
        let nfkc_text = nfkc(message);
        let text = nfkc_text.to_ascii_lowercase();
        let own: Vec<(usize, usize)> = keys.iter().flat_map(|k| occurrences(&text, k)).collect();
        for ((start, end), reference) in reference_tokens(&nfkc_text, &text) {
            let overlaps_own = own.iter().any(|(s, e)| start < *e && *s < end);
            if !overlaps_own
                && !out
                    .iter()
                    .any(|r| r.text.eq_ignore_ascii_case(&reference.text))
            {
                out.push(reference);
            }
            if out.len() >= MAX_REFERENCES {
                return out;
            }
        }
    }
    out
}

/// Spellings under which a reference may be stored as an order id: as written, upper
/// and lower case, with and without `#`. Bounded: at most six look-ups per reference.
pub fn lookup_spellings(reference: &Reference) -> Vec<String> {
    let mut spellings = Vec::new();
    for base in [
        reference.text.clone(),
        reference.text.to_ascii_uppercase(),
        reference.text.to_ascii_lowercase(),
    ] {
        for s in [base.clone(), format!("#{base}")] {
            if !spellings.contains(&s) {
                spellings.push(s);
            }
        }
    }
    spellings
}

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

/// True when `phrase` (folded) occurs in `text` (folded); ASCII phrases must not be
/// glued to other ASCII letters or digits on either side.
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    let starts_ascii = phrase
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let ends_ascii = phrase
        .chars()
        .last()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let mut from = 0;
    while let Some(pos) = text[from..].find(phrase) {
        let start = from + pos;
        let end = start + phrase.len();
        let before_ok = !starts_ascii
            || !text[..start]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        let after_ok = !ends_ascii
            || !text[end..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        if before_ok && after_ok {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

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
fn mentioned_currencies(text: &str) -> Vec<&'static str> {
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
fn mentioned_dates(text: &str) -> Vec<(Option<i32>, u8, u8)> {
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

/// Keeps the candidates that pass `keep`, when that leaves some but not all of them.
fn narrow(
    candidates: Vec<&OrderCandidate>,
    keep: impl Fn(&OrderCandidate) -> bool,
) -> Vec<&OrderCandidate> {
    let kept: Vec<&OrderCandidate> = candidates.iter().copied().filter(|o| keep(o)).collect();
    if kept.is_empty() {
        candidates
    } else {
        kept
    }
}

/// Narrows candidates by what the customer wrote besides ids: products, currencies,
/// amounts, dates. Each kind of evidence narrows only when some candidate fits it.
fn by_secondary_evidence<'a>(
    text: &str,
    candidates: Vec<&'a OrderCandidate>,
) -> Vec<&'a OrderCandidate> {
    let products = mentioned_products(text);
    let currencies = mentioned_currencies(text);
    let amounts = mentioned_amounts(text);
    let dates = mentioned_dates(text);
    let mut c = candidates;
    if !products.is_empty() {
        c = narrow(c, |o| products.contains(&o.product.as_str()));
    }
    if !currencies.is_empty() {
        c = narrow(c, |o| currencies.contains(&o.currency.as_str()));
    }
    if !amounts.is_empty() {
        c = narrow(c, |o| amounts.contains(&o.amount.normalize()));
    }
    if !dates.is_empty() {
        c = narrow(c, |o| {
            dates.iter().any(|(y, m, d)| {
                y.is_none_or(|y| y == o.date.0) && *m == o.date.1 && *d == o.date.2
            })
        });
    }
    c
}

/// Whether an order's charges show what the customer describes: more taken than the
/// order amount (duplicates, overcharges) or, for holds, an uncaptured charge.
pub fn shows_problem(request: RequestKind, order: &OrderCandidate) -> bool {
    let charges = order.charges.as_deref().unwrap_or_default();
    match request {
        RequestKind::AuthorizationHold => charges.iter().any(|c| c.hold),
        RequestKind::DuplicateCharge | RequestKind::Overcharge => {
            let taken: Decimal = charges
                .iter()
                .filter(|c| c.took_money)
                .map(|c| c.amount)
                .sum();
            taken > order.amount
        }
        RequestKind::Cancellation | RequestKind::Unclear => false,
    }
}

/// "I bought it twice": the later of two identical paid orders, when exactly one is.
/// Whether that is an accidental repeat purchase (RP-001 v2 §1) or two purchases
/// (v1 §4.1) is the engine's call, on the version in force.
pub fn repeat_purchase<'a>(candidates: &[&'a OrderCandidate]) -> Option<&'a OrderCandidate> {
    let paid: Vec<&OrderCandidate> = candidates
        .iter()
        .copied()
        .filter(|o| {
            o.charges
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(|c| c.took_money)
        })
        .collect();
    let repeats: Vec<&OrderCandidate> = paid
        .iter()
        .enumerate()
        .filter(|(i, o)| {
            paid[..*i]
                .iter()
                .any(|e| e.product == o.product && e.amount == o.amount && e.currency == o.currency)
        })
        .map(|(_, o)| *o)
        .collect();
    match repeats.as_slice() {
        [only] => Some(only),
        _ => None,
    }
}

/// Resolves the order of a ticket against the customer's orders (see the module
/// comment for the order of evidence).
pub fn resolve(input: &ResolveInput<'_>) -> Resolution {
    let ids: Vec<&str> = input.orders.iter().map(|o| o.id.as_str()).collect();
    let found = |id: &str, source| Resolution {
        order_id: Some(id.to_string()),
        source: Some(source),
        ..Resolution::default()
    };
    if let Some(form) = input.form_order.filter(|f| ids.contains(f)) {
        return found(form, OrderSource::Form);
    }
    let text = fold(&input.messages.join("\n"));
    let mentioned = mentioned_ids(input.messages, &ids);
    let (mut candidates, source): (Vec<&OrderCandidate>, OrderSource) = if mentioned.is_empty() {
        let unmatched = unmatched_references(input.messages, &ids);
        if !unmatched.is_empty() {
            // The workflow looks these up among all orders; until then a strong one
            // stands as named (an order that does not exist is asked about, RP-002 §4).
            if let Some(named) = unmatched.iter().find(|r| r.strong) {
                return Resolution {
                    order_id: Some(named.text.clone()),
                    source: Some(OrderSource::Message),
                    unmatched,
                    ..Resolution::default()
                };
            }
        }
        let narrowed = by_secondary_evidence(&text, input.orders.iter().collect());
        let source = if narrowed.len() < input.orders.len() {
            OrderSource::Message
        } else {
            OrderSource::Records
        };
        let mut r = settle(input.request, narrowed, source);
        r.unmatched = unmatched;
        return r;
    } else {
        let named = input
            .orders
            .iter()
            .filter(|o| mentioned.contains(&o.id))
            .collect();
        (named, OrderSource::Message)
    };
    if candidates.len() > 1 {
        candidates = by_secondary_evidence(&text, candidates);
    }
    let mut r = settle(input.request, candidates.clone(), source);
    if r.order_id.is_none() && r.needs_charges.is_empty() {
        // Several of their orders named and nothing tells them apart: the first named.
        r = found(&mentioned[0], OrderSource::Message);
    }
    r
}

/// The last steps: one candidate left, else the records (the one order showing the
/// problem, the repeat purchase), else nothing and what is missing.
fn settle(
    request: RequestKind,
    candidates: Vec<&OrderCandidate>,
    source: OrderSource,
) -> Resolution {
    if let [only] = candidates.as_slice() {
        return Resolution {
            order_id: Some(only.id.clone()),
            source: Some(source),
            ..Resolution::default()
        };
    }
    let unresolved = Resolution {
        missing: Some(if candidates.is_empty() {
            "an order: the customer has none on record"
        } else {
            "which order the request is about: the customer has several and neither the messages nor the records single one out"
        }),
        ..Resolution::default()
    };
    if candidates.is_empty() || matches!(request, RequestKind::Cancellation | RequestKind::Unclear)
    {
        return unresolved;
    }
    let unread: Vec<String> = candidates
        .iter()
        .filter(|o| o.charges.is_none())
        .map(|o| o.id.clone())
        .collect();
    if !unread.is_empty() {
        return Resolution {
            needs_charges: unread,
            ..Resolution::default()
        };
    }
    let showing: Vec<&OrderCandidate> = candidates
        .iter()
        .copied()
        .filter(|o| shows_problem(request, o))
        .collect();
    let pick = match showing.as_slice() {
        [only] => Some(*only),
        [] if request == RequestKind::DuplicateCharge => repeat_purchase(&candidates),
        _ => None,
    };
    match pick {
        Some(o) => Resolution {
            order_id: Some(o.id.clone()),
            source: Some(OrderSource::Records),
            ..Resolution::default()
        },
        None => unresolved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn order(id: &str, product: &str, amount: &str) -> OrderCandidate {
        OrderCandidate {
            id: id.to_string(),
            product: product.to_string(),
            amount: amount.parse().unwrap(),
            currency: "USD".to_string(),
            date: (2026, 12, 1),
            charges: None,
        }
    }

    fn resolve_text(orders: &[OrderCandidate], messages: &[&str]) -> Resolution {
        let messages: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
        resolve(&ResolveInput {
            messages: &messages,
            form_order: None,
            request: RequestKind::Cancellation,
            orders,
        })
    }

    /// One id of each scheme the issue names, and the shop-style `O-1001`.
    const SCHEMES: [&str; 6] = [
        "O-0001-2",
        "#10234",
        "ORD-2025-000123",
        "7000024",
        "MX5H38",
        "O-1001",
    ];

    fn full_width(text: &str) -> String {
        text.chars()
            .map(|c| match c {
                '!'..='~' => char::from_u32(c as u32 + 0xFEE0).unwrap_or(c),
                ' ' => '\u{3000}',
                _ => c,
            })
            .collect()
    }

    #[test]
    fn ids_that_are_prefixes_of_one_another_resolve_to_the_longest_match() {
        let ids = ["#1001", "#10012", "O-0001", "O-0001-2"];
        assert_eq!(
            mentioned_ids(&["order #10012 please".into()], &ids),
            ["#10012"]
        );
        assert_eq!(
            mentioned_ids(&["order #1001 please".into()], &ids),
            ["#1001"]
        );
        assert_eq!(
            mentioned_ids(&["it is o-0001-2.".into()], &ids),
            ["O-0001-2"]
        );
        assert_eq!(
            mentioned_ids(&["it is O-0001, thanks".into()], &ids),
            ["O-0001"]
        );
        assert_eq!(
            mentioned_ids(&["10012 and 1001".into()], &ids),
            ["#10012", "#1001"]
        );
    }

    #[test]
    fn an_id_never_matches_inside_a_longer_token() {
        let ids = ["1001", "MX5H38"];
        assert!(mentioned_ids(&["ref 100123 and XMX5H38".into()], &ids).is_empty());
        assert!(mentioned_ids(&["call 1001-2 now".into()], &ids).is_empty());
        assert_eq!(mentioned_ids(&["(1001)".into()], &ids), ["1001"]);
    }

    #[test]
    fn every_customer_message_is_scanned_not_only_the_first() {
        let orders = [
            order("#10234", "addon", "5"),
            order("#10235", "annual_plan", "99"),
        ];
        let r = resolve_text(&orders, &["Hi, I need help.", "It's order 10235."]);
        assert_eq!(r.order_id.as_deref(), Some("#10235"));
        assert_eq!(r.source, Some(OrderSource::Message));
    }

    #[test]
    fn the_form_order_wins_over_what_the_text_says() {
        let orders = [order("O-1", "addon", "5"), order("O-2", "addon", "5")];
        let messages = vec!["about O-2".to_string()];
        let r = resolve(&ResolveInput {
            messages: &messages,
            form_order: Some("O-1"),
            request: RequestKind::DuplicateCharge,
            orders: &orders,
        });
        assert_eq!(
            (r.order_id.as_deref(), r.source),
            (Some("O-1"), Some(OrderSource::Form))
        );
    }

    #[test]
    fn an_empty_message_with_several_orders_resolves_nothing_and_says_what_is_missing() {
        let orders = [order("A1", "addon", "5"), order("A2", "annual_plan", "99")];
        let r = resolve_text(&orders, &[""]);
        assert_eq!(r.order_id, None);
        assert!(r.missing.is_some_and(|m| m.contains("which order")));
        let r = resolve_text(&[], &[]);
        assert_eq!(r.order_id, None);
        assert!(r.missing.is_some());
    }

    #[test]
    fn a_message_with_fifty_id_like_tokens_resolves_to_the_customers_order() {
        let mut text: Vec<String> = (0..50).map(|i| format!("ZX{:04}Q", i * 7)).collect();
        text.insert(31, "mx5h38".into());
        let orders = [order("MX5H38", "addon", "5"), order("MX5H39", "addon", "5")];
        let r = resolve_text(&orders, &[&text.join(" ")]);
        assert_eq!(r.order_id.as_deref(), Some("MX5H38"));
        let refs = unmatched_references(&[text.join(" ")], &["MX5H38"]);
        assert_eq!(refs.len(), MAX_REFERENCES, "look-ups stay bounded");
    }

    #[test]
    fn a_reference_to_no_order_of_the_customer_is_handed_back_for_lookup() {
        let orders = [order("#10234", "addon", "5")];
        let r = resolve_text(&orders, &["订单号：88812 重复扣款"]);
        assert_eq!(r.order_id.as_deref(), Some("88812"));
        assert_eq!(
            r.unmatched,
            [Reference {
                text: "88812".into(),
                strong: true
            }]
        );
        assert!(lookup_spellings(&r.unmatched[0]).contains(&"#88812".to_string()));
    }

    #[test]
    fn amounts_dates_and_quantities_are_not_order_references() {
        let refs = unmatched_references(
            &["charged 19.80 twice on 2026/12/05, 2 times in 24h, 2nd try, ch_123abc".into()],
            &[],
        );
        assert!(refs.is_empty(), "{refs:?}");
        // A bare number may be an id: weak, so it is only looked up.
        let refs = unmatched_references(&["card ending 4242".into()], &[]);
        assert_eq!(
            refs,
            [Reference {
                text: "4242".into(),
                strong: false
            }]
        );
    }

    #[test]
    fn products_amounts_and_dates_choose_among_orders() {
        let mut a = order("A-100", "annual_plan", "99.00");
        let mut b = order("A-200", "monthly_plan", "12.00");
        b.date = (2026, 11, 5);
        a.date = (2026, 10, 1);
        let orders = [a, b];
        assert_eq!(
            resolve_text(&orders, &["my yearly plan"])
                .order_id
                .as_deref(),
            Some("A-100")
        );
        assert_eq!(
            resolve_text(&orders, &["the $12 one"]).order_id.as_deref(),
            Some("A-200")
        );
        assert_eq!(
            resolve_text(&orders, &["bought on Nov 5"])
                .order_id
                .as_deref(),
            Some("A-200")
        );
        assert_eq!(
            resolve_text(&orders, &["2026-10-01 の注文"])
                .order_id
                .as_deref(),
            Some("A-100")
        );
        assert_eq!(
            resolve_text(&orders, &["年額プランを解約"])
                .order_id
                .as_deref(),
            Some("A-100")
        );
    }

    #[test]
    fn the_records_settle_a_charge_complaint_or_ask_for_the_charges_first() {
        let mut a = order("K1", "addon", "5.00");
        let mut b = order("K2", "addon", "9.00");
        let messages = vec!["charged twice".to_string()];
        let input = |orders: &[OrderCandidate]| {
            resolve(&ResolveInput {
                messages: &messages,
                form_order: None,
                request: RequestKind::DuplicateCharge,
                orders,
            })
        };
        assert_eq!(input(&[a.clone(), b.clone()]).needs_charges, ["K1", "K2"]);
        let paid = |amount: &str| ChargeSummary {
            amount: amount.parse().unwrap(),
            took_money: true,
            hold: false,
        };
        a.charges = Some(vec![paid("5.00")]);
        b.charges = Some(vec![paid("9.00"), paid("9.00")]);
        let r = input(&[a, b]);
        assert_eq!(
            (r.order_id.as_deref(), r.source),
            (Some("K2"), Some(OrderSource::Records))
        );
    }

    fn prefix_words() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "",
            "order ",
            "order no. ",
            "Order number: ",
            "order #",
            "订单号：",
            "订单",
            "注文番号",
            "注文番号は",
            "ref ",
        ])
    }

    proptest! {
        /// Every id scheme × case × width × prefix word resolves to exactly that order,
        /// among orders of every scheme (some of them prefixes of one another).
        #[test]
        fn every_scheme_case_width_and_prefix_word_resolves_to_exactly_that_order(
            scheme in 0usize..SCHEMES.len(),
            lower in any::<bool>(),
            wide in any::<bool>(),
            hash in any::<bool>(),
            prefix in prefix_words(),
            follow_up in any::<bool>(),
        ) {
            let mut orders: Vec<OrderCandidate> =
                SCHEMES.iter().map(|id| order(id, "addon", "5")).collect();
            // Prefix collisions: `O-0001` of `O-0001-2`, `#1023` of `#10234`.
            orders.push(order("O-0001", "addon", "5"));
            orders.push(order("#1023", "addon", "5"));
            let id = SCHEMES[scheme];
            let mut written = id.trim_start_matches('#').to_string();
            if hash { written = format!("#{written}"); }
            if lower { written = written.to_lowercase(); }
            let mut sentence = format!("Hello, {prefix}{written} was charged twice.");
            if wide { sentence = full_width(&sentence); }
            let messages: Vec<&str> = if follow_up {
                vec!["I have a problem with a payment", &sentence]
            } else {
                vec![&sentence]
            };
            let r = resolve_text(&orders, &messages);
            prop_assert_eq!(r.order_id.as_deref(), Some(id));
            prop_assert_eq!(r.source, Some(OrderSource::Message));
        }

        /// Any text, any ids: no panic, and the same answer every run.
        #[test]
        fn resolution_never_panics_and_is_deterministic(
            text in ".{0,300}",
            ids in prop::collection::vec("[#]?[A-Za-z0-9-]{1,12}", 0..6),
        ) {
            let orders: Vec<OrderCandidate> =
                ids.iter().map(|id| order(id, "addon", "5")).collect();
            let a = resolve_text(&orders, &[&text]);
            let b = resolve_text(&orders, &[&text]);
            prop_assert_eq!(a, b);
        }
    }
}
