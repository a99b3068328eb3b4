//! The Stripe v1 wire conventions shared by every endpoint: the error envelope,
//! `Request-Id`, bearer auth, form-encoded params (Rack-style nesting) and list
//! envelopes. Business rules live elsewhere; this module only speaks the format.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request};
use axum::http::header::{HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::distributions::Alphanumeric;
use rand::Rng;
use serde::Serialize;

pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");
pub const REQUEST_ID: HeaderName = HeaderName::from_static("request-id");
pub const STRIPE_SHOULD_RETRY: HeaderName = HeaderName::from_static("stripe-should-retry");

/// A random Stripe-style id: `prefix_` followed by 24 alphanumerics.
pub fn new_id(prefix: &str) -> String {
    let suffix: String = rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(24)
        .map(char::from)
        .collect();
    format!("{prefix}_{suffix}")
}

/// A JSON response with the exact body bytes given (replays depend on this).
pub fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Serialises a value for a response body. Serialising our own plain structs cannot
/// fail; should it ever, the client gets an `api_error` body instead of a panic.
pub fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| {
        tracing::error!(%error, "response serialisation failed");
        r#"{"error":{"type":"api_error","message":"An unknown error occurred"}}"#.to_owned()
    })
}

/// A Stripe error: `{"error":{"type","code"?,"message","param"?}}`, absent fields omitted.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub error_type: &'static str,
    pub code: Option<&'static str>,
    pub message: String,
    pub param: Option<String>,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    #[serde(rename = "type")]
    error_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'a str>,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    param: Option<&'a str>,
}

impl ApiError {
    pub fn new(status: StatusCode, error_type: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            error_type,
            code: None,
            message: message.into(),
            param: None,
        }
    }

    /// 400 `invalid_request_error`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// 500 `api_error` with Stripe's generic message.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "An unknown error occurred",
        )
    }

    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// 404 `resource_missing`: `No such charge: 'ch_x'`.
    pub fn missing(kind: &str, id: &str, param: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("No such {kind}: '{id}'"),
        )
        .with_code("resource_missing")
        .with_param(param)
    }

    pub fn body(&self) -> String {
        to_json(&ErrorEnvelope {
            error: ErrorBody {
                error_type: self.error_type,
                code: self.code,
                message: &self.message,
                param: self.param.as_deref(),
            },
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status, self.body())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        tracing::error!(%error, "database error");
        Self::internal()
    }
}

/// The id of the current request, set by [`request_id_layer`].
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Gives every request a `req_…` id (in the extensions, for handlers and events),
/// and sets `Request-Id` on every response, echoing `Idempotency-Key` when sent.
pub async fn request_id_layer(mut request: Request, next: Next) -> Response {
    let request_id = new_id("req");
    let idempotency_key = request.headers().get(IDEMPOTENCY_KEY).cloned();
    request
        .extensions_mut()
        .insert(RequestId(request_id.clone()));
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    if let Some(key) = idempotency_key {
        response.headers_mut().insert(IDEMPOTENCY_KEY, key);
    }
    response
}

impl<S: Send + Sync> FromRequestParts<S> for RequestId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // The layer always runs first; a fresh id keeps the handler total regardless.
        Ok(parts
            .extensions
            .get::<RequestId>()
            .cloned()
            .unwrap_or_else(|| RequestId(new_id("req"))))
    }
}

/// A test-mode secret key from `Authorization: Bearer sk_test_…` (or HTTP Basic with
/// the key as the user name). It scopes idempotency keys.
#[derive(Debug, Clone)]
pub struct ApiKey(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ApiKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let unauthorized = |message: String| {
            ApiError::new(StatusCode::UNAUTHORIZED, "invalid_request_error", message)
        };
        let Some(header) = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Err(unauthorized(
                "You did not provide an API key. You need to provide your API key in the \
                 Authorization header, using Bearer auth (e.g. 'Authorization: Bearer \
                 YOUR_SECRET_KEY')."
                    .to_owned(),
            ));
        };
        let key = if let Some(token) = header.strip_prefix("Bearer ") {
            token.trim().to_owned()
        } else if let Some(encoded) = header.strip_prefix("Basic ") {
            decode_base64(encoded.trim())
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .map(|user_pass| user_pass.split(':').next().unwrap_or_default().to_owned())
                .unwrap_or_default()
        } else {
            String::new()
        };
        if key.len() > "sk_test_".len() && key.starts_with("sk_test_") {
            Ok(ApiKey(key))
        } else {
            Err(unauthorized(format!(
                "Invalid API Key provided: {}",
                mask_key(&key)
            )))
        }
    }
}

