//! The shared machinery of a decision: what is recorded while the policies are weighed —
//! the rules that fired, each citing its clause (docs/spec/invariants.md #8), the
//! versions they came from, the facts relied on, with times written as [`Timestamp`]
//! and [`Elapsed`] — and the [`Decision`] built from them, with its hash (#9).
//!
//! It knows no policy: which rule fires, and when, is written in `rules/` (one file per
//! policy); the order in which the policies are weighed is `engine.rs`. It reads no
//! clock: every time it writes is one of the facts.

use std::fmt;

use time::{Duration, OffsetDateTime, UtcOffset};

use crate::decision::{
    Decision, Escalation, FiredRule, Outcome, ReasonCode, RefundLine, Role, Team,
};
use crate::facts::{ChargeFacts, ChargeStatus, Facts, OrderFacts};
use crate::selection::{Bound, Selection, Stop};

/// One decision in the making: its facts, the versions it may apply, and what has been
/// recorded so far.
pub(crate) struct Trace<'a> {
    pub(crate) facts: &'a Facts,
    policies: Selection<'a>,
    rules: Vec<FiredRule>,
    /// The versions rules fired from, once each (sorted when the decision is built).
    versions: Vec<&'a str>,
    facts_used: Vec<String>,
}

/// The outcome fields of a decision, before the trace and hash are attached.
pub(crate) struct Verdict {
    pub(crate) outcome: Outcome,
    pub(crate) reason_code: ReasonCode,
    pub(crate) refunds: Vec<RefundLine>,
    pub(crate) approver_role: Option<Role>,
    pub(crate) escalation: Option<Escalation>,
    pub(crate) missing: Option<String>,
    pub(crate) hold_release: Option<String>,
}

impl Verdict {
    pub(crate) fn new(outcome: Outcome, reason_code: ReasonCode) -> Self {
        Verdict {
            outcome,
            reason_code,
            refunds: Vec::new(),
            approver_role: None,
            escalation: None,
            missing: None,
            hold_release: None,
        }
    }

    pub(crate) fn deny(reason_code: ReasonCode) -> Self {
        Verdict::new(Outcome::Deny, reason_code)
    }

    pub(crate) fn request_info(missing: &str) -> Self {
        Verdict {
            missing: Some(missing.to_string()),
            ..Verdict::new(Outcome::RequestInfo, ReasonCode::InsufficientInfo)
        }
    }

    pub(crate) fn escalate(team: Team, reason_code: ReasonCode, reason: String) -> Self {
        Verdict {
            escalation: Some(Escalation { team, reason }),
            ..Verdict::new(Outcome::Escalate, reason_code)
        }
    }

    /// Refunds that wait for `approver_role` (none: a draft's automatic approval).
    pub(crate) fn allow(
        reason_code: ReasonCode,
        refunds: Vec<RefundLine>,
        approver_role: Option<Role>,
    ) -> Self {
        Verdict {
            refunds,
            approver_role,
            ..Verdict::new(Outcome::Allow, reason_code)
        }
    }
}

impl<'a> Trace<'a> {
    pub(crate) fn new(facts: &'a Facts, policies: Selection<'a>) -> Self {
        Trace {
            facts,
            policies,
            // Sized for a typical decision, so neither grows: a handful of rules from
            // two or three versions, and about eight facts.
            rules: Vec::with_capacity(8),
            versions: Vec::with_capacity(4),
            facts_used: Vec::with_capacity(12),
        }
    }

