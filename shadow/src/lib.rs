//! Shadow mode: the agent beside the people, moving no money.
//!
//! - `replay` — a historical ticket (docs/spec/interfaces.md "Files") replayed entirely in
//!   memory through the workflow's own code: the same loop, tools, facts and policy engine
//!   as a live case, over a snapshot of its billing world; and the policy what-if over a
//!   history or over recorded cases (`policy_diff`, `facts_diff`). Used by `backtest`,
//!   `authoring`'s what-if and `refund-evals`.
//! - `live` — live shadow mode (`SHADOW_MODE=on`): a reviewer decides a case by hand
//!   without seeing the agent's side, the pair is recorded, and the agreement reported.
//!
//! Above the desk: nothing in the workflow calls it. What it deliberately does not own is
//! the pair a reviewer's decision records (`desk::shadow_pairs`, which the workflow writes
//! when a case is decided) and any write at the provider: a replay takes no database and
//! no payments client at all (docs/spec/invariants.md #7).

pub mod live;
pub mod replay;
