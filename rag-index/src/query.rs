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

use policy_engine::{PolicyDocument, PolicyMeta, PolicyStatus, Product, Region};
use serde::Serialize;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser};
use tantivy::{Index, Score, TantivyDocument};
use time::Date;

use crate::error::IndexError;
use crate::glossary;
use crate::request::SearchQuery;
use crate::schema::{Fields, OPEN_ENDED};

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

/// A text query laid out for pruning. The parser makes `refund charge` a
/// union of two unions (one clause per field each), and tantivy runs block-max WAND
/// only over a union whose clauses are all terms, so a query of two or more words
/// scored every section matching any of them. [`Prunable::flat`] is the same clauses in
/// one union, which matches exactly what the nested unions match; [`Prunable::score`]
/// adds a section's clause scores in the nested order, which is what the scorer that
/// visits every match reports (the flat union adds them in another order, so its
/// scores can differ in their last bits; `top` ranks by this one).
pub(crate) struct Prunable {
    /// The term clauses, boosted or not, in the parser's order.
    pub leaves: Vec<Box<dyn Query>>,
    shape: Shape,
}

/// How the parser nests the leaves: unions of optional clauses, of unions or leaves.
enum Shape {
    Leaf(usize),
    Union(Vec<Shape>),
}

impl Prunable {
    /// `None` unless every leaf is a single term read without positions: WAND skips
    /// only through unions of terms, and a phrase clause's scorer, built once more to
    /// score the candidates, finds its first match eagerly. Measured on the bench's
    /// queries with a phrase (20%), the pruning path was up to 17% slower than scoring
    /// every match, so they keep that path; either answers the same.
    pub(crate) fn of(query: &dyn Query) -> Option<Prunable> {
        let mut leaves = Vec::new();
        let shape = Self::lay_out(query, &mut leaves);
        leaves
            .iter()
            .all(|leaf| is_one_term(leaf.as_ref()))
            .then_some(Prunable { leaves, shape })
    }

    fn lay_out(query: &dyn Query, leaves: &mut Vec<Box<dyn Query>>) -> Shape {
        match query.downcast_ref::<BooleanQuery>() {
            Some(union) if is_plain_union(union) => Shape::Union(
                union
                    .clauses()
                    .iter()
                    .map(|(_, clause)| Self::lay_out(clause.as_ref(), leaves))
                    .collect(),
            ),
            _ => {
                leaves.push(query.box_clone());
                Shape::Leaf(leaves.len() - 1)
            }
        }
    }

    /// Every leaf as an optional clause of one union: what pruning runs.
    pub(crate) fn flat(&self) -> Box<dyn Query> {
        match (&self.shape, &self.leaves[..]) {
            (Shape::Leaf(_), [only]) => only.box_clone(),
            _ => Box::new(BooleanQuery::new(
                self.leaves
                    .iter()
                    .map(|leaf| (Occur::Should, leaf.box_clone()))
                    .collect(),
            )),
        }
    }

    /// The section's score as the nested unions add it, from `leaf(i)`, the score of
    /// leaf `i` or `None` where it does not match: a union's score is 0 plus each
    /// matching clause's score in clause order (tantivy's `SumCombiner` in a
    /// `BufferedUnionScorer`; one clause left is that clause's score, the same value).
    /// `None` when nothing matches.
    pub(crate) fn score(&self, leaf: &mut dyn FnMut(usize) -> Option<Score>) -> Option<Score> {
        fn fold(shape: &Shape, leaf: &mut dyn FnMut(usize) -> Option<Score>) -> Option<Score> {
            match shape {
                Shape::Leaf(i) => leaf(*i),
                Shape::Union(clauses) => {
                    clauses
                        .iter()
                        .fold(None, |sum, clause| match fold(clause, leaf) {
                            Some(score) => Some(sum.unwrap_or(0.0) + score),
                            None => sum,
                        })
                }
            }
        }
        fold(&self.shape, leaf)
    }

    /// How many clause scores a section's score may add up, in either order (`top`'s
    /// rounding margin): one per leaf, each a term's BM25 score times its boost.
    pub(crate) fn summands(&self) -> usize {
        self.leaves.len()
    }
}

/// A term query, boosted or not: one term, no positions.
fn is_one_term(query: &dyn Query) -> bool {
    let (mut terms, mut positions) = (0, false);
    query.query_terms(&mut |_, need_positions| {
        terms += 1;
        positions |= need_positions;
    });
    terms == 1 && !positions
}

/// Only optional clauses, at least one of which must match (0 and 1 mean the same
/// when every clause is optional).
fn is_plain_union(query: &BooleanQuery) -> bool {
    query.get_minimum_number_should_match() <= 1
        && query
            .clauses()
            .iter()
            .all(|(occur, _)| *occur == Occur::Should)
}

/// What the filters read of one policy version, packed: a query's filter is decided
/// for every version of the generation, and reading the `PolicyMeta`s themselves — a
/// large struct each, regions and products behind pointers, tested with branches the
/// processor cannot predict — took 50-60 µs a query on 1,230 versions.
/// Built once per generation; [`allowed_versions`] tests it without branches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VersionScope {
    published: bool,
    effective_from: Date,
    /// `effective_to`, or `Date::MAX` while the version has no end: no day is later, so
    /// `day <= last_day` is `PolicyMeta::in_force_on`'s open end.
    last_day: Date,
    /// One bit per region ([`region_bit`]).
    regions: u8,
    /// One bit per product ([`product_bit`]).
    products: u8,
}

