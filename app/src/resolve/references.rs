//! Order references in the customer's text: their own order ids written anywhere in the
//! conversation, and reference-like tokens that match none of them (handed back for the
//! workflow to look up among all orders, RP-007). Knows ids and text, not the records.

use super::normalise::{fold, id_key, is_joiner, is_word, nfkc, occurrences};

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

/// At most this many unmatched references are handed back (bounded lookups).
pub const MAX_REFERENCES: usize = 5;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
