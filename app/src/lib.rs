//! `refund-agent`, the binary: its command line (`cli`), the batch shadow report
//! (`shadow`), and the wiring of the crates below it (`desk` for records and workflow,
//! `web` for HTTP, `store` for the database, `domain` for the pure rules).
//!
//! Nothing below imports from here; the crate graph is the architecture
//! (`docs/architecture` in ARCHITECTURE.md, checked by the `layers` test).

pub mod cli;
pub mod shadow;
