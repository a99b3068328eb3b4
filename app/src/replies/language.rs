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

#[cfg(test)]
mod tests {
    use super::*;

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