fn mask_key(key: &str) -> String {
    let tail: String = key
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{}****{tail}", key.chars().take(8).collect::<String>())
}

/// Standard base64 (with or without padding); `None` on any invalid character.
fn decode_base64(input: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in input.bytes().filter(|c| *c != b'=') {
        buffer = (buffer << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((buffer >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// Form params in request order, query string first, then the body (Stripe merges
/// both). Rack-style names (`metadata[k]`, `expand[]`) are kept as written.
#[derive(Debug, Clone, Default)]
pub struct FormParams {
    pairs: Vec<(String, String)>,
}

impl FormParams {
    /// Parses a POST: requires `application/x-www-form-urlencoded`.
    pub fn from_post(
        headers: &HeaderMap,
        query: Option<&str>,
        body: &[u8],
    ) -> Result<Self, ApiError> {
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if content_type.is_empty() {
            return Err(ApiError::invalid_request(
                "Request's `Content-Type` header was empty; expected application/x-www-form-urlencoded.",
            ));
        }
        if !content_type
            .to_ascii_lowercase()
            .starts_with("application/x-www-form-urlencoded")
        {
            return Err(ApiError::invalid_request(format!(
                "Request's `Content-Type` header `{content_type}` didn't match application/x-www-form-urlencoded."
            )));
        }
        let mut params = Self::from_query(query)?;
        params.pairs.extend(parse_pairs(body)?);
        Ok(params)
    }

    pub fn from_query(query: Option<&str>) -> Result<Self, ApiError> {
        Ok(Self {
            pairs: parse_pairs(query.unwrap_or("").as_bytes())?,
        })
    }

    /// The last value given for `name` (Rack semantics for repeated scalars).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// Refuses any param whose name (or Rack prefix) is not in `allowed`:
    /// 400 `parameter_unknown`. `"metadata"` allows `metadata[*]`.
    pub fn reject_unknown(&self, allowed: &[&str]) -> Result<(), ApiError> {
        for (name, _) in &self.pairs {
            let base = name.split('[').next().unwrap_or(name);
            if !allowed.contains(&base) {
                return Err(ApiError::invalid_request(format!(
                    "Received unknown parameter: {name}"
                ))
                .with_code("parameter_unknown")
                .with_param(name.clone()));
            }
        }
        Ok(())
    }

    /// `metadata[k]=v` pairs, checked against Stripe's limits: up to 50 keys, keys up
    /// to 40 characters without brackets, values up to 500 characters.
    pub fn metadata(&self) -> Result<BTreeMap<String, String>, ApiError> {
        let mut metadata = BTreeMap::new();
        for (name, value) in &self.pairs {
            let Some(rest) = name.strip_prefix("metadata") else {
                continue;
            };
            let key = rest
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .filter(|k| !k.is_empty() && !k.contains('[') && !k.contains(']'))
                .ok_or_else(|| {
                    ApiError::invalid_request(format!("Invalid metadata parameter: {name}"))
                        .with_param(name.clone())
                })?;
            if key.chars().count() > 40 {
                return Err(ApiError::invalid_request(format!(
                    "Metadata keys can have up to 40 characters; '{key}' is too long."
                ))
                .with_param(name.clone()));
            }
            if value.chars().count() > 500 {
                return Err(ApiError::invalid_request(format!(
                    "Metadata values can have up to 500 characters, but you passed in a value that is {} characters long.",
                    value.chars().count()
                ))
                .with_param(name.clone()));
            }
            if value.is_empty() {
                metadata.remove(key);
            } else {
                metadata.insert(key.to_owned(), value.clone());
            }
        }
        if metadata.len() > 50 {
            return Err(
                ApiError::invalid_request("Metadata can have up to 50 keys.")
                    .with_param("metadata"),
            );
        }
        Ok(metadata)
    }

    /// The params as an ordered multimap (sorted by name, values in request order),
    /// as JSON: what the idempotency layer compares. Nothing is excluded.
    pub fn canonical(&self) -> String {
        let mut pairs = self.pairs.clone();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        to_json(&pairs)
    }
}

fn parse_pairs(bytes: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes)
        .map_err(|_| ApiError::invalid_request("Invalid form-encoded request body."))
}

/// Parses a positive integer param; `None` when absent.
pub fn positive_integer(params: &FormParams, name: &str) -> Result<Option<i64>, ApiError> {
    let Some(raw) = params.get(name) else {
        return Ok(None);
    };
    let value: i64 = raw.trim().parse().map_err(|_| {
        ApiError::invalid_request(format!("Invalid integer: {raw}")).with_param(name)
    })?;
    if value <= 0 {
        return Err(
            ApiError::invalid_request(format!("Invalid positive integer: {raw}")).with_param(name),
        );
    }
    Ok(Some(value))
}

/// `{"object":"list","url","has_more","data"}`.
#[derive(Serialize)]
pub struct ListEnvelope<T: Serialize> {
    pub object: &'static str,
    pub url: &'static str,
    pub has_more: bool,
    pub data: Vec<T>,
}

/// Cursor pagination over items already sorted newest first.
pub struct Page {
    pub limit: usize,
    pub starting_after: Option<String>,
    pub ending_before: Option<String>,
}

impl Page {
    /// Reads `limit` (1–100, default 10), `starting_after` and `ending_before`.
    pub fn from_params(params: &FormParams) -> Result<Self, ApiError> {
        let limit = match params.get("limit") {
            None => 10,
            Some(raw) => match raw.trim().parse::<usize>() {
                Ok(n) if (1..=100).contains(&n) => n,
                _ => {
                    return Err(ApiError::invalid_request(format!(
                        "Invalid limit: must be an integer between 1 and 100; got {raw}"
                    ))
                    .with_param("limit"))
                }
            },
        };
        Ok(Self {
            limit,
            starting_after: params.get("starting_after").map(str::to_owned),
            ending_before: params.get("ending_before").map(str::to_owned),
        })
    }

    /// Applies the cursor to `items` (newest first); returns the page and `has_more`.
    /// An unknown cursor id is a 404 `resource_missing` on that param.
    pub fn apply<T>(
        &self,
        items: Vec<T>,
        id_of: impl Fn(&T) -> &str,
        kind: &str,
    ) -> Result<(Vec<T>, bool), ApiError> {
        let position = |cursor: &str, param: &str| {
            items
                .iter()
                .position(|item| id_of(item) == cursor)
                .ok_or_else(|| ApiError::missing(kind, cursor, param))
        };
        if let Some(cursor) = &self.starting_after {
            let start = position(cursor, "starting_after")? + 1;
            let has_more = items.len() > start + self.limit;
            let page = items.into_iter().skip(start).take(self.limit).collect();
            Ok((page, has_more))
        } else if let Some(cursor) = &self.ending_before {
            let end = position(cursor, "ending_before")?;
            let start = end.saturating_sub(self.limit);
            let has_more = start > 0;
            let page = items.into_iter().skip(start).take(end - start).collect();
            Ok((page, has_more))
        } else {
            let has_more = items.len() > self.limit;
            let page = items.into_iter().take(self.limit).collect();
            Ok((page, has_more))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_omits_absent_fields() {
        let body = ApiError::invalid_request("bad").body();
        assert_eq!(
            body,
            r#"{"error":{"type":"invalid_request_error","message":"bad"}}"#
        );
        let body = ApiError::missing("charge", "ch_x", "charge").body();
        assert_eq!(
            body,
            r#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such charge: 'ch_x'","param":"charge"}}"#
        );
    }

    #[test]
    fn canonical_params_ignore_name_order_but_keep_value_order() {
        let a = FormParams::from_query(Some("charge=ch_1&metadata%5Bb%5D=2&metadata%5Ba%5D=1"))
            .expect("valid query");
        let b = FormParams::from_query(Some("metadata%5Ba%5D=1&charge=ch_1&metadata%5Bb%5D=2"))
            .expect("valid query");
        assert_eq!(a.canonical(), b.canonical());
        let c = FormParams::from_query(Some("charge=ch_1&metadata%5Ba%5D=2")).expect("valid");
        assert_ne!(a.canonical(), c.canonical());
    }

    #[test]
    fn basic_auth_decodes() {
        assert_eq!(
            decode_base64("c2tfdGVzdF9hYmM6").as_deref(),
            Some(&b"sk_test_abc:"[..])
        );
    }

    #[test]
    fn pages_follow_cursors() {
        let items: Vec<String> = (0..5).map(|i| format!("x{i}")).collect();
        let page = Page {
            limit: 2,
            starting_after: Some("x1".into()),
            ending_before: None,
        };
        let (data, more) = page
            .apply(items.clone(), |s| s, "thing")
            .expect("known cursor");
        assert_eq!(data, vec!["x2", "x3"]);
        assert!(more);
        let page = Page {
            limit: 2,
            starting_after: None,
            ending_before: Some("x1".into()),
        };
        let (data, more) = page.apply(items, |s| s, "thing").expect("known cursor");
        assert_eq!(data, vec!["x0"]);
        assert!(!more);
    }
}

/// `created=N` or `created[gt|gte|lt|lte]=N`.
#[derive(Default)]
pub(crate) struct CreatedRange {
    bounds: Vec<(String, i64)>,
}

impl CreatedRange {
    pub fn from_params(params: &FormParams) -> Result<Self, ApiError> {
        let mut bounds = Vec::new();
        for (name, value) in params.pairs() {
            let op = match name.as_str() {
                "created" => "eq",
                "created[gt]" => "gt",
                "created[gte]" => "gte",
                "created[lt]" => "lt",
                "created[lte]" => "lte",
                other if other.starts_with("created") => {
                    return Err(ApiError::invalid_request(format!(
                        "Received unknown parameter: {other}"
                    ))
                    .with_code("parameter_unknown")
                    .with_param(other))
                }
                _ => continue,
            };
            let bound: i64 = value.trim().parse().map_err(|_| {
                ApiError::invalid_request(format!("Invalid integer: {value}"))
                    .with_param(name.clone())
            })?;
            bounds.push((op.to_owned(), bound));
        }
        Ok(Self { bounds })
    }

    pub fn contains(&self, created: i64) -> bool {
        self.bounds.iter().all(|(op, bound)| match op.as_str() {
            "eq" => created == *bound,
            "gt" => created > *bound,
            "gte" => created >= *bound,
            "lt" => created < *bound,
            _ => created <= *bound,
        })
    }
}

/// The 409 Stripe answers while another request with the same idempotency key is still
/// being executed (retryable: `Stripe-Should-Retry: true`).
pub(crate) fn in_flight_conflict(key: &str) -> axum::response::Response {
    let error = ApiError::new(
        axum::http::StatusCode::CONFLICT,
        "invalid_request_error",
        format!(
            "There is currently another in-progress request using this Idempotent Key (that \
             probably means you submitted twice, and the other request is still going \
             through): {key}. Please try again later."
        ),
    )
    .with_code("idempotency_key_in_use");
    let mut response = axum::response::IntoResponse::into_response(error);
    response.headers_mut().insert(
        STRIPE_SHOULD_RETRY,
        axum::http::HeaderValue::from_static("true"),
    );
    response
}
