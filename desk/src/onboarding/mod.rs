//! A team's own data (docs/spec/history.md): the shop's customers and orders, kept
//! linked to the payment provider.
//!
//! - `records` — one customer or order checked, and upserted (the writer of `customers`
//!   and `orders`; `put_customer`/`put_order` are what a shop backend's `PUT` calls);
//! - `charges` — provider charges naming no order of ours, listed for staff to link.
//!
//! A shop's whole export (`import customers|orders FILE`) is brought in by the
//! `shop-import` crate above the desk, through `records`' checks; a helpdesk's history
//! (`import history`) by `backtest`.
//!
//! What it deliberately does not do: write anything at the provider, or read a charge's
//! order anywhere but under the configured metadata key (`PAYMENTS_ORDER_KEY`) or a link
//! staff made.

pub mod charges;
pub mod records;
