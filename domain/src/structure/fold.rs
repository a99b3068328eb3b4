//! The one form a customer's words are compared in (every reader of `structure` folds
//! the same way), below every module that compares them.

use unicode_normalization::UnicodeNormalization;

/// The form words are compared in, in every language: NFKC (full width to ASCII),
/// lower case, Latin accents dropped (`rétractation` reads as `retractation`, `zł` as `zl`, as
/// customers type it without them), dashes folded to `-`, curly quotes to `'`. Kana
/// voicing marks and Hangul syllables are kept whole.
pub fn fold_words(text: &str) -> String {
    // ASCII is its own NFKC, NFD and NFC, has no accents, dashes or quotes to fold:
    // lower case is the whole fold (most messages; every turn folds them again).
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    let lower: String = text.nfkc().flat_map(char::to_lowercase).collect();
    let mut out = String::with_capacity(lower.len());
    let mut previous = ' ';
    for c in lower
        .nfd()
        .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
        .nfc()
    {
        let folded = match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' => '-',
            // The katakana prolonged sound mark is a dash only inside an id (`670ー394`).
            '\u{30fc}' if previous.is_ascii_alphanumeric() => '-',
            '\u{2018}' | '\u{2019}' | '\u{00b4}' => '\'',
            // Letters Unicode does not decompose into a base and an accent: Polish `ł`,
            // Turkish dotless `ı`, Danish and Norwegian `ø` are typed without it too.
            'ł' => 'l',
            'ı' => 'i',
            'ø' => 'o',
            _ => c,
        };
        out.push(folded);
        previous = c;
    }
    out
}
