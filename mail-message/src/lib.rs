//! One raw mail, read (docs/spec/email.md): no I/O, no store, nothing sent or served.
//!
//! - [`parse`]: its headers and parts in every charset a customer writes in, its
//!   attachments, and whether it is automatic mail (auto-replies, bounces, lists);
//! - [`authentication`]: whether it proves its sender — the trusted server's
//!   `Authentication-Results` (RFC 8601) and DMARC's alignment;
//! - [`new_words`]: its new words apart from the quoted thread (the domain's reading of
//!   structure decides where the thread starts).
//!
//! What a mail then does — which ticket, held or taken, proven or waiting — is the desk's
//! (`desk::mail`), above.

pub mod authentication;
pub mod new_words;
pub mod parse;
