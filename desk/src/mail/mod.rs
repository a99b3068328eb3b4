//! Email (docs/spec/email.md): customers write to the support address and
//! hear back by mail, whichever way they came in.
//!
//! One raw message read — its parts, whether it proves its sender, its new words — is the
//! `mail-message` crate's, below; here is what a mail does:
//!
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

pub mod bounces;
mod delivery;
pub mod imap_watch;
pub mod inbound;
pub mod intake;
pub mod render;
pub mod send;
pub mod unverified;
