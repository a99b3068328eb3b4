//! One raw RFC 5322 message read into what the mail channel decides with (docs/spec/email.md):
//! who sent it, its ids and thread, its text (every charset and transfer encoding
//! mail-parser decodes: UTF-8, ISO-2022-JP, Shift_JIS, GB18030/GBK, Big5, ISO-8859-x,
//! Windows-125x; quoted-printable and base64; plain text preferred over HTML, HTML turned
//! into text when it is all there is), the messages it forwards, its attachments, and the
//! marks of automatic mail (auto-replies, bounces) and the receiving servers'
//! `Authentication-Results` fields as written (`authentication` reads them).
//!
//! Pure: no I/O and no clock. What it does not do: decide anything (`mail::inbound`) or
//! split new words from the quoted thread (`new_words`).

use mail_parser::{Address, HeaderValue, Message, MessageParser, MimeHeaders, PartType};
use sha2::{Digest, Sha256};

/// What a mail says, in the terms the channel decides with.
#[derive(Debug, Clone, Default)]
pub struct ParsedMail {
    /// The `From` address, normalised (`domain::address::normalise_address`); the display name is
    /// ignored (docs/spec/email.md: matched by address alone).
    pub from: Option<String>,
    /// The key the mail is taken once by: its Message-ID, or `sha256:<hex>` of its bytes.
    pub message_key: String,
    /// Whether the mail carries a Message-ID of its own.
    pub has_message_id: bool,
    /// `In-Reply-To` then `References`, oldest first, without angle brackets.
    pub thread_ids: Vec<String>,
    pub subject: String,
    /// The text the customer wrote, with the text of any forwarded message after it.
    pub text: String,
    pub attachments: Vec<RawAttachment>,
    /// Why this is automatic mail that must never be answered, if it is.
    pub automatic: Option<Automatic>,
    /// Every `Authentication-Results` field's raw value, topmost first: what proves the
    /// sender is decided over them by `authentication`, against the trusted server.
    pub authentication_results: Vec<String>,
}

/// One attachment as the mail carried it.
#[derive(Debug, Clone)]
pub struct RawAttachment {
    pub filename: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// Mail a machine wrote (docs/spec/email.md: never answered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Automatic {
    /// An auto-reply or bulk mail (`Auto-Submitted`, `Precedence`, `X-Autoreply`,
    /// `X-Auto-Response-Suppress`, a mailing list).
    AutoReply(String),
    /// A delivery report or a mail from the mailer daemon (never answered). Only a
    /// delivery-status notification (RFC 3464) says which addresses failed, how, and
    /// which mail it returns; anything else says nothing.
    Bounce(Bounce),
}

/// What a delivery-status notification says (RFC 3464). Empty for any other bounce-like
/// mail: a sender's words are never read as a report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bounce {
    /// Each `Final-Recipient` with its `Status` (`5.1.1` hard, `4.2.2` soft; empty when
    /// the report gives none).
    pub failed: Vec<(String, String)>,
    /// The Message-IDs of the returned mail (its headers, or the whole mail, in the
    /// report's third part), without angle brackets.
    pub returned_ids: Vec<String>,
}

/// A message that could not be read as mail at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("not an RFC 5322 message")]
    NotAMessage,
}

/// Reads one raw message.
pub fn parse(raw: &[u8]) -> Result<ParsedMail, ParseError> {
    if !starts_with_a_header_field(raw) {
        return Err(ParseError::NotAMessage);
    }
    let message = MessageParser::default()
        .parse(raw)
        .filter(|m| !m.headers().is_empty())
        .ok_or(ParseError::NotAMessage)?;
    let from = message
        .from()
        .and_then(first_address)
        .map(|a| domain::address::normalise_address(&a));
    let message_id = message.message_id().map(|id| id.trim().to_string());
    let mut parsed = ParsedMail {
        message_key: message_id
            .clone()
            .filter(|id| !id.is_empty() && id.len() <= 500)
            .unwrap_or_else(|| format!("sha256:{}", hex::encode(Sha256::digest(raw)))),
        has_message_id: message_id.is_some_and(|id| !id.is_empty()),
        from,
        thread_ids: thread_ids(&message),
        subject: message.subject().unwrap_or("").trim().to_string(),
        text: String::new(),
        attachments: Vec::new(),
        automatic: None,
        authentication_results: header_values(&message, "Authentication-Results")
            .into_iter()
            .map(str::to_string)
            .collect(),
    };
    parsed.automatic = automatic(&message, parsed.from.as_deref());
    parsed.text = text_of(&message);
    parsed.attachments = attachments_of(&message, &mut parsed.text);
    Ok(parsed)
}

