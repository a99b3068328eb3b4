//! An outbox row turned into the bytes of one mail: its words in the recipient's
//! language, rendered by `mail_templates` into a text part and an HTML part, the Message-ID
//! derived from the row, `In-Reply-To`/`References` so the customer's client threads it
//! with the ticket's mails, the ticket's token in the subject, and the sign-in link the
//! caller issued. Every mail we send says it is automatic (`Auto-Submitted`, RFC 3834),
//! so other responders do not answer it and no loop starts.
//!
//! Pure: no store, no clock (the date is passed in), no link
//! issued here.

use mail_builder::headers::raw::Raw;
use mail_builder::MessageBuilder;

use crate::channels::mail::MailSettings;
use crate::replies::{self, Language};
pub use mail_templates::Words;
use mailbox::outbox::{OutboxMail, Recipient};
use mailbox::{message_id, MailKind};

/// What the store says about a row's mail, read by the sender before rendering.
#[derive(Debug, Clone, Default)]
pub struct MailContext {
    /// The address it goes to: the customer's on record, the staff member's, or the
    /// unknown sender's own (docs/spec/email.md: never a `Reply-To`).
    pub recipient: String,
    /// The ticket's subject (its first line), when the mail is about a ticket.
    pub ticket_subject: String,
    /// The ticket's earlier Message-IDs, oldest first (ours and the customer's).
    pub references: Vec<String>,
}

/// The words of `mail`; `link` is the sign-in (customers) or console (staff) address.
pub fn words(mail: &OutboxMail, link: Option<String>) -> Words {
    let lang = Language::from_stored(&mail.language);
    let frame = replies::mail_frame(lang);
    let own = replies::mail_body(lang, mail.kind);
    let mut paragraphs: Vec<String> = Vec::new();
    if mail.kind == MailKind::Closed && !mail.body.trim().is_empty() {
        // A close with a last reply: the reply, then that the case is closed.
        paragraphs.push(mail.body.trim().to_string());
        paragraphs.push(own.to_string());
    } else if !mail.body.trim().is_empty() {
        paragraphs.push(mail.body.trim().to_string());
    } else if !own.is_empty() {
        paragraphs.push(own.to_string());
    }
    let staff = mail.recipient == Recipient::Staff;
    Words {
        lang: lang.as_str(),
        headline: replies::headline(lang, mail.kind).to_string(),
        paragraphs,
        open_label: if staff {
            "Open the case".into()
        } else {
            frame.open_ticket.into()
        },
        link_note: if staff {
            String::new()
        } else {
            frame.link_note.into()
        },
        link,
        reply_note: match mail.kind {
            MailKind::UnknownSender | MailKind::ConfirmSender | MailKind::StaffInvited => {
                String::new()
            }
            _ if staff => String::new(),
            _ => frame.reply_note.into(),
        },
        ticket_line: mail
            .ticket_id
            .as_deref()
            .map(|t| format!("{}: {t}", frame.ticket_label))
            .unwrap_or_default(),
    }
}

/// The mail's bytes.
pub fn render(
    settings: &MailSettings,
    mail: &OutboxMail,
    context: &MailContext,
    words: &Words,
    date_unix_secs: i64,
) -> anyhow::Result<Vec<u8>> {
    let from = settings
        .from
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("MAIL_FROM is not set"))?;
    let lang = Language::from_stored(&mail.language);
    let token = mail.ticket_id.as_deref().unwrap_or("");
    let subject = replies::mail_subject(lang, mail.kind, &context.ticket_subject, token);
    let parts = mail_templates::render(words)?;
    let mut builder = MessageBuilder::new()
        .from(from)
        .to(context.recipient.as_str())
        .subject(subject)
        .message_id(message_id(&mail.id, settings.from_domain()))
        .date(date_unix_secs)
        // RFC 3834: an automatic mail, which no responder should answer (no loops).
        .header("Auto-Submitted", Raw::new("auto-generated"))
        .header("X-Auto-Response-Suppress", Raw::new("All"))
        .text_body(parts.text)
        .html_body(parts.html);
    if let Some(last) = context.references.last() {
        builder = builder
            .in_reply_to(last.clone())
            .references(context.references.clone());
    }
    Ok(builder.write_to_vec()?)
}
