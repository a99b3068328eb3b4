//! Order references in the customer's text: their own order ids written anywhere, in
//! any of the forms `ids` reads, and reference-like tokens that match none of
//! them — noted, and handed back for the workflow to look up among all orders (RP-007).
//! Knows ids and text, not the records.
//!
//! One file because the rules that tell an order reference from a date, an amount, a unit
//! or another kind of number all read the same `Scan` and are tuned against each other;
//! the words they read are data, in `reference_words`.

use std::collections::BTreeMap;

use super::ids::{scan, skeleton, Join, Scan};
use super::normalise::{fold, id_key, is_word, occurrences};
use super::reference_words::{ORDER_WORDS, OTHER_NUMBER_WORDS, UNIT_SUFFIXES};

/// A token that reads like an order reference but is none of the customer's orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// As written, after NFKC (case kept), without a leading `#`.
    pub text: String,
    /// After `#` or an order word ("order no.", "Bestellnr.", "订单号", "注文番号",
    /// "주문번호"), or letters and digits mixed (`MX5H38`): a customer naming an order.
    /// A bare number is weak: looked up after the strong ones.
    pub strong: bool,
    /// Written after an order word: the customer names it as an order.
    pub named: bool,
    /// Written after the word of another kind of number (an invoice, a parcel, a phone,
    /// a bank account, a VAT or post code…): the customer says it is no order.
    pub labelled_other: bool,
}

impl Reference {
    /// Whether the customer names this as one of their orders: after an order word, or
    /// shaped like one of their own order ids (`O-20511` beside their `O-20510`) and not
    /// labelled as another kind of number. Compared with *their* ids, never with a
    /// pattern of what ids look like (docs/spec/domain.md).
    pub fn names_an_order(&self, own_ids: &[&str]) -> bool {
        self.named || (!self.labelled_other && own_ids.iter().any(|id| resembles(&self.text, id)))
    }
}

/// Shaped like `id`: both all digits of about its length, or both letters and digits of
/// about its length starting with its letters (`O-20511` for `O-20510`, `MX5H39` for
/// `MX5H38`), or both codes of exactly its length starting with a letter (`V6724C`
/// beside `PW35JJ`: a shop's codes differ in every place); not a tracking code, an IBAN
/// or a phone number beside a short id.
fn resembles(text: &str, id: &str) -> bool {
    let (a, b) = (skeleton(text), skeleton(id));
    if a.is_empty() || b.is_empty() || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let digits_only = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let letters = |s: &str| -> String { s.chars().take_while(char::is_ascii_alphabetic).collect() };
    match (digits_only(&a), digits_only(&b)) {
        (true, true) => true,
        (false, false) => {
            letters(&a) == letters(&b)
                || (a.len() == b.len() && !letters(&a).is_empty() && !letters(&b).is_empty())
        }
        _ => false,
    }
}

/// At most this many unmatched references are handed back (bounded lookups).
pub const MAX_REFERENCES: usize = 5;

/// The customer's ids by skeleton (two ids may share one: `O-1001`, `O1001`), and the
/// ids that have no ASCII skeleton, matched as written.
struct Keys<'a> {
    by_skeleton: BTreeMap<String, Vec<String>>,
    literal: Vec<&'a str>,
}

fn keys<'a>(ids: &[&'a str]) -> Keys<'a> {
    let mut by_skeleton: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut literal = Vec::new();
    for id in ids {
        match skeleton(id) {
            s if s.is_empty() => literal.push(*id),
            s => by_skeleton.entry(s).or_default().push(id.to_string()),
        }
    }
    for same in by_skeleton.values_mut() {
        same.sort();
        same.dedup();
    }
    Keys {
        by_skeleton,
        literal,
    }
}

/// A customer's order ids made ready to be read for, once: their skeletons (NFKC, case
/// folded) and letter prefixes, which every reading of a conversation compares against
/// (each reading used to make them again, a tenth of a replayed ticket).
pub(super) struct OwnIds<'a> {
    keys: Keys<'a>,
    prefixes: Vec<String>,
}

