//! Backtesting, above the workflow: a team's past tickets imported from its helpdesk
//! with the billing world as it stood at each (`history_import`), replayed with the agent
//! beside what the team decided, and every disagreement in exactly one class with what
//! to do about it (this crate's `shadow`, `shadow::classes`; docs/guides/backtesting.md).
//! It replays through the `shadow` crate's `replay`, which reaches no database and no
//! provider, so nothing a backtest does touches the live desk. The live shadow mode (a
//! hand decision beside the agent's on today's tickets) is that crate's `live`.

pub mod history_import;
pub mod shadow;
