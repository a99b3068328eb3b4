//! The mail channel: its settings (`SMTP_URL`, `MAIL_FROM`, `IMAP_URL`, …) as configured
//! ([`MailConfig`]), checked, and as the process runs with them ([`MailSettings`]); its
//! part of a notice, an outbox row in the caller's transaction (`mailbox::outbox`), which
//! `crate::mail::send` renders and sends later, in each worker pass (`crate::reach`).

use std::time::Duration;

use lettre::{AsyncSmtpTransport, Tokio1Executor};

use super::MissingSetting;
use crate::error::DomainResult;
use domain::notice::Notice;
use mailbox::outbox;
use store::Tx;

/// Mail in or out needs the support address: our own mail is never answered, and every
/// mail we send comes from it.
pub(super) fn check(config: &MailConfig) -> Result<(), MissingSetting> {
    let why = "it is the address mail comes from and customers write to";
    if config.from.is_some() {
        return Ok(());
    }
    let with = match (&config.smtp_url, &config.imap_url) {
        (Some(_), _) => "SMTP_URL",
        (None, Some(_)) => "IMAP_URL",
        (None, None) => return Ok(()),
    };
    Err(MissingSetting {
        needed: "MAIL_FROM",
        with,
        why,
    })
}

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

    /// The support address's domain, where our Message-IDs live.
    pub fn from_domain(&self) -> &str {
        self.from
            .as_deref()
            .and_then(|f| f.split_once('@'))
            .map_or("refund-desk.invalid", |(_, domain)| domain)
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

pub(super) async fn customer(
    tx: &mut Tx<'_>,
    notice: Notice,
    ticket_id: &str,
    words: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_customer(tx, notice, ticket_id, words, now).await?;
    Ok(())
}

pub(super) async fn staff(
    tx: &mut Tx<'_>,
    notice: Notice,
    staff_id: &str,
    case_id: &str,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_staff(tx, notice, staff_id, case_id, why, now).await?;
    Ok(())
}

pub(super) async fn invitee(
    tx: &mut Tx<'_>,
    address: &str,
    words: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_invitee(tx, address, words, now).await?;
    Ok(())
}

pub(super) async fn supervisors(
    tx: &mut Tx<'_>,
    case_id: &str,
    why: &str,
    now: i64,
) -> DomainResult<()> {
    outbox::to_supervisors(tx, case_id, why, now).await?;
    Ok(())
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

    #[test]
    fn mail_in_or_out_without_the_support_address_is_refused_naming_both_settings() {
        let smtp = MailConfig {
            smtp_url: Some("smtp://127.0.0.1:2525".into()),
            ..MailConfig::default()
        };
        let refused = check(&smtp).expect_err("SMTP_URL without MAIL_FROM");
        assert!(refused
            .to_string()
            .starts_with("MAIL_FROM must be set with SMTP_URL"));
        let imap = MailConfig {
            imap_url: Some("imap://u:p@127.0.0.1:1143/INBOX".into()),
            ..MailConfig::default()
        };
        let refused = check(&imap).expect_err("IMAP_URL without MAIL_FROM");
        assert!(refused
            .to_string()
            .starts_with("MAIL_FROM must be set with IMAP_URL"));
        let whole = MailConfig {
            from: Some("support@shop.example".into()),
            ..smtp
        };
        assert!(check(&whole).is_ok());
        assert!(check(&MailConfig::default()).is_ok(), "no mail at all runs");
    }
}