impl<'a> OwnIds<'a> {
    pub(super) fn new(ids: &[&'a str]) -> OwnIds<'a> {
        OwnIds {
            keys: keys(ids),
            prefixes: letter_prefixes(ids),
        }
    }
}

/// The customer's order ids written in the messages, in order of first appearance;
/// `work` counts the comparisons made (bounded: see `ids`). Where two of their ids
/// share a skeleton, the one written exactly wins, else both are named (and resolution
/// asks, never guesses).
pub fn mentioned_ids_counted(messages: &[String], ids: &[&str], work: &mut usize) -> Vec<String> {
    mentioned(messages, ids, false, work)
}

/// The customer's order ids written after an order word ("Order #65169", "注文番号"):
/// how an order is named in a pasted line, where a bare `#552` is a store's number.
pub fn named_ids(messages: &[String], ids: &[&str]) -> Vec<String> {
    mentioned(messages, ids, true, &mut 0)
}

fn mentioned(messages: &[String], ids: &[&str], named_only: bool, work: &mut usize) -> Vec<String> {
    OwnIds::new(ids).mentioned(messages, named_only, work)
}

impl OwnIds<'_> {
    /// Their ids written in `messages` (after an order word only, if `named_only`), in
    /// order of first appearance: see [`mentioned_ids_counted`].
    pub(super) fn mentioned(
        &self,
        messages: &[String],
        named_only: bool,
        work: &mut usize,
    ) -> Vec<String> {
        let keys = &self.keys;
        let mut found: Vec<((usize, usize), String)> = Vec::new();
        for (m, message) in messages.iter().enumerate() {
            let scanned = scan(message);
            for f in scanned.find(&keys.by_skeleton, work) {
                let span = scanned.span(f.first, f.last);
                if named_only && !after_order_word(&scanned, span.0) {
                    continue;
                }
                let written = id_key(&scanned.kept_text(span));
                let same = &keys.by_skeleton[&f.key];
                let exact: Vec<&String> = same.iter().filter(|id| id_key(id) == written).collect();
                let named: Vec<&String> = if exact.len() == 1 {
                    exact
                } else {
                    same.iter().collect()
                };
                found.extend(named.into_iter().map(|id| ((m, span.0), id.clone())));
            }
            if !keys.literal.is_empty() && !named_only {
                let folded = fold(message);
                for id in &keys.literal {
                    for (start, _) in occurrences(&folded, &id_key(id)) {
                        found.push(((m, folded[..start].chars().count()), id.to_string()));
                    }
                }
            }
        }
        found.sort();
        let mut in_order: Vec<String> = Vec::new();
        for (_, id) in found {
            if !in_order.contains(&id) {
                in_order.push(id);
            }
        }
        in_order
    }
}

/// [`mentioned_ids_counted`] without the count.
pub fn mentioned_ids(messages: &[String], ids: &[&str]) -> Vec<String> {
    mentioned_ids_counted(messages, ids, &mut 0)
}

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
                | '°'
                | 'º'
                | 'は'
                | 'が'
                | 'の'
                | '是'
                | '为'
                | '：'
        )
}

fn after_order_word(scanned: &Scan, start: usize) -> bool {
    let before = scanned.lower_before(start, 40);
    // "order-ID", "Bestell-Nr": a word written with a dash is the same word.
    let undashed = before.replace('-', " ");
    [before, undashed].iter().any(|before| {
        let before = before.trim_end_matches(is_filler);
        ends_with_order_word(before) || ends_with_order_word(without_number_word(before))
    })
}

/// Words for "number" written after an order word ("encomenda número", "Bestellung
/// Nummer", "commande n°"): the order word before them names the order.
fn without_number_word(before: &str) -> &str {
    const NUMBER_WORDS: &[&str] = &[
        "numero", "número", "nummer", "number", "no", "nr", "num", "n°", "nº", "n.º", "n",
    ];
    NUMBER_WORDS
        .iter()
        .find_map(|w| {
            before
                .strip_suffix(w)
                .filter(|rest| rest.ends_with(' '))
                .map(|rest| rest.trim_end_matches(is_filler))
        })
        .unwrap_or(before)
}

