//! The payments adapter: the only way the app reaches the payment provider, over HTTP,
//! in the provider's wire format (a Stripe-compatible subset).
//!
//! It reads charges and refunds and creates refunds with an `Idempotency-Key` the caller
//! derived and stored beforehand. Retries follow the provider's rules (network errors,
//! 409, 5xx unless `Stripe-Should-Retry: false`, 429 only for `lock_timeout`) with a
//! bounded backoff, always with the same key and the same parameters. When a create may
//! have reached the provider but no answer came back, the result is `Unknown`: the caller
//! must reconcile, never guess (docs/spec/invariants.md #5).

pub mod signature;

use std::collections::BTreeMap;
use std::time::Duration;

use policy_engine::{Currency, Money};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct ProviderCharge {
    pub id: String,
    pub amount: i64,
    #[serde(default)]
    pub amount_captured: i64,
    #[serde(default)]
    pub amount_refunded: i64,
    pub captured: bool,
    pub currency: String,
    #[serde(default)]
    pub customer: Option<String>,
    pub status: String,
    #[serde(default)]
    pub disputed: bool,
    pub created: i64,
    #[serde(default)]
    pub payment_method: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

impl ProviderCharge {
    pub fn currency(&self) -> Result<Currency, ProviderError> {
        self.currency
            .parse()
            .map_err(|_| ProviderError::Malformed(format!("currency '{}'", self.currency)))
    }

    pub fn order_id(&self) -> Option<&str> {
        self.metadata.get("order_id").map(String::as_str)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ProviderRefund {
    pub id: String,
    pub amount: i64,
    pub charge: String,
    pub currency: String,
    pub status: String,
    pub created: i64,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub failure_reason: Option<String>,
}

impl ProviderRefund {
    /// Our refund intent id, as we sent it in `metadata[refund_intent_id]`.
    pub fn intent_id(&self) -> Option<&str> {
        self.metadata.get("refund_intent_id").map(String::as_str)
    }
}

#[derive(Debug, Deserialize)]
struct List<T> {
    data: Vec<T>,
    has_more: bool,
}

#[derive(Debug, Deserialize)]
struct ErrorEnvelope {
    error: ProviderErrorBody,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ProviderErrorBody {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub param: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The request may or may not have taken effect (timeout, lost response, replayed
    /// 5xx, in-flight conflict that never cleared). Reconcile; never resubmit blindly.
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// The provider answered a retry with a *replay* of a stored 5xx
    /// (`Idempotent-Replayed: true`): execution began under this key and its result is
    /// an error, final for the key. Still unknown whether money moved — only a look at
    /// the charge's refunds tells (payments.md §4.1) — but resending cannot change it.
    #[error("provider replays a stored {status} for this key: {message}")]
    StoredServerError { status: u16, message: String },
    /// The provider refused the request for a business reason (stored under the key).
    #[error("rejected ({status}): {}", .body.message)]
    Rejected {
        status: u16,
        body: ProviderErrorBody,
    },
    /// Same key, other parameters: our bug, never a "refund failed".
    #[error("idempotency key reused with other parameters: {0}")]
    IdempotencyMismatch(String),
    #[error("not found: {0}")]
    NotFound(String),
    /// A read failed (network, 5xx); safe to try again later.
    #[error("provider unavailable: {0}")]
    Unavailable(String),
    #[error("malformed provider response: {0}")]
    Malformed(String),
}

/// A refund to create. Every field is part of what the key was first used with.
#[derive(Debug, Clone)]
pub struct RefundRequest {
    pub charge_id: String,
    pub amount: Money,
    pub idempotency_key: String,
    pub metadata: BTreeMap<String, String>,
}

#[derive(Clone)]
pub struct PaymentsClient {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    max_retries: u32,
    backoff: Duration,
}

impl PaymentsClient {
    pub fn new(
        base_url: &str,
        api_key: &str,
        timeout: Duration,
        backoff: Duration,
    ) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()?;
        Ok(PaymentsClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.to_string(),
            max_retries: 2,
            backoff,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub async fn get_charge(&self, charge_id: &str) -> Result<ProviderCharge, ProviderError> {
        self.get_json(&format!("/v1/charges/{}", urlencode(charge_id)), &[])
            .await
    }

    /// Every charge of a provider customer, following pagination.
    pub async fn list_charges(&self, customer: &str) -> Result<Vec<ProviderCharge>, ProviderError> {
        self.list_all("/v1/charges", "customer", customer, |c: &ProviderCharge| {
            c.id.clone()
        })
        .await
    }

    /// Every refund on a charge, following pagination.
    pub async fn list_refunds(
        &self,
        charge_id: &str,
    ) -> Result<Vec<ProviderRefund>, ProviderError> {
        self.list_all("/v1/refunds", "charge", charge_id, |r: &ProviderRefund| {
            r.id.clone()
        })
        .await
    }

    pub async fn get_refund(&self, refund_id: &str) -> Result<ProviderRefund, ProviderError> {
        self.get_json(&format!("/v1/refunds/{}", urlencode(refund_id)), &[])
            .await
    }

    async fn list_all<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        filter: &str,
        value: &str,
        id_of: impl Fn(&T) -> String,
    ) -> Result<Vec<T>, ProviderError> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut query = vec![
                (filter.to_string(), value.to_string()),
                ("limit".into(), "100".into()),
            ];
            if let Some(a) = &after {
                query.push(("starting_after".into(), a.clone()));
            }
            let page: List<T> = self.get_json(path, &query).await?;
            let more = page.has_more;
            after = page.data.last().map(&id_of);
            all.extend(page.data);
            if !more || after.is_none() {
                return Ok(all);
            }
        }
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        query: &[(String, String)],
    ) -> Result<T, ProviderError> {
        let mut attempt = 0;
        loop {
            let result = self
                .http
                .get(format!("{}{path}", self.base_url))
                .bearer_auth(&self.api_key)
                .query(query)
                .send()
                .await;
            match result {
                Ok(resp) if resp.status().is_success() => {
                    return resp
                        .json::<T>()
                        .await
                        .map_err(|e| ProviderError::Malformed(e.to_string()));
                }
                Ok(resp) if resp.status() == 404 => {
                    return Err(ProviderError::NotFound(path.to_string()));
                }
                Ok(resp) if resp.status().is_server_error() || resp.status() == 429 => {
                    if attempt >= self.max_retries {
                        return Err(ProviderError::Unavailable(format!(
                            "{} on GET {path}",
                            resp.status()
                        )));
                    }
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let body = error_body(resp).await;
                    return Err(ProviderError::Rejected { status, body });
                }
                Err(e) => {
                    if attempt >= self.max_retries {
                        return Err(ProviderError::Unavailable(e.to_string()));
                    }
                }
            }
            attempt += 1;
            tokio::time::sleep(self.delay(attempt)).await;
        }
    }

    /// Creates a refund. Retries reuse the same key and the same parameters.
    pub async fn create_refund(
        &self,
        request: &RefundRequest,
    ) -> Result<ProviderRefund, ProviderError> {
        let mut form: Vec<(String, String)> = vec![
            ("charge".into(), request.charge_id.clone()),
            ("amount".into(), request.amount.minor_units().to_string()),
            (
                "currency".into(),
                request.amount.currency().code().to_ascii_lowercase(),
            ),
        ];
        for (k, v) in &request.metadata {
            form.push((format!("metadata[{k}]"), v.clone()));
        }
        let mut attempt = 0;
        // Whether any attempt may have reached the provider's handler: from then on a
        // failure means "unknown", not "nothing happened".
        let mut maybe_executed = false;
        loop {
            let result = self
                .http
                .post(format!("{}/v1/refunds", self.base_url))
                .bearer_auth(&self.api_key)
                .header("Idempotency-Key", &request.idempotency_key)
                .form(&form)
                .send()
                .await;
            let verdict = match result {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let should_retry = header_bool(&resp, "stripe-should-retry");
                    let replayed = header_bool(&resp, "idempotent-replayed") == Some(true);
                    if resp.status().is_success() {
                        return resp.json::<ProviderRefund>().await.map_err(|e| {
                            ProviderError::Unknown(format!("unreadable success response: {e}"))
                        });
                    }
                    let body = error_body(resp).await;
                    if status >= 500 {
                        maybe_executed = true;
                        if replayed {
                            // The key holds this 5xx: every retry gets the same answer.
                            return Err(ProviderError::StoredServerError {
                                status,
                                message: body.message,
                            });
                        }
                    }
                    if status == 400 && body.kind == "idempotency_error" {
                        return Err(ProviderError::IdempotencyMismatch(body.message));
                    }
                    if status == 409 {
                        // Another request with this key is in flight: it may execute.
                        maybe_executed = true;
                    }
                    match create_retry_decision(status, body.code.as_deref(), should_retry) {
                        Retry::Yes => format!("{status} {}", body.message),
                        Retry::No if status >= 500 || status == 409 => {
                            return Err(ProviderError::Unknown(format!(
                                "{status} {}",
                                body.message
                            )))
                        }
                        Retry::No if status == 429 => {
                            // Plain rate limiting runs before the idempotency layer:
                            // nothing executed on this attempt. Not retried now
                            // (stripe-go parity); the worker tries again later with the
                            // same key.
                            let why = format!("429 {}", body.message);
                            return Err(if maybe_executed {
                                ProviderError::Unknown(why)
                            } else {
                                ProviderError::Unavailable(why)
                            });
                        }
                        Retry::No => return Err(ProviderError::Rejected { status, body }),
                    }
                }
                Err(e) => {
                    // A connect error means the request never left; anything later
                    // (timeout, reset, closed connection) may have been executed.
                    if !e.is_connect() {
                        maybe_executed = true;
                    }
                    e.to_string()
                }
            };
            if attempt >= self.max_retries {
                return Err(if maybe_executed {
                    ProviderError::Unknown(verdict)
                } else {
                    ProviderError::Unavailable(verdict)
                });
            }
            attempt += 1;
            tracing::warn!(key = %request.idempotency_key, attempt, reason = %verdict, "retrying refund create with the same key");
            tokio::time::sleep(self.delay(attempt)).await;
        }
    }

    /// stripe-go's schedule: base × (1 + n²), capped at 5 s, jittered down to 75–100 %
    /// (so concurrent clients do not retry in step), never below the base.
    fn delay(&self, attempt: u32) -> Duration {
        backoff_delay(self.backoff, attempt, rand::random::<f64>())
    }
}

/// Whether to retry a refund create that got an HTTP answer, in stripe-go's
/// `shouldRetry` order (payments.md §1.4): `Stripe-Should-Retry` decides when present,
/// then 409, 429 only for `lock_timeout`, and any 5xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    Yes,
    No,
}

pub fn create_retry_decision(status: u16, code: Option<&str>, should_retry: Option<bool>) -> Retry {
    match should_retry {
        Some(false) => return Retry::No,
        Some(true) => return Retry::Yes,
        None => {}
    }
    match status {
        409 => Retry::Yes,
        429 if code == Some("lock_timeout") => Retry::Yes,
        s if s >= 500 => Retry::Yes,
        _ => Retry::No,
    }
}

/// `base × (1 + n²)` capped at 5 s, scaled by `jitter` ∈ [0, 1) into 75–100 %, floored
/// at `base`.
pub fn backoff_delay(base: Duration, attempt: u32, jitter: f64) -> Duration {
    let factor = 1 + attempt.saturating_mul(attempt);
    let capped = base.saturating_mul(factor).min(Duration::from_secs(5));
    let jittered = capped.mul_f64(0.75 + 0.25 * jitter.clamp(0.0, 1.0));
    jittered.max(base.min(Duration::from_secs(5)))
}

fn header_bool(resp: &reqwest::Response, name: &str) -> Option<bool> {
    match resp.headers().get(name).and_then(|v| v.to_str().ok())? {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

async fn error_body(resp: reqwest::Response) -> ProviderErrorBody {
    let status = resp.status();
    match resp.json::<ErrorEnvelope>().await {
        Ok(env) => env.error,
        Err(_) => ProviderErrorBody {
            kind: "api_error".into(),
            code: None,
            message: format!("HTTP {status} without an error body"),
            param: None,
        },
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_follow_stripe_go() {
        let cases = [
            (409, None, None, Retry::Yes),
            (429, Some("rate_limit"), None, Retry::No),
            (429, Some("lock_timeout"), None, Retry::Yes),
            (429, Some("lock_timeout"), Some(false), Retry::No),
            (500, None, None, Retry::Yes),
            (503, None, None, Retry::Yes),
            (500, None, Some(false), Retry::No),
            (400, Some("charge_already_refunded"), None, Retry::No),
            (400, None, Some(true), Retry::Yes),
            (404, Some("resource_missing"), None, Retry::No),
        ];
        for (status, code, header, want) in cases {
            assert_eq!(
                create_retry_decision(status, code, header),
                want,
                "{status} {code:?} {header:?}"
            );
        }
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered_within_bounds() {
        let base = Duration::from_millis(500);
        assert_eq!(backoff_delay(base, 1, 1.0), Duration::from_millis(1000));
        assert_eq!(backoff_delay(base, 2, 1.0), Duration::from_millis(2500));
        assert_eq!(backoff_delay(base, 9, 1.0), Duration::from_secs(5));
        assert_eq!(backoff_delay(base, 1, 0.0), Duration::from_millis(750));
        assert_eq!(backoff_delay(base, 0, 0.0), base, "never below the base");
    }
}
