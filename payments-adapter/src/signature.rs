//! `Stripe-Signature` verification of provider webhooks, in the adapter's own code: the
//! app speaks the provider's wire format itself, and never borrows the mock's
//! receiver-side helpers, so a production build can leave the mock out.
//!
//! The scheme (Stripe's "verify manually" recipe): the header is `t=<unix secs>` and one
//! or more `v1=<hex>`, each `v1` an HMAC-SHA256 under the endpoint secret of
//! `"{t}.{raw body}"`. Any `v1` may match (during a secret rotation the provider signs
//! with both), the comparison is constant-time, and a timestamp older than the
//! tolerance is refused so a captured delivery cannot be replayed later.
//!
//! What it deliberately does not do: parse the body, read a clock (the caller passes
//! `now`), or refuse a timestamp from the future (Stripe's libraries do not either; the
//! provider's clock and ours differ, and the HMAC already binds `t`).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Stripe's default tolerance for the signed timestamp, in seconds.
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// Why a webhook signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the webhook has no Stripe-Signature header")]
    Missing,
    #[error("the Stripe-Signature header is not t=<timestamp>,v1=<signature>")]
    Malformed,
    #[error("no v1 signature of the webhook matches its body")]
    NoMatch,
    #[error("the webhook's signed timestamp is older than the tolerance")]
    Stale,
}

/// What a well-formed header holds: the signed timestamp and every `v1` that decoded.
struct SignatureHeader {
    timestamp: i64,
    candidates: Vec<Vec<u8>>,
}

/// Splits on `,` then on the first `=`; unknown schemes (`v0`, future ones) are ignored,
/// and a `v1` that is not hex is skipped, since it cannot match anyway.
fn parse_header(header: &str) -> Result<SignatureHeader, SignatureError> {
    if header.trim().is_empty() {
        return Err(SignatureError::Missing);
    }
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for item in header.split(',') {
        let (scheme, value) = item
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match scheme {
            "t" if timestamp.is_none() => {
                timestamp = Some(value.parse().map_err(|_| SignatureError::Malformed)?)
            }
            // Two timestamps: which one was signed is ambiguous, so neither is trusted.
            "t" => return Err(SignatureError::Malformed),
            "v1" => candidates.extend(hex::decode(value).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if candidates.is_empty() {
        return Err(SignatureError::NoMatch);
    }
    Ok(SignatureHeader {
        timestamp,
        candidates,
    })
}

/// HMAC-SHA256 under `secret` of `"{timestamp}.{payload}"`.
fn expected_signature(secret: &str, timestamp: i64, payload: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC-SHA256 takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac.finalize().into_bytes().into()
}

/// Checks `header` (the `Stripe-Signature` value) against the raw `payload` at `now`
/// (unix seconds). docs/spec/invariants.md #12: this runs before anything in the body is parsed.
pub fn verify(
    secret: &str,
    header: &str,
    payload: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    let parsed = parse_header(header)?;
    if now.saturating_sub(parsed.timestamp) > tolerance_secs {
        return Err(SignatureError::Stale);
    }
    let expected = expected_signature(secret, parsed.timestamp, payload);
    // Every candidate is compared, so the time taken says nothing about which matched.
    let matched = parsed.candidates.iter().fold(0u8, |acc, candidate| {
        acc | candidate.as_slice().ct_eq(&expected).unwrap_u8()
    });
    if matched == 1 {
        Ok(())
    } else {
        Err(SignatureError::NoMatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_unit";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"refund.updated"}"#;
    const NOW: i64 = 1_800_000_000;

    fn header(secret: &str, t: i64, body: &[u8]) -> String {
        format!(
            "t={t},v1={}",
            hex::encode(expected_signature(secret, t, body))
        )
    }

    #[test]
    fn a_signature_made_with_the_secret_over_the_body_is_accepted() {
        assert_eq!(
            verify(SECRET, &header(SECRET, NOW, BODY), BODY, NOW, 300),
            Ok(())
        );
    }

    #[test]
    fn a_signature_made_with_another_secret_is_refused() {
        let signed = header("whsec_other", NOW, BODY);
        assert_eq!(
            verify(SECRET, &signed, BODY, NOW, 300),
            Err(SignatureError::NoMatch)
        );
    }

    #[test]
    fn a_body_changed_after_signing_is_refused() {
        let signed = header(SECRET, NOW, BODY);
        let tampered = br#"{"id":"evt_1","type":"refund.failed"}"#;
        assert_eq!(
            verify(SECRET, &signed, tampered, NOW, 300),
            Err(SignatureError::NoMatch)
        );
    }

    #[test]
    fn a_timestamp_older_than_the_tolerance_is_refused_and_one_at_the_edge_is_not() {
        let stale = header(SECRET, NOW - 301, BODY);
        assert_eq!(
            verify(SECRET, &stale, BODY, NOW, 300),
            Err(SignatureError::Stale)
        );
        let edge = header(SECRET, NOW - 300, BODY);
        assert_eq!(verify(SECRET, &edge, BODY, NOW, 300), Ok(()));
    }

    #[test]
    fn a_changed_timestamp_breaks_the_signature() {
        let signed = header(SECRET, NOW - 10, BODY);
        let moved = signed.replacen(&format!("t={}", NOW - 10), &format!("t={NOW}"), 1);
        assert_eq!(
            verify(SECRET, &moved, BODY, NOW, 300),
            Err(SignatureError::NoMatch)
        );
    }

    #[test]
    fn a_missing_or_garbled_header_is_refused_with_its_own_error() {
        let v1 = hex::encode(expected_signature(SECRET, NOW, BODY));
        let cases = [
            ("", SignatureError::Missing),
            ("   ", SignatureError::Missing),
            ("garbage", SignatureError::Malformed),
            (&format!("v1={v1}") as &str, SignatureError::Malformed),
            (&format!("t=yesterday,v1={v1}"), SignatureError::Malformed),
            (
                &format!("t={NOW},t={NOW},v1={v1}"),
                SignatureError::Malformed,
            ),
            (&format!("t={NOW}"), SignatureError::NoMatch),
            (&format!("t={NOW},v1=not-hex"), SignatureError::NoMatch),
            (&format!("t={NOW},v0={v1}"), SignatureError::NoMatch),
        ];
        for (value, expected) in cases {
            assert_eq!(
                verify(SECRET, value, BODY, NOW, 300),
                Err(expected),
                "header {value:?}"
            );
        }
    }

    #[test]
    fn any_v1_may_match_so_a_rotated_secret_still_verifies() {
        let old = hex::encode(expected_signature("whsec_old", NOW, BODY));
        let new = hex::encode(expected_signature(SECRET, NOW, BODY));
        for value in [
            format!("t={NOW},v1={old},v1={new}"),
            format!("t={NOW},v1={new},v1={old}"),
            format!("v1=zz,t={NOW},v0=ab,v1={new}"),
        ] {
            assert_eq!(verify(SECRET, &value, BODY, NOW, 300), Ok(()), "{value}");
        }
        assert_eq!(
            verify(
                SECRET,
                &format!("t={NOW},v1={old},v1={old}"),
                BODY,
                NOW,
                300
            ),
            Err(SignatureError::NoMatch)
        );
    }
}
