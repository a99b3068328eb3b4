//! Every policy version the product knows, and which one is in force on a date.
//!
//! Built from strings the caller read (`fixtures/policies/*.md` and the `*.rules.toml`
//! beside each); this module does no I/O. Published versions of one document may not
//! overlap in time, so "the version in force" is always unique; drafts never are in
//! force and are reachable only by an explicit `doc@version` pin.

use std::collections::BTreeMap;

use time::Date;

use crate::document::{PolicyDocument, PolicyStatus};
use crate::error::PolicyError;
use crate::parameters::PolicyRules;

/// One policy version as read from disk by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySource {
    /// The file name, e.g. `RP-001-v2.md` (used in error messages).
    pub name: String,
    pub markdown: String,
    /// The contents of the matching `.rules.toml` (`RP-001-v2.rules.toml`), if any.
    pub rules: Option<String>,
}

impl PolicySource {
    /// The rules file name that goes with a policy file name:
    /// `RP-001-v2.md` → `RP-001-v2.rules.toml`.
    pub fn rules_file_name(markdown_name: &str) -> String {
        let stem = markdown_name.strip_suffix(".md").unwrap_or(markdown_name);
        format!("{stem}.rules.toml")
    }
}

/// All versions, sorted by `(id, version)`, with their parsed rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySet {
    documents: Vec<PolicyDocument>,
    /// Parallel to `documents`.
    rules: Vec<Option<PolicyRules>>,
    /// Parallel to `documents`.
    citations: Vec<Citations>,
}

/// How decisions name one version and cite its clauses: `RP-001@2` and `RP-001@2#2.1`.
/// Formatted once when the set is built, not in every decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Citations {
    version: String,
    /// Rule key → `doc@version#anchor`, for every key the rules file maps.
    clauses: BTreeMap<String, String>,
    /// For a key the rules do not map: the document's first section, else `#1`. Rules
    /// files are validated to map every key the engine uses, so this is a safety net.
    fallback: String,
}

impl Citations {
    fn new(document: &PolicyDocument, rules: Option<&PolicyRules>) -> Citations {
        let version = document.meta.version_ref();
        let cite = |anchor: &str| format!("{version}#{anchor}");
        let clauses = rules
            .map(|rules| {
                rules
                    .clauses
                    .iter()
                    .map(|(key, anchor)| (key.clone(), cite(anchor)))
                    .collect()
            })
            .unwrap_or_default();
        let fallback = cite(document.sections.first().map_or("1", |s| s.anchor.as_str()));
        Citations {
            version,
            clauses,
            fallback,
        }
    }

    /// `RP-001@2`.
    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    /// `RP-001@2#2.1`: the clause the rules file maps `key` to.
    pub(crate) fn clause(&self, key: &str) -> &str {
        self.clauses.get(key).unwrap_or(&self.fallback)
    }
}

impl PolicySet {
    /// Parses every document and its rules. Fails on a malformed document or rules file,
    /// two sources for the same `doc@version`, or published versions of one document
    /// whose effective intervals overlap.
    pub fn from_sources(sources: Vec<PolicySource>) -> Result<PolicySet, PolicyError> {
        let mut versions: Vec<(PolicyDocument, Option<PolicyRules>)> = Vec::new();
        for source in sources {
            let document = PolicyDocument::parse(&source.markdown)
                .map_err(|e| PolicyError::Document(format!("{}: {e}", source.name)))?;
            let rules = match &source.rules {
                Some(text) => Some(
                    PolicyRules::parse(text, &document)
                        .map_err(|e| PolicyError::Rules(format!("{}: {e}", source.name)))?,
                ),
                None => None,
            };
            versions.push((document, rules));
        }
        versions.sort_by(|(a, _), (b, _)| {
            (a.meta.id.as_str(), a.meta.version).cmp(&(b.meta.id.as_str(), b.meta.version))
        });
        for pair in versions.windows(2) {
            if pair[0].0.meta.id == pair[1].0.meta.id
                && pair[0].0.meta.version == pair[1].0.meta.version
            {
                return Err(PolicyError::PolicySet(format!(
                    "{} is given twice",
                    pair[0].0.meta.version_ref()
                )));
            }
        }
        let mut published: BTreeMap<&str, Vec<&PolicyDocument>> = BTreeMap::new();
        for (document, _) in &versions {
            if document.meta.status == PolicyStatus::Published {
                published
                    .entry(&document.meta.id)
                    .or_default()
                    .push(document);
            }
        }
        for docs in published.values_mut() {
            docs.sort_by_key(|d| d.meta.effective_from);
            for pair in docs.windows(2) {
                let (earlier, later) = (&pair[0].meta, &pair[1].meta);
                if earlier
                    .effective_to
                    .is_none_or(|to| to >= later.effective_from)
                {
                    return Err(PolicyError::PolicySet(format!(
                        "{} and {} are both in force on {}",
                        earlier.version_ref(),
                        later.version_ref(),
                        later.effective_from
                    )));
                }
            }
        }
        let citations = versions
            .iter()
            .map(|(document, rules)| Citations::new(document, rules.as_ref()))
            .collect();
        let (documents, rules) = versions.into_iter().unzip();
        Ok(PolicySet {
            documents,
            rules,
            citations,
        })
    }

    /// Every version, drafts included, sorted by `(id, version)`.
    pub fn documents(&self) -> &[PolicyDocument] {
        &self.documents
    }

    pub fn document(&self, doc_id: &str, version: u32) -> Option<&PolicyDocument> {
        self.index(doc_id, version).map(|i| &self.documents[i])
    }

