//! A team's own data (docs/spec/history.md): the shop's customers and orders
//! brought in and kept linked to the payment provider.
//!
//! - `records` — one customer or order checked, and upserted (the writer of `customers`
//!   and `orders`; `put_customer`/`put_order` are what a shop backend's `PUT` calls);
//! - `rows` — a CSV or JSON-lines export read a row at a time, with line numbers;
//! - `import` — `import customers|orders FILE`: staged, checked as a set, all or nothing;
//! - `outcome` — what an import says back (its error, links, progress), shared by its steps;
//! - `link` — provider customers found by the id a shop gives or by email;
//! - `charges` — provider charges naming no order of ours, listed for staff to link;
//! - `history` — `import history`: a helpdesk export as the history `shadow` replays.
//!
//! What it deliberately does not do: write anything at the provider, or read a charge's
//! order anywhere but under the configured metadata key (`PAYMENTS_ORDER_KEY`) or a link
//! staff made.

pub mod charges;
pub mod import;
pub mod link;
mod outcome;
pub mod records;
pub mod rows;
