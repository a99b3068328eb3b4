//! Files a customer attaches on their ticket page ("a saved reply asks for a
//! screenshot, but nobody can attach one"): images (PNG, JPEG, GIF, WebP) and PDF, at
//! most [`MAX_FILE_BYTES`], the type read from the bytes — never from the name or the
//! declared type. Each is kept with a customer message that names it, through the same
//! path as a message (the case hears of it as it hears of words), in the table mail
//! attachments live in (`mailbox::attachments`, its writer), so staff find it on the case
//! page beside the message, as a download.
//!
//! What it deliberately does not do: render, resize or scan a file; serve one inline
//! (the web layer serves every file as a `nosniff` download); show a customer a file of
//! another ticket.

use crate::clock::Clock;
use crate::customer::{add_message_from, Origin};
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::runs::Queue;
use crate::tickets::Ticket;
use mailbox::attachments::{self, Attachment, AttachmentLine};
use store::Db;

/// The largest file a customer may attach: a phone screenshot or a scanned receipt.
pub const MAX_FILE_BYTES: usize = 5 * 1024 * 1024;

/// What the bytes are, by their first bytes (their "magic"), or `None` for anything that
/// is not one of the image or PDF types we take.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && starts(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if starts(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

/// Checks a file before anything is written: its size, then its type from its bytes.
pub fn accept(filename: &str, bytes: &[u8]) -> DomainResult<Attachment> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(DomainError::PayloadTooLarge(format!(
            "a file is at most {MAX_FILE_BYTES} bytes; this one is {}",
            bytes.len()
        )));
    }
    if bytes.is_empty() {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidBody,
            "the file is empty",
        ));
    }
    let content_type = sniff(bytes).ok_or_else(|| {
        DomainError::bad_request(
            ErrorCode::UnsupportedMediaType,
            "only images (PNG, JPEG, GIF, WebP) and PDF files can be attached",
        )
    })?;
    Ok(Attachment {
        filename: mail_message::parse::safe_filename(filename),
        content_type: content_type.to_string(),
        bytes: bytes.to_vec(),
    })
}

/// Attaches a checked file to `ticket` with a message naming it (the customer's own
/// words, as the ticket's conversation shows them). Bad input changes nothing.
pub async fn attach(
    db: &Db,
    clock: &dyn Clock,
    queue: Queue<'_>,
    ticket: &Ticket,
    filename: &str,
    bytes: &[u8],
) -> DomainResult<AttachmentLine> {
    let file = accept(filename, bytes)?;
    let text = format!("📎 {}", file.filename);
    add_message_from(db, clock, queue, ticket, &text, Origin::Upload(&file)).await?;
    let mine = attachments::of_ticket(db, &ticket.id).await?;
    mine.into_iter()
        .rev()
        .find(|a| a.filename == file.filename)
        .ok_or(DomainError::NotFound("attachment"))
}

/// One file of `ticket` with its bytes; a file of another ticket is not found, as an
/// unknown one is (RP-007).
pub async fn file_of_ticket(
    db: &Db,
    ticket: &Ticket,
    id: &str,
) -> DomainResult<(AttachmentLine, Vec<u8>)> {
    let mine = attachments::of_ticket(db, &ticket.id).await?;
    if !mine.iter().any(|a| a.id == id) {
        return Err(DomainError::NotFound("attachment"));
    }
    attachments::load(db, id)
        .await?
        .ok_or(DomainError::NotFound("attachment"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_comes_from_the_bytes_whatever_the_name_says() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(
            accept("receipt.pdf", png).unwrap().content_type,
            "image/png"
        );
        assert_eq!(sniff(b"%PDF-1.7\n"), Some("application/pdf"));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a.."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        for refused in [
            &b"<svg onload=alert(1)>"[..],
            b"<html>",
            b"MZ\x90\0",
            b"RIFF\0\0\0\0WAVE",
        ] {
            let err = accept("photo.png", refused).unwrap_err();
            assert_eq!(err.code(), ErrorCode::UnsupportedMediaType, "{refused:?}");
        }
    }

    #[test]
    fn a_file_over_the_limit_or_empty_is_refused_and_a_name_is_made_safe() {
        let big = vec![b'%'; MAX_FILE_BYTES + 1];
        assert!(matches!(
            accept("a.pdf", &big),
            Err(DomainError::PayloadTooLarge(_))
        ));
        assert!(accept("a.pdf", b"").is_err());
        let file = accept("../../etc/\"shot\".png", b"\x89PNG\r\n\x1a\n").unwrap();
        assert_eq!(file.filename, "shot.png");
    }
}
