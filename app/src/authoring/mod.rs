//! Policy authoring (issue 22): drafts of the next version of a policy document, their
//! validation, what-if runs against history, and publishing.
//!
//! `validate` is pure (strings and a date in, typed problems out).

pub mod validate;

pub use validate::{validate, Problem, ValidationError, VersionText};
