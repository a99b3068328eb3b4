//! What the team decided on a past ticket, taken from what it did (docs/spec/history.md):
//! refunds made on the customer's charges within the window after the ticket →
//! `refund` with those refunds; else a tag the team's tag map names → `escalate` or
//! `request_info`; else `no_refund`. Every inference carries its evidence in words, so
//! a lead can check it on the shadow report's row.
//!
//! A refund inside the window belongs to the customer's *latest* ticket created before
//! it: when the same customer wrote again between this ticket and the refund, the
//! refund is the later ticket's (the evidence says so). Pure: no clock, no I/O.
//!
//! What it deliberately does not do: read the agents' replies for a decision (a reply
//! promising a refund that never came is not a refund), or count a failed or canceled
//! refund as money given back.

use std::collections::BTreeMap;

use policy_engine::{Money, ReasonCode};
use serde::Serialize;
use time::{Duration, OffsetDateTime};

use domain::verdict::{CaseOutcome, RefundRecord};

/// A provider refund on one of the customer's charges, as the inference reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RefundSeen {
    pub refund_id: String,
    pub charge_id: String,
    pub order_id: Option<String>,
    pub amount: Money,
    /// The provider's status (`succeeded`, `pending`, `failed`, `canceled`).
    pub status: String,
    pub created_at: OffsetDateTime,
    /// The provider's reason (`duplicate`, `requested_by_customer`, …).
    pub reason: Option<String>,
}

/// A team's tags that mean an outcome: `tag = "escalate"` or `tag = "request_info"`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TagMap(BTreeMap<String, CaseOutcome>);

impl TagMap {
    /// Reads a TOML file of `tag = "escalate" | "request_info"` lines (at the top level
    /// or under `[tags]`); tags compare case-insensitively.
    pub fn parse(text: &str) -> Result<TagMap, String> {
        let table: toml::Table = text.parse().map_err(|e| format!("not TOML: {e}"))?;
        let table = match table.get("tags") {
            Some(toml::Value::Table(tags)) => tags.clone(),
            _ => table,
        };
        let mut map = BTreeMap::new();
        for (tag, value) in table {
            let outcome = match value.as_str() {
                Some("escalate") => CaseOutcome::Escalate,
                Some("request_info") => CaseOutcome::RequestInfo,
                _ => {
                    return Err(format!(
                        "tag '{tag}': the outcome must be \"escalate\" or \"request_info\""
                    ))
                }
            };
            map.insert(tag.to_lowercase(), outcome);
        }
        Ok(TagMap(map))
    }
}

/// The evidence of one inference, as the history line carries it (`human.inference`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// `refund_in_window`, `tag` or `no_refund_in_window`.
    pub rule: &'static str,
    pub window_days: u32,
    /// Each fact the outcome rests on, in words.
    pub evidence: Vec<String>,
    /// Refunds seen but not counted for this ticket, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
}

/// The inferred decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Inference {
    pub outcome: CaseOutcome,
    pub reason: ReasonCode,
    /// Per charge, the sum of the counted refunds.
    pub refunds: Vec<RefundRecord>,
    pub evidence: Evidence,
}

/// How long after `from` `to` came, in words (`1 day 3 h`).
fn after(from: OffsetDateTime, to: OffsetDateTime) -> String {
    let d = to - from;
    let (days, hours) = (d.whole_days(), d.whole_hours() % 24);
    match (days, hours) {
        (0, 0) => format!("{} min", d.whole_minutes()),
        (0, h) => format!("{h} h"),
        (d, 0) => format!("{d} day{}", if d == 1 { "" } else { "s" }),
        (d, h) => format!("{d} day{} {h} h", if d == 1 { "" } else { "s" }),
    }
}