    /// The version of `doc_id` this decision applies, or why there is none.
    pub(crate) fn policy(&self, doc_id: &str) -> Result<Bound<'a>, Stop> {
        self.policies.get(doc_id)
    }

    /// The decision: the verdict with the trace and the versions, and the hash over all.
    pub(crate) fn finish(mut self, verdict: Verdict) -> Decision {
        self.versions.sort_unstable();
        let mut decision = Decision {
            outcome: verdict.outcome,
            reason_code: verdict.reason_code,
            refunds: verdict.refunds,
            approver_role: verdict.approver_role,
            escalation: verdict.escalation,
            missing: verdict.missing,
            rules: self.rules,
            policy_versions: self.versions.iter().map(|v| v.to_string()).collect(),
            facts_used: self.facts_used,
            hold_release: verdict.hold_release,
            hash: String::new(),
        };
        decision.hash = decision.compute_hash();
        decision
    }

    /// Records a rule that fired, citing the clause its rules file maps `key` to.
    pub(crate) fn fire(&mut self, policy: Bound<'a>, key: &str, summary: String) {
        self.rules.push(FiredRule {
            citation: policy.cite(key).to_string(),
            summary,
        });
        let version = policy.version();
        if !self.versions.contains(&version) {
            self.versions.push(version);
        }
    }

    /// Records a fact the decision relied on, once.
    pub(crate) fn note(&mut self, line: String) {
        if !self.facts_used.contains(&line) {
            self.facts_used.push(line);
        }
    }

    /// The three lines every decision starts with: when, who and what was asked.
    pub(crate) fn note_request(&mut self) {
        let facts = self.facts;
        // reported at {reported_at}
        let mut line = String::with_capacity(LINE_CAPACITY);
        line.push_str("reported at ");
        Timestamp(facts.reported_at).push_to(&mut line);
        self.note(line);
        self.note(
            [
                "customer ",
                &facts.customer.id,
                " in region ",
                facts.customer.region.code(),
            ]
            .concat(),
        );
        self.note(["request: ", facts.request.as_str()].concat());
    }

    /// The facts lines of an order, its charges and their refunds. These lines (and the
    /// three every decision starts with) are appended piece by piece rather than
    /// formatted: they are most of a decision's text, and `format!` spent a noticeable
    /// share of a decision on them. The comment above each line shows its shape.
    pub(crate) fn note_order(&mut self, order: &OrderFacts) {
        // order {id}: {product} {amount} created {created_at}
        let mut line = String::with_capacity(LINE_CAPACITY);
        line.push_str("order ");
        line.push_str(&order.id);
        line.push_str(": ");
        line.push_str(order.product.as_str());
        line.push(' ');
        order.amount.push_to(&mut line);
        line.push_str(" created ");
        Timestamp(order.created_at).push_to(&mut line);
        self.note(line);
        for charge in sorted_charges(order) {
            self.note_charge(order, charge);
        }
    }

    fn note_charge(&mut self, order: &OrderFacts, charge: &ChargeFacts) {
        // charge {id} on {order}: {amount} captured|uncaptured, {status},
        // created {created_at}, payment method {method}, amount_refunded {amount}
        // [, disputed]
        let mut line = String::with_capacity(LINE_CAPACITY);
        line.push_str("charge ");
        line.push_str(&charge.id);
        line.push_str(" on ");
        line.push_str(&order.id);
        line.push_str(": ");
        charge.amount.push_to(&mut line);
        line.push_str(if charge.captured {
            " captured, "
        } else {
            " uncaptured, "
        });
        line.push_str(match charge.status {
            ChargeStatus::Succeeded => "succeeded",
            ChargeStatus::Pending => "pending",
            ChargeStatus::Failed => "failed",
        });
        line.push_str(", created ");
        Timestamp(charge.created_at).push_to(&mut line);
        line.push_str(", payment method ");
        line.push_str(&charge.payment_method);
        line.push_str(", amount_refunded ");
        charge.amount_refunded.push_to(&mut line);
        if charge.disputed {
            line.push_str(", disputed");
        }
        self.note(line);
        for refund in &charge.refunds {
            // refund {id} on {charge}: {amount} {status}
            let mut line = String::with_capacity(LINE_CAPACITY);
            line.push_str("refund ");
            line.push_str(&refund.id);
            line.push_str(" on ");
            line.push_str(&charge.id);
            line.push_str(": ");
            refund.amount.push_to(&mut line);
            line.push(' ');
            line.push_str(refund.status.as_str());
            self.note(line);
        }
    }
}

/// Room for a facts line, so it is allocated once: nearly every line is shorter.
const LINE_CAPACITY: usize = 192;

/// Charges in a deterministic order whatever order the caller listed them in.
pub(crate) fn sorted_charges(order: &OrderFacts) -> Vec<&ChargeFacts> {
    let mut charges: Vec<&ChargeFacts> = order.charges.iter().collect();
    charges.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    charges
}

