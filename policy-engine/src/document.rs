//! Policy documents: Markdown with TOML front matter, split into citable sections.
//!
//! This is the one parser of `fixtures/policies/*.md`; the policy engine reads the
//! metadata (which version is in force when) and `rag-index` indexes the sections.
//! It reads strings, never files: callers do the I/O.

use serde::{Deserialize, Serialize};
use time::Date;

use crate::catalog::{Product, Region};
use crate::error::PolicyError;

/// Whether a version may decide live cases. A draft is only ever used for what-if runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyStatus {
    Published,
    Draft,
}

/// The front matter of one policy version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyMeta {
    pub id: String,
    pub version: u32,
    pub title: String,
    pub status: PolicyStatus,
    #[serde(with = "date_format")]
    pub effective_from: Date,
    #[serde(
        default,
        with = "opt_date_format",
        skip_serializing_if = "Option::is_none"
    )]
    pub effective_to: Option<Date>,
    pub regions: Vec<Region>,
    pub products: Vec<Product>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
}

impl PolicyMeta {
    /// `RP-001@2`: how decisions and citations name a version.
    pub fn version_ref(&self) -> String {
        format!("{}@{}", self.id, self.version)
    }

    /// True when `date` falls in `[effective_from, effective_to]` (both inclusive: the
    /// policy files give the last day a version applies).
    pub fn in_force_on(&self, date: Date) -> bool {
        date >= self.effective_from && self.effective_to.is_none_or(|to| date <= to)
    }
}

/// One `##` section of a policy version: the unit that is indexed and cited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySection {
    /// `"3"` for `## 3. Reporting window`; a slug for unnumbered headings; `"intro"` for
    /// text before the first heading; `"1"` for a document with no `##` heading at all.
    pub anchor: String,
    pub title: String,
    pub text: String,
}

/// A parsed policy version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDocument {
    pub meta: PolicyMeta,
    /// The Markdown body without the front matter.
    pub body: String,
    pub sections: Vec<PolicySection>,
}

impl PolicyDocument {
    /// Parses `+++\n<toml>\n+++\n<markdown>`.
    pub fn parse(source: &str) -> Result<Self, PolicyError> {
        let source = source.trim_start_matches('\u{feff}');
        let rest = source
            .strip_prefix("+++")
            .ok_or_else(|| PolicyError::Document("missing '+++' front matter".into()))?;
        let end = rest
            .find("\n+++")
            .ok_or_else(|| PolicyError::Document("unterminated '+++' front matter".into()))?;
        let meta: PolicyMeta = toml::from_str(&rest[..end])
            .map_err(|e| PolicyError::Document(format!("front matter: {e}")))?;
        if let Some(to) = meta.effective_to {
            if to < meta.effective_from {
                return Err(PolicyError::Document(format!(
                    "{}: effective_to is before effective_from",
                    meta.version_ref()
                )));
            }
        }
        let body = rest[end + 4..].trim_start_matches(['\r', '\n']).to_string();
        let sections = split_sections(&meta, &body);
        Ok(PolicyDocument {
            meta,
            body,
            sections,
        })
    }

    /// The section a citation anchor points at. A clause anchor such as `2.1` resolves to
    /// its section `2`.
    pub fn section(&self, anchor: &str) -> Option<&PolicySection> {
        self.sections
            .iter()
            .find(|s| s.anchor == anchor)
            .or_else(|| {
                let head = anchor.split('.').next()?;
                self.sections.iter().find(|s| s.anchor == head)
            })
    }
}

fn split_sections(meta: &PolicyMeta, body: &str) -> Vec<PolicySection> {
    let mut sections = Vec::new();
    let mut current: Option<(String, String)> = None; // (anchor, title)
    let mut text = String::new();
    let mut intro = String::new();
    for line in body.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            if let Some((anchor, title)) = current.take() {
                sections.push(PolicySection {
                    anchor,
                    title,
                    text: text.trim().to_string(),
                });
            }
            text.clear();
            current = Some(heading_anchor(heading.trim()));
        } else if line.starts_with("# ") {
            // The document title repeats the front matter's title.
        } else if current.is_some() {
            text.push_str(line);
            text.push('\n');
        } else {
            intro.push_str(line);
            intro.push('\n');
        }
    }
    if let Some((anchor, title)) = current.take() {
        sections.push(PolicySection {
            anchor,
            title,
            text: text.trim().to_string(),
        });
    }
    let intro = intro.trim().to_string();
    if sections.is_empty() {
        return vec![PolicySection {
            anchor: "1".into(),
            title: meta.title.clone(),
            text: intro,
        }];
    }
    if !intro.is_empty() {
        sections.insert(
            0,
            PolicySection {
                anchor: "intro".into(),
                title: meta.title.clone(),
                text: intro,
            },
        );
    }
    sections
}

