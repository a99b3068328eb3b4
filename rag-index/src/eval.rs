//! Search-quality evaluation over labelled queries (`evals/policy_search/queries.jsonl`).
//!
//! Each line names a query, the date (and optionally region, product) it is asked on, and
//! the one passage (`doc@version#section`) a good search ranks first. [`run`] reports
//! recall@1, recall@3 and mean reciprocal rank over the top [`EVAL_DEPTH`] results, and
//! every query that did not rank its passage first. This module reads strings, not
//! files, and judges ranking only: it does not check passage text or scores.

use policy_engine::{Product, Region};
use serde::{Deserialize, Serialize};
use time::Date;

use crate::error::IndexError;
use crate::request::SearchQuery;
use crate::PolicyIndex;

/// How many results a query looks at; a passage below this rank counts as not found.
pub const EVAL_DEPTH: usize = 10;

time::serde::format_description!(ymd, Date, "[year]-[month]-[day]");

/// One labelled query: a line of `queries.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelledQuery {
    pub query: String,
    #[serde(default, with = "ymd::option", skip_serializing_if = "Option::is_none")]
    pub as_of: Option<Date>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<Product>,
    /// What-if queries over drafts; absent means `false`, as in live use.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_drafts: bool,
    /// `RP-001@2#3`, or `RP-003@1` when any section of that version will do.
    pub expected: String,
}

impl LabelledQuery {
    fn search_query(&self) -> SearchQuery {
        SearchQuery {
            text: self.query.clone(),
            as_of: self.as_of,
            region: self.region,
            product: self.product,
            include_drafts: self.include_drafts,
            limit: EVAL_DEPTH,
        }
    }

    fn is_hit(&self, citation: &str) -> bool {
        if self.expected.contains('#') {
            citation == self.expected
        } else {
            citation
                .strip_prefix(self.expected.as_str())
                .is_some_and(|rest| rest.starts_with('#'))
        }
    }
}

/// A query whose expected passage was not ranked first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalMiss {
    pub query: String,
    pub expected: String,
    /// 1-based rank of the expected passage, `None` when not in the top [`EVAL_DEPTH`].
    pub rank: Option<usize>,
    /// Citations returned, best first (at most three, for reading).
    pub got: Vec<String>,
    /// Set when the search itself failed (an index error, never query syntax).
    pub error: Option<String>,
}

/// Figures over a query set. Ratios are in `0.0..=1.0`; all zero for an empty set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    pub total: usize,
    pub recall_at_1: f64,
    pub recall_at_3: f64,
    pub mrr: f64,
    pub misses: Vec<EvalMiss>,
}

/// Parses JSON Lines; blank lines and lines starting with `//` are skipped.
pub fn load_queries(jsonl: &str) -> Result<Vec<LabelledQuery>, IndexError> {
    let mut queries = Vec::new();
    for (index, line) in jsonl.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let query: LabelledQuery =
            serde_json::from_str(line).map_err(|e| IndexError::EvalQuery {
                line: index + 1,
                message: e.to_string(),
            })?;
        if query.query.trim().is_empty() || query.expected.trim().is_empty() {
            return Err(IndexError::EvalQuery {
                line: index + 1,
                message: "query and expected must not be empty".into(),
            });
        }
        queries.push(query);
    }
    Ok(queries)
}

/// Runs every query against `index` and scores the rankings.
pub fn run(index: &PolicyIndex, queries: &[LabelledQuery]) -> EvalReport {
    let mut hits_at_1 = 0usize;
    let mut hits_at_3 = 0usize;
    let mut reciprocal_ranks = 0.0f64;
    let mut misses = Vec::new();
    for labelled in queries {
        let (citations, error) = match index.search(&labelled.search_query()) {
            Ok(passages) => (
                passages.iter().map(|p| p.citation()).collect::<Vec<_>>(),
                None,
            ),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let rank = citations
            .iter()
            .position(|c| labelled.is_hit(c))
            .map(|i| i + 1);
        match rank {
            Some(1) => hits_at_1 += 1,
            _ => misses.push(EvalMiss {
                query: labelled.query.clone(),
                expected: labelled.expected.clone(),
                rank,
                got: citations.iter().take(3).cloned().collect(),
                error,
            }),
        }
        if let Some(rank) = rank {
            if rank <= 3 {
                hits_at_3 += 1;
            }
            reciprocal_ranks += 1.0 / rank as f64;
        }
    }
    let ratio = |n: f64| {
        if queries.is_empty() {
            0.0
        } else {
            n / queries.len() as f64
        }
    };
    EvalReport {
        total: queries.len(),
        recall_at_1: ratio(hits_at_1 as f64),
        recall_at_3: ratio(hits_at_3 as f64),
        mrr: ratio(reciprocal_ranks),
        misses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_lines_with_optional_filters() {
        let queries = load_queries(
            "{\"query\":\"hold\",\"as_of\":\"2026-08-01\",\"region\":\"US\",\"expected\":\"RP-003@1#1\"}\n\
             \n// a comment\n\
             {\"query\":\"年费\",\"as_of\":\"2025-03-01\",\"product\":\"annual_plan\",\"expected\":\"RP-002@1\"}\n",
        )
        .unwrap();
        assert_eq!(queries.len(), 2);
        assert_eq!(queries[0].region, Some(Region::US));
        assert_eq!(queries[0].as_of, Some(time::macros::date!(2026 - 08 - 01)));
        assert_eq!(queries[1].product, Some(Product::AnnualPlan));
        assert!(!queries[1].include_drafts);
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        let err = load_queries("{\"query\":\"a\",\"expected\":\"X@1#1\"}\n{\"query\":\"b\"}")
            .unwrap_err();
        assert!(
            matches!(err, IndexError::EvalQuery { line: 2, .. }),
            "{err}"
        );
        let err = load_queries("{\"query\":\"a\",\"as_of\":\"01/02/2026\",\"expected\":\"X@1#1\"}")
            .unwrap_err();
        assert!(
            matches!(err, IndexError::EvalQuery { line: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn an_expected_version_without_section_matches_any_section() {
        let q = load_queries("{\"query\":\"a\",\"expected\":\"RP-003@1\"}")
            .unwrap()
            .remove(0);
        assert!(q.is_hit("RP-003@1#1"));
        assert!(!q.is_hit("RP-003@10#1"));
        let q = load_queries("{\"query\":\"a\",\"expected\":\"RP-001@2#3\"}")
            .unwrap()
            .remove(0);
        assert!(q.is_hit("RP-001@2#3"));
        assert!(!q.is_hit("RP-001@2#4"));
    }
}
