//! Internal notes on a case (`case_notes`, its writer): staff-only text kept apart from
//! the ticket's `messages`, so no customer surface — the ticket page, the ticket API, a
//! tool — can read one by accident: they only ever read `messages`.

use serde::Serialize;
use sqlx::Row;

use crate::clock::rfc3339;
use crate::error::DomainResult;
use store::{new_id, Db, Tx};

/// An internal note as staff see it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct NoteView {
    pub id: String,
    /// The email of the staff member who wrote it.
    pub author: String,
    pub body: String,
    pub at: String,
}

/// Stores a note (already validated by the caller) and returns its id.
pub async fn add_note(
    tx: &mut Tx<'_>,
    case_id: &str,
    staff_id: &str,
    body: &str,
    now: i64,
) -> DomainResult<String> {
    let id = new_id("note");
    sqlx::query(
        "INSERT INTO case_notes (id, case_id, staff_id, body, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&id)
    .bind(case_id)
    .bind(staff_id)
    .bind(body)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// A case's notes, oldest first.
pub async fn notes(db: &Db, case_id: &str) -> DomainResult<Vec<NoteView>> {
    let rows = sqlx::query(
        "SELECT n.id, s.email, n.body, n.created_at FROM case_notes n JOIN staff s ON s.id = n.staff_id
         WHERE n.case_id = $1 ORDER BY n.created_at, n.id",
    )
    .bind(case_id)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(NoteView {
                id: r.try_get("id")?,
                author: r.try_get("email")?,
                body: r.try_get("body")?,
                at: rfc3339(r.try_get("created_at")?),
            })
        })
        .collect()
}