/// RFC 5322 §2.2: a message begins with a header field, a name of printable US-ASCII
/// characters other than the colon, then a colon. The parser itself takes any bytes as
/// a message without headers' names it knows; this refuses what is plainly no mail.
fn starts_with_a_header_field(raw: &[u8]) -> bool {
    let name_len = raw
        .iter()
        .take_while(|b| (33..=126).contains(*b) && **b != b':')
        .count();
    name_len > 0 && raw.get(name_len) == Some(&b':')
}

fn first_address(address: &Address<'_>) -> Option<String> {
    address.iter().find_map(|a| a.address().map(str::to_string))
}

/// The ids a header lists, without angle brackets.
fn ids_of(value: &HeaderValue<'_>) -> Vec<String> {
    let found: Vec<String> = match value {
        HeaderValue::Text(id) => vec![id.to_string()],
        HeaderValue::TextList(list) => list.iter().map(|id| id.to_string()).collect(),
        _ => Vec::new(),
    };
    found
        .into_iter()
        .map(|id| {
            id.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
        .filter(|id| !id.is_empty())
        .collect()
}

/// `References` oldest first, then `In-Reply-To` (the mail answered) last; each id once.
fn thread_ids(message: &Message<'_>) -> Vec<String> {
    let replied = ids_of(message.in_reply_to());
    let mut ids: Vec<String> = Vec::new();
    for id in ids_of(message.references()) {
        if !replied.contains(&id) && !ids.contains(&id) {
            ids.push(id);
        }
    }
    for id in replied {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The raw value of every header named `name` (case-insensitive).
fn header_values<'a>(message: &'a Message<'_>, name: &str) -> Vec<&'a str> {
    message
        .headers_raw()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
        .collect()
}

/// Why a mail is automatic (RFC 3834 and the headers the big mail systems set), or a
/// bounce (a delivery report, or a mail from the mailer daemon).
fn automatic(message: &Message<'_>, from: Option<&str>) -> Option<Automatic> {
    if let Some(bounce) = bounce(message, from) {
        return Some(Automatic::Bounce(bounce));
    }
    let has = |name: &str| !header_values(message, name).is_empty();
    for value in header_values(message, "Auto-Submitted") {
        if !value.to_ascii_lowercase().starts_with("no") {
            return Some(Automatic::AutoReply(format!("Auto-Submitted: {value}")));
        }
    }
    for value in header_values(message, "Precedence") {
        let value = value.to_ascii_lowercase();
        if ["bulk", "junk", "list", "auto_reply"].contains(&value.as_str()) {
            return Some(Automatic::AutoReply(format!("Precedence: {value}")));
        }
    }
    for name in [
        "X-Autoreply",
        "X-Autorespond",
        "X-Auto-Response-Suppress",
        "List-Id",
    ] {
        if has(name) {
            return Some(Automatic::AutoReply(name.to_string()));
        }
    }
    None
}

/// A bounce: a `multipart/report`, or a mail from the mailer daemon or postmaster.
/// `None` when the mail is no bounce. Only a report of type `delivery-status` is read
/// (`delivery_status`); the rest says nothing.
fn bounce(message: &Message<'_>, from: Option<&str>) -> Option<Bounce> {
    let report = message.root_part().content_type().filter(|ct| {
        ct.c_type.eq_ignore_ascii_case("multipart")
            && ct
                .c_subtype
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case("report"))
    });
    let daemon = from.is_some_and(|f| {
        let local = f.split('@').next().unwrap_or("");
        local.eq_ignore_ascii_case("mailer-daemon") || local.eq_ignore_ascii_case("postmaster")
    });
    if report.is_none() && !daemon {
        return None;
    }
    let delivery_status = report
        .and_then(|ct| ct.attribute("report-type"))
        .is_some_and(|t| t.eq_ignore_ascii_case("delivery-status"));
    Some(if delivery_status {
        delivery_status_of(message)
    } else {
        Bounce::default()
    })
}

/// RFC 3464: the `message/delivery-status` part's recipients and statuses, and the
/// returned mail's Message-ID (`text/rfc822-headers` or `message/rfc822`).
fn delivery_status_of(message: &Message<'_>) -> Bounce {
    let mut bounce = Bounce::default();
    for part in message.parts.iter().skip(1) {
        let (c_type, c_subtype) = part
            .content_type()
            .map(|ct| {
                let sub = ct.c_subtype.as_deref().unwrap_or("").to_ascii_lowercase();
                (ct.c_type.to_ascii_lowercase(), sub)
            })
            .unwrap_or_default();
        match (c_type.as_str(), c_subtype.as_str(), &part.body) {
            ("message", "delivery-status", _) => recipients(part.contents(), &mut bounce),
            (_, _, PartType::Message(returned)) => {
                if let Some(id) = returned.message_id() {
                    bounce.returned_ids.push(bare_id(id));
                }
            }
            ("text" | "message", "rfc822-headers", _) => {
                let text = String::from_utf8_lossy(part.contents());
                let ids = text.lines().filter_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.trim()
                        .eq_ignore_ascii_case("Message-ID")
                        .then(|| bare_id(value))
                });
                bounce.returned_ids.extend(ids);
            }
            _ => {}
        }
    }
    bounce.returned_ids.retain(|id| !id.is_empty());
    bounce
}

fn bare_id(id: &str) -> String {
    id.trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_string()
}

/// The per-recipient fields of a `message/delivery-status` body: each `Final-Recipient`
/// (`rfc822; address`) with the `Status` that follows it.
fn recipients(body: &[u8], bounce: &mut Bounce) {
    for line in String::from_utf8_lossy(body).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.eq_ignore_ascii_case("Final-Recipient") {
            let address = value.rsplit(';').next().unwrap_or("");
            let address = domain::address::normalise_address(address);
            if address.contains('@') {
                bounce.failed.push((address, String::new()));
            }
        } else if name.eq_ignore_ascii_case("Status") {
            if let Some((_, status)) = bounce.failed.last_mut() {
                *status = value.trim().to_string();
            }
        }
    }
}

