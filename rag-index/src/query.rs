//! Turning policy sections into tantivy documents and a [`SearchQuery`] into a tantivy
//! query.
//!
//! The text part goes through the glossary, then tantivy's lenient parser over the
//! document title, section title and section text (titles boosted); quoted text is a
//! phrase. Filters (in force on `as_of`, published unless drafts are asked for, region,
//! product) are decided once per policy version ([`allowed_versions`]) and applied per
//! section inside tantivy's pruning loop (`top`), so they select without changing the
//! BM25 ranking. Query syntax never produces an error. This module does not run searches or
//! touch the disk.

use std::sync::Arc;

use policy_engine::{PolicyDocument, PolicyMeta, PolicyStatus};
use serde::Serialize;
use tantivy::query::{Query, QueryParser};
use tantivy::{Index, TantivyDocument};
use time::Date;

use crate::schema::{Fields, OPEN_ENDED};
use crate::{glossary, IndexError, SearchQuery};

// Title weights, relative to the section text (1.0). Titles are short fields, so BM25's
// length normalisation already makes a title match count for much more than the same
// word in the text; on top of that the section title gets a 1.25x boost. The policy
// title is repeated on every section of a version: it should pick the right policy,
// not drown out the section text, so it is weighted at 0.5. Measured on
// evals/policy_search/queries.jsonl (70 queries): section/doc boosts of 2.0/2.0 gave
// recall@1 0.83 and MRR 0.90; 1.25/0.5 gives 0.93 and 0.96, recall@3 1.0 for both.
/// Weight of the policy title ("Authorization holds").
const DOC_TITLE_BOOST: f32 = 0.5;
/// Weight of the section title ("Reporting window").
const SECTION_TITLE_BOOST: f32 = 1.25;

/// The parser shared by every search of one generation.
pub(crate) fn parser(index: &Index, fields: &Fields) -> QueryParser {
    let mut parser =
        QueryParser::for_index(index, vec![fields.doc_title, fields.title, fields.text]);
    parser.set_field_boost(fields.doc_title, DOC_TITLE_BOOST);
    parser.set_field_boost(fields.title, SECTION_TITLE_BOOST);
    parser
}

/// The tantivy text query for `query` (filters are applied by [`allowed_versions`]),
/// or `None` when nothing searchable is left (empty text,
/// or Chinese text the glossary does not know).
pub(crate) fn build(
    parser: &QueryParser,
    query: &SearchQuery,
) -> Result<Option<Box<dyn Query>>, IndexError> {
    let text = glossary::translate(&query.text);
    if !text.chars().any(char::is_alphanumeric) {
        return Ok(None);
    }
    // Lenient: `refund AND (`, `"unclosed`, `title:` and friends become the best query
    // tantivy can read from them; the errors it reports are deliberately ignored.
    let (text_query, _syntax_errors) = parser.parse_query_lenient(&text);
    Ok(Some(text_query))
}

/// Which policy versions (by ordinal) `query` may return, or `None` when all may.
/// Uses the policy engine's own `in_force_on`, so search and decisions agree on which
/// version is in force (`effective_to` is the inclusive last day).
pub(crate) fn allowed_versions(
    versions: &[PolicyMeta],
    query: &SearchQuery,
) -> Option<Arc<[bool]>> {
    let unfiltered = query.include_drafts
        && query.as_of.is_none()
        && query.region.is_none()
        && query.product.is_none();
    if unfiltered {
        return None;
    }
    Some(
        versions
            .iter()
            .map(|meta| {
                (query.include_drafts || meta.status == PolicyStatus::Published)
                    && query.as_of.is_none_or(|day| meta.in_force_on(day))
                    && query.region.is_none_or(|r| meta.regions.contains(&r))
                    && query.product.is_none_or(|p| meta.products.contains(&p))
            })
            .collect(),
    )
}

/// One tantivy document per section of `document`.
pub(crate) fn section_documents(
    fields: &Fields,
    document: &PolicyDocument,
    version_ordinal: u64,
) -> Result<Vec<TantivyDocument>, IndexError> {
    let meta = &document.meta;
    let regions = meta
        .regions
        .iter()
        .map(enum_name)
        .collect::<Result<Vec<_>, _>>()?;
    let products = meta
        .products
        .iter()
        .map(enum_name)
        .collect::<Result<Vec<_>, _>>()?;
    let mut sections = Vec::with_capacity(document.sections.len());
    for section in &document.sections {
        let mut doc = TantivyDocument::new();
        doc.add_text(fields.doc_id, &meta.id);
        doc.add_u64(fields.version, u64::from(meta.version));
        doc.add_text(fields.status, status_name(meta.status));
        doc.add_i64(fields.effective_from, julian(meta.effective_from));
        doc.add_i64(
            fields.effective_to,
            meta.effective_to.map_or(OPEN_ENDED, julian),
        );
        for region in &regions {
            doc.add_text(fields.regions, region);
        }
        for product in &products {
            doc.add_text(fields.products, product);
        }
        doc.add_text(fields.doc_title, &meta.title);
        doc.add_text(fields.title, &section.title);
        doc.add_text(fields.anchor, &section.anchor);
        doc.add_text(fields.text, &section.text);
        doc.add_u64(fields.version_ord, version_ordinal);
        sections.push(doc);
    }
    Ok(sections)
}

fn julian(date: Date) -> i64 {
    i64::from(date.to_julian_day())
}

fn status_name(status: PolicyStatus) -> &'static str {
    match status {
        PolicyStatus::Published => "published",
        PolicyStatus::Draft => "draft",
    }
}

/// The serde name of a region or product (`"US"`, `"annual_plan"`): the same spelling as
/// the policy files and the billing world.
fn enum_name<T: Serialize>(value: &T) -> Result<String, IndexError> {
    match serde_json::to_value(value)? {
        serde_json::Value::String(name) => Ok(name),
        other => Err(IndexError::Corrupt(format!(
            "unexpected enum encoding {other}"
        ))),
    }
}
