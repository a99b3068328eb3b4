//! The webhook emitter (payments.md §6.5): signs each event and POSTs it to the
//! configured endpoint, retrying failures with exponential backoff, and records
//! every attempt in SQLite (`events.delivery_success`, `webhook_deliveries`).
//!
//! Scheduling runs on the real clock in milliseconds, a compressed version of
//! Stripe's "up to three days"; the `t=` in signatures is the mock's clock.
//! Webhook faults (`webhook_*` rules of [`crate::faults`]) are decided once per event
//! (drop, delay, duplicate, out of order) or once per attempt (bad signature).
//!
//! [`sign_payload`] and [`verify_signature`] are public so the app's receiver checks
//! signatures with the same code the tests trust.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::faults::{BadSignature, Fault};
use crate::state::MockState;

/// Stripe's default tolerance for the signed timestamp.
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// The `Stripe-Signature` header value for `payload` sent at `timestamp`:
/// `t=<timestamp>,v1=<hex HMAC-SHA256(secret, "<timestamp>.<payload>")>`.
pub fn sign_payload(secret: &str, timestamp: i64, payload: &[u8]) -> String {
    format!(
        "t={timestamp},v1={}",
        hex::encode(signature(secret, timestamp, payload))
    )
}

fn signature(secret: &str, timestamp: i64, payload: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC-SHA256 takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac.finalize().into_bytes().to_vec()
}

/// Why a `Stripe-Signature` was refused (stripe-go's `webhook` errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("webhook has no Stripe-Signature header")]
    NotSigned,
    #[error("webhook has an invalid Stripe-Signature header")]
    InvalidHeader,
    #[error("webhook had no valid signature")]
    NoValidSignature,
    #[error("timestamp wasn't within tolerance")]
    TooOld,
}