/// `3. Reporting window` → (`3`, `Reporting window`); `Annual plans` → (`annual-plans`, ..).
fn heading_anchor(heading: &str) -> (String, String) {
    let number: String = heading
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let number = number.trim_end_matches('.');
    if !number.is_empty() {
        let title = heading[number.len()..]
            .trim_start_matches('.')
            .trim()
            .to_string();
        return (number.to_string(), title);
    }
    let slug: String = heading
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    (slug, heading.to_string())
}

mod date_format {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::Date;

    const FORMAT: &[time::format_description::FormatItem<'static>] =
        time::macros::format_description!("[year]-[month]-[day]");

    pub fn serialize<S: Serializer>(date: &Date, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&date.format(FORMAT).map_err(serde::ser::Error::custom)?)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Date, D::Error> {
        let s = String::deserialize(d)?;
        Date::parse(&s, FORMAT).map_err(serde::de::Error::custom)
    }

    pub fn parse(s: &str) -> Result<Date, time::error::Parse> {
        Date::parse(s, FORMAT)
    }
}

mod opt_date_format {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::Date;

    pub fn serialize<S: Serializer>(date: &Option<Date>, s: S) -> Result<S::Ok, S::Error> {
        match date {
            Some(d) => super::date_format::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Date>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => super::date_format::parse(&s)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

/// Parses `YYYY-MM-DD` (used by CLI flags such as `--as-of`).
pub fn parse_date(s: &str) -> Result<Date, PolicyError> {
    date_format::parse(s)
        .map_err(|e| PolicyError::Document(format!("'{s}' is not a YYYY-MM-DD date: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RP001_V2: &str = include_str!("../../fixtures/policies/RP-001-v2.md");
    const RP003: &str = include_str!("../../fixtures/policies/RP-003-v1.md");
    const DRAFT: &str = include_str!("../../fixtures/policies/RP-001-v3-draft.md");

    #[test]
    fn parses_front_matter_and_numbered_sections() {
        let doc = PolicyDocument::parse(RP001_V2).unwrap();
        assert_eq!(doc.meta.version_ref(), "RP-001@2");
        assert_eq!(doc.meta.status, PolicyStatus::Published);
        assert_eq!(doc.meta.effective_to, None);
        let anchors: Vec<_> = doc.sections.iter().map(|s| s.anchor.as_str()).collect();
        assert_eq!(anchors, ["intro", "1", "2", "3", "4"]);
        assert_eq!(doc.section("3").unwrap().title, "Reporting window");
        assert!(doc.section("3").unwrap().text.contains("120 days"));
        assert_eq!(doc.section("2.1").unwrap().anchor, "2");
    }

    #[test]
    fn a_document_without_headings_is_one_section() {
        let doc = PolicyDocument::parse(RP003).unwrap();
        assert_eq!(doc.sections.len(), 1);
        assert_eq!(doc.sections[0].anchor, "1");
        assert!(doc.sections[0].text.contains("hold released within"));
    }

    #[test]
    fn drafts_are_marked() {
        let doc = PolicyDocument::parse(DRAFT).unwrap();
        assert_eq!(doc.meta.status, PolicyStatus::Draft);
    }

    #[test]
    fn in_force_interval_is_inclusive() {
        let doc =
            PolicyDocument::parse(include_str!("../../fixtures/policies/RP-001-v1.md")).unwrap();
        let d = |s| parse_date(s).unwrap();
        assert!(!doc.meta.in_force_on(d("2024-12-31")));
        assert!(doc.meta.in_force_on(d("2025-01-01")));
        assert!(doc.meta.in_force_on(d("2026-06-30")));
        assert!(!doc.meta.in_force_on(d("2026-07-01")));
    }

    #[test]
    fn rejects_malformed_documents() {
        assert!(PolicyDocument::parse("# no front matter").is_err());
        assert!(PolicyDocument::parse("+++\nid = 1\n").is_err());
        assert!(PolicyDocument::parse("+++\nid = \"X\"\n+++\nbody").is_err());
    }
}
