//! Turning policy sections into tantivy documents and a [`SearchQuery`] into a tantivy
//! query.
//!
//! The text part goes through the glossary, then tantivy's lenient parser over the
//! document title, section title and section text (titles boosted); quoted text is a
//! phrase. Filters (in force on `as_of`, published unless drafts are asked for, region,
//! product) are added as constant-score-zero clauses, so they select without changing
//! the BM25 ranking. Query syntax never produces an error. This module does not run
//! searches or touch the disk.

use std::ops::Bound;

use policy_engine::{PolicyDocument, PolicyStatus};
use serde::Serialize;
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, Occur, Query, QueryParser, RangeQuery, TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, TantivyDocument, Term};
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

/// The tantivy query for `query`, or `None` when nothing searchable is left (empty text,
/// or Chinese text the glossary does not know).
pub(crate) fn build(
    parser: &QueryParser,
    fields: &Fields,
    query: &SearchQuery,
) -> Result<Option<Box<dyn Query>>, IndexError> {
    let text = glossary::translate(&query.text);
    if !text.chars().any(char::is_alphanumeric) {
        return Ok(None);
    }
    // Lenient: `refund AND (`, `"unclosed`, `title:` and friends become the best query
    // tantivy can read from them; the errors it reports are deliberately ignored.
    let (text_query, _syntax_errors) = parser.parse_query_lenient(&text);
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query)];
    let mut filter =
        |q: Box<dyn Query>| clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0))));
    if !query.include_drafts {
        filter(term(fields.status, status_name(PolicyStatus::Published)));
    }
    if let Some(as_of) = query.as_of {
        let day = julian(as_of);
        filter(Box::new(RangeQuery::new(
            Bound::Unbounded,
            Bound::Included(Term::from_field_i64(fields.effective_from, day)),
        )));
        filter(Box::new(RangeQuery::new(
            Bound::Included(Term::from_field_i64(fields.effective_to, day)),
            Bound::Unbounded,
        )));
    }
    if let Some(region) = query.region {
        filter(term(fields.regions, &enum_name(&region)?));
    }
    if let Some(product) = query.product {
        filter(term(fields.products, &enum_name(&product)?));
    }
    Ok(Some(Box::new(BooleanQuery::new(clauses))))
}

/// One tantivy document per section of `document`.
pub(crate) fn section_documents(
    fields: &Fields,
    document: &PolicyDocument,
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
        sections.push(doc);
    }
    Ok(sections)
}

fn term(field: tantivy::schema::Field, value: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
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