fn describe(r: &RefundSeen, created: OffsetDateTime) -> String {
    let order = r
        .order_id
        .as_deref()
        .map(|o| format!(" (order {o})"))
        .unwrap_or_default();
    format!(
        "refund {} of {} on charge {}{order}, {}, {} after the ticket",
        r.refund_id,
        r.amount,
        r.charge_id,
        r.status,
        after(created, r.created_at)
    )
}

/// Infers the team's decision on a ticket created at `created`, whose requester next
/// wrote at `next_ticket` (if ever), from the customer's `refunds` and the ticket's
/// `tags`.
pub fn infer(
    created: OffsetDateTime,
    next_ticket: Option<OffsetDateTime>,
    refunds: &[RefundSeen],
    tags: &[String],
    tag_map: &TagMap,
    window_days: u32,
) -> Inference {
    let window_end = created + Duration::days(i64::from(window_days));
    let mut counted: Vec<&RefundSeen> = Vec::new();
    let mut excluded = Vec::new();
    for r in refunds
        .iter()
        .filter(|r| r.created_at > created && r.created_at <= window_end)
    {
        if let Some(next) = next_ticket.filter(|n| *n < r.created_at) {
            excluded.push(format!(
                "{}: the customer wrote again {} after this ticket, before it, so it answers that ticket",
                describe(r, created),
                after(created, next)
            ));
        } else if matches!(r.status.as_str(), "succeeded" | "pending") {
            counted.push(r);
        } else {
            excluded.push(format!("{}: no money went back", describe(r, created)));
        }
    }
    if !counted.is_empty() {
        return refunded(created, &counted, excluded, window_days);
    }
    let mut evidence = vec![format!(
        "no refund on the customer's charges within {window_days} days after the ticket"
    )];
    let tagged: Vec<(&String, CaseOutcome)> = tags
        .iter()
        .filter_map(|t| tag_map.0.get(&t.to_lowercase()).map(|o| (t, *o)))
        .collect();
    // An escalation tag wins over a question: the ticket went to someone else.
    let chosen = tagged
        .iter()
        .find(|(_, o)| *o == CaseOutcome::Escalate)
        .or_else(|| tagged.first());
    if let Some((tag, outcome)) = chosen {
        evidence.push(format!(
            "tagged '{tag}', which the tag map reads as {}",
            outcome.as_str()
        ));
        return Inference {
            outcome: *outcome,
            reason: match outcome {
                CaseOutcome::RequestInfo => ReasonCode::InsufficientInfo,
                _ => ReasonCode::Other,
            },
            refunds: Vec::new(),
            evidence: Evidence {
                rule: "tag",
                window_days,
                evidence,
                excluded,
            },
        };
    }
    Inference {
        outcome: CaseOutcome::NoRefund,
        reason: ReasonCode::Other,
        refunds: Vec::new(),
        evidence: Evidence {
            rule: "no_refund_in_window",
            window_days,
            evidence,
            excluded,
        },
    }
}