fn ends_with_order_word(before: &str) -> bool {
    ORDER_WORDS.iter().any(|w| {
        before.ends_with(w)
            && !before[..before.len() - w.len()]
                .chars()
                .next_back()
                .is_some_and(|c| w.is_ascii() && is_word(c))
    })
}

fn after_other_number_word(scanned: &Scan, start: usize) -> bool {
    let before = scanned.lower_before(start, 40);
    let before = before.trim_end_matches(is_filler);
    let before = before.trim_end_matches(['.', 'º', '°']);
    OTHER_NUMBER_WORDS.iter().any(|w| {
        before.ends_with(w)
            && !before[..before.len() - w.len()]
                .chars()
                .next_back()
                .is_some_and(|c| w.is_ascii() && is_word(c))
    }) || [" no", " nr"].iter().any(|abbreviation| {
        // "invoice no", "rechnung nr": the word, a space, the abbreviation (compared
        // without building each spelling: this runs for every number in every turn).
        before
            .strip_suffix(abbreviation)
            .is_some_and(|word| OTHER_NUMBER_WORDS.iter().any(|w| word.ends_with(w)))
    })
}

/// After a word of another kind of number that ends with an order word and says more
/// ("登録番号", a registration number, ends with "番号"): the longer word wins.
fn after_longer_other_word(scanned: &Scan, start: usize) -> bool {
    let before = scanned.lower_before(start, 40);
    let before = before.trim_end_matches(is_filler);
    OTHER_NUMBER_WORDS.iter().any(|w| {
        before.ends_with(w)
            && ORDER_WORDS
                .iter()
                .any(|o| w.len() > o.len() && w.ends_with(o))
    })
}

/// Reference-like tokens of one message, in order (`#` excluded), with whether each is
/// strong; the spans of the customer's own ids are left out.
fn reference_tokens(scanned: &Scan, own: &[(usize, usize)], prefixes: &[String]) -> Vec<Reference> {
    let mut tokens = Vec::new();
    let runs = scanned.runs();
    // "+49 30 7572931": an international phone number, written in groups after `+`.
    let mut phone = false;
    for (k, &(first, last)) in runs.iter().enumerate() {
        let span = scanned.span(first, last);
        let plus = span.0 > 0 && scanned.lower[span.0 - 1] == '+';
        phone = plus || (phone && first > 0 && scanned.joins[first - 1] == Join::Weak);
        let owned = |span: (usize, usize)| own.iter().any(|(s, e)| span.0 < *e && *s < span.1);
        if owned(span)
            || part_of_a_date(scanned, span)
            || date_shaped(&scanned.kept_text(span))
            || an_amount(scanned, span)
        {
            continue;
        }
        let text = scanned.kept_text(span);
        let hashed = span.0 > 0 && scanned.lower[span.0 - 1] == '#';
        // "登録番号" ends with the order word "番号" but says which number it is.
        let named = after_order_word(scanned, span.0) && !after_longer_other_word(scanned, span.0);
        let labelled_other = !named && (phone || after_other_number_word(scanned, span.0));
        let leading: String = text
            .to_ascii_lowercase()
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        let prefix = prefixes.contains(&leading);
        if !labelled_other && (hashed || named || prefix) {
            let joined = joined_across_breaks(scanned, &runs[k..], &owned, prefixes);
            tokens.extend(joined.map(|text| Reference {
                text,
                strong: true,
                named: hashed || named,
                labelled_other: false,
            }));
        }
        let strength = reference_strength(&text.to_ascii_lowercase(), hashed || named);
        if let Some(strong) = strength {
            tokens.push(Reference {
                text,
                strong: strong && !labelled_other,
                named,
                labelled_other,
            });
        }
    }
    tokens
}

