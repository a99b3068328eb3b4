//! Id-like spans as people write them: in any case and width, broken by
//! spaces (`2507 1510 4088 8542 79`) or a line break (`250612-887⏎6084`), with dashes
//! of every width and the katakana `ー`, with an extra dash (`R-670394232`), with dots,
//! commas or apostrophes as thousands separators (`65.169`), inside a URL path or query
//! value (`…/orders/65169?ref=…`, `%23` decoded), after `#`.
//!
//! A text is scanned once into **groups** (runs of ASCII letters and digits) and the
//! **joins** between neighbours: *strong* (one `-`, `_`, a digit's `.`, a thousands `,`
//! or `'`: the same token), *weak* (a short space or a line break between digit-bearing
//! groups: maybe the same token, maybe two) or *hard* (anything else). An id matches a
//! span of whole groups whose letters and digits, separators dropped, are the id's own
//! (its **skeleton**), when the span neither starts nor ends inside a strongly joined
//! token: `1001` is not in `1001-2`, `O-0001` not in `O-0001-2`.
//!
//! Bounded by construction: the scan is linear in the text, and a match is tried from
//! each group over at most as many characters as the longest id has, so a 200 KB mail
//! with thousands of numbers costs `groups × longest id` comparisons at most
//! ([`Scan::work`] counts them). Pure; knows text, not orders.

use std::collections::BTreeMap;

use unicode_normalization::UnicodeNormalization;

/// How two neighbouring groups are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Join {
    Hard,
    Weak,
    Strong,
}

/// A run of ASCII letters and digits, by char index into [`Scan::lower`].
#[derive(Debug, Clone)]
pub(super) struct Group {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) digits: usize,
}

/// One match of an id key: groups `first..=last`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) first: usize,
    pub(super) last: usize,
    pub(super) key: String,
}

/// A text scanned into groups and joins.
pub(super) struct Scan {
    /// NFKC, percent escapes decoded, dashes folded, case kept.
    pub(super) kept: Vec<char>,
    /// The same, ASCII lower case (same indices).
    pub(super) lower: Vec<char>,
    pub(super) groups: Vec<Group>,
    /// `joins[i]` joins `groups[i]` and `groups[i + 1]`.
    pub(super) joins: Vec<Join>,
}

