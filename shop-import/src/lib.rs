//! The shop importer (docs/spec/history.md): a team's customers and orders brought in
//! from its shop's export, and its customers linked to the payment provider's.
//!
//! - `import` — `import customers|orders FILE`: staged, checked as a set, all or nothing;
//! - `rows` — a CSV or JSON-lines export read a row at a time, with line numbers (also
//!   how `backtest` reads a helpdesk's CSV);
//! - `outcome` — what an import says back (its error, links, progress), shared by its steps;
//! - `link` — provider customers found by the id a shop gives or by email.
//!
//! Above the desk: each row is checked, and the tables written, by the rules of their one
//! writer, `desk::onboarding::records`; nothing in the desk calls it. What it
//! deliberately does not do: write anything at the provider, or link charges to orders
//! (that is `desk::onboarding::charges`, which the workflow reads).

pub mod import;
pub mod link;
mod outcome;
pub mod rows;
