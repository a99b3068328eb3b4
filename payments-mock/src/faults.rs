//! Fault injection (payments.md §6.4): rules installed through `POST /__mock/faults`
//! that make the mock misbehave the way a real provider or network does.
//!
//! A rule is one JSON object: a `mode` with its parameters, what it matches
//! (`method`, `path`, `params`, `idempotency_key` for API calls; `event_type` for
//! webhooks) and when it fires (`nth`, `times`, `one_shot`, `probability`). API rules
//! are tried in install order and the first that fires wins; webhook rules are
//! decided per mode (an event can be both delayed and duplicated).
//!
//! The rules and their registry live here; they are applied by
//! `fault_layer` (the middleware and the `/__mock/faults` endpoints), which sits above
//! the mock's state.
//!
//! Where each mode acts:
//! - `fault_layer::layer` (middleware, before auth and the idempotency layer): `latency`,
//!   `fail_before_commit`, `connect_refused`, `reset_before_commit`, `rate_limit`,
//!   `conflict_in_flight`, and `drop_response_after_commit` (after the handler);
//! - the idempotency layer ([`LayerFault`]): `latency` with `hold_key`,
//!   `server_error_after_begin`, `business_error`, `expire_key`;
//! - the webhook sender ([`crate::webhooks`]): every `webhook_*` mode.
//!
//! What it deliberately does not do: persist rules. They live in memory and a restart
//! clears them (as it clears the application counters shown in the ledger).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::http::Method;
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::{new_id, FormParams};

/// A fault and its parameters (the `mode` field selects the variant).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Fault {
    /// Sleep `ms` (+ up to `jitter` ms) before handling; with `hold_key`, sleep while
    /// the request holds its idempotency key in flight (a concurrent retry gets 409).
    Latency {
        ms: u64,
        #[serde(default)]
        jitter: u64,
        #[serde(default)]
        hold_key: bool,
    },
    /// A 5xx before the idempotency layer: nothing executes, nothing is stored.
    FailBeforeCommit {
        #[serde(default = "default_fail_status")]
        status: u16,
        /// Raw response body; default a Stripe `api_error` envelope.
        #[serde(default)]
        body: Option<String>,
    },
    /// The connection is closed (FIN) before the request is handled.
    ConnectRefused,
    /// The connection is reset (RST) before the request is handled.
    ResetBeforeCommit,
    /// The handler runs (its effects commit iff `commit`), then a 500 `api_error` is
    /// stored under the key and returned; replays return that 500.
    ServerErrorAfterBegin {
        #[serde(default)]
        commit: bool,
        /// When set, the 500 carries `Stripe-Should-Retry: <value>`.
        #[serde(default)]
        should_retry: Option<bool>,
    },
    /// The response is committed and stored, then never sent: the connection is
    /// closed, or held silent for `ms` and then closed.
    DropResponseAfterCommit {
        /// `close` or `hang` (named `drop_mode`: `mode` names the fault).
        #[serde(default, rename = "drop_mode")]
        mode: DropMode,
        #[serde(default = "default_hang_ms")]
        ms: u64,
    },
    /// 429 before the idempotency layer, not stored.
    RateLimit {
        #[serde(default)]
        code: RateLimitCode,
    },
    /// 409 `idempotency_key_in_use` (use `times` for "n attempts").
    ConflictInFlight,
    /// The business refusal is executed and stored under the key like a real one.
    BusinessError { code: BusinessErrorCode },
    /// The stored response of this request's idempotency key is deleted first.
    ExpireKey,
    /// Each delivery of the event is sent `n` times (same `evt_`, fresh `t=`).
    WebhookDuplicate {
        #[serde(default = "default_copies")]
        n: u32,
    },
    /// The event is held back until a later event was attempted (or `max_hold_ms`).
    WebhookOutOfOrder {
        #[serde(default = "default_max_hold_ms")]
        max_hold_ms: u64,
    },
    /// The event is never delivered (`delivery_success` stays false).
    WebhookDrop,
    /// The first delivery attempt waits `s` seconds (fractions allowed).
    WebhookDelay { s: f64 },
    /// The delivery is signed wrongly (`two_v1` is a valid rotation header).
    WebhookBadSignature { kind: BadSignature },
    /// While installed, overrides the configured retry policy of failed deliveries.
    WebhookRetryPolicy { attempts: u32, backoff_ms: u64 },
}

fn default_fail_status() -> u16 {
    500
}

fn default_hang_ms() -> u64 {
    30_000
}

fn default_copies() -> u32 {
    2
}

