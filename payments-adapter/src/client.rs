//! [`PaymentsClient`]: every request the app makes of the provider — reads of charges,
//! refunds and customers (page by page, or every page), and refund creation under the
//! caller's idempotency key — with the provider's retry rules and the pinned version.
//!
//! What it deliberately does not do: store a key or decide what an outcome means for a
//! refund intent; an answer that may hide an executed refund is `Unknown`, never a guess.

use domain::backoff::Backoff;
use std::collections::BTreeMap;
use std::time::Duration;

use policy_engine::Money;

use crate::error::{ErrorEnvelope, ProviderError, ProviderErrorBody};
use crate::objects::List;
use crate::objects::{ProviderCharge, ProviderCustomer, ProviderRefund};

/// The provider API version every request is sent with (`Stripe-Version`), so the shapes
/// we read never change under us when the account's default version moves. Pinned to
/// the version of the specification our conformance check runs against
/// (`scripts/stripe-mock-check`: stripe-mock at spec version 2023-08-16), the newest one
/// we can show every request of ours is accepted by. Webhook events are sent in the
/// endpoint's own version: create the endpoint with this version (README, "Connect your
/// payments account").
pub const STRIPE_VERSION: &str = "2023-08-16";

/// The metadata key a charge names its order under unless `PAYMENTS_ORDER_KEY` says
/// otherwise.
pub const DEFAULT_ORDER_KEY: &str = "order_id";

/// A page size the provider accepts for every list (Stripe: 1 to 100).
const PAGE_SIZE: &str = "100";

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
    /// The metadata key charges name their order under (`PAYMENTS_ORDER_KEY`).
    order_key: String,
}

