//! The historical-ticket file format (docs/spec/interfaces.md): one ticket a line, with the billing
//! world as it stood and the human's decision; parsed, checked, and turned into the
//! ticket a live case would have.

use std::collections::{BTreeMap, BTreeSet};

use policy_engine::{Money, ReasonCode};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use desk::replies::{detect_language_of, MAX_MESSAGE_CHARS};
use desk::tickets::Ticket;
use desk::world::World;
use domain::verdict::{CaseOutcome, CaseVerdict, RefundRecord};

/// One line of a `HISTORY.jsonl` file. Real exports carry more fields than docs/spec/interfaces.md
/// names: they are kept in `extra` (ignored by replay, counted in the shadow report and
/// written back as read).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoricalTicket {
    pub id: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub customer_id: String,
    /// The order picked in the ticket form, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    pub messages: Vec<HistoricalMessage>,
    /// The billing world as it stood at `created_at`.
    pub world: World,
    pub human: HumanDecision,
    /// Fields beyond docs/spec/interfaces.md, by name.
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoricalMessage {
    /// `customer`, or whoever else wrote (`agent`, `supervisor`…); only the customer's
    /// messages reach the model, as in a live case.
    pub from: String,
    pub text: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Fields beyond docs/spec/interfaces.md (message ids, channels…).
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// What the human who handled the ticket decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanDecision {
    pub outcome: CaseOutcome,
    pub reason: ReasonCode,
    #[serde(default)]
    pub refunds: Vec<RefundRecord>,
    pub decided_by: String,
    /// Fields beyond docs/spec/interfaces.md (agent names, notes…).
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl HumanDecision {
    pub fn verdict(&self) -> CaseVerdict {
        CaseVerdict {
            outcome: self.outcome,
            reason: self.reason,
            refunds: self.refunds.clone(),
        }
    }
}

/// A line of a history file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

/// Parses a history file: one ticket per non-blank line. Fields beyond docs/spec/interfaces.md are
/// kept aside (see [`extra_field_counts`]). Bad lines (malformed JSON, required fields
/// missing, bad amounts, a customer absent from the ticket's world,
/// a repeated ticket id) are reported by line number and skipped; the rest is returned.
pub fn parse_history(jsonl: &str) -> (Vec<HistoricalTicket>, Vec<LineError>) {
    let mut tickets = Vec::new();
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, text) in jsonl.lines().enumerate() {
        let line = i + 1;
        if text.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<HistoricalTicket>(text)
            .map_err(|e| e.to_string())
            .and_then(|t| validate(&t).map(|()| t));
        match parsed {
            Ok(t) if !seen.insert(t.id.clone()) => errors.push(LineError {
                line,
                message: format!("ticket id {} appears on an earlier line", t.id),
            }),
            Ok(t) => tickets.push(t),
            Err(message) => errors.push(LineError { line, message }),
        }
    }
    (tickets, errors)
}

/// The fields `import history` writes beyond the core format (docs/spec/history.md):
/// the report reads them (the inference, the person) or keeps them for people (the
/// source, tags, subject), so they are never reported as ignored.
pub const IMPORTER_FIELDS: [&str; 5] = [
    "source",
    "tags",
    "subject",
    "human.inference",
    "human.assignee",
];

/// How many tickets carry each field beyond docs/spec/interfaces.md (`messages[].x` and `human.x` for
/// nested ones) and beyond [`IMPORTER_FIELDS`], for the shadow report.
pub fn extra_field_counts(tickets: &[HistoricalTicket]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in tickets {
        let mut names: BTreeSet<String> = t.extra.keys().cloned().collect();
        names.extend(t.human.extra.keys().map(|k| format!("human.{k}")));
        names.retain(|n| !IMPORTER_FIELDS.contains(&n.as_str()));
        for m in &t.messages {
            names.extend(m.extra.keys().map(|k| format!("messages[].{k}")));
        }
        for name in names {
            *counts.entry(name).or_default() += 1;
        }
    }
    counts
}

