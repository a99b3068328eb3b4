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
//! The rows themselves are `mailbox`'s. What this module does not do: decide refunds
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

use std::time::Duration;

use lettre::{AsyncSmtpTransport, Tokio1Executor};

/// The mailbox `IMAP_URL` names: `imap://user:pass@host:port/MAILBOX` or `imaps://…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImapTarget {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub mailbox: String,
}

impl ImapTarget {
    /// Reads `IMAP_URL`; the user name and password are percent-decoded (`%40` for `@`).
    pub fn parse(url: &str) -> Result<ImapTarget, String> {
        let parsed = reqwest::Url::parse(url.trim()).map_err(|e| format!("not a URL ({e})"))?;
        let tls = match parsed.scheme() {
            "imap" => false,
            "imaps" => true,
            other => return Err(format!("expected imap:// or imaps://, got '{other}://'")),
        };
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| "the user or password is not valid UTF-8".to_string())
        };
        let user = decode(parsed.username())?;
        let password = decode(parsed.password().unwrap_or(""))?;
        let host = parsed.host_str().unwrap_or("").to_string();
        if user.is_empty() || password.is_empty() || host.is_empty() {
            return Err(
                "IMAP_URL needs a user, a password and a host: imap://user:pass@host:port/INBOX"
                    .into(),
            );
        }
        let mailbox = percent_decode(parsed.path().trim_start_matches('/'))
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "INBOX".to_string());
        Ok(ImapTarget {
            tls,
            port: parsed.port().unwrap_or(if tls { 993 } else { 143 }),
            host,
            user,
            password,
            mailbox,
        })
    }
}

/// `%XX` decoding of a URL part.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// What the process sends and takes mail with: the support address, where links point,
/// the SMTP transport, the watched mailbox, the inbound token and the retry wait. Each
/// part is absent when its setting is: the product then runs without it.
#[derive(Clone)]
pub struct MailSettings {
    /// `MAIL_FROM`: the support address (mail comes from it; mail from it is ours).
    pub from: Option<String>,
    /// `PUBLIC_URL` (links in mail), without a trailing slash.
    pub public_url: String,
    pub smtp: Option<AsyncSmtpTransport<Tokio1Executor>>,
    pub imap: Option<ImapTarget>,
    /// `INBOUND_EMAIL_TOKEN`.
    pub inbound_token: Option<String>,
    /// `MAIL_AUTHSERV_ID`: the one receiving server whose `Authentication-Results` can
    /// prove a sender; unset, none can.
    pub authserv_id: Option<String>,
    /// The first retry's wait, in ms; each later one doubles it, up to an hour.
    pub retry_ms: i64,
}

impl std::fmt::Debug for MailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailSettings")
            .field("from", &self.from)
            .field("public_url", &self.public_url)
            .field("smtp", &self.smtp.is_some())
            .field("imap", &self.imap.as_ref().map(|i| (&i.host, i.port)))
            .field("inbound_token", &self.inbound_token.is_some())
            .field("authserv_id", &self.authserv_id)
            .finish()
    }
}

/// How long one SMTP exchange may take before the attempt counts as failed.
const SMTP_TIMEOUT: Duration = Duration::from_secs(20);

/// Where links in mail point when `PUBLIC_URL` is unset (`serve`'s default address).
pub const DEFAULT_PUBLIC_URL: &str = "http://127.0.0.1:8080";

impl MailSettings {
    /// The settings `config` describes. A malformed `SMTP_URL` was refused when parsed.
    pub fn from_config(
        config: &MailConfig,
        public_url: Option<&str>,
    ) -> anyhow::Result<MailSettings> {
        let smtp = match &config.smtp_url {
            Some(url) => Some(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| anyhow::anyhow!("SMTP_URL: {e}"))?
                    .timeout(Some(SMTP_TIMEOUT))
                    .build(),
            ),
            None => None,
        };
        let imap = match &config.imap_url {
            Some(url) => {
                Some(ImapTarget::parse(url).map_err(|e| anyhow::anyhow!("IMAP_URL: {e}"))?)
            }
            None => None,
        };
        Ok(MailSettings {
            from: config.from.clone(),
            public_url: public_url
                .unwrap_or(DEFAULT_PUBLIC_URL)
                .trim_end_matches('/')
                .to_string(),
            smtp,
            imap,
            inbound_token: config.inbound_token.clone(),
            authserv_id: config.authserv_id.clone(),
            retry_ms: i64::try_from(config.retry.as_millis()).unwrap_or(30_000),
        })
    }

    /// No mail at all (tests and tools that build a state without settings).
    pub fn off() -> MailSettings {
        MailSettings {
            from: None,
            public_url: DEFAULT_PUBLIC_URL.to_string(),
            smtp: None,
            imap: None,
            inbound_token: None,
            authserv_id: None,
            retry_ms: 30_000,
        }
    }

    /// The support address's domain, where our Message-IDs live.
    pub fn from_domain(&self) -> &str {
        self.from
            .as_deref()
            .and_then(|f| f.split_once('@'))
            .map_or("refund-desk.invalid", |(_, domain)| domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_imap_url_gives_its_user_password_host_port_and_mailbox() {
        let target =
            ImapTarget::parse("imap://support%40shop.test:test-pass@127.0.0.1:1143/INBOX").unwrap();
        assert_eq!(
            target,
            ImapTarget {
                tls: false,
                host: "127.0.0.1".into(),
                port: 1143,
                user: "support@shop.test".into(),
                password: "test-pass".into(),
                mailbox: "INBOX".into(),
            }
        );
        let tls = ImapTarget::parse("imaps://u:p@mail.example").unwrap();
        assert!(tls.tls);
        assert_eq!((tls.port, tls.mailbox.as_str()), (993, "INBOX"));
        assert!(
            ImapTarget::parse("imap://127.0.0.1:1143/INBOX").is_err(),
            "no user"
        );
        assert!(ImapTarget::parse("http://u:p@h/INBOX").is_err(), "not imap");
    }
}

/// The mail settings (docs/spec/email.md), empty strings unset.
#[derive(Debug, Clone, Default)]
pub struct MailConfig {
    pub smtp_url: Option<String>,
    pub from: Option<String>,
    pub imap_url: Option<String>,
    pub inbound_token: Option<String>,
    /// `MAIL_AUTHSERV_ID`: the receiving server whose `Authentication-Results` is read
    /// (`authentication`).
    pub authserv_id: Option<String>,
    /// The first retry's wait; each later one doubles it (`mail::send`).
    pub retry: Duration,
}
