//! Policy authoring: drafts of the next version of a document (`drafts`), their
//! validation (`validate`, pure), what-if runs over a team's history or the facts of
//! live cases through `shadow::replay` (`whatif`), and publishing with four eyes
//! (`publish`). Writer of `policy_drafts` and `policy_draft_authors`; a published
//! version's row is written through `desk::policies::versions`.
//!
//! What the workflow itself needs stays below in `desk::policies`: the versions in the
//! database, the set in force and how every instance follows a publish. This crate
//! knows no HTTP and draws nothing (`layers.rs`); `web` and the CLI call it.

pub mod drafts;
pub mod publish;
pub mod validate;
pub mod whatif;

pub use validate::{validate, Problem, ValidationError, VersionText};