fn refunded(
    created: OffsetDateTime,
    counted: &[&RefundSeen],
    excluded: Vec<String>,
    window_days: u32,
) -> Inference {
    let mut per_charge: BTreeMap<&str, Money> = BTreeMap::new();
    for r in counted {
        let sum = match per_charge.get(r.charge_id.as_str()) {
            Some(so_far) => so_far.checked_add(&r.amount).unwrap_or(*so_far),
            None => r.amount,
        };
        per_charge.insert(&r.charge_id, sum);
    }
    let all_duplicates = counted
        .iter()
        .all(|r| r.reason.as_deref() == Some("duplicate"));
    Inference {
        outcome: CaseOutcome::Refund,
        reason: if all_duplicates {
            ReasonCode::DuplicateCharge
        } else {
            ReasonCode::Other
        },
        refunds: per_charge
            .into_iter()
            .map(|(charge, amount)| RefundRecord {
                charge_id: charge.to_string(),
                amount: amount.amount_string(),
                currency: amount.currency(),
            })
            .collect(),
        evidence: Evidence {
            rule: "refund_in_window",
            window_days,
            evidence: counted.iter().map(|r| describe(r, created)).collect(),
            excluded,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_engine::Currency;
    use time::macros::datetime;

    const T: OffsetDateTime = datetime!(2026-11-20 09:00 UTC);

    fn refund(id: &str, charge: &str, amount: &str, hours: i64, status: &str) -> RefundSeen {
        RefundSeen {
            refund_id: id.into(),
            charge_id: charge.into(),
            order_id: Some("O-1".into()),
            amount: Money::parse(amount, Currency::USD).expect("money"),
            status: status.into(),
            created_at: T + Duration::hours(hours),
            reason: None,
        }
    }

    fn tag_map() -> TagMap {
        TagMap::parse("[tags]\ntier2 = \"escalate\"\nneed_info = \"request_info\"\n")
            .expect("a map")
    }

    #[test]
    fn refunds_within_the_window_after_the_ticket_are_the_outcome_summed_per_charge() {
        let refunds = [
            refund("re_before", "ch_1", "5.00", -2, "succeeded"),
            refund("re_a", "ch_1", "10.00", 26, "succeeded"),
            refund("re_b", "ch_1", "2.50", 24 * 7, "pending"),
            refund("re_failed", "ch_2", "1.00", 30, "failed"),
            refund("re_late", "ch_1", "1.00", 24 * 15, "succeeded"),
        ];
        let got = infer(T, None, &refunds, &[], &tag_map(), 14);
        assert_eq!(got.outcome, CaseOutcome::Refund);
        assert_eq!(
            got.refunds,
            [RefundRecord {
                charge_id: "ch_1".into(),
                amount: "12.50".into(),
                currency: Currency::USD
            }]
        );
        assert_eq!(got.evidence.rule, "refund_in_window");
        assert_eq!(
            got.evidence.evidence[0],
            "refund re_a of 10.00 USD on charge ch_1 (order O-1), succeeded, 1 day 2 h after the ticket"
        );
        assert!(
            got.evidence.excluded[0].contains("re_failed")
                && got.evidence.excluded[0].contains("no money went back")
        );
    }

    #[test]
    fn a_refund_after_the_customers_next_ticket_answers_that_ticket() {
        let refunds = [refund("re_a", "ch_1", "10.00", 48, "succeeded")];
        let got = infer(
            T,
            Some(T + Duration::hours(30)),
            &refunds,
            &[],
            &tag_map(),
            14,
        );
        assert_eq!(got.outcome, CaseOutcome::NoRefund);
        assert!(got.evidence.excluded[0].contains("wrote again 1 day 6 h after this ticket"));
        let later = infer(T + Duration::hours(30), None, &refunds, &[], &tag_map(), 14);
        assert_eq!(later.outcome, CaseOutcome::Refund);
    }

    #[test]
    fn tags_decide_only_without_a_refund_and_escalation_wins() {
        let tags = vec!["VIP".to_string(), "need_info".into(), "Tier2".into()];
        let got = infer(T, None, &[], &tags, &tag_map(), 14);
        assert_eq!(
            (got.outcome, got.evidence.rule),
            (CaseOutcome::Escalate, "tag")
        );
        assert!(got.evidence.evidence[1].contains("'Tier2'"));
        let ask = infer(T, None, &[], &tags[..2], &tag_map(), 14);
        assert_eq!(
            (ask.outcome, ask.reason),
            (CaseOutcome::RequestInfo, ReasonCode::InsufficientInfo)
        );
        let refunds = [refund("re_a", "ch_1", "10.00", 3, "succeeded")];
        assert_eq!(
            infer(T, None, &refunds, &tags, &tag_map(), 14).outcome,
            CaseOutcome::Refund
        );
        assert_eq!(
            infer(T, None, &[], &[], &tag_map(), 14).outcome,
            CaseOutcome::NoRefund
        );
        assert!(TagMap::parse("x = \"refund\"").is_err());
    }
}
