//! Replaying historical tickets (shadow mode, policy what-ifs) entirely in memory.
//!
//! A historical ticket (docs/spec/interfaces.md "Files") carries its own billing world as it stood when
//! the ticket was opened. [`replay_ticket`] runs the agent loop on it over a
//! `desk::billing::WorldBilling` snapshot, then gathers the facts with
//! `workflow::gather_facts` and asks the policy engine, exactly as a live case does.
//!
//! The loop is the live one, not a copy: [`investigate`] calls `harness::run_loop` with
//! the same tools, rules and limits as `investigation` — the same order of checks, the same
//! budgets (steps, tool calls, tokens as the model reports them, model errors, invalid
//! tool calls, wall time), the same refusal of a turn that tries to act or claims an
//! approval, the same call ids, the same truncated history shown to the model, the same
//! handoff reason and summary. Where live commits each step to the run's SQL log, replay
//! gives the loop a `harness::MemoryLog` ([`Investigation::events`]). On the LLM path
//! the same two read-only readers run first, each on a `MemoryLog` of its own, joined on
//! the same shared budget (`investigation::children::gather_in_memory`), and the parent
//! is briefed with what they found, as live. Only the dependency-wait budget has no
//! counterpart: the snapshot is never unavailable.
//!
//! What this module deliberately does not have: a database, a payments client or an
//! `Services`. No function here takes one, so a replay cannot write a record, move money
//! or send a reply by construction (docs/spec/invariants.md #7). The one clock it reads is a
//! stopwatch for the wall-time budget (the system clock unless a caller injects one,
//! [`investigate_with_clock`]); the ticket's date comes from the ticket. The built-in
//! investigator takes microseconds, so its replays come out the same on any machine, at
//! any later date (docs/spec/invariants.md #9).
//!
//! The order of the decision is resolved by `workflow::gather_facts_resolved`, exactly
//! as live: the ticket form's order first, then the conversation, then the records.
mod diff;
mod history;
mod ticket;

pub use diff::{
    facts_diff, policy_diff, policy_diff_with_model, DiffEntry, DiffReport, DiffSide, MoneyChange,
    RecordedCase, TicketError,
};
pub use domain::verdict::{CaseOutcome, CaseVerdict, RefundRecord};
pub use history::{
    extra_field_counts, live_ticket, parse_history, HistoricalMessage, HistoricalTicket,
    HumanDecision, LineError,
};
pub use ticket::{
    decide, investigate, investigate_with_clock, replay_ticket, replay_ticket_pinned, verdict,
    Investigation, ReplayError, ReplayResult,
};
