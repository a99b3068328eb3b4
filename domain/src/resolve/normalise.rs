//! The form text and order ids are compared in: Unicode NFKC, dashes and quotes folded,
//! ASCII lower case, and the token boundaries an id must respect. Pure string functions;
//! nothing here knows orders.

use unicode_normalization::UnicodeNormalization;

/// NFKC, dashes folded to `-`, ASCII lower case: the form both text and ids are
/// compared in. ASCII lower-casing keeps byte offsets, so spans map back to the NFKC
/// text (case kept) for reporting.
pub fn fold(text: &str) -> String {
    nfkc(text).to_ascii_lowercase()
}

pub(super) fn nfkc(text: &str) -> String {
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
pub(super) fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

pub(super) fn is_joiner(c: char) -> bool {
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
pub(super) fn id_key(id: &str) -> String {
    let folded = fold(id.trim());
    folded.trim_start_matches('#').to_string()
}

/// Byte spans of bounded occurrences of `key` in `text`.
pub(super) fn occurrences(text: &str, key: &str) -> Vec<(usize, usize)> {
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

/// True when `phrase` (folded) occurs in `text` (folded); ASCII phrases must not be
/// glued to other ASCII letters or digits on either side.
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    phrase_spans(text, phrase).next().is_some()
}

/// Byte spans of the occurrences of `phrase` (folded) in `text` (folded) that
/// [`contains_phrase`] accepts.
pub fn phrase_spans<'a>(
    text: &'a str,
    phrase: &'a str,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let (starts_ascii, ends_ascii) = (edge(phrase.chars().next()), edge(phrase.chars().last()));
    let mut from = 0;
    std::iter::from_fn(move || {
        if phrase.is_empty() {
            return None;
        }
        // `memmem`, not `str::find`: the standard searcher is built anew per call, and the
        // readers look for hundreds of short phrases in each text (a replayed ticket's
        // reading spent a tenth of its time building them). A byte match of a UTF-8
        // phrase in UTF-8 text starts on a character boundary, as `find`'s does.
        while let Some(pos) = memchr::memmem::find(&text.as_bytes()[from..], phrase.as_bytes()) {
            let start = from + pos;
            let end = start + phrase.len();
            from = start + text[start..].chars().next().map_or(1, char::len_utf8);
            let before_ok = !starts_ascii || !edge(text[..start].chars().next_back());
            let after_ok = !ends_ascii || !edge(text[end..].chars().next());
            if before_ok && after_ok {
                return Some((start, end));
            }
        }
        None
    })
}
