//! What a caller asks of the index: one search, and the most it may return.

use policy_engine::{Product, Region};
use time::Date;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_query_has_no_filters_and_five_results() {
        let q = SearchQuery::new("refund");
        assert_eq!(q.limit, 5);
        assert!(q.as_of.is_none() && q.region.is_none() && q.product.is_none());
        assert!(!q.include_drafts);
    }
}