/// Checks what serde cannot: the ticket is self-consistent and its amounts are money.
fn validate(t: &HistoricalTicket) -> Result<(), String> {
    if t.id.trim().is_empty() {
        return Err("ticket id is empty".into());
    }
    live_ticket(t).map_err(|e| format!("ticket {}: {e}", t.id))?;
    if !t.world.customers.iter().any(|c| c.id == t.customer_id) {
        return Err(format!(
            "ticket {}: customer {} is not in the ticket's world",
            t.id, t.customer_id
        ));
    }
    if t.messages.is_empty() {
        return Err(format!("ticket {}: no messages", t.id));
    }
    if let Some(m) = t
        .messages
        .iter()
        .find(|m| m.text.chars().count() > MAX_MESSAGE_CHARS)
    {
        return Err(format!(
            "ticket {}: a message from {} is longer than {MAX_MESSAGE_CHARS} characters",
            t.id, m.from
        ));
    }
    for order in &t.world.orders {
        Money::parse(&order.amount, order.currency)
            .map_err(|e| format!("ticket {}: order {}: {e}", t.id, order.id))?;
        if !t.world.customers.iter().any(|c| c.id == order.customer_id) {
            return Err(format!(
                "ticket {}: order {} names unknown customer {}",
                t.id, order.id, order.customer_id
            ));
        }
    }
    t.world
        .charges()
        .map_err(|e| format!("ticket {}: charges: {e}", t.id))?;
    for r in &t.human.refunds {
        r.money()
            .map_err(|e| format!("ticket {}: human refund on {}: {e}", t.id, r.charge_id))?;
    }
    Ok(())
}

/// The `Ticket` a live case would have for this historical one; an id that is not one
/// (empty, overlong, a control character) is refused.
pub fn live_ticket(h: &HistoricalTicket) -> Result<Ticket, domain::ids::IdError> {
    let customer = customer_messages(h);
    let first = customer.first().map(String::as_str).unwrap_or_default();
    // The conversation's tiers, split once for the investigator and `resolve` too.
    let tiers = domain::resolve::Tiers::of(&customer);
    let new_words = tiers
        .decisive
        .first()
        .map(String::as_str)
        .unwrap_or_default();
    let region = h
        .world
        .customers
        .iter()
        .find(|c| c.id == h.customer_id)
        .map(|c| c.region);
    Ok(Ticket {
        id: domain::ids::TicketId::parse(h.id.clone())?,
        customer_id: domain::ids::CustomerId::parse(h.customer_id.clone())?,
        order_id: h
            .order_id
            .clone()
            .map(domain::ids::OrderId::parse)
            .transpose()?,
        // A replay answers nobody; a language we do not answer in reads as English.
        language: detect_language_of(new_words, first, region, desk::replies::Language::En),
        created_at: desk::clock::to_ms(h.created_at),
    })
}

/// The customer's messages of a historical ticket, oldest first, as the live loop reads
/// them.
pub fn customer_messages(h: &HistoricalTicket) -> Vec<String> {
    h.messages
        .iter()
        .filter(|m| m.from == "customer")
        .map(|m| m.text.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"id":"H-1","created_at":"2026-08-01T00:00:00Z","customer_id":"C-1","messages":[{"from":"customer","text":"hi","at":"2026-08-01T00:00:00Z"}],"world":{"customers":[{"id":"C-1","name":"A","email":"a@example.com","region":"US"}],"orders":[]},"human":{"outcome":"request_info","reason":"insufficient_info","refunds":[],"decided_by":"agent:x"}}"#;

    #[test]
    fn parse_history_reports_bad_lines_by_number_and_keeps_the_rest() {
        let bad_customer = LINE.replace(r#""customer_id":"C-1""#, r#""customer_id":"C-2""#);
        let text = format!("{LINE}\n\n{{not json\n{bad_customer}\n{LINE}\n");
        let (tickets, errors) = parse_history(&text);
        assert_eq!(tickets.len(), 1);
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 4, 5]);
        assert!(errors[1].message.contains("C-2"), "{}", errors[1].message);
        assert!(errors[2].message.contains("earlier line"));
    }
}