impl VersionScope {
    pub(crate) fn of(meta: &PolicyMeta) -> VersionScope {
        VersionScope {
            published: meta.status == PolicyStatus::Published,
            effective_from: meta.effective_from,
            last_day: meta.effective_to.unwrap_or(Date::MAX),
            regions: meta.regions.iter().fold(0, |bits, &r| bits | region_bit(r)),
            products: meta
                .products
                .iter()
                .fold(0, |bits, &p| bits | product_bit(p)),
        }
    }
}

// Fieldless enums: the discriminant is the bit's position (4 regions, 3 products).
fn region_bit(region: Region) -> u8 {
    1 << region as u8
}

fn product_bit(product: Product) -> u8 {
    1 << product as u8
}

/// Which policy versions (by ordinal) `query` may return, or `None` when all may.
/// The same test as the policy engine's `PolicyMeta::in_force_on` (both days
/// inclusive), so search and decisions agree on which version is in force; a test pins
/// the two together.
pub(crate) fn allowed_versions(
    versions: &[VersionScope],
    query: &SearchQuery,
) -> Option<Arc<[bool]>> {
    let unfiltered = query.include_drafts
        && query.as_of.is_none()
        && query.region.is_none()
        && query.product.is_none();
    if unfiltered {
        return None;
    }
    // A filter left out is one every version passes: all bits, or the whole calendar.
    // In force on `as_of`: started by that day and not ended before it.
    let region = query.region.map_or(u8::MAX, region_bit);
    let product = query.product.map_or(u8::MAX, product_bit);
    let (started_by, ends_from) = query.as_of.map_or((Date::MAX, Date::MIN), |day| (day, day));
    let drafts = query.include_drafts;
    // `&`, not `&&`: each test is a data-dependent branch otherwise.
    Some(
        versions
            .iter()
            .map(|v| {
                (drafts | v.published)
                    & (v.effective_from <= started_by)
                    & (ends_from <= v.last_day)
                    & (v.regions & region != 0)
                    & (v.products & product != 0)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;

    /// The filter as it read `PolicyMeta` before the packed table: the reference.
    fn allowed_by_meta(versions: &[PolicyMeta], query: &SearchQuery) -> Vec<bool> {
        versions
            .iter()
            .map(|meta| {
                (query.include_drafts || meta.status == PolicyStatus::Published)
                    && query.as_of.is_none_or(|day| meta.in_force_on(day))
                    && query.region.is_none_or(|r| meta.regions.contains(&r))
                    && query.product.is_none_or(|p| meta.products.contains(&p))
            })
            .collect()
    }

    #[test]
    fn words_are_laid_out_as_one_union_of_terms_and_phrases_are_left_alone() {
        let (tantivy_schema, fields) = crate::schema::build();
        let index = Index::create_in_ram(tantivy_schema);
        crate::schema::register(&index);
        let parser = parser(&index, &fields);
        let prunable = |text: &str| Prunable::of(&*parser.parse_query_lenient(text).0);
        let flat_clauses = |text: &str| {
            let flat = prunable(text).expect("a union of terms").flat();
            let union = flat.downcast_ref::<BooleanQuery>().expect("one union");
            assert!(union.clauses().iter().all(|(occur, clause)| {
                *occur == Occur::Should && is_one_term(clause.as_ref())
            }));
            union.clauses().len()
        };
        // One clause per word and field (policy title, section title, text).
        assert_eq!(flat_clauses("refund"), 3);
        assert_eq!(flat_clauses("refund duplicate charge"), 9);
        assert_eq!(flat_clauses(&glossary::translate("重复扣款 退款")), 9);
        assert_eq!(prunable("refund").map(|p| p.summands()), Some(3));
        assert!(prunable("\"duplicate charge\" refund").is_none());
        assert!(prunable("+refund charge").is_none());
    }

    #[test]
    fn the_packed_scopes_allow_exactly_what_the_policy_metadata_allows() {
        let metas: Vec<PolicyMeta> = generate::documents(5, 3_000)
            .into_iter()
            .map(|d| d.meta)
            .collect();
        let scopes: Vec<VersionScope> = metas.iter().map(VersionScope::of).collect();
        // Every region and product filter, with and without drafts, on days that
        // include each version's first and last day and the days around them.
        let mut days: Vec<Option<Date>> = vec![None];
        for meta in metas.iter().take(60) {
            let from = meta.effective_from;
            days.extend([from.previous_day(), Some(from), from.next_day()]);
            if let Some(to) = meta.effective_to {
                days.extend([to.previous_day(), Some(to), to.next_day()]);
            }
        }
        let regions = std::iter::once(None).chain(Region::ALL.map(Some));
        let mut checked = 0;
        for region in regions {
            for product in std::iter::once(None).chain(Product::ALL.map(Some)) {
                for &as_of in &days {
                    for include_drafts in [false, true] {
                        let query = SearchQuery {
                            as_of,
                            region,
                            product,
                            include_drafts,
                            ..SearchQuery::new("refund")
                        };
                        let packed = allowed_versions(&scopes, &query);
                        let reference = allowed_by_meta(&metas, &query);
                        match packed {
                            Some(allowed) => assert_eq!(&allowed[..], &reference[..], "{query:?}"),
                            None => assert!(reference.iter().all(|&a| a), "{query:?}"),
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1_000, "{checked}");
    }
}
