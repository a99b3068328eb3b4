//! The top `limit` sections of a query among those in scope, found with tantivy's
//! dynamic pruning (block-max WAND) still on, and ranked exactly as scoring every
//! match ranks them.
//!
//! tantivy prunes only inside `Weight::for_each_pruning`, which `TopDocs` alone drives,
//! and only over a union whose clauses are all terms: a `FilterCollector` (or a filter
//! clause in a `BooleanQuery`) makes it score every matching section, and so does the
//! parser's union of one union per word (`query::Prunable` lays that out flat). Here the
//! filter sits in the pruning callback itself: a section out of scope is dropped and
//! does not raise the threshold, so the threshold follows the k-th best score *in
//! scope* (how `TopDocs` itself skips deleted documents).
//!
//! Pruning sums a section's clause scores in another order than the scorer that visits
//! every match, so a score may differ in its last bits, and two sections with equal
//! scores could swap or trade the last place. So pruning only finds the candidates —
//! every in-scope section within [`margin`] of the k-th best, a bound larger than twice
//! any rounding difference, so no section of the exact top k is missed — and the
//! candidates are then scored again, clause by clause in the parser's nesting, as the
//! search before pruning scored them: the same passages, the same order, the same
//! scores, bit for bit.
//!
//! This module does not decide what is in scope (`query::allowed_versions` does) and does
//! not read stored documents.

use tantivy::query::{EnableScoring, Query, Scorer};
use tantivy::{DocAddress, DocId, DocSet, Score, Searcher};

use crate::error::IndexError;
use crate::query::Prunable;
use crate::schema;

