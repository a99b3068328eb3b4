//! The payments adapter: the only way the app reaches the payment provider, over HTTP,
//! in the provider's wire format (a Stripe-compatible subset).
//!
//! It reads charges and refunds and creates refunds with an `Idempotency-Key` the caller
//! derived and stored beforehand. Retries follow the provider's rules (network errors,
//! 409, 5xx unless `Stripe-Should-Retry: false`, 429 only for `lock_timeout`) with a
//! bounded backoff, always with the same key and the same parameters. When a create may
//! have reached the provider but no answer came back, the result is `Unknown`: the caller
//! must reconcile, never guess (docs/spec/invariants.md #5).
//!
//! A crate of its own below the desk: it knows the provider's wire, not cases, intents
//! or the database; the desk decides what a provider's answer means for a refund.

mod client;
mod error;
mod objects;
pub mod signature;
#[cfg(test)]
mod wire_tests;

pub use client::{PaymentsClient, RefundRequest, DEFAULT_ORDER_KEY, STRIPE_VERSION};
pub use error::{ProviderError, ProviderErrorBody};
pub use objects::{ProviderCharge, ProviderCustomer, ProviderRefund, NULL_REFUND_STATUS};
