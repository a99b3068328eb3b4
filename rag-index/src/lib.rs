//! Versioned policy search: the refund policy sections in a tantivy index.
//!
//! One tantivy document per policy section (`doc@version#section`), BM25 ranking with
//! title boosts and phrase queries, filters for the date a version is in force, status
//! (drafts only on request), region and product. Chinese queries go through a fixed
//! glossary ([`glossary`]) before parsing. The API is small and synchronous: the app
//! calls it from `spawn_blocking`.
//!
//! The index is disposable. It records [`SCHEMA_VERSION`] and a hash of the policy
//! documents; when either differs, or the directory is corrupt or foreign, it is rebuilt
//! from the policy files, never patched. Rebuilds write a new generation directory and
//! swap a pointer file atomically, so searches never see a half-built index.
//!
//! What this crate does not do: read policy files (callers parse them with
//! [`policy_engine::PolicyDocument::parse`] and pass the documents in), decide anything
//! (that is `policy-engine`), read the clock (the caller supplies `as_of`), or run
//! async code.

pub mod eval;
pub mod generate;
pub mod glossary;
mod index;
mod query;
mod schema;
mod store;
mod top;

use std::path::PathBuf;

use policy_engine::{PolicyStatus, Product, Region};
use serde::{Deserialize, Serialize};
use time::Date;

pub use index::{policy_hash, PolicyIndex};

/// Version of the on-disk layout and of the tantivy schema and analyzer. Bump it on any
/// change to `schema.rs` or to what is indexed; existing indexes are then rebuilt.
/// 2: tantivy 0.27, whose English stemmer is `frostem` rather than `rust-stemmers`; terms
/// written by the old stemmer are not trusted to match queries stemmed by the new one.
pub const SCHEMA_VERSION: u32 = 2;

/// Largest number of passages one search returns, whatever `limit` asks for.
pub const MAX_LIMIT: usize = 100;

/// A policy search. [`SearchQuery::new`] gives 5 results and no filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// Free text, English or Chinese. `"quoted words"` are a phrase; any other query
    /// syntax that fails to parse is read leniently, never reported as an error.
    pub text: String,
    /// Only versions in force on this day (`effective_from <= as_of <= effective_to`).
    /// `None` searches every version, current or not.
    pub as_of: Option<Date>,
    /// Only versions that apply to this region.
    pub region: Option<Region>,
    /// Only versions that apply to this product.
    pub product: Option<Product>,
    /// Also search draft versions (what-if runs); live decisions never set this.
    pub include_drafts: bool,
    /// Number of passages wanted; capped at [`MAX_LIMIT`], 0 returns nothing.
    pub limit: usize,
}

impl SearchQuery {
    pub fn new(text: impl Into<String>) -> Self {
        SearchQuery {
            text: text.into(),
            as_of: None,
            region: None,
            product: None,
            include_drafts: false,
            limit: 5,
        }
    }
}

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

/// Errors of the policy index. A query never fails for its syntax.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("i/o on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("tantivy: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("index is corrupt or foreign: {0}")]
    Corrupt(String),
    #[error("policy version {0} appears twice in the documents to index")]
    DuplicateDocument(String),
    #[error("eval queries, line {line}: {message}")]
    EvalQuery { line: usize, message: String },
}

impl IndexError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.into(),
            source,
        }
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

    #[test]
    fn a_new_query_has_no_filters_and_five_results() {
        let q = SearchQuery::new("refund");
        assert_eq!(q.limit, 5);
        assert!(q.as_of.is_none() && q.region.is_none() && q.product.is_none());
        assert!(!q.include_drafts);
    }
}