/// The best `limit` sections of `query` whose policy version ordinal `o` has
/// `allowed[o]`, best first, equal scores in document order, with the scores the
/// parser's query gives them.
pub(crate) fn top_in_scope(
    searcher: &Searcher,
    query: &Prunable,
    limit: usize,
    allowed: &[bool],
) -> Result<Vec<(Score, DocAddress)>, IndexError> {
    let scoring = EnableScoring::enabled_from_searcher(searcher);
    let pruned = query.flat().weight(scoring)?;
    let leaves = query
        .leaves
        .iter()
        .map(|leaf| leaf.weight(scoring))
        .collect::<Result<Vec<_>, _>>()?;
    let summands = query.summands();
    let mut top = Vec::with_capacity(limit);
    for (segment_ord, segment) in (0u32..).zip(searcher.segment_readers()) {
        let versions = segment.fast_fields().u64(schema::VERSION_ORD)?;
        let alive = segment.alive_bitset();
        let mut candidates = Candidates::new(limit, summands);
        pruned.for_each_pruning(Score::MIN, segment, &mut |doc, score| {
            let in_scope = alive.is_none_or(|bits| bits.is_alive(doc))
                && versions
                    .first(doc)
                    .and_then(|ordinal| usize::try_from(ordinal).ok())
                    .and_then(|ordinal| allowed.get(ordinal).copied())
                    .unwrap_or(false);
            if in_scope {
                candidates.push(score, doc);
            }
            candidates.threshold()
        })?;
        // Each candidate again, in document order, from one scorer per leaf: the scores
        // the search before pruning reported (see `Prunable::score`).
        let mut scorers = leaves
            .iter()
            .map(|leaf| leaf.scorer(segment, 1.0))
            .collect::<Result<Vec<Box<dyn Scorer>>, _>>()?;
        let mut best = TopK::new(limit);
        for doc in candidates.into_docs() {
            let score = query.score(&mut |i| {
                let scorer = &mut scorers[i];
                if scorer.doc() < doc {
                    scorer.seek(doc);
                }
                (scorer.doc() == doc).then(|| scorer.score())
            });
            let Some(score) = score else {
                return Err(IndexError::Corrupt(format!(
                    "section {doc} matched the flat query but none of its clauses"
                )));
            };
            best.push(score, doc);
        }
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

/// How far below the k-th best pruning score `kth` a section may score and still be in
/// the exact top k. Both scores add the same `summands` non-negative clause scores in
/// different orders; each sum is within (n−1)·u·sum of the true sum (u = 2⁻²⁴, f32's
/// unit roundoff), so the two differ by less than 2(n−1)·2⁻²⁴ of the score. A section
/// more than twice that below the k-th is below k others in either order; this margin
/// is n·2⁻²⁰ of the score, eight times that bound. (Clause scores are BM25 times a
/// boost, and the query grammar only has positive boosts.)
fn margin(kth: Score, summands: usize) -> Score {
    kth * summands.max(1) as Score * (-20f32).exp2()
}

/// The pruning pass of one segment: the running top k by pruning score, which sets the
/// threshold, and every section that came within [`margin`] of it.
struct Candidates {
    top: TopK,
    summands: usize,
    near: Vec<(Score, DocId)>,
    /// `near`'s length at which what fell below the floor is dropped; doubles, so a
    /// long run of equal scores costs linear time, not quadratic.
    compact_at: usize,
}

impl Candidates {
    fn new(k: usize, summands: usize) -> Candidates {
        Candidates {
            top: TopK::new(k),
            summands,
            near: Vec::with_capacity(2 * k + 8),
            compact_at: 4 * k + 64,
        }
    }

    fn push(&mut self, score: Score, doc: DocId) {
        self.top.push(score, doc);
        let floor = self.threshold();
        if score >= floor {
            self.near.push((score, doc));
        }
        if self.near.len() >= self.compact_at {
            self.near.retain(|&(kept, _)| kept >= floor);
            self.compact_at = self.compact_at.max(2 * self.near.len());
        }
    }

    /// What pruning may skip: scores at or below the k-th best less the margin, none of
    /// which can be in the exact top k (at a margin of 0, when every score is 0, an
    /// equal score is a tie lost to the k-th, which came first). Nothing is skipped
    /// until k sections are kept.
    fn threshold(&self) -> Score {
        match self.top.kth() {
            Some(kth) => kth - margin(kth, self.summands),
            None => Score::MIN,
        }
    }

    /// The candidates, in ascending document order (the order they arrived in).
    fn into_docs(self) -> impl Iterator<Item = DocId> {
        let floor = self.threshold();
        self.near
            .into_iter()
            .filter(move |&(score, _)| score >= floor)
            .map(|(_, doc)| doc)
    }
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
    /// enters: the rule of `TopDocs`.
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

    /// The k-th best score, once k are kept.
    fn kth(&self) -> Option<Score> {
        match self.0.last() {
            Some(&(worst, _)) if self.0.len() == self.1 => Some(worst),
            _ => None,
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
        assert_eq!(top.kth(), Some(2.0));
    }

    #[test]
    fn an_unfilled_top_k_has_no_kth_and_zero_keeps_nothing() {
        let mut top = TopK::new(2);
        top.push(1.0, 0);
        assert_eq!(top.kth(), None);
        let mut none = TopK::new(0);
        none.push(1.0, 0);
        assert!(none.0.is_empty());
    }

    #[test]
    fn candidates_keep_every_section_within_the_margin_of_the_kth() {
        let mut candidates = Candidates::new(2, 3);
        let tie = 2.0 - margin(2.0, 3) / 2.0;
        for (doc, score) in [(0, 1.0), (1, 3.0), (2, 2.0), (3, tie), (4, 1.5), (5, 0.5)] {
            candidates.push(score, doc);
        }
        // 0 came before the top two were known; 4 and 5 are clearly below the second.
        assert_eq!(candidates.into_docs().collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn the_margin_exceeds_twice_the_rounding_of_any_summation_order() {
        for summands in [1, 2, 3, 12, 40, 300] {
            let bound = 2.0 * (summands - 1) as f64 * 2f64.powi(-24);
            let margin = f64::from(margin(1.0, summands));
            assert!(margin > 2.0 * bound, "{summands}: {margin} vs {bound}");
        }
    }
}