fn default_max_hold_ms() -> u64 {
    2_000
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DropMode {
    #[default]
    Close,
    Hang,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RateLimitCode {
    #[default]
    RateLimit,
    LockTimeout,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BusinessErrorCode {
    ChargeAlreadyRefunded,
    AmountExceeds,
    ChargeDisputed,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BadSignature {
    WrongSecret,
    StaleTs,
    TwoV1,
    MissingHeader,
}

impl Fault {
    pub fn mode(&self) -> &'static str {
        match self {
            Fault::Latency { .. } => "latency",
            Fault::FailBeforeCommit { .. } => "fail_before_commit",
            Fault::ConnectRefused => "connect_refused",
            Fault::ResetBeforeCommit => "reset_before_commit",
            Fault::ServerErrorAfterBegin { .. } => "server_error_after_begin",
            Fault::DropResponseAfterCommit { .. } => "drop_response_after_commit",
            Fault::RateLimit { .. } => "rate_limit",
            Fault::ConflictInFlight => "conflict_in_flight",
            Fault::BusinessError { .. } => "business_error",
            Fault::ExpireKey => "expire_key",
            Fault::WebhookDuplicate { .. } => "webhook_duplicate",
            Fault::WebhookOutOfOrder { .. } => "webhook_out_of_order",
            Fault::WebhookDrop => "webhook_drop",
            Fault::WebhookDelay { .. } => "webhook_delay",
            Fault::WebhookBadSignature { .. } => "webhook_bad_signature",
            Fault::WebhookRetryPolicy { .. } => "webhook_retry_policy",
        }
    }

    fn is_webhook(&self) -> bool {
        self.mode().starts_with("webhook_")
    }

    /// Modes that act inside the idempotency layer, so only on `POST /v1/...`.
    fn needs_layer(&self) -> bool {
        matches!(
            self,
            Fault::ServerErrorAfterBegin { .. } | Fault::BusinessError { .. } | Fault::ExpireKey
        )
    }

    /// Parameter names of the mode (besides `mode` and the matching fields).
    fn parameter_names(&self) -> &'static [&'static str] {
        match self {
            Fault::Latency { .. } => &["ms", "jitter", "hold_key"],
            Fault::FailBeforeCommit { .. } => &["status", "body"],
            Fault::ServerErrorAfterBegin { .. } => &["commit", "should_retry"],
            Fault::DropResponseAfterCommit { .. } => &["drop_mode", "ms"],
            Fault::RateLimit { .. } => &["code", "status"],
            Fault::BusinessError { .. } => &["code"],
            Fault::WebhookDuplicate { .. } => &["n"],
            Fault::WebhookOutOfOrder { .. } => &["max_hold_ms"],
            Fault::WebhookDelay { .. } => &["s"],
            Fault::WebhookBadSignature { .. } => &["kind"],
            Fault::WebhookRetryPolicy { .. } => &["attempts", "backoff_ms"],
            Fault::ConnectRefused
            | Fault::ResetBeforeCommit
            | Fault::ConflictInFlight
            | Fault::ExpireKey
            | Fault::WebhookDrop => &[],
        }
    }

    fn validate(&self) -> Result<(), String> {
        match self {
            Fault::FailBeforeCommit { status, .. } if ![500, 502, 503, 504].contains(status) => {
                Err(format!(
                    "status must be 500, 502, 503 or 504 (got {status})"
                ))
            }
            Fault::WebhookDuplicate { n } if *n == 0 => Err("n must be at least 1".to_owned()),
            Fault::WebhookDelay { s } if !s.is_finite() || *s < 0.0 => {
                Err("s must be a non-negative number".to_owned())
            }
            Fault::WebhookRetryPolicy { attempts, .. } if *attempts == 0 => {
                Err("attempts must be at least 1".to_owned())
            }
            _ => Ok(()),
        }
    }
}

const MATCH_FIELDS: [&str; 10] = [
    "mode",
    "method",
    "path",
    "params",
    "idempotency_key",
    "event_type",
    "nth",
    "times",
    "one_shot",
    "probability",
];

/// One installed rule: the fault, what it matches, when it fires, and its counters.
#[derive(Debug, Clone, Serialize)]
pub struct Rule {
    pub id: String,
    #[serde(flatten)]
    pub fault: Fault,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// First matching occurrence (1-based) on which the rule fires.
    pub nth: u64,
    /// How many times it fires; `None` = unlimited.
    pub times: Option<u64>,
    pub probability: f64,
    /// Matching occurrences seen so far.
    pub seen: u64,
    /// Times it fired.
    pub applied: u64,
    pub exhausted: bool,
}

#[derive(Deserialize)]
struct RuleMatch {
    method: Option<String>,
    path: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, String>,
    idempotency_key: Option<String>,
    event_type: Option<String>,
    nth: Option<u64>,
    times: Option<u64>,
    #[serde(default)]
    one_shot: bool,
    probability: Option<f64>,
}

impl Rule {
    /// Parses one rule object, refusing unknown fields and impossible schedules.
    pub fn parse(value: &Value) -> Result<Self, String> {
        let object = value
            .as_object()
            .ok_or_else(|| "a rule must be a JSON object".to_owned())?;
        let fault: Fault = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        fault.validate()?;
        for name in object.keys().map(String::as_str) {
            if !MATCH_FIELDS.contains(&name) && !fault.parameter_names().contains(&name) {
                return Err(format!("unknown field {name:?} for mode {}", fault.mode()));
            }
        }
        let matching: RuleMatch =
            serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        if matching.one_shot && matching.times.is_some_and(|t| t != 1) {
            return Err("one_shot contradicts times".to_owned());
        }
        if matching.nth == Some(0) {
            return Err("nth is 1-based".to_owned());
        }
        let probability = matching.probability.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&probability) {
            return Err("probability must be between 0 and 1".to_owned());
        }
        // `nth` alone means "that occurrence only".
        let times = match (matching.times, matching.one_shot, matching.nth) {
            (Some(times), _, _) => Some(times),
            (None, true, _) | (None, false, Some(_)) => Some(1),
            (None, false, None) => None,
        };
        if fault.is_webhook() && (matching.method.is_some() || matching.path.is_some()) {
            return Err("webhook modes match on event_type, not method or path".to_owned());
        }
        if !fault.is_webhook() && matching.event_type.is_some() {
            return Err("event_type only applies to webhook modes".to_owned());
        }
        Ok(Self {
            id: new_id("flt"),
            fault,
            method: matching.method.map(|m| m.to_ascii_uppercase()),
            path: matching.path,
            params: matching.params,
            idempotency_key: matching.idempotency_key,
            event_type: matching.event_type,
            nth: matching.nth.unwrap_or(1),
            times,
            probability,
            seen: 0,
            applied: 0,
            exhausted: times == Some(0),
        })
    }

    fn matches_request(&self, request: &RequestFacts<'_>) -> bool {
        if self.fault.is_webhook() {
            return false;
        }
        if self.fault.needs_layer()
            && !(request.method == Method::POST && request.path.starts_with("/v1/"))
        {
            return false;
        }
        if matches!(self.fault, Fault::ExpireKey) && request.idempotency_key.is_none() {
            return false;
        }
        if let Some(method) = &self.method {
            if method != request.method.as_str() {
                return false;
            }
        }
        if let Some(pattern) = &self.path {
            if !path_matches(pattern, request.path) {
                return false;
            }
        }
        if let Some(key) = &self.idempotency_key {
            if request.idempotency_key != Some(key.as_str()) {
                return false;
            }
        }
        self.params
            .iter()
            .all(|(name, value)| request.params.get(name) == Some(value.as_str()))
    }

    fn matches_event(&self, event_type: &str) -> bool {
        match &self.event_type {
            None => true,
            Some(pattern) => match pattern.strip_suffix('*') {
                Some(prefix) => event_type.starts_with(prefix),
                None => pattern == event_type,
            },
        }
    }

    /// Counts a matching occurrence and decides whether the rule fires on it.
    fn fire(&mut self) -> bool {
        self.seen += 1;
        if self.exhausted || self.seen < self.nth {
            return false;
        }
        if self.probability < 1.0 && rand::thread_rng().gen::<f64>() >= self.probability {
            return false;
        }
        self.applied += 1;
        if self.times.is_some_and(|times| self.applied >= times) {
            self.exhausted = true;
        }
        true
    }
}

/// `*` matches one path segment; a trailing `/**` matches any rest.
fn path_matches(pattern: &str, path: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix("/**") {
        return path_matches(prefix, path)
            || path
                .char_indices()
                .filter(|(_, c)| *c == '/')
                .any(|(i, _)| i > 0 && path_matches(prefix, &path[..i]));
    }
    let mut pattern_segments = pattern.split('/');
    let mut path_segments = path.split('/');
    loop {
        match (pattern_segments.next(), path_segments.next()) {
            (None, None) => return true,
            (Some(p), Some(s)) if p == "*" || p == s => continue,
            _ => return false,
        }
    }
}

/// What the API rules see of a request.
pub struct RequestFacts<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    pub params: &'a FormParams,
    pub idempotency_key: Option<&'a str>,
}

