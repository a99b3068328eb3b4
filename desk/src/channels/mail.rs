//! The mail channel's part of a notice: its outbox row, in the caller's transaction
//! (`mailbox::outbox`); `mail::send` renders and sends it later, in each worker pass's
//! [`deliver`]. Its settings are checked here.

use super::{MissingSetting, Reach};
use crate::error::DomainResult;
use crate::mail::send::Postman;
use crate::mail::MailConfig;
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

/// The outbox sent: every mail the changes before this pass wrote.
pub(super) async fn deliver(reach: &Reach<'_>) -> DomainResult<usize> {
    let postman = Postman {
        db: reach.db,
        clock: reach.clock,
        settings: &reach.channels.mail,
        instance_id: reach.instance_id,
    };
    Ok(crate::mail::send::run_once(postman).await?.handled())
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
