//! What the index answers: one ranked policy section, citable as `doc@version#section`.

use policy_engine::PolicyStatus;
use serde::{Deserialize, Serialize};
use time::Date;

time::serde::format_description!(ymd, Date, "[year]-[month]-[day]");

/// One ranked policy section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    pub doc_id: String,
    pub version: u32,
    /// The section anchor: `"3"`, `"intro"`, or `"1"` for a document without headings.
    pub anchor: String,
    /// The section title (the document title for `intro` and heading-less documents).
    pub title: String,
    pub text: String,
    /// BM25 score; only meaningful for ordering results of the same search.
    pub score: f32,
    pub status: PolicyStatus,
    #[serde(with = "ymd")]
    pub effective_from: Date,
    /// Inclusive last day the version applies; `None` while it has no end.
    #[serde(with = "ymd::option")]
    pub effective_to: Option<Date>,
}

impl Passage {
    /// `RP-001@2#3`: how proposals and replies cite policy (docs/spec/invariants.md #8).
    pub fn citation(&self) -> String {
        format!("{}@{}#{}", self.doc_id, self.version, self.anchor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage() -> Passage {
        Passage {
            doc_id: "RP-001".into(),
            version: 2,
            anchor: "3".into(),
            title: "Reporting window".into(),
            text: "within 120 days".into(),
            score: 1.5,
            status: PolicyStatus::Published,
            effective_from: time::macros::date!(2026 - 07 - 01),
            effective_to: None,
        }
    }

    #[test]
    fn citation_names_doc_version_and_section() {
        assert_eq!(passage().citation(), "RP-001@2#3");
    }

    #[test]
    fn passages_serialize_dates_as_iso_days() {
        let json = serde_json::to_value(passage()).unwrap();
        assert_eq!(json["effective_from"], "2026-07-01");
        assert_eq!(json["effective_to"], serde_json::Value::Null);
        assert_eq!(json["status"], "published");
    }
}
