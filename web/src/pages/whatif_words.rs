//! A what-if in a lead's words: who must approve how much more or less —
//! "agent → supervisor for 3 tickets, ¥58,400" — instead of the field names that
//! changed ("refund → refund (approver_role)"), and what the draft was compared with
//! ("against RP-004 v2, the version this draft edits").
//!
//! Reads the stored `WhatIf` only; decides nothing and formats money through
//! `domain::money_text` (English, as the console is).

use std::collections::BTreeMap;

use authoring::whatif::ChangedTicket;
use policy_engine::{Currency, Money};

/// What the draft was compared with, in words: `against RP-004 v2, the version this
/// draft edits`; a what-if stored before the base was pinned compared with the versions
/// in force on each ticket's date, and says so.
pub(super) fn compared_with(base: Option<&str>) -> String {
    match base.and_then(|b| b.split_once('@')) {
        Some((doc, version)) => format!("against {doc} v{version}, the version this draft edits"),
        None => "against the versions in force on each ticket's date".into(),
    }
}

/// The role a side asks for, in words; "no approval" when it refunds nothing.
fn role_word(role: &Option<String>) -> &str {
    role.as_deref().unwrap_or("no approval")
}

/// The money a changed ticket puts at stake, per currency: what the draft refunds, else
/// (it refunds nothing there) what the versions in force did.
fn at_stake(ticket: &ChangedTicket) -> Vec<Money> {
    ticket
        .money
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let currency: Currency = serde_json::from_value(c["currency"].clone()).ok()?;
            let amount = |k: &str| Money::parse(c[k].as_str().unwrap_or_default(), currency).ok();
            let to = amount("to")?;
            if to.is_zero() {
                amount("from")
            } else {
                Some(to)
            }
        })
        .filter(|m| !m.is_zero())
        .collect()
}

/// Adds `money` to the sums kept per currency.
fn add(sums: &mut BTreeMap<Currency, Money>, money: Money) {
    let sum = sums
        .entry(money.currency())
        .or_insert_with(|| Money::zero(money.currency()));
    if let Ok(total) = sum.checked_add(&money) {
        *sum = total;
    }
}

/// `¥58,400 + $49.00`: sums per currency, written as English readers write money.
fn money_words(sums: &BTreeMap<Currency, Money>) -> String {
    sums.values()
        .map(|m| domain::money_text::localized(m, "en"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// One line per change of approver: `agent → supervisor for 3 tickets, ¥58,400`, the
/// most tickets first.
pub(super) fn role_shifts(tickets: &[ChangedTicket]) -> Vec<String> {
    type Shift = (usize, BTreeMap<Currency, Money>);
    let mut shifts: BTreeMap<(String, String), Shift> = BTreeMap::new();
    for t in tickets.iter().filter(|t| t.from_role != t.to_role) {
        let key = (
            role_word(&t.from_role).to_string(),
            role_word(&t.to_role).to_string(),
        );
        let (count, sums) = shifts.entry(key).or_default();
        *count += 1;
        for money in at_stake(t) {
            add(sums, money);
        }
    }
    let mut lines: Vec<(usize, String)> = shifts
        .into_iter()
        .map(|((from, to), (count, sums))| {
            let tickets = if count == 1 { "ticket" } else { "tickets" };
            let money = money_words(&sums);
            let money = if money.is_empty() {
                String::new()
            } else {
                format!(", {money}")
            };
            (count, format!("{from} → {to} for {count} {tickets}{money}"))
        })
        .collect();
    lines.sort_by_key(|line| std::cmp::Reverse(line.0));
    lines.into_iter().map(|(_, line)| line).collect()
}

/// One changed ticket: `T-17: refund → refund, approver agent → supervisor, ¥19,800`.
pub(super) fn ticket_line(t: &ChangedTicket) -> String {
    let mut parts = vec![format!("{} → {}", t.from, t.to)];
    if t.from_role != t.to_role {
        parts.push(format!(
            "approver {} → {}",
            role_word(&t.from_role),
            role_word(&t.to_role)
        ));
    }
    let mut sums = BTreeMap::new();
    for money in at_stake(t) {
        add(&mut sums, money);
    }
    let money = money_words(&sums);
    if !money.is_empty() {
        parts.push(money);
    }
    format!("{}: {}", t.id, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ticket(
        id: &str,
        roles: (Option<&str>, Option<&str>),
        money: serde_json::Value,
    ) -> ChangedTicket {
        ChangedTicket {
            id: id.into(),
            changes: vec!["approver_role".into()],
            from: "refund".into(),
            to: "refund".into(),
            money,
            from_role: roles.0.map(String::from),
            to_role: roles.1.map(String::from),
        }
    }

    #[test]
    fn a_change_of_approver_is_said_with_roles_tickets_and_money() {
        let jpy = |a: &str| json!([{"currency": "JPY", "from": a, "to": a, "delta": "0"}]);
        let tickets = [
            ticket("T-1", (Some("agent"), Some("supervisor")), jpy("19800")),
            ticket("T-2", (Some("agent"), Some("supervisor")), jpy("19800")),
            ticket("T-3", (Some("agent"), Some("supervisor")), jpy("18800")),
            ticket(
                "T-4",
                (None, Some("agent")),
                json!([{"currency": "USD", "from": "0.00", "to": "49.00", "delta": "49.00"}]),
            ),
        ];
        assert_eq!(
            role_shifts(&tickets),
            [
                "agent → supervisor for 3 tickets, ¥58,400",
                "no approval → agent for 1 ticket, $49.00"
            ]
        );
        assert_eq!(
            ticket_line(&tickets[0]),
            "T-1: refund → refund, approver agent → supervisor, ¥19,800"
        );
    }

    #[test]
    fn the_comparison_names_the_base_version() {
        assert_eq!(
            compared_with(Some("RP-004@2")),
            "against RP-004 v2, the version this draft edits"
        );
        assert!(compared_with(None).contains("in force on each ticket's date"));
    }

    #[test]
    fn a_what_if_stored_before_roles_were_kept_names_no_shift() {
        let old: ChangedTicket = serde_json::from_value(json!({
            "id": "T-9", "changes": ["outcome"], "from": "escalate", "to": "refund", "money": []
        }))
        .unwrap();
        assert!(role_shifts(std::slice::from_ref(&old)).is_empty());
        assert_eq!(ticket_line(&old), "T-9: escalate → refund");
    }
}