impl PaymentsClient {
    pub fn new(
        base_url: &str,
        api_key: &str,
        timeout: Duration,
        backoff: Duration,
    ) -> anyhow::Result<Self> {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "stripe-version",
            reqwest::header::HeaderValue::from_static(STRIPE_VERSION),
        );
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .default_headers(headers)
            .build()?;
        Ok(PaymentsClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.to_string(),
            max_retries: 2,
            backoff,
            order_key: DEFAULT_ORDER_KEY.to_string(),
        })
    }

    /// Reads each charge's order under `key` instead of `order_id`.
    pub fn with_order_key(mut self, key: &str) -> Self {
        self.order_key = key.to_string();
        self
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The metadata key charges name their order under.
    pub fn order_key(&self) -> &str {
        &self.order_key
    }

    pub async fn get_charge(&self, charge_id: &str) -> Result<ProviderCharge, ProviderError> {
        let mut charge: ProviderCharge = self
            .get_json(&format!("/v1/charges/{}", urlencode(charge_id)), &[])
            .await?;
        charge.link_order(&self.order_key);
        Ok(charge)
    }

    /// Every charge of a provider customer, following pagination.
    pub async fn list_charges(&self, customer: &str) -> Result<Vec<ProviderCharge>, ProviderError> {
        let mut charges = self
            .list_all(
                "/v1/charges",
                &[("customer", customer)],
                |c: &ProviderCharge| c.id.clone(),
            )
            .await?;
        for charge in &mut charges {
            charge.link_order(&self.order_key);
        }
        Ok(charges)
    }

    /// One page of every charge at the provider, newest first, after `starting_after`:
    /// the charges and whether more follow. For scans that must not hold them all.
    pub async fn charges_page(
        &self,
        starting_after: Option<&str>,
    ) -> Result<(Vec<ProviderCharge>, bool), ProviderError> {
        let page: List<ProviderCharge> = self
            .get_json("/v1/charges", &page_query(&[], starting_after))
            .await?;
        let mut charges = page.data;
        for charge in &mut charges {
            charge.link_order(&self.order_key);
        }
        Ok((charges, page.has_more))
    }

    /// Every refund on a charge, following pagination.
    pub async fn list_refunds(
        &self,
        charge_id: &str,
    ) -> Result<Vec<ProviderRefund>, ProviderError> {
        self.list_all(
            "/v1/refunds",
            &[("charge", charge_id)],
            |r: &ProviderRefund| r.id.clone(),
        )
        .await
    }

    /// One page of a charge's refunds after `starting_after` (what [`Self::list_refunds`]
    /// sends for each page).
    pub async fn refunds_page(
        &self,
        charge_id: &str,
        starting_after: Option<&str>,
    ) -> Result<(Vec<ProviderRefund>, bool), ProviderError> {
        let page: List<ProviderRefund> = self
            .get_json(
                "/v1/refunds",
                &page_query(&[("charge", charge_id)], starting_after),
            )
            .await?;
        Ok((page.data, page.has_more))
    }

    pub async fn get_refund(&self, refund_id: &str) -> Result<ProviderRefund, ProviderError> {
        self.get_json(&format!("/v1/refunds/{}", urlencode(refund_id)), &[])
            .await
    }

    /// Every provider customer with exactly this email (the provider's filter is exact
    /// and case-sensitive), following pagination.
    pub async fn customers_by_email(
        &self,
        email: &str,
    ) -> Result<Vec<ProviderCustomer>, ProviderError> {
        self.list_all(
            "/v1/customers",
            &[("email", email)],
            |c: &ProviderCustomer| c.id.clone(),
        )
        .await
    }

    /// One page of the customers with this email after `starting_after` (what
    /// [`Self::customers_by_email`] sends for each page).
    pub async fn customers_page(
        &self,
        email: &str,
        starting_after: Option<&str>,
    ) -> Result<(Vec<ProviderCustomer>, bool), ProviderError> {
        let page: List<ProviderCustomer> = self
            .get_json(
                "/v1/customers",
                &page_query(&[("email", email)], starting_after),
            )
            .await?;
        Ok((page.data, page.has_more))
    }

    /// One page of every provider customer, newest first, after `starting_after`: the
    /// customers and whether more follow (reconciliation's drift scan; deleted customers
    /// are not listed, as on Stripe).
    pub async fn all_customers_page(
        &self,
        starting_after: Option<&str>,
    ) -> Result<(Vec<ProviderCustomer>, bool), ProviderError> {
        let page: List<ProviderCustomer> = self
            .get_json("/v1/customers", &page_query(&[], starting_after))
            .await?;
        Ok((page.data, page.has_more))
    }

    /// One page of a provider customer's charges after `starting_after` (what
    /// [`Self::list_charges`] sends for each page).
    pub async fn customer_charges_page(
        &self,
        customer: &str,
        starting_after: Option<&str>,
    ) -> Result<(Vec<ProviderCharge>, bool), ProviderError> {
        let page: List<ProviderCharge> = self
            .get_json(
                "/v1/charges",
                &page_query(&[("customer", customer)], starting_after),
            )
            .await?;
        let mut charges = page.data;
        for charge in &mut charges {
            charge.link_order(&self.order_key);
        }
        Ok((charges, page.has_more))
    }

    pub async fn get_customer(&self, customer_id: &str) -> Result<ProviderCustomer, ProviderError> {
        self.get_json(&format!("/v1/customers/{}", urlencode(customer_id)), &[])
            .await
    }

    /// Every item of a list, page after page by `starting_after` while `has_more`.
    async fn list_all<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        filters: &[(&str, &str)],
        id_of: impl Fn(&T) -> String,
    ) -> Result<Vec<T>, ProviderError> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page: List<T> = self
                .get_json(path, &page_query(filters, after.as_deref()))
                .await?;
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

/// The product's one backoff (`domain::backoff`) from `base`, capped at 5 s, scaled by
/// `jitter` ∈ [0, 1) into 75–100 %, floored at `base`.
pub fn backoff_delay(base: Duration, attempt: u32, jitter: f64) -> Duration {
    Backoff::new(base, Duration::from_secs(5)).jittered(attempt, jitter)
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

/// A list's query: the filters, the page size, and the cursor when there is one.
fn page_query(filters: &[(&str, &str)], starting_after: Option<&str>) -> Vec<(String, String)> {
    let mut query: Vec<(String, String)> = filters
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    query.push(("limit".into(), PAGE_SIZE.into()));
    if let Some(after) = starting_after {
        query.push(("starting_after".into(), after.to_string()));
    }
    query
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
        assert_eq!(backoff_delay(base, 2, 1.0), Duration::from_millis(2000));
        assert_eq!(backoff_delay(base, 9, 1.0), Duration::from_secs(5));
        assert_eq!(backoff_delay(base, 1, 0.0), Duration::from_millis(750));
        assert_eq!(backoff_delay(base, 0, 0.0), base, "never below the base");
    }
}
