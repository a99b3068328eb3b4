//! Saved replies (issue 17): texts a supervisor or admin keeps per language — name,
//! language, text — that staff insert into a reply on a case whose ticket is in that
//! language and edit before sending. Writer of `saved_replies`. It sends nothing: a
//! saved reply reaches a customer only as a staff reply (`conversation`).

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::auth::{Staff, StaffRole};
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::replies::Language;
use store::Db;

/// The longest name of a saved reply, in characters.
const MAX_NAME_CHARS: usize = 80;

/// A saved reply as staff see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SavedReply {
    pub id: String,
    pub name: String,
    pub language: Language,
    pub text: String,
}

/// `POST /api/v1/saved-replies`: a new saved reply.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSavedReply {
    /// Unique within its language, 1 to 80 characters.
    pub name: String,
    /// `en`, `zh` or `ja`.
    pub language: String,
    /// The text, as long as a staff reply may be.
    pub text: String,
}

/// Supervisors and admins manage saved replies; every staff member uses them.
pub fn check_manager(staff: &Staff) -> DomainResult<()> {
    if staff.role >= StaffRole::Supervisor {
        return Ok(());
    }
    Err(DomainError::Forbidden(
        "only a supervisor or an admin manages saved replies".into(),
    ))
}

/// Every saved reply, or those in `language`, by language then name.
pub async fn list(db: &Db, language: Option<Language>) -> DomainResult<Vec<SavedReply>> {
    let rows = sqlx::query(
        "SELECT id, name, language, body FROM saved_replies
         WHERE $1 = '' OR language = $1 ORDER BY language, name",
    )
    .bind(language.map_or("", Language::as_str))
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(SavedReply {
                id: r.try_get("id")?,
                name: r.try_get("name")?,
                language: Language::from_stored(&r.try_get::<String, _>("language")?),
                text: r.try_get("body")?,
            })
        })
        .collect()
}

/// One saved reply, if it exists.
pub async fn find(db: &Db, id: &str) -> DomainResult<Option<SavedReply>> {
    Ok(list(db, None).await?.into_iter().find(|r| r.id == id))
}

/// Checks `input` and stores it with its audit line. A name taken in the language is a
/// conflict; bad input is refused naming the field, and nothing is written.
pub async fn create(
    db: &Db,
    staff: &Staff,
    input: &NewSavedReply,
    now: i64,
) -> DomainResult<SavedReply> {
    check_manager(staff)?;
    let language: Language =
        input
            .language
            .trim()
            .parse()
            .map_err(|e: crate::replies::UnknownLanguage| {
                DomainError::bad_request(ErrorCode::InvalidLanguage, e.to_string())
            })?;
    let name = input.name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidName,
            format!("a saved reply's name is 1 to {MAX_NAME_CHARS} characters"),
        ));
    }
    let text = crate::tickets::validate_message(&input.text)?;
    let reply = SavedReply {
        id: store::new_id("reply"),
        name: name.to_string(),
        language,
        text,
    };
    let mut tx = db.begin().await?;
    let written = sqlx::query(
        "INSERT INTO saved_replies (id, name, language, body, created_by, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (language, name) DO NOTHING",
    )
    .bind(&reply.id)
    .bind(&reply.name)
    .bind(language.as_str())
    .bind(&reply.text)
    .bind(&staff.id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    if written.rows_affected() == 0 {
        return Err(DomainError::conflict(
            ErrorCode::SavedReplyExists,
            format!(
                "a saved reply named '{}' exists in {}",
                reply.name,
                language.as_str()
            ),
        ));
    }
    let detail = format!("{} ({})", reply.name, language.as_str());
    crate::audit::record(
        &mut tx,
        &staff.id,
        "saved_reply_added",
        &reply.id,
        &detail,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(reply)
}

/// Removes a saved reply, with its audit line.
pub async fn delete(db: &Db, staff: &Staff, id: &str, now: i64) -> DomainResult<()> {
    check_manager(staff)?;
    let mut tx = db.begin().await?;
    let gone = sqlx::query("DELETE FROM saved_replies WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    if gone.rows_affected() == 0 {
        return Err(DomainError::NotFound("saved reply"));
    }
    crate::audit::record(&mut tx, &staff.id, "saved_reply_removed", id, "", now).await?;
    tx.commit().await?;
    Ok(())
}