/// An instant as RFC 3339 in UTC (`2026-11-20T09:00:05Z`, `…05.25Z` with a fraction).
/// The same text as the time crate's `format(&Rfc3339)` (the `tests` below check it),
/// written by hand because that call's many small writes were a tenth of a decision's
/// cost.
pub(crate) struct Timestamp(pub(crate) OffsetDateTime);

impl Timestamp {
    /// Appends the text to a trace line.
    pub(crate) fn push_to(&self, line: &mut String) {
        match self.rfc3339() {
            Some((text, len)) => line.push_str(ascii(&text[..len])),
            None => line.push_str(&self.0.to_string()),
        }
    }

    /// The text and its length, or `None` for a year RFC 3339 cannot show (before 0000
    /// or after 9999), which keeps the instant's own text, as it always has.
    fn rfc3339(&self) -> Option<([u8; 30], usize)> {
        let utc = self.0.to_offset(UtcOffset::UTC);
        let (year, month, day) = utc.to_calendar_date();
        let year = u32::try_from(year).ok().filter(|year| *year <= 9999)?;
        let (hour, minute, second, nanosecond) = utc.to_hms_nano();
        let mut text = *b"0000-00-00T00:00:00.000000000Z";
        put_digits(&mut text[0..4], year);
        put_digits(&mut text[5..7], u8::from(month).into());
        put_digits(&mut text[8..10], day.into());
        put_digits(&mut text[11..13], hour.into());
        put_digits(&mut text[14..16], minute.into());
        put_digits(&mut text[17..19], second.into());
        // A fraction only when there is one, without trailing zeros (`.25`, not `.250`).
        let mut len = 19;
        if nanosecond > 0 {
            put_digits(&mut text[20..29], nanosecond);
            len = 29;
            while text[len - 1] == b'0' {
                len -= 1;
            }
        }
        text[len] = b'Z';
        Some((text, len + 1))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rfc3339() {
            Some((text, len)) => f.write_str(ascii(&text[..len])),
            None => write!(f, "{}", self.0),
        }
    }
}

/// Text this module wrote from ASCII digits and punctuation.
fn ascii(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("digits and punctuation are ASCII")
}

/// Writes `value` in decimal into all of `digits`, zero-padded on the left.
fn put_digits(digits: &mut [u8], mut value: u32) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// [`Timestamp`] as a string, for tests that build expected trace lines.
#[cfg(test)]
pub(crate) fn timestamp(at: OffsetDateTime) -> String {
    Timestamp(at).to_string()
}

/// `"9d 1h 0m 0s"`: exact, so boundary cases read clearly in the trace.
pub(crate) struct Elapsed(pub(crate) Duration);

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0.is_negative() { "-" } else { "" };
        let s = self.0.whole_seconds().unsigned_abs();
        write!(
            f,
            "{sign}{}d {}h {}m {}s",
            s / 86_400,
            s % 86_400 / 3_600,
            s % 3_600 / 60,
            s % 60
        )
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// `Timestamp` writes RFC 3339 by hand; it must be the time crate's text exactly,
        /// and the instant's own text for years RFC 3339 cannot show (before year 0).
        #[test]
        fn timestamps_are_rfc_3339_as_the_time_crate_writes_them(
            seconds in -200_000_000_000i64..200_000_000_000,
            nanos in prop_oneof![
                Just(0u32),
                0u32..1_000_000_000,
                (1u32..1_000).prop_map(|millis| millis * 1_000_000),
            ],
            offset_minutes in -(23 * 60 + 59)..=(23i32 * 60 + 59),
        ) {
            let offset = UtcOffset::from_whole_seconds(offset_minutes * 60).unwrap();
            let at = (OffsetDateTime::from_unix_timestamp(seconds).unwrap()
                + Duration::nanoseconds(nanos.into()))
            .to_offset(offset);
            let expected = at
                .to_offset(UtcOffset::UTC)
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_else(|_| at.to_string());
            let mut line = String::new();
            Timestamp(at).push_to(&mut line);
            prop_assert_eq!(&line, &expected);
            prop_assert_eq!(Timestamp(at).to_string(), expected);
        }
    }
}