/// The customer's text: every text part of the body (plain preferred; HTML turned into
/// text where it is all there is), in order.
fn text_of(message: &Message<'_>) -> String {
    let mut parts = Vec::new();
    for n in 0..message.text_body_count() {
        if let Some(text) = message.body_text(n) {
            let text = text.trim();
            if !text.is_empty() {
                parts.push(text.to_string());
            }
        }
    }
    parts.join("\n\n").replace("\r\n", "\n")
}

/// The attachments to keep, and the text of each forwarded message added to `text`
/// (a forwarded receipt is what the customer sends now).
fn attachments_of(message: &Message<'_>, text: &mut String) -> Vec<RawAttachment> {
    let mut kept = Vec::new();
    for part in message.attachments() {
        match &part.body {
            PartType::Message(forwarded) => {
                text.push_str(&forwarded_block(forwarded));
            }
            PartType::Text(_)
            | PartType::Html(_)
            | PartType::Binary(_)
            | PartType::InlineBinary(_) => {
                let content_type = part
                    .content_type()
                    .map(|ct| match ct.c_subtype.as_deref() {
                        Some(sub) => format!("{}/{}", ct.c_type, sub),
                        None => ct.c_type.to_string(),
                    })
                    .unwrap_or_else(|| "application/octet-stream".to_string())
                    .to_ascii_lowercase();
                kept.push(RawAttachment {
                    filename: safe_filename(part.attachment_name().unwrap_or("attachment")),
                    content_type,
                    bytes: part.contents().to_vec(),
                });
            }
            PartType::Multipart(_) => {}
        }
    }
    kept
}

/// A forwarded message as text: a marker line, its sender, date and subject, its text.
fn forwarded_block(forwarded: &Message<'_>) -> String {
    let from = forwarded.from().and_then(first_address).unwrap_or_default();
    let subject = forwarded.subject().unwrap_or("");
    let date = forwarded.date().map(|d| d.to_rfc3339()).unwrap_or_default();
    format!(
        "\n\n---------- Forwarded message ----------\nFrom: {from}\nDate: {date}\nSubject: {subject}\n\n{}",
        text_of(forwarded)
    )
}

