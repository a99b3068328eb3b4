//! The East Asian scripts a text is written in, by Unicode block: what tells Korean,
//! Japanese and Chinese apart before any word is read (`replies::language` picks the
//! reply's language from it, `resolve::when` where the writer likely lives).

/// A script that names its language (or its family) by itself, in the order
/// [`script_of`] prefers them (a Korean text quoting Chinese characters is Korean).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Script {
    /// Hangul syllables or jamo: Korean.
    Hangul,
    /// Hiragana or Katakana: Japanese (Chinese is never written with kana).
    Kana,
    /// Chinese characters without kana: Chinese, or Japanese written all in kanji.
    Han,
}

/// The first of Hangul, kana and Han that `text` holds, in that order.
pub fn script_of(text: &str) -> Option<Script> {
    if text.chars().any(hangul) {
        Some(Script::Hangul)
    } else if text.chars().any(kana) {
        Some(Script::Kana)
    } else if text.chars().any(han) {
        Some(Script::Han)
    } else {
        None
    }
}

fn han(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c)
}

/// The kana blocks, Katakana without U+30FB `・`, a middle dot Chinese text also uses
/// between the parts of foreign names.
fn kana(c: char) -> bool {
    ('\u{3041}'..='\u{309f}').contains(&c)
        || (('\u{30a1}'..='\u{30ff}').contains(&c) && c != '\u{30fb}')
        || ('\u{31f0}'..='\u{31ff}').contains(&c)
        || ('\u{ff66}'..='\u{ff9f}').contains(&c)
}

fn hangul(c: char) -> bool {
    ('\u{ac00}'..='\u{d7a3}').contains(&c)
        || ('\u{1100}'..='\u{11ff}').contains(&c)
        || ('\u{3130}'..='\u{318f}').contains(&c)
}
