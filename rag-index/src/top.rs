//! The top `limit` sections of a query among those in scope, found with tantivy's
//! dynamic pruning (block-max WAND) still on (issue 19).
//!
//! tantivy prunes only inside `Weight::for_each_pruning`, which `TopDocs` alone drives: a
//! `FilterCollector` (or a filter clause in a `BooleanQuery`) makes it score every
//! matching section instead, which is what made filtered searches 5× slower than plain
//! ones on 10,000 sections. Here the filter sits in the pruning callback itself: a
//! section out of scope is dropped and does not raise the threshold, so the threshold
//! is always the k-th best score *in scope*, and every section WAND skips could not have
//! entered the top k. That is the exact answer of filtering every match, with the same
//! tie-breaking (lower document first), and it is how `TopDocs` itself skips deleted
//! documents. Scores are those of tantivy's pruning scorer, as for an unfiltered search.
//!
//! This module does not decide what is in scope (`query::allowed_versions` does) and does
//! not read stored documents.

use tantivy::query::{EnableScoring, Query};
use tantivy::{DocAddress, DocId, Score, Searcher};

use crate::{schema, IndexError};

/// The best `limit` sections of `query` whose policy version ordinal `o` has
/// `allowed[o]`, best first; equal scores in document order.
pub(crate) fn top_in_scope(
    searcher: &Searcher,
    query: &dyn Query,
    limit: usize,
    allowed: &[bool],
) -> Result<Vec<(Score, DocAddress)>, IndexError> {
    let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
    let mut top = Vec::with_capacity(limit);
    for (segment_ord, segment) in (0u32..).zip(searcher.segment_readers()) {
        let versions = segment.fast_fields().u64(schema::VERSION_ORD)?;
        let alive = segment.alive_bitset();
        let mut best = TopK::new(limit);
        weight.for_each_pruning(Score::MIN, segment, &mut |doc, score| {
            let in_scope = alive.is_none_or(|bits| bits.is_alive(doc))
                && versions
                    .first(doc)
                    .and_then(|ordinal| usize::try_from(ordinal).ok())
                    .and_then(|ordinal| allowed.get(ordinal).copied())
                    .unwrap_or(false);
            if in_scope {
                best.push(score, doc);
            }
            best.threshold()
        })?;
        top.extend(
            best.0
                .into_iter()
                .map(|(score, doc)| (score, DocAddress::new(segment_ord, doc))),
        );
    }
    // Across segments, as `TopDocs` merges them: score descending, then address.
    top.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    top.truncate(limit);
    Ok(top)
}

/// The best `k` (score, document) of one segment, kept sorted best first. `k` is at most
/// `MAX_LIMIT` (100) and usually 5, so a sorted vector beats a heap.
struct TopK(Vec<(Score, DocId)>, usize);

impl TopK {
    fn new(k: usize) -> TopK {
        TopK(Vec::with_capacity(k), k)
    }

    /// Documents arrive in ascending order, so an equal score goes after those already
    /// kept (lower document wins a tie) and, once full, only a strictly better score
    /// enters: the rule of `TopDocs` that pruning relies on.
    fn push(&mut self, score: Score, doc: DocId) {
        let TopK(kept, k) = self;
        if kept.len() == *k {
            match kept.last() {
                Some(&(worst, _)) if score > worst => {
                    kept.pop();
                }
                _ => return,
            }
        }
        let at = kept.partition_point(|&(kept_score, _)| kept_score >= score);
        kept.insert(at, (score, doc));
    }

    /// The score to beat: the k-th best once k are kept.
    fn threshold(&self) -> Score {
        match self.0.last() {
            Some(&(worst, _)) if self.0.len() == self.1 => worst,
            _ => Score::MIN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_best_and_breaks_ties_by_document_order() {
        let mut top = TopK::new(3);
        for (doc, score) in [(0, 1.0), (1, 3.0), (2, 2.0), (3, 3.0), (4, 2.0), (5, 0.5)] {
            top.push(score, doc);
        }
        assert_eq!(top.0, [(3.0, 1), (3.0, 3), (2.0, 2)]);
        assert_eq!(top.threshold(), 2.0);
    }

    #[test]
    fn an_unfilled_top_k_sets_no_threshold_and_zero_keeps_nothing() {
        let mut top = TopK::new(2);
        top.push(1.0, 0);
        assert_eq!(top.threshold(), Score::MIN);
        let mut none = TopK::new(0);
        none.push(1.0, 0);
        assert!(none.0.is_empty());
    }
}