/// A file name safe to put in a `Content-Disposition` header and show: no path, no
/// control characters or quotes, at most 120 characters.
pub fn safe_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '"' | '\\' | ';'))
        .take(120)
        .collect();
    let cleaned = cleaned.trim().trim_start_matches('.').to_string();
    if cleaned.is_empty() {
        "attachment".to_string()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn bytes_that_do_not_begin_with_a_header_field_are_no_message() {
        assert_eq!(
            parse(b"\x00\x01 not a mail").unwrap_err(),
            ParseError::NotAMessage
        );
        assert_eq!(
            parse(b"Hello there: no").unwrap_err(),
            ParseError::NotAMessage
        );
        assert!(parse(b"From: a@b.test\r\nSubject: x\r\n\r\nbody").is_ok());
    }

    use super::*;

    fn mail(headers: &str, body: &str) -> Vec<u8> {
        format!("{headers}\r\n\r\n{body}").into_bytes()
    }

    #[test]
    fn the_sender_is_the_from_address_without_its_display_name_and_in_lower_case() {
        let raw = mail(
            "From: \"Li Wei (boss)\" <Li.Wei@Example.CN>\r\nReply-To: attacker@evil.test\r\nTo: support@shop.test\r\nMessage-ID: <abc@example.cn>\r\nSubject: Charged twice",
            "I was charged twice.",
        );
        let parsed = parse(&raw).unwrap();
        assert_eq!(parsed.from.as_deref(), Some("li.wei@example.cn"));
        assert_eq!(parsed.message_key, "abc@example.cn");
        assert_eq!(parsed.text, "I was charged twice.");
        assert_eq!(parsed.automatic, None);
    }

    #[test]
    fn a_mail_without_a_message_id_is_keyed_by_its_bytes() {
        let raw = mail("From: a@b.test\r\nSubject: x", "hello");
        let one = parse(&raw).unwrap();
        assert!(
            one.message_key.starts_with("sha256:"),
            "{}",
            one.message_key
        );
        assert!(!one.has_message_id);
        assert_eq!(parse(&raw).unwrap().message_key, one.message_key);
        let other = mail("From: a@b.test\r\nSubject: x", "hello again");
        assert_ne!(parse(&other).unwrap().message_key, one.message_key);
    }

    #[test]
    fn every_auto_reply_header_marks_the_mail_automatic_and_auto_submitted_no_does_not() {
        let cases = [
            ("Auto-Submitted: auto-replied", true),
            ("Auto-Submitted: auto-generated", true),
            ("Auto-Submitted: no", false),
            ("Precedence: bulk", true),
            ("Precedence: junk", true),
            ("Precedence: list", true),
            ("X-Autoreply: yes", true),
            ("X-Auto-Response-Suppress: All", true),
            ("List-Id: <news.shop.test>", true),
            ("X-Mailer: Thunderbird", false),
        ];
        for (header, automatic) in cases {
            let raw = mail(
                &format!("From: a@b.test\r\n{header}\r\nSubject: Out of office"),
                "away",
            );
            let parsed = parse(&raw).unwrap();
            assert_eq!(parsed.automatic.is_some(), automatic, "{header}");
        }
    }

    #[test]
    fn a_delivery_report_is_a_bounce_naming_the_failed_recipient() {
        let raw = mail(
            "From: Mail Delivery System <MAILER-DAEMON@mx.example.cn>\r\nSubject: Undelivered\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"",
            "--b\r\nContent-Type: text/plain\r\n\r\nIt bounced.\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.cn\r\n\r\nFinal-Recipient: rfc822; Li.Wei@Example.CN\r\nAction: failed\r\nStatus: 5.1.1\r\n--b\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: support@shop.test\r\nMessage-ID: <out_1@shop.test>\r\n--b--\r\n",
        );
        let parsed = parse(&raw).unwrap();
        assert_eq!(
            parsed.automatic,
            Some(Automatic::Bounce(Bounce {
                failed: vec![("li.wei@example.cn".into(), "5.1.1".into())],
                returned_ids: vec!["out_1@shop.test".into()],
            }))
        );
        // The same words from the mailer daemon, not in a report, say nothing.
        let plain = mail(
            "From: MAILER-DAEMON@mx.example.cn\r\nSubject: Undelivered",
            "Final-Recipient: rfc822; li.wei@example.cn\r\nStatus: 5.1.1\r\nMessage-ID: <out_1@shop.test>",
        );
        assert_eq!(
            parse(&plain).unwrap().automatic,
            Some(Automatic::Bounce(Bounce::default()))
        );
    }

    #[test]
    fn every_authentication_results_field_is_kept_topmost_first_and_received_spf_is_not() {
        let raw = mail(
            "Authentication-Results: mx.shop.test; spf=fail\r\nReceived-SPF: Pass\r\nFrom: a@b.test\r\nAuthentication-Results: mx.shop.test;\r\n dmarc=pass header.from=b.test\r\nSubject: x",
            "y",
        );
        let fields = parse(&raw).unwrap().authentication_results;
        assert_eq!(fields.len(), 2, "{fields:?}");
        assert!(fields[0].contains("spf=fail"), "{fields:?}");
        assert!(fields[1].contains("dmarc=pass"), "{fields:?}");
    }

    #[test]
    fn the_thread_lists_references_oldest_first_and_the_answered_mail_last() {
        let raw = mail(
            "From: a@b.test\r\nIn-Reply-To: <out_2@shop.test>\r\nReferences: <first@b.test> <out_1@shop.test> <out_2@shop.test>\r\nSubject: Re: x",
            "y",
        );
        assert_eq!(
            parse(&raw).unwrap().thread_ids,
            vec!["first@b.test", "out_1@shop.test", "out_2@shop.test"]
        );
    }

    #[test]
    fn file_names_lose_paths_quotes_and_control_characters() {
        assert_eq!(safe_filename("../../etc/passwd"), "passwd");
        assert_eq!(safe_filename("C:\\x\\receipt \"1\".pdf"), "receipt 1.pdf");
        assert_eq!(safe_filename("\u{7}"), "attachment");
        assert_eq!(safe_filename(".htaccess"), "htaccess");
    }
}
