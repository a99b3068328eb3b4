//! The payments adapter: the only way the app reaches the payment provider, over HTTP,
//! in the provider's wire format (a Stripe-compatible subset).
//!
//! It reads charges and refunds and creates refunds with an `Idempotency-Key` the caller
//! derived and stored beforehand. Retries follow the provider's rules (network errors,
//! 409, 5xx unless `Stripe-Should-Retry: false`, 429 only for `lock_timeout`) with a
//! bounded backoff, always with the same key and the same parameters. When a create may
//! have reached the provider but no answer came back, the result is `Unknown`: the caller
//! must reconcile, never guess (SPEC invariant 5).

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
        // failure means "unknown", not "failed".
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
            let retry_reason = match result {
                Ok(resp) => {
                    let status = resp.status();
                    let should_retry = resp
                        .headers()
                        .get("stripe-should-retry")
                        .and_then(|v| v.to_str().ok())
                        .map(|v| v == "true");
                    if status.is_success() {
                        return resp.json::<ProviderRefund>().await.map_err(|e| {
                            ProviderError::Unknown(format!("unreadable success response: {e}"))
                        });
                    }
                    let body = error_body(resp).await;
                    match status.as_u16() {
                        400 if body.kind == "idempotency_error" => {
                            return Err(ProviderError::IdempotencyMismatch(body.message));
                        }
                        409 => format!("409 {}", body.message),
                        429 if body.code.as_deref() == Some("lock_timeout") => {
                            "429 lock_timeout".to_string()
                        }
                        429 => {
                            // Plain rate limiting happens before the idempotency layer:
                            // nothing executed. Back off; still the same key.
                            "429 rate limited".to_string()
                        }
                        s if s >= 500 => {
                            maybe_executed = true;
                            if should_retry == Some(false) {
                                return Err(ProviderError::Unknown(format!(
                                    "{s} {}",
                                    body.message
                                )));
                            }
                            format!("{s} {}", body.message)
                        }
                        s => return Err(ProviderError::Rejected { status: s, body }),
                    }
                }
                Err(e) => {
                    // A connect error means the request never left; anything later may
                    // have been executed.
                    if !e.is_connect() {
                        maybe_executed = true;
                    }
                    e.to_string()
                }
            };
            if attempt >= self.max_retries {
                return Err(if maybe_executed {
                    ProviderError::Unknown(retry_reason)
                } else {
                    ProviderError::Unavailable(retry_reason)
                });
            }
            attempt += 1;
            tracing::warn!(key = %request.idempotency_key, attempt, reason = %retry_reason, "retrying refund create");
            tokio::time::sleep(self.delay(attempt)).await;
        }
    }

    /// stripe-go's schedule: base × (1 + n²), capped at 5 s.
    fn delay(&self, attempt: u32) -> Duration {
        let factor = 1 + attempt * attempt;
        (self.backoff * factor).min(Duration::from_secs(5))
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
