//! Reply clocks (SLA). A case that needs a person and whose customer is waiting
//! for a person's answer runs a clock: the *first reply* clock while no person has written
//! to the customer on the ticket yet, the *next reply* clock after that. It starts at the
//! customer's oldest message that no person has answered — a second "any news?" does not
//! reset it, or the most impatient customers would look the least late — and is due after
//! the target of the team queue the case waits in ([`ReplyTargets`], the same hours the
//! customer's page promises). The AI agent's words do not stop it: they answer the
//! customer, but the case is waiting for a person.
//!
//! What it deliberately does not do: page anyone or move a case. It reads; the queue sorts
//! and badges by it.

use super::queues::{IN_SUPERVISORS_QUEUE, NEEDS_A_PERSON};
use super::{team_queue, Case, ReplyTargets, TeamQueue};

/// When the customer started waiting for a person, as one read finds it (the queue reads
/// it for a page of cases at once: [`WAITING_COLUMNS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// The customer's oldest message no person has answered.
    pub since_ms: i64,
    /// Whether a person has written to the customer on the ticket before.
    pub answered_before: bool,
}

/// Which reply a clock counts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    First,
    Next,
}

/// A running reply clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyClock {
    pub kind: ReplyKind,
    pub since_ms: i64,
    pub due_ms: i64,
}

/// Where a clock stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockState {
    /// Due in this many milliseconds.
    DueIn(i64),
    /// Late by this many milliseconds (zero is late: the target has passed).
    Breached(i64),
}

const HOUR_MS: i64 = 3_600_000;

/// The target of the queue a case waits in: its team queue, or the agents' for a case a
/// person holds outside one (the customer's page says the same: `customer::waits_in`).
fn target_ms(case: &Case, targets: ReplyTargets) -> i64 {
    i64::from(targets.of(team_queue(case).unwrap_or(TeamQueue::Agents))) * HOUR_MS
}

impl ReplyClock {
    /// The clock of `case`, whose customer has waited since `waiting`.
    pub fn of(case: &Case, waiting: Waiting, targets: ReplyTargets) -> ReplyClock {
        ReplyClock {
            kind: match waiting.answered_before {
                true => ReplyKind::Next,
                false => ReplyKind::First,
            },
            since_ms: waiting.since_ms,
            due_ms: waiting.since_ms + target_ms(case, targets),
        }
    }

    pub fn state(&self, now_ms: i64) -> ClockState {
        match self.due_ms - now_ms {
            left if left > 0 => ClockState::DueIn(left),
            left => ClockState::Breached(-left),
        }
    }

    /// Whether the target has passed.
    pub fn is_breached(&self, now_ms: i64) -> bool {
        matches!(self.state(now_ms), ClockState::Breached(_))
    }

    /// The clock in words: "First reply due in 3 h", "Next reply overdue by 20 min".
    pub fn words(&self, now_ms: i64) -> String {
        let kind = match self.kind {
            ReplyKind::First => "First reply",
            ReplyKind::Next => "Next reply",
        };
        match self.state(now_ms) {
            ClockState::DueIn(ms) => format!("{kind} due in {}", span(ms, true)),
            ClockState::Breached(ms) => format!("{kind} overdue by {}", span(ms, false)),
        }
    }

    /// The queue's sort key of a case with this clock, or none (the key's SQL is
    /// [`due_key_sql`]): the due time, and after every clock the cases with none.
    pub fn sort_key(clock: Option<&ReplyClock>) -> i64 {
        clock.map_or(NO_CLOCK, |c| c.due_ms)
    }
}

/// Where cases without a running clock sort: after every due time.
const NO_CLOCK: i64 = i64::MAX / 2;

