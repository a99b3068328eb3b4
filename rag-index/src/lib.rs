//! Versioned policy search: the refund policy sections in a tantivy index.
//!
//! One tantivy document per policy section (`doc@version#section`), BM25 ranking with
//! title boosts and phrase queries, filters for the date a version is in force, status
//! (drafts only on request), region and product. Chinese queries go through a fixed
//! glossary ([`glossary`]) before parsing. The API is small and synchronous: the app
//! calls it from `spawn_blocking`.
//!
//! The index is disposable. It records [`SCHEMA_VERSION`](store::SCHEMA_VERSION) and a hash of the policy
//! documents; when either differs, or the directory is corrupt or foreign, it is rebuilt
//! from the policy files, never patched. Rebuilds write a new generation directory and
//! swap a pointer file atomically, so searches never see a half-built index.
//!
//! What this crate does not do: read policy files (callers parse them with
//! [`policy_engine::PolicyDocument::parse`] and pass the documents in), decide anything
//! (that is `policy-engine`), read the clock (the caller supplies `as_of`), or run
//! async code.

pub mod error;
pub mod eval;
pub mod generate;
pub mod glossary;
mod index;
mod passage;
mod query;
mod request;
mod schema;
mod store;
mod top;

pub use error::IndexError;
pub use index::{policy_hash, PolicyIndex};
pub use passage::Passage;
pub use request::{SearchQuery, MAX_LIMIT};
pub use store::SCHEMA_VERSION;