/// An id written across a space or a line break (`#621⏎96`, `O 96823`, `pedido
/// 27⏎433`): the run with the runs weakly joined after it (at most three, each with
/// digits), its pieces kept apart by a space (`lookup_spellings` tries them joined and
/// dashed). A careful reader joins them when the first piece has digits, or is the
/// letter prefix of the customer's own ids (`O` of `O-48363`; not "du" in "commande du
/// 24 avril").
fn joined_across_breaks(
    scanned: &Scan,
    runs: &[(usize, usize)],
    owned: &dyn Fn((usize, usize)) -> bool,
    prefixes: &[String],
) -> Option<String> {
    let (first, mut last) = runs[0];
    let head = scanned.kept_text(scanned.span(first, last));
    let head_digits: usize = (first..=last).map(|g| scanned.groups[g].digits).sum();
    if head_digits == 0 && !prefixes.contains(&head.to_ascii_lowercase()) {
        return None;
    }
    let mut pieces = vec![head];
    for &(f, l) in runs.iter().skip(1).take(3) {
        let digits: usize = (f..=l).map(|g| scanned.groups[g].digits).sum();
        if scanned.joins[f - 1] != Join::Weak || digits == 0 || owned(scanned.span(f, l)) {
            break;
        }
        pieces.push(scanned.kept_text(scanned.span(f, l)));
        last = l;
    }
    if last == runs[0].1 {
        return None;
    }
    reference_strength(&pieces.concat().to_ascii_lowercase(), true)?;
    Some(pieces.join(" "))
}

/// The letters the customer's ids start with (`o` of `O-48363`, `ord` of `ORD-2026-…`).
fn letter_prefixes(ids: &[&str]) -> Vec<String> {
    let mut prefixes: Vec<String> = ids
        .iter()
        .map(|id| {
            skeleton(id)
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .collect::<String>()
        })
        .filter(|p| !p.is_empty())
        .collect();
    prefixes.sort();
    prefixes.dedup();
    prefixes
}

/// `31-03-2026`, `2026-03-31`, `31.03.26`: a day, a month and a year in one token.
fn date_shaped(token: &str) -> bool {
    let parts: Vec<&str> = token.split(['-', '.']).collect();
    let number = |p: &str, lo: u32, hi: u32| {
        p.chars().all(|c| c.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (lo..=hi).contains(&n))
    };
    match parts.as_slice() {
        [y, m, d] if y.len() == 4 => number(y, 1990, 2099) && number(m, 1, 12) && number(d, 1, 31),
        [d, m, y] if matches!(y.len(), 2 | 4) && d.len() <= 2 && m.len() <= 2 => {
            number(d, 1, 31) && number(m, 1, 12) && number(y, 0, 2099)
        }
        _ => false,
    }
}

/// A number with a currency before or after it (`9800 JPY`, `€ 12`, `120元`): money,
/// not a reference.
fn an_amount(scanned: &Scan, (start, end): (usize, usize)) -> bool {
    const AFTER: &[&str] = &[
        "usd",
        "eur",
        "jpy",
        "cny",
        "rmb",
        "krw",
        "gbp",
        "yen",
        "euro",
        "dollar",
        "円",
        "元",
        "ドル",
        "ユーロ",
        "달러",
        "유로",
        "원",
        "€",
        "$",
        "¥",
    ];
    let after: String = scanned.lower[end..].iter().take(8).collect();
    let after = after.trim_start();
    let before: String = scanned.lower_before(start, 3);
    let before = before.trim_end();
    let word_after = |w: &str| {
        after.strip_prefix(w).is_some_and(|rest| {
            !w.is_ascii() || !rest.starts_with(|c: char| c.is_ascii_alphanumeric())
        })
    };
    AFTER.iter().any(|w| word_after(w)) || before.ends_with(['€', '$', '¥', '£', '₩'])
}

/// A number joined by `/` or `:` to another number (`2026/12/05`, `10:30`, `1/2`).
fn part_of_a_date(scanned: &Scan, (start, end): (usize, usize)) -> bool {
    let c = &scanned.lower;
    let digit_at = |i: usize| c.get(i).is_some_and(char::is_ascii_digit);
    let joined_before = start >= 2 && matches!(c[start - 1], '/' | ':') && digit_at(start - 2);
    let joined_after = matches!(c.get(end), Some('/' | ':')) && digit_at(end + 1);
    joined_before || joined_after
}

