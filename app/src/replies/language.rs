//! The language a customer is addressed in: its stored code, the browser's choice on
//! pages shown before sign-in, the region's default.

use std::fmt;
use std::str::FromStr;

use policy_engine::Region;
use serde::{Deserialize, Serialize};

/// The language of a ticket and of everything its customer is told. Stored as its code
/// (`en`, `zh`, `ja`) in `tickets.language`, the column's values since the first
/// migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    En,
    Zh,
    Ja,
}

/// A language code that is none of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown language '{0}' (expected en, zh or ja)")]
pub struct UnknownLanguage(pub String);

impl Language {
    pub const ALL: [Language; 3] = [Language::En, Language::Zh, Language::Ja];

    pub fn as_str(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Zh => "zh",
            Language::Ja => "ja",
        }
    }

    /// A stored code. English is the fallback for any other language (issue 15), so a
    /// code this build does not know (written by a newer one) still gets answers.
    pub fn from_stored(code: &str) -> Language {
        code.parse().unwrap_or_else(|e: UnknownLanguage| {
            tracing::warn!(error = %e, "stored language falls back to English");
            Language::En
        })
    }

    /// The language of a page shown before we know who the customer is (the sign-in
    /// page): the first of the browser's `Accept-Language` choices, by weight, that is
    /// one of ours; English when none is.
    pub fn from_accept_language(header: Option<&str>) -> Language {
        let mut choices: Vec<(f32, Language)> = header
            .unwrap_or_default()
            .split(',')
            .filter_map(|item| {
                let mut parts = item.split(';');
                let tag = parts.next()?.trim().to_ascii_lowercase();
                let primary = tag.split('-').next()?;
                let weight = parts
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())?;
                let lang = primary.parse::<Language>().ok()?;
                (weight > 0.0).then_some((weight, lang))
            })
            .collect();
        // A stable sort: equal weights keep the browser's order.
        choices.sort_by(|a, b| b.0.total_cmp(&a.0));
        choices.first().map_or(Language::En, |(_, lang)| *lang)
    }

    /// The language a customer is addressed in before they have written anything.
    pub fn of_region(region: Region) -> Language {
        match region {
            Region::CN => Language::Zh,
            Region::JP => Language::Ja,
            Region::US | Region::EU => Language::En,
        }
    }
}

impl FromStr for Language {
    type Err = UnknownLanguage;
    fn from_str(code: &str) -> Result<Self, Self::Err> {
        Language::ALL
            .into_iter()
            .find(|l| l.as_str() == code)
            .ok_or_else(|| UnknownLanguage(code.to_string()))
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The language replies to this text are written in (they follow the customer):
///
/// - any kana (Hiragana, Katakana, half-width Katakana) is Japanese: Chinese is never
///   written with kana, Japanese almost always is;
/// - Han without kana is Chinese, except from a customer of the JP region, for whom it
///   is Japanese: short Japanese complaints are often all kanji (`二重請求`, `返金希望`),
///   a JP customer is far more likely to write Japanese than Chinese, and a Chinese
///   reader still follows a kanji-heavy Japanese reply better than a Japanese reader
///   follows a Chinese one;
/// - anything else is English, the fallback for every other language (issue 15).
pub fn detect_language(text: &str, region: Option<Region>) -> Language {
    let han =
        |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c);
    // The Katakana block without U+30FB `・`, a middle dot Chinese text also uses
    // between the parts of foreign names.
    let kana = |c: char| {
        ('\u{3041}'..='\u{309f}').contains(&c)
            || (('\u{30a1}'..='\u{30ff}').contains(&c) && c != '\u{30fb}')
            || ('\u{31f0}'..='\u{31ff}').contains(&c)
            || ('\u{ff66}'..='\u{ff9f}').contains(&c)
    };
    if text.chars().any(kana) {
        Language::Ja
    } else if text.chars().any(han) {
        match region {
            Some(Region::JP) => Language::Ja,
            _ => Language::Zh,
        }
    } else {
        Language::En
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_detection_follows_the_script_and_for_kanji_only_the_region() {
        use Language::{En, Ja, Zh};
        let jp = Some(Region::JP);
        let cn = Some(Region::CN);
        let us = Some(Region::US);
        let cases: &[(&str, Option<Region>, Language)] = &[
            // Kana: Japanese, whoever writes it.
            ("年間プランの料金が二重に請求されました", None, Ja),
            ("年間プランの料金が二重に請求されました", cn, Ja),
            ("にじゅうせいきゅう", us, Ja),
            ("ｷｬﾝｾﾙしたい", None, Ja),
            // Kanji only: Japanese from a JP customer, Chinese from anyone else.
            ("二重請求", jp, Ja),
            ("二重請求", None, Zh),
            ("二重請求", cn, Zh),
            ("二重請求", us, Zh),
            // Mixed scripts: any kana decides.
            ("月額プラン cancel please, I no longer want it.", jp, Ja),
            ("O-4001 charged twice です", us, Ja),
            ("我的订单 O-1001 was charged twice", cn, Zh),
            // Chinese stays Chinese (the katakana middle dot is punctuation here).
            ("我的年度会员被扣了两次款", cn, Zh),
            ("我的年度会员被扣了两次款", None, Zh),
            ("列夫・托尔斯泰的书被扣了两次款", cn, Zh),
            // English, and the fallback for everything without Han or kana.
            ("I was charged twice for my annual plan", jp, En),
            ("Me cobraron dos veces", None, En),
            ("😡😡 refund now!!", None, En),
            ("🙏", jp, En),
            ("１２３４５", jp, En),
            ("", None, En),
        ];
        for (text, region, expected) in cases {
            assert_eq!(
                detect_language(text, *region),
                *expected,
                "{text:?} from {region:?}"
            );
        }
    }

    #[test]
    fn language_codes_round_trip_and_unknown_codes_fall_back_to_english() {
        for lang in Language::ALL {
            assert_eq!(lang.as_str().parse::<Language>(), Ok(lang));
            assert_eq!(serde_json::to_value(lang).unwrap(), lang.as_str());
        }
        assert_eq!("jp".parse::<Language>(), Err(UnknownLanguage("jp".into())));
        assert_eq!(Language::from_stored("ko"), Language::En);
        let accept = |h: &str| Language::from_accept_language(Some(h));
        assert_eq!(accept("ja,en-US;q=0.9,en;q=0.8"), Language::Ja);
        assert_eq!(accept("en-US;q=0.5, zh-CN"), Language::Zh);
        assert_eq!(accept("fr-FR, ja;q=0.3"), Language::Ja);
        assert_eq!(accept("ja;q=0, de"), Language::En);
        assert_eq!(accept("ja;q=oops"), Language::En);
        assert_eq!(Language::from_accept_language(None), Language::En);
        assert_eq!(Language::of_region(Region::JP), Language::Ja);
        assert_eq!(Language::of_region(Region::CN), Language::Zh);
        assert_eq!(Language::of_region(Region::EU), Language::En);
    }
}