/// The in-memory rule set and the per-mode application counters.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<RegistryInner>,
}

#[derive(Default)]
struct RegistryInner {
    rules: Vec<Rule>,
    applied: BTreeMap<&'static str, u64>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryInner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn install(&self, rules: Vec<Rule>) {
        self.lock().rules.extend(rules);
    }

    /// Removes every rule (the counters stay: they describe what happened).
    pub fn clear(&self) -> usize {
        let mut inner = self.lock();
        let removed = inner.rules.len();
        inner.rules.clear();
        removed
    }

    pub fn remove(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let before = inner.rules.len();
        inner.rules.retain(|rule| rule.id != id);
        inner.rules.len() != before
    }

    pub fn rules(&self) -> Vec<Rule> {
        self.lock().rules.clone()
    }

    /// Applications per mode since this process started.
    pub fn applied(&self) -> BTreeMap<&'static str, u64> {
        self.lock().applied.clone()
    }

    /// Exhausted rules count too: they still tally the requests they match (`seen`).
    pub(crate) fn has_request_rules(&self) -> bool {
        self.lock()
            .rules
            .iter()
            .any(|rule| !rule.fault.is_webhook())
    }

    /// The first API rule that fires on this request (counted as applied).
    pub fn fire_request(&self, request: &RequestFacts<'_>) -> Option<Fault> {
        let mut inner = self.lock();
        let fired = inner
            .rules
            .iter_mut()
            .filter(|rule| rule.matches_request(request))
            .find_map(|rule| rule.fire().then(|| rule.fault.clone()))?;
        *inner.applied.entry(fired.mode()).or_insert(0) += 1;
        Some(fired)
    }

    /// The first rule of `mode` that fires on an event of `event_type`.
    pub fn fire_webhook(&self, mode: &str, event_type: &str) -> Option<Fault> {
        let mut inner = self.lock();
        let fired = inner
            .rules
            .iter_mut()
            .filter(|rule| rule.fault.mode() == mode && rule.matches_event(event_type))
            .find_map(|rule| rule.fire().then(|| rule.fault.clone()))?;
        *inner.applied.entry(fired.mode()).or_insert(0) += 1;
        Some(fired)
    }

    /// `(attempts, backoff)` of the first installed `webhook_retry_policy`, if any.
    pub fn retry_policy(&self) -> Option<(u32, Duration)> {
        self.lock().rules.iter().find_map(|rule| match rule.fault {
            Fault::WebhookRetryPolicy {
                attempts,
                backoff_ms,
            } => Some((attempts, Duration::from_millis(backoff_ms))),
            _ => None,
        })
    }
}