/// `Some(strong)` when the token could be an order id: it has digits and is not a
/// money amount, a date, a year, a quantity or a provider record id (`ch_…`).
fn reference_strength(token: &str, named: bool) -> Option<bool> {
    let digits = token.chars().filter(char::is_ascii_digit).count();
    let letters = token.chars().filter(char::is_ascii_alphabetic).count();
    if digits == 0 || token.contains('_') || token.len() > 40 {
        return None;
    }
    if letters == 0 {
        // Amounts (19.80, 1.980) are not ids; a bare number is, weakly.
        if token.contains(['.', ',', '\'']) && !named {
            return None;
        }
        if named && digits >= 3 {
            return Some(true);
        }
        let year = token.len() == 4 && (1990..=2099).contains(&token.parse::<u32>().unwrap_or(0));
        return (digits >= 4 && !year).then_some(false);
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

/// Reference-like tokens across the messages that match none of `ids`: the strong ones
/// first, each group in order of appearance, at most [`MAX_REFERENCES`].
pub fn unmatched_references(messages: &[String], ids: &[&str]) -> Vec<Reference> {
    strongest(all_unmatched(messages, ids))
}

/// Every reference-like token matching none of `ids`, once each, in order.
pub(super) fn all_unmatched(messages: &[String], ids: &[&str]) -> Vec<Reference> {
    OwnIds::new(ids).unmatched(messages)
}

impl OwnIds<'_> {
    /// Every reference-like token in `messages` matching none of their ids, once each,
    /// in order ([`all_unmatched`]).
    pub(super) fn unmatched(&self, messages: &[String]) -> Vec<Reference> {
        let keys = &self.keys;
        let mut all: Vec<Reference> = Vec::new();
        let mut seen: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        for message in messages {
            let scanned = scan(message);
            let own: Vec<(usize, usize)> = scanned
                .find(&keys.by_skeleton, &mut 0)
                .iter()
                .map(|f| scanned.span(f.first, f.last))
                .collect();
            for reference in reference_tokens(&scanned, &own, &self.prefixes) {
                let literal_own = keys
                    .literal
                    .iter()
                    .any(|id| id_key(id) == id_key(&reference.text));
                if !literal_own && seen.insert(reference.text.to_ascii_lowercase()) {
                    all.push(reference);
                }
            }
        }
        all
    }
}

/// The strong references first, each group in order, at most [`MAX_REFERENCES`]: what
/// [`unmatched_references`] keeps of [`all_unmatched`].
pub(super) fn strongest(mut all: Vec<Reference>) -> Vec<Reference> {
    all.sort_by_key(|r| !r.strong);
    all.truncate(MAX_REFERENCES);
    all
}

/// Spellings under which a reference may be stored as an order id: as written, upper
/// and lower case, with and without `#`, its pieces joined or dashed where it was
/// written across a space or a line break (`O 96823` stored as `O-96823`), and its
/// skeleton (`R-670394232` stored as `R670394232`). Bounded: at most sixteen look-ups
/// per reference.
pub fn lookup_spellings(reference: &Reference) -> Vec<String> {
    let bare = skeleton(&reference.text);
    let mut spellings = Vec::new();
    let pieces: Vec<&str> = reference.text.split_whitespace().collect();
    let written = [pieces.concat(), pieces.join("-")];
    let bases = written
        .iter()
        .flat_map(|w| [w.clone(), w.to_ascii_uppercase(), w.to_ascii_lowercase()]);
    for base in bases {
        for s in [base.clone(), format!("#{base}")] {
            if !spellings.contains(&s) {
                spellings.push(s);
            }
        }
    }
    for s in [bare.to_ascii_uppercase(), format!("#{bare}"), bare.clone()] {
        if !bare.is_empty() && !spellings.contains(&s) {
            spellings.push(s);
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
        // A bare number may be an id: weak, so it is only looked up; this one is said
        // to be a card's.
        let refs = unmatched_references(&["card ending 4242".into()], &[]);
        assert_eq!(
            refs,
            [Reference {
                text: "4242".into(),
                strong: false,
                named: false,
                labelled_other: true,
            }]
        );
    }

    #[test]
    fn a_number_named_as_an_order_across_a_space_or_a_line_break_is_looked_up_joined() {
        let spellings = |text: &str| -> Vec<String> {
            all_unmatched(&[text.to_string()], &["O-1"])
                .iter()
                .filter(|r| r.named)
                .flat_map(lookup_spellings)
                .collect()
        };
        assert!(spellings("Me refiero a pedido #70\n53031.").contains(&"7053031".to_string()));
        assert!(spellings("Cobraram-me encomenda número 76\n09 duas vezes")
            .contains(&"#7609".to_string()));
        assert!(spellings("单号75,337扣费两次").contains(&"#75337".to_string()));
        // A word after an order word is not the letter prefix of an id.
        assert!(spellings("ma commande du 24 avril").is_empty());
        let own_shaped = |text: &str| -> Vec<String> {
            all_unmatched(&[text.to_string()], &["O-7352-1"])
                .iter()
                .filter(|r| r.names_an_order(&["O-7352-1"]))
                .flat_map(lookup_spellings)
                .collect()
        };
        assert!(own_shaped("cobrado dos veces O-735\n\n2-2.").contains(&"O-7352-2".to_string()));
        assert!(
            all_unmatched(&["mi pedido de 9800 JPY y €120".to_string()], &["#9323"]).is_empty()
        );
        // A phone number in groups after `+` names nothing.
        assert!(
            all_unmatched(&["Tel: +49 30 7572931".to_string()], &["7525902"])
                .iter()
                .all(|r| r.labelled_other && !r.names_an_order(&["7525902"]))
        );
        assert!(spellings("订单号O 96823出现了两笔").contains(&"O-96823".to_string()));
        assert!(spellings("pedido ２７\n４３３").contains(&"#27433".to_string()));
        assert!(spellings("single ORD-2026-\n447130 twice").is_empty());
        assert!(spellings("order ORD-2026-\n447130 twice").contains(&"ORD-2026-447130".to_string()));
        // "order-ID:" is an order word written with a dash.
        assert!(
            spellings("betaling voor order-ID: 7'192'042 dubbel").contains(&"7192042".to_string())
        );
        // A word after the number is not part of it.
        assert!(!spellings("order 1234 was charged")
            .iter()
            .any(|s| s.contains("WAS")));
    }

    #[test]
    fn a_number_names_an_order_after_an_order_word_or_shaped_like_the_customers_own_ids() {
        let names = |text: &str, own: &[&str]| -> Vec<String> {
            all_unmatched(&[text.to_string()], own)
                .into_iter()
                .filter(|r| r.names_an_order(own))
                .map(|r| r.text)
                .collect()
        };
        assert_eq!(
            names("refund the charge on O-20511", &["O-20510"]),
            ["O-20511"]
        );
        assert_eq!(names("Bestellnummer 88812", &["MX5H38"]), ["88812"]);
        assert_eq!(names("mx5h39 twice", &["MX5H38"]), ["mx5h39"]);
        assert_eq!(names("Es geht um V-6724C.", &["PW35JJ"]), ["V-6724C"]);
        assert_eq!(names("注文番号 88812", &["MX5H38"]), ["88812"]);
        assert!(names("登録番号 T5225720494542、会員番号 1234567", &["MX5H38"]).is_empty());
        // Labelled as something else, or nothing like their ids: noted only.
        assert!(names(
            "Invoice #20511 and tracking 1Z999AA10123456784",
            &["O-20510"]
        )
        .is_empty());
        assert!(names("Rechnungsnr. 20511, Tel. 030 1234567", &["20510"]).is_empty());
        assert!(names("my VAT number is DE123456789", &["DE12345"]).is_empty());
        assert!(names("TRADER JOE'S #552", &["O-20510"]).is_empty());
    }
}
