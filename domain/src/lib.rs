//! Refund desk's domain rules that need nothing but their inputs: how a customer's mail is
//! laid out (`structure`), which of their records a message points at (`resolve`), the
//! outcome a decision comes to (`verdict`), the lifecycle states of cases and refund
//! intents (`states`), and every word the customer is told, in their language
//! (`replies`).
//!
//! No I/O: no database, HTTP, clock, file or template. The crates above hand these
//! functions text and records and get values back; `tests::layers` in the `app` crate
//! checks over `cargo metadata` that this crate never depends on sqlx, axum, reqwest,
//! askama, tokio or any crate of the product above it.

pub mod address;
pub mod backoff;
pub mod error_code;
pub mod ids;
pub mod millis;
pub mod money_text;
pub mod notice;
pub mod phrases;
pub mod reading;
pub mod replies;
pub mod reply_template;
pub mod request;
pub use error_code::ErrorCode;
pub mod resolve;
pub mod script;
pub mod states;
pub mod structure;
pub mod verdict;
