//! Attachments of customer mail: kept within limits, served to staff only as downloads
//! (`Content-Disposition: attachment`, `nosniff`), never rendered (docs/spec/email.md).
//! Stored base64 in the database (TEXT only, as every table is), so a backup holds them.

use base64::Engine;
use sqlx::Row;

use crate::error::{MailboxError, MailboxResult};
use store::{new_id, Db, Tx};

/// One attachment as staff see it listed.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct AttachmentLine {
    pub id: String,
    pub message_seq: i64,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
}

/// Keeps one attachment of the message `seq` of `ticket_id`.
pub async fn store(
    tx: &mut Tx<'_>,
    ticket_id: &str,
    seq: i64,
    filename: &str,
    content_type: &str,
    bytes: &[u8],
    now: i64,
) -> MailboxResult<String> {
    let id = new_id("att");
    sqlx::query(
        "INSERT INTO mail_attachments (id, ticket_id, message_seq, filename, content_type, size, content, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(ticket_id)
    .bind(seq)
    .bind(filename)
    .bind(content_type)
    .bind(bytes.len() as i64)
    .bind(base64::engine::general_purpose::STANDARD.encode(bytes))
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// A ticket's attachments, by message.
pub async fn of_ticket(db: &Db, ticket_id: &str) -> MailboxResult<Vec<AttachmentLine>> {
    let rows = sqlx::query(
        "SELECT id, message_seq, filename, content_type, size FROM mail_attachments
         WHERE ticket_id = $1 ORDER BY message_seq, created_at, id",
    )
    .bind(ticket_id)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(AttachmentLine {
                id: r.try_get("id")?,
                message_seq: r.try_get("message_seq")?,
                filename: r.try_get("filename")?,
                content_type: r.try_get("content_type")?,
                size: r.try_get("size")?,
            })
        })
        .collect()
}

/// One attachment's line and bytes.
pub async fn load(db: &Db, id: &str) -> MailboxResult<Option<(AttachmentLine, Vec<u8>)>> {
    let row = sqlx::query(
        "SELECT id, message_seq, filename, content_type, size, content FROM mail_attachments WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(db.reader())
    .await?;
    let Some(r) = row else { return Ok(None) };
    let content: String = r.try_get("content")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(content)
        .map_err(|e| MailboxError::Corrupt(format!("stored attachment {id}: {e}")))?;
    let line = AttachmentLine {
        id: r.try_get("id")?,
        message_seq: r.try_get("message_seq")?,
        filename: r.try_get("filename")?,
        content_type: r.try_get("content_type")?,
        size: r.try_get("size")?,
    };
    Ok(Some((line, bytes)))
}

/// An attachment taken from a mail, before it is stored.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}