/// A fault the idempotency layer applies (handed over in the request extensions).
#[derive(Debug, Clone)]
pub(crate) enum LayerFault {
    HoldKey {
        sleep: Duration,
    },
    ServerErrorAfterBegin {
        commit: bool,
        should_retry: Option<bool>,
    },
    BusinessError(BusinessErrorCode),
    ExpireKey,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn path_patterns_match_segments() {
        assert!(path_matches("/v1/refunds", "/v1/refunds"));
        assert!(!path_matches("/v1/refunds", "/v1/refunds/re_1"));
        assert!(path_matches(
            "/v1/refunds/*/cancel",
            "/v1/refunds/re_1/cancel"
        ));
        assert!(path_matches("/v1/**", "/v1/refunds/re_1/cancel"));
        assert!(!path_matches("/v1/**", "/__mock/ledger"));
    }

    #[test]
    fn rules_parse_with_defaults_and_refuse_unknown_fields() {
        let rule = Rule::parse(&json!({"mode": "rate_limit", "path": "/v1/refunds", "nth": 2}))
            .expect("valid rule");
        assert_eq!(rule.times, Some(1), "nth alone fires once");
        assert!(matches!(
            rule.fault,
            Fault::RateLimit {
                code: RateLimitCode::RateLimit
            }
        ));
        let drop = Rule::parse(
            &json!({"mode": "drop_response_after_commit", "drop_mode": "hang", "ms": 50}),
        )
        .expect("valid rule");
        assert!(matches!(
            drop.fault,
            Fault::DropResponseAfterCommit {
                mode: DropMode::Hang,
                ms: 50
            }
        ));
        assert!(Rule::parse(&json!({"mode": "latency", "ms": 5, "colour": 1})).is_err());
        assert!(Rule::parse(&json!({"mode": "fail_before_commit", "status": 404})).is_err());
        assert!(Rule::parse(&json!({"mode": "webhook_drop", "path": "/v1/refunds"})).is_err());
        assert!(Rule::parse(&json!({"mode": "nope"})).is_err());
    }

    #[test]
    fn schedules_count_matching_occurrences() {
        let mut rule = Rule::parse(&json!({"mode": "conflict_in_flight", "nth": 2, "times": 2}))
            .expect("valid rule");
        let fired: Vec<bool> = (0..5).map(|_| rule.fire()).collect();
        assert_eq!(fired, vec![false, true, true, false, false]);
        assert!(rule.exhausted);
        let mut never =
            Rule::parse(&json!({"mode": "expire_key", "probability": 0.0})).expect("valid rule");
        assert!(!(0..20).any(|_| never.fire()));
    }
}
