//! Refund desk's test harness, kept out of the production library: the
//! scenario eval suite (`suite`, the `refund-evals eval` command), the historical-ticket
//! generators (`generate`, `refund-evals generate-history`) and the scripted, partly
//! misbehaving models that tests and scenarios drive the real agent loop with
//! (`scripted`).
//!
//! Layering: this crate depends on the `app` library and nothing in `app` depends on
//! it, except `app`'s integration tests and benches, as a dev-dependency (which cargo
//! allows: those link the same `app` library this crate does). What it deliberately
//! does not do: reach into the app's tables or the provider behind their APIs — the
//! suite drives the HTTP router, the worker and the mock's admin API, as a user would.

pub mod generate;
pub mod scripted;
pub mod suite;
