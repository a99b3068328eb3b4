//! The mail tables (docs/spec/email.md): the outbox every mail we send is
//! written to, the mail we took in, the attachments kept from it, and what we know of an
//! address (undeliverable, already told it is unknown). The one crate that writes them.
//!
//! It stands below the desk so that every transaction that makes a customer-facing
//! change — in the desk's `customer`, `conversation`, `approvals`, `refunds`, `workflow`,
//! `cases` — tells the customer through `desk::channels`, whose mail channel writes the
//! row here ([`outbox::to_customer`]), so the mail commits or rolls back with the change.
//! What it deliberately does not do: render, send or parse mail (that is `desk::mail`),
//! decide who wrote a mail, or choose what a caller is shown of its errors
//! ([`MailboxError`], which the desk maps).

pub mod addresses;
pub mod attachments;
mod error;
pub mod inbound;
pub mod outbox;

pub use error::{MailboxError, MailboxResult};
pub use outbox::{message_id, outbox_id_of, MailKind};