    /// The parameters of one version, when a rules file came with it.
    pub fn rules(&self, doc_id: &str, version: u32) -> Option<&PolicyRules> {
        self.index(doc_id, version)
            .and_then(|i| self.rules[i].as_ref())
    }

    /// The published version of `doc_id` in force on `on` (never a draft).
    pub fn in_force(&self, doc_id: &str, on: Date) -> Option<&PolicyDocument> {
        self.in_force_index(doc_id, on).map(|i| &self.documents[i])
    }

    /// Resolves `"RP-001@3"` to a version of this set (drafts included).
    pub fn resolve_ref(&self, version_ref: &str) -> Result<&PolicyDocument, PolicyError> {
        let unknown = || PolicyError::UnknownVersion(version_ref.to_string());
        let (id, version) = version_ref.split_once('@').ok_or_else(unknown)?;
        let version: u32 = version.parse().map_err(|_| unknown())?;
        self.document(id, version).ok_or_else(unknown)
    }

    pub(crate) fn in_force_index(&self, doc_id: &str, on: Date) -> Option<usize> {
        // Sorted by (id, version): the versions of one document are one run.
        let first = self
            .documents
            .partition_point(|d| d.meta.id.as_str() < doc_id);
        self.documents[first..]
            .iter()
            .take_while(|d| d.meta.id == doc_id)
            .position(|d| d.meta.status == PolicyStatus::Published && d.meta.in_force_on(on))
            .map(|i| first + i)
    }

    pub(crate) fn index(&self, doc_id: &str, version: u32) -> Option<usize> {
        self.documents
            .binary_search_by(|d| (d.meta.id.as_str(), d.meta.version).cmp(&(doc_id, version)))
            .ok()
    }

    /// The rules and citations of the version at `index` (see [`PolicySet::index`]).
    pub(crate) fn at(&self, index: usize) -> (Option<&PolicyRules>, &Citations) {
        (self.rules[index].as_ref(), &self.citations[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{fixture_set, fixture_sources, source};

    fn date(s: &str) -> Date {
        crate::document::parse_date(s).unwrap()
    }

    #[test]
    fn loads_every_fixture_version_sorted_by_id_and_version() {
        let set = fixture_set();
        let refs: Vec<_> = set
            .documents()
            .iter()
            .map(|d| d.meta.version_ref())
            .collect();
        assert_eq!(
            refs,
            [
                "RP-001@1", "RP-001@2", "RP-001@3", "RP-002@1", "RP-003@1", "RP-004@1", "RP-004@2",
                "RP-005@1", "RP-006@1", "RP-007@1"
            ]
        );
        assert!(set.document("RP-001", 3).is_some());
        assert!(set.document("RP-001", 4).is_none());
        assert!(set.rules("RP-001", 2).is_some());
        assert!(set.rules("RP-005", 1).is_none());
    }

    #[test]
    fn in_force_switches_versions_between_june_30_and_july_1_2026() {
        let set = fixture_set();
        let cases = [
            ("RP-001", "2025-01-01", Some(1)),
            ("RP-001", "2026-06-30", Some(1)),
            ("RP-001", "2026-07-01", Some(2)),
            ("RP-004", "2026-06-30", Some(1)),
            ("RP-004", "2026-07-01", Some(2)),
            ("RP-001", "2024-12-31", None),
            // The draft's effective_from is 2027-01-01, yet it is never in force.
            ("RP-001", "2027-06-01", Some(2)),
        ];
        for (id, on, expected) in cases {
            let got = set.in_force(id, date(on)).map(|d| d.meta.version);
            assert_eq!(got, expected, "{id} on {on}");
        }
    }

    #[test]
    fn rejects_duplicate_versions() {
        let mut sources = fixture_sources();
        sources.push(source("RP-001-v2.md"));
        let err = PolicySet::from_sources(sources).unwrap_err();
        assert!(matches!(err, PolicyError::PolicySet(_)), "{err}");
    }

    #[test]
    fn rejects_overlapping_published_intervals() {
        let mut sources = fixture_sources();
        let v1 = sources
            .iter_mut()
            .find(|s| s.name == "RP-004-v1.md")
            .unwrap();
        v1.markdown = v1.markdown.replace(
            "effective_to = \"2026-06-30\"",
            "effective_to = \"2026-07-01\"",
        );
        let err = PolicySet::from_sources(sources).unwrap_err();
        assert!(err.to_string().contains("RP-004@1 and RP-004@2"), "{err}");
    }

    #[test]
    fn rejects_malformed_rules_naming_the_file() {
        let mut sources = fixture_sources();
        let v2 = sources
            .iter_mut()
            .find(|s| s.name == "RP-001-v2.md")
            .unwrap();
        v2.rules =
            Some("policy = \"RP-001@2\"\n[charges]\nreporting_window_days = \"soon\"\n".into());
        let err = PolicySet::from_sources(sources).unwrap_err();
        assert!(err.to_string().contains("RP-001-v2.md"), "{err}");
    }

    #[test]
    fn resolves_version_refs_including_drafts() {
        let set = fixture_set();
        assert_eq!(
            set.resolve_ref("RP-001@3").unwrap().meta.status,
            PolicyStatus::Draft
        );
        for bad in ["RP-001@9", "RP-001", "RP-001@x", "@2", "RP-999@1"] {
            assert_eq!(
                set.resolve_ref(bad).unwrap_err(),
                PolicyError::UnknownVersion(bad.into())
            );
        }
    }

    #[test]
    fn rules_file_name_sits_beside_the_markdown() {
        assert_eq!(
            PolicySource::rules_file_name("RP-001-v3-draft.md"),
            "RP-001-v3-draft.rules.toml"
        );
    }
}