/// A span in the queue's words: minutes under an hour, hours under two days, then days.
/// Time left is rounded up to the minute and to the nearest hour or day (3 h 59 min left
/// reads "4 h", never "3 h"); time late is counted in whole units passed.
fn span(ms: i64, left: bool) -> String {
    let ms = ms.max(0);
    let minutes = match left {
        true => (ms + 59_999) / 60_000,
        false => ms / 60_000,
    };
    let (hour, day) = match left {
        true => ((minutes + 30) / 60, (minutes + 720) / (24 * 60)),
        false => (minutes / 60, minutes / (24 * 60)),
    };
    match minutes {
        m if m < 60 => format!("{m} min"),
        m if m < 48 * 60 => format!("{hour} h"),
        _ => format!("{day} d"),
    }
}

/// The customer's oldest message after a person's last word on the ticket of `cases c`,
/// while the case needs a person; NULL otherwise.
const WAITING_SINCE: &str = "(SELECT MIN(w.created_at) FROM messages w
     WHERE w.ticket_id = c.ticket_id AND w.author = 'customer'
       AND w.seq > COALESCE((SELECT MAX(p.seq) FROM messages p
           WHERE p.ticket_id = c.ticket_id AND p.author = 'staff'), -1))";

/// Whether a person has written to the customer on the ticket of `cases c`.
const ANSWERED_BEFORE: &str = "EXISTS (SELECT 1 FROM messages p
     WHERE p.ticket_id = c.ticket_id AND p.author = 'staff')";

/// The two columns [`waiting_from_row`] reads, for a `SELECT … FROM cases c`.
pub fn waiting_columns() -> String {
    format!(
        "CASE WHEN {NEEDS_A_PERSON} THEN {WAITING_SINCE} END AS waiting_since,
         CASE WHEN {ANSWERED_BEFORE} THEN CAST(1 AS BIGINT) ELSE CAST(0 AS BIGINT) END AS answered_before"
    )
}

/// The [`Waiting`] of a row with [`waiting_columns`]; `None` when no clock runs.
pub fn waiting_from_row(row: &sqlx::any::AnyRow) -> Result<Option<Waiting>, sqlx::Error> {
    use sqlx::Row;
    let since: Option<i64> = row.try_get("waiting_since")?;
    let answered: i64 = row.try_get("answered_before")?;
    Ok(since.map(|since_ms| Waiting {
        since_ms,
        answered_before: answered != 0,
    }))
}

/// [`ReplyClock::sort_key`] as SQL over `cases c`: the same due time, from the same
/// targets, written into the SQL as numbers (they are settings, never request text).
pub fn due_key_sql(targets: ReplyTargets) -> String {
    let supervisors = i64::from(targets.supervisors_hours) * HOUR_MS;
    let agents = i64::from(targets.agents_hours) * HOUR_MS;
    format!(
        "COALESCE(CASE WHEN {NEEDS_A_PERSON} THEN {WAITING_SINCE} + (CASE
             WHEN {IN_SUPERVISORS_QUEUE} THEN {supervisors} ELSE {agents} END) END, {NO_CLOCK})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_is_due_then_breached_and_says_so() {
        let clock = ReplyClock {
            kind: ReplyKind::First,
            since_ms: 0,
            due_ms: 4 * HOUR_MS,
        };
        assert_eq!(clock.state(HOUR_MS), ClockState::DueIn(3 * HOUR_MS));
        assert_eq!(clock.words(HOUR_MS), "First reply due in 3 h");
        assert_eq!(clock.state(4 * HOUR_MS), ClockState::Breached(0));
        let next = ReplyClock {
            kind: ReplyKind::Next,
            ..clock
        };
        assert_eq!(
            next.words(4 * HOUR_MS + 20 * 60_000),
            "Next reply overdue by 20 min"
        );
        assert!(ReplyClock::sort_key(Some(&clock)) < ReplyClock::sort_key(None));
        // Time left rounds up, time late down.
        assert_eq!(clock.words(60_000), "First reply due in 4 h");
        assert_eq!(clock.words(4 * HOUR_MS - 1), "First reply due in 1 min");
        assert_eq!(
            clock.words(5 * HOUR_MS - 1),
            "First reply overdue by 59 min"
        );
    }
}
