//! Links that keep a view's filters: the queue's and the case list's next page, the
//! audit's CSV. Shared by the pages and the JSON API; knows nothing of either.

/// `key=value&…` of the pairs whose value is given (not empty), form-encoded: the
/// links that keep a view's filters (the queue's and the API's next page, the audit's CSV).
pub fn query_string(pairs: &[(&str, Option<&str>)]) -> String {
    let mut url = reqwest::Url::parse("http://query.invalid/").expect("a fixed, valid URL");
    {
        let mut query = url.query_pairs_mut();
        for (key, value) in pairs {
            if let Some(value) = value.filter(|v| !v.trim().is_empty()) {
                query.append_pair(key, value);
            }
        }
    }
    url.query().unwrap_or("").to_string()
}