/// The skeleton of an id: its ASCII letters and digits, lower case, after NFKC (`#`,
/// dashes, dots and spaces dropped). Empty when the id has other letters (an id like
/// `注文-12` is matched as written instead).
pub(super) fn skeleton(id: &str) -> String {
    let text = prepare(id);
    if text.iter().any(|c| c.is_alphanumeric() && !c.is_ascii()) {
        return String::new();
    }
    text.iter()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// NFKC, `%23`-style escapes of ASCII decoded, every dash (and `ー`) as `-`,
/// invisible joiners and soft hyphens dropped, spaces of every width as ` `.
fn prepare(text: &str) -> Vec<char> {
    percent_decoded(text)
        .nfkc()
        .filter(|c| {
            !matches!(
                c,
                '\u{ad}' | '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}'
            )
        })
        .map(|c| match c {
            '\u{2010}'..='\u{2015}'
            | '\u{2212}'
            | '\u{fe58}'
            | '\u{fe63}'
            | '\u{30fc}'
            | '\u{2e3a}'
            | '\u{2e3b}' => '-',
            '\r' => '\n',
            c if c.is_whitespace() && c != '\n' => ' ',
            c => c,
        })
        .collect()
}

/// `%23` → `#`, `%2D` → `-`, `%20` → ` ` …: escapes of printable ASCII only.
fn percent_decoded(text: &str) -> String {
    if !text.contains('%') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(|b| (0x20..0x7f).contains(b));
        match code {
            Some(b) => {
                out.push(b as char);
                rest = &rest[at + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Scans a text into groups and joins (see the module comment).
pub(super) fn scan(text: &str) -> Scan {
    let kept = prepare(text);
    let lower: Vec<char> = kept.iter().map(char::to_ascii_lowercase).collect();
    let mut groups = Vec::new();
    let mut i = 0;
    while i < lower.len() {
        if !lower[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < lower.len() && lower[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let digits = lower[start..i]
            .iter()
            .filter(|c| c.is_ascii_digit())
            .count();
        groups.push(Group {
            start,
            end: i,
            digits,
        });
    }
    let joins = groups
        .windows(2)
        .map(|w| join(&lower, &w[0], &w[1]))
        .collect();
    Scan {
        kept,
        lower,
        groups,
        joins,
    }
}

/// The join between two neighbouring groups, from the characters between them.
fn join(lower: &[char], a: &Group, b: &Group) -> Join {
    let gap = &lower[a.end..b.start];
    let before = lower[a.end - 1];
    let after = lower[b.start];
    let b_len = b.end - b.start;
    let thousands = before.is_ascii_digit() && b.digits == 3 && b_len == 3;
    // A blank line inside an id is what a converted HTML mail leaves (`</p>⏎<p>`).
    let mut marks: Vec<char> = gap.iter().copied().filter(|c| *c != ' ').collect();
    let spaced = gap.len() > marks.len();
    marks.dedup_by(|a, b| *a == '\n' && *b == '\n');
    let line_break = gap.contains(&'\n');
    match marks.as_slice() {
        ['-'] | ['_'] | ['-', '\n'] | ['\n', '-'] if !spaced => Join::Strong,
        ['-'] if gap.len() <= 3 && weakly_joined(a, b, false) => Join::Weak,
        ['.'] if !spaced && before.is_ascii_digit() && after.is_ascii_digit() => Join::Strong,
        [',' | '\''] if !spaced && thousands => Join::Strong,
        ['\n'] | [] if gap.len() <= 4 && weakly_joined(a, b, line_break) => Join::Weak,
        _ => Join::Hard,
    }
}

/// A space or line break may sit inside a token: between digit-bearing groups
/// (`2507 1510`), at a line break, or after a short prefix (`O 1001`).
fn weakly_joined(a: &Group, b: &Group, line_break: bool) -> bool {
    let short = |g: &Group| g.end - g.start <= 3;
    line_break
        || (a.digits > 0 && b.digits > 0)
        || (a.digits > 0 && short(b))
        || (b.digits > 0 && short(a))
}

impl Scan {
    /// Spans of whole groups whose skeleton is one of `keys`, longest key first where
    /// spans overlap. `work` counts the comparisons made (bounded, see module comment).
    pub(super) fn find(
        &self,
        keys: &BTreeMap<String, Vec<String>>,
        work: &mut usize,
    ) -> Vec<Found> {
        let longest = keys.keys().map(String::len).max().unwrap_or(0);
        let mut found: Vec<Found> = Vec::new();
        for i in 0..self.groups.len() {
            if i > 0 && self.joins[i - 1] == Join::Strong {
                continue;
            }
            let mut acc = String::new();
            for j in i..self.groups.len() {
                *work += 1;
                if j > i && self.joins[j - 1] == Join::Hard {
                    break;
                }
                let g = &self.groups[j];
                acc.extend(&self.lower[g.start..g.end]);
                if acc.len() > longest {
                    break;
                }
                let ends = j + 1 == self.groups.len() || self.joins[j] != Join::Strong;
                if ends && keys.contains_key(&acc) {
                    found.push(Found {
                        first: i,
                        last: j,
                        key: acc.clone(),
                    });
                }
            }
        }
        claim_longest(found)
    }

    /// Strongly joined runs of groups (`first..=last`): the tokens of the text.
    pub(super) fn runs(&self) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        let mut first = 0;
        for i in 0..self.groups.len() {
            let joined = i < self.joins.len() && self.joins[i] == Join::Strong;
            if !joined {
                runs.push((first, i));
                first = i + 1;
            }
        }
        runs
    }

    /// Char span of groups `first..=last`.
    pub(super) fn span(&self, first: usize, last: usize) -> (usize, usize) {
        (self.groups[first].start, self.groups[last].end)
    }

    /// The text of a char span as written (case kept).
    pub(super) fn kept_text(&self, (start, end): (usize, usize)) -> String {
        self.kept[start..end].iter().collect()
    }

    /// Up to `n` characters before `start`, lower case.
    pub(super) fn lower_before(&self, start: usize, n: usize) -> String {
        self.lower[start.saturating_sub(n)..start].iter().collect()
    }
}

/// Where found spans overlap, the longer keeps it (`#10234` over `#1023`), then the
/// earlier; results in text order.
fn claim_longest(mut found: Vec<Found>) -> Vec<Found> {
    found.sort_by(|a, b| b.key.len().cmp(&a.key.len()).then(a.first.cmp(&b.first)));
    let mut kept: Vec<Found> = Vec::new();
    for f in found {
        if !kept.iter().any(|k| f.first <= k.last && k.first <= f.last) {
            kept.push(f);
        }
    }
    kept.sort_by_key(|f| f.first);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(text: &str, ids: &[&str]) -> Vec<String> {
        let mut keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for id in ids {
            keys.entry(skeleton(id)).or_default().push(id.to_string());
        }
        let scan = scan(text);
        scan.find(&keys, &mut 0)
            .into_iter()
            .map(|f| keys[&f.key][0].clone())
            .collect()
    }

    #[test]
    fn every_way_of_writing_an_id_the_issue_names_matches_it() {
        let cases: &[(&str, &str)] = &[
            (
                "see https://shop.example/account/orders/65169?ref=mail_7781",
                "65169",
            ),
            // What a converted HTML mail leaves: paragraphs split inside the id.
            ("commande : O-\n\n\n13230, puis", "O-13230"),
            ("Bestellnummer 7698\n\n232.", "7698232"),
            (
                "my order: 2507 1510 4088 8542 79 please",
                "250715104088854279",
            ),
            ("order 250612-887\n6084 was charged twice", "250612-8876084"),
            ("it is R-670394232.", "R670394232"),
            ("Bestellung 65.169", "65169"),
            ("commande n° 1,234,567", "1234567"),
            (
                "注文番号ＯＲＤー２０２５ー０００１２３です",
                "ORD-2025-000123",
            ),
            ("ORD‑2025–000123", "ORD-2025-000123"),
            ("order%2365169 in the link", "#65169"),
            ("orders?id=mx5h38&x=1", "MX5H38"),
            ("Ｏ－１００１", "O-1001"),
            ("o 1001", "O-1001"),
        ];
        for (text, id) in cases {
            assert_eq!(matches(text, &[id]), [id.to_string()], "{text}");
        }
    }

    #[test]
    fn an_id_never_matches_inside_a_longer_token_or_a_spaced_number_part() {
        assert!(matches("call 1001-2 now", &["1001"]).is_empty());
        assert!(matches("ref 100123", &["1001"]).is_empty());
        assert!(matches("XMX5H38", &["MX5H38"]).is_empty());
        assert!(matches("2507 1510 4088", &["25071"]).is_empty());
        assert_eq!(
            matches("it is O-0001-2.", &["O-0001", "O-0001-2"]),
            ["O-0001-2"]
        );
        assert_eq!(
            matches("10234 and 1023", &["#1023", "#10234"]),
            ["#10234", "#1023"]
        );
    }

    #[test]
    fn a_neighbouring_number_does_not_hide_the_id() {
        assert_eq!(matches("7000024 10115 Berlin", &["7000024"]), ["7000024"]);
        assert_eq!(matches("PLZ 10115 7000024", &["7000024"]), ["7000024"]);
        assert_eq!(
            matches("tel. +49 30 1234567, order 65169", &["65169"]),
            ["65169"]
        );
    }

    #[test]
    fn thousands_separators_are_read_only_before_three_digits() {
        let scan = scan("1,5 and 1001,1002 and 65,169");
        let tokens: Vec<String> = scan
            .runs()
            .into_iter()
            .map(|(a, b)| scan.kept_text(scan.span(a, b)))
            .collect();
        assert_eq!(tokens, ["1", "5", "and", "1001", "1002", "and", "65,169"]);
    }

    #[test]
    fn the_work_is_bounded_by_groups_times_the_longest_id() {
        let text = "12 34 56 78 ".repeat(5_000);
        let scan = scan(&text);
        let mut keys = BTreeMap::new();
        keys.insert("99999999".to_string(), vec!["99999999".to_string()]);
        let mut work = 0;
        scan.find(&keys, &mut work);
        assert!(work <= scan.groups.len() * 8, "{work}");
    }
}
