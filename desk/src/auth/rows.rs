//! The staff row as every auth module reads it, the checks an email and a password pass
//! before either is kept, and the one rule every change to a person keeps: it voids their
//! open invitation links (docs/spec/roles.md). It stands below `staff`, `login`, `tokens`,
//! `accounts`, `linking` and `provisioning`, which all use it, and imports none of them.

use sqlx::Row;

use super::{Staff, StaffRole};
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::Tx;

/// A staff member from a row holding `id`, `email` and `role`.
pub(crate) fn staff_from_row(r: &sqlx::any::AnyRow) -> DomainResult<Staff> {
    Ok(Staff {
        id: r.try_get("id")?,
        email: r.try_get("email")?,
        role: StaffRole::parse(&r.try_get::<String, _>("role")?)?,
    })
}

/// An email as staff accounts keep it: trimmed, lower case, checked.
pub(crate) fn checked_email(email: &str) -> DomainResult<String> {
    let email = email.trim().to_ascii_lowercase();
    let (local, domain) = email.split_once('@').unwrap_or(("", ""));
    if local.is_empty()
        || !domain.contains('.')
        || email.len() > 254
        || email.contains(char::is_whitespace)
    {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidEmail,
            format!("'{email}' is not an email address"),
        ));
    }
    Ok(email)
}

/// A password long enough to keep.
pub(crate) fn check_password_strength(password: &str) -> DomainResult<()> {
    if password.chars().count() < 8 {
        return Err(DomainError::bad_request(
            ErrorCode::WeakPassword,
            "passwords have at least 8 characters",
        ));
    }
    Ok(())
}

/// Voids every open invitation link of `email` (docs/spec/roles.md: a link is for one
/// person in one state; any change to them ends it).
pub(crate) async fn void_invitations(
    tx: &mut Tx<'_>,
    email: &str,
    now_ms: i64,
) -> DomainResult<()> {
    sqlx::query("UPDATE staff_invites SET used_at = $1 WHERE email = $2 AND used_at IS NULL")
        .bind(now_ms)
        .bind(email)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// [`void_invitations`] for the staff member `staff_id`.
pub(crate) async fn void_invitations_of(
    tx: &mut Tx<'_>,
    staff_id: &str,
    now_ms: i64,
) -> DomainResult<()> {
    sqlx::query(
        "UPDATE staff_invites SET used_at = $1 WHERE used_at IS NULL
           AND email = (SELECT email FROM staff WHERE id = $2)",
    )
    .bind(now_ms)
    .bind(staff_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