/// Checks a `Stripe-Signature` header as Stripe's libraries do: split on `,` then
/// `=`, ignore unknown schemes, reject a timestamp older than `tolerance_secs`
/// before `now`, accept if ANY `v1` matches (secret rotation sends several),
/// comparing in constant time.
pub fn verify_signature(
    secret: &str,
    header: &str,
    payload: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    if header.trim().is_empty() {
        return Err(SignatureError::NotSigned);
    }
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for item in header.split(',') {
        let Some((scheme, value)) = item.trim().split_once('=') else {
            return Err(SignatureError::InvalidHeader);
        };
        match scheme {
            "t" => {
                timestamp = Some(
                    value
                        .parse::<i64>()
                        .map_err(|_| SignatureError::InvalidHeader)?,
                )
            }
            // A v1 that is not hex cannot match; it is skipped, not fatal.
            "v1" => candidates.extend(hex::decode(value).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::InvalidHeader)?;
    if candidates.is_empty() {
        return Err(SignatureError::NoValidSignature);
    }
    if now.saturating_sub(timestamp) > tolerance_secs {
        return Err(SignatureError::TooOld);
    }
    let expected = signature(secret, timestamp, payload);
    // Check every candidate, so timing says nothing about which one matched.
    let matched = candidates.iter().fold(0u8, |acc, candidate| {
        acc | candidate.ct_eq(&expected).unwrap_u8()
    });
    if matched == 1 {
        Ok(())
    } else {
        Err(SignatureError::NoValidSignature)
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

#[derive(sqlx::FromRow)]
struct DueEvent {
    id: String,
    #[sqlx(rename = "type")]
    event_type: String,
    payload: String,
    attempts: i64,
    faults_checked: bool,
    copies: i64,
}

/// The background sender: one pass whenever woken (an event committed) or every
/// 250 ms (retries coming due). Runs until aborted.
pub(crate) async fn run(state: MockState) {
    loop {
        if let Err(error) = deliver_due(&state).await {
            tracing::error!(%error, "webhook delivery pass failed");
        }
        tokio::select! {
            () = state.webhook_wakeup().notified() => {}
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
        }
    }
}

/// Delivers every event that is due now, until none is; returns the number of
/// attempts made. Passes are serialised, so the worker and a caller never race.
pub(crate) async fn deliver_due(state: &MockState) -> Result<usize, sqlx::Error> {
    let _pass = state.webhook_pass().lock().await;
    let Some(url) = state.webhook_url() else {
        return Ok(0);
    };
    let mut attempts_made = 0;
    loop {
        let now = now_ms();
        let due: Vec<DueEvent> = sqlx::query_as(
            "SELECT id, type, payload, attempts, faults_checked, copies FROM events e \
             WHERE delivery_success = 0 AND dropped = 0 AND next_attempt_ms IS NOT NULL \
             AND (next_attempt_ms <= ?1 OR (held = 1 AND EXISTS \
                  (SELECT 1 FROM events l WHERE l.seq > e.seq AND l.attempts > 0))) \
             ORDER BY seq LIMIT 100",
        )
        .bind(now)
        .fetch_all(state.pool())
        .await?;
        if due.is_empty() {
            return Ok(attempts_made);
        }
        for mut event in due {
            if !event.faults_checked && !decide_event_faults(state, &mut event).await? {
                continue;
            }
            attempt(state, &url, &event).await?;
            attempts_made += 1;
        }
    }
}

/// Applies the once-per-event webhook faults; `false` when the event must not be
/// sent now (dropped, delayed or held back).
async fn decide_event_faults(state: &MockState, event: &mut DueEvent) -> Result<bool, sqlx::Error> {
    let faults = state.faults();
    let now = now_ms();
    let (mut dropped, mut held, mut next_attempt) = (false, false, None);
    if faults
        .fire_webhook("webhook_drop", &event.event_type)
        .is_some()
    {
        dropped = true;
    } else if let Some(Fault::WebhookOutOfOrder { max_hold_ms }) =
        faults.fire_webhook("webhook_out_of_order", &event.event_type)
    {
        held = true;
        next_attempt = Some(now.saturating_add(i64::try_from(max_hold_ms).unwrap_or(i64::MAX)));
    } else if let Some(Fault::WebhookDelay { s }) =
        faults.fire_webhook("webhook_delay", &event.event_type)
    {
        next_attempt = Some(now + (s * 1000.0) as i64);
    }
    if let Some(Fault::WebhookDuplicate { n }) =
        faults.fire_webhook("webhook_duplicate", &event.event_type)
    {
        event.copies = i64::from(n);
    }
    sqlx::query(
        "UPDATE events SET faults_checked = 1, dropped = ?, held = ?, copies = ?, \
         next_attempt_ms = COALESCE(?, next_attempt_ms) WHERE id = ?",
    )
    .bind(dropped)
    .bind(held)
    .bind(event.copies)
    .bind(next_attempt)
    .bind(&event.id)
    .execute(state.pool())
    .await?;
    if dropped {
        tracing::info!(event_id = %event.id, "webhook dropped by fault");
    }
    Ok(!dropped && !held && next_attempt.is_none())
}

/// One delivery attempt (all its duplicate copies), recorded whatever happens.
async fn attempt(state: &MockState, url: &str, event: &DueEvent) -> Result<(), sqlx::Error> {
    let attempt_number = event.attempts + 1;
    let mut delivered = false;
    for copy in 1..=event.copies.max(1) {
        let bad_signature = match state
            .faults()
            .fire_webhook("webhook_bad_signature", &event.event_type)
        {
            Some(Fault::WebhookBadSignature { kind }) => Some(kind),
            _ => None,
        };
        let sent_at = state.clock().now();
        let secret = &state.config().webhook_secret;
        let payload = event.payload.as_bytes();
        let header = match bad_signature {
            None => Some(sign_payload(secret, sent_at, payload)),
            Some(BadSignature::WrongSecret) => Some(sign_payload(
                "whsec_not_the_configured_secret",
                sent_at,
                payload,
            )),
            Some(BadSignature::StaleTs) => {
                let stale = sent_at - 2 * DEFAULT_TOLERANCE_SECS;
                Some(sign_payload(secret, stale, payload))
            }
            Some(BadSignature::TwoV1) => {
                // A rotation: the old secret's signature first, then the current one.
                let old = hex::encode(signature("whsec_rotated_out", sent_at, payload));
                let current = hex::encode(signature(secret, sent_at, payload));
                Some(format!("t={sent_at},v1={old},v1={current}"))
            }
            Some(BadSignature::MissingHeader) => None,
        };
        let mut request = state
            .webhook_client()
            .post(url)
            .header("Content-Type", "application/json; charset=utf-8")
            .header(
                "User-Agent",
                "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            )
            .body(event.payload.clone());
        if let Some(header) = &header {
            request = request.header("Stripe-Signature", header);
        }
        let (status, error) = match request.send().await {
            Ok(response) => (Some(i64::from(response.status().as_u16())), None),
            Err(error) => (None, Some(error.to_string())),
        };
        delivered |= status.is_some_and(|s| (200..300).contains(&s));
        let fault = bad_signature.map(|kind| {
            serde_json::to_value(kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        });
        sqlx::query(
            "INSERT INTO webhook_deliveries (event_id, attempt, copy, sent_at, signature, status, \
             error, fault) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&event.id)
        .bind(attempt_number)
        .bind(copy)
        .bind(sent_at)
        .bind(&header)
        .bind(status)
        .bind(&error)
        .bind(&fault)
        .execute(state.pool())
        .await?;
    }
    let policy = state.retry_policy();
    let attempts = u32::try_from(attempt_number).unwrap_or(u32::MAX);
    let next_attempt = if delivered || attempts >= policy.max_attempts {
        None
    } else {
        let backoff = i64::try_from(policy.backoff(attempts).as_millis()).unwrap_or(i64::MAX);
        Some(now_ms().saturating_add(backoff))
    };
    sqlx::query(
        "UPDATE events SET attempts = ?, delivery_success = ?, held = 0, next_attempt_ms = ? \
         WHERE id = ?",
    )
    .bind(attempt_number)
    .bind(delivered)
    .bind(next_attempt)
    .bind(&event.id)
    .execute(state.pool())
    .await?;
    tracing::info!(event_id = %event.id, attempt = attempt_number, delivered, "webhook attempt");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RetryPolicy;

    const SECRET: &str = "whsec_test";

    #[test]
    fn a_signed_payload_verifies() {
        let header = sign_payload(SECRET, 1_700_000_000, b"{}");
        assert!(header.starts_with("t=1700000000,v1="));
        assert_eq!(
            verify_signature(SECRET, &header, b"{}", 1_700_000_100, 300),
            Ok(())
        );
    }

    #[test]
    fn signature_faults_are_refused() {
        let good = sign_payload(SECRET, 1_700_000_000, b"{}");
        let cases = [
            ("", SignatureError::NotSigned),
            ("v1=abc", SignatureError::InvalidHeader),
            ("t=x,v1=00", SignatureError::InvalidHeader),
            ("t=1700000000", SignatureError::NoValidSignature),
        ];
        for (header, error) in cases {
            assert_eq!(
                verify_signature(SECRET, header, b"{}", 1_700_000_000, 300),
                Err(error),
                "{header:?}"
            );
        }
        assert_eq!(
            verify_signature("whsec_other", &good, b"{}", 1_700_000_000, 300),
            Err(SignatureError::NoValidSignature)
        );
        assert_eq!(
            verify_signature(SECRET, &good, b"{ }", 1_700_000_000, 300),
            Err(SignatureError::NoValidSignature)
        );
        assert_eq!(
            verify_signature(SECRET, &good, b"{}", 1_700_000_301, 300),
            Err(SignatureError::TooOld)
        );
    }

    #[test]
    fn any_v1_may_match_during_rotation() {
        let good = sign_payload(SECRET, 1_700_000_000, b"{}");
        let v1 = good.split_once(",v1=").map(|(_, v)| v).unwrap_or_default();
        let header = format!("t=1700000000,v1={},v0=zz,v1={v1}", "ab".repeat(32));
        assert_eq!(
            verify_signature(SECRET, &header, b"{}", 1_700_000_000, 300),
            Ok(())
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        let waits: Vec<u128> = (1..=4).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(waits, vec![100, 200, 350, 350]);
    }
}
