//! Email (docs/spec/email.md): customers write to the support address and
//! hear back by mail, whichever way they came in.
//!
//! - [`parse`]: one raw message read (charsets, encodings, parts, automatic mail);
//! - [`new_words`]: the seam that splits new words from the quoted thread (the domain's
//!   reader replaces its body);
//! - [`authentication`]: whether a mail proves its sender (the trusted server's
//!   `Authentication-Results`, RFC 8601, and DMARC's alignment);
//! - [`unverified`]: a mail that does not: its ticket waits for the customer's sign-in;
//! - [`bounces`]: a delivery-status notification about a mail of ours (hard or soft);
//! - [`inbound`]: what a mail does — who wrote, which ticket, held or taken — for both
//!   `POST /api/v1/inbound/email` and the watched mailbox;
//! - [`imap_watch`]: the mailbox at `IMAP_URL` (IDLE where offered, else polling);
//! - [`render`] and [`send`]: the outbox's rows rendered once (text + HTML, a Message-ID
//!   of their own, a fresh sign-in link) and sent over `SMTP_URL` with retries.
//!
//! The rows themselves are `mailbox`'s; the channel's settings (`MailSettings`) and its
//! part of a notice are `channels::mail`'s. What this module does not do: decide refunds
//! (a mail only opens or continues a ticket, as the page does), or answer automatic mail.

pub mod authentication;
pub mod bounces;
mod delivery;
pub mod imap_watch;
pub mod inbound;
pub mod intake;
pub mod new_words;
pub mod parse;
pub mod render;
pub mod send;
pub mod unverified;
