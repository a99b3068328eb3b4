//! Staff accounts: created or updated with an argon2id hash, looked up, listed, unlocked.

use super::rows::{check_password_strength, checked_email, staff_from_row, void_invitations};
use super::{hash_password_off_runtime, Staff, StaffRole};
use crate::error::{DomainError, DomainResult};
use store::{new_id, Db};

/// Adds a staff member or updates their role and password. Every session and token the
/// person held is revoked in the same transaction: whoever knew the old password, or
/// held a token issued under the old role, keeps nothing.
pub async fn upsert_staff(
    db: &Db,
    email: &str,
    role: StaffRole,
    password: &str,
    now_ms: i64,
) -> DomainResult<Staff> {
    let email = checked_email(email)?;
    check_password_strength(password)?;
    let hash = hash_password_off_runtime(password.to_string()).await?;
    let id = new_id("staff");
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO staff (id, email, role, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (email) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash,
             deactivated_at = NULL",
    )
    .bind(&id)
    .bind(&email)
    .bind(role.as_str())
    .bind(&hash)
    .bind(now_ms)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "DELETE FROM auth_tokens WHERE subject_kind = 'staff'
         AND subject_id = (SELECT id FROM staff WHERE email = $1)",
    )
    .bind(&email)
    .execute(&mut *tx)
    .await?;
    void_invitations(&mut tx, &email, now_ms).await?;
    tx.commit().await?;
    super::resolved::forget_resolved();
    staff_by_email(db, &email)
        .await?
        .ok_or(DomainError::NotFound("staff"))
}

pub async fn staff_by_email(db: &Db, email: &str) -> DomainResult<Option<Staff>> {
    let row = sqlx::query("SELECT id, email, role FROM staff WHERE email = $1")
        .bind(email.trim().to_ascii_lowercase())
        .fetch_optional(db.pool())
        .await?;
    row.map(|r| staff_from_row(&r)).transpose()
}

/// Forgets an account's failed logins (`refund-agent staff unlock`, the admin's unlock
/// button); returns how many there were.
pub async fn unlock_staff(db: &Db, email: &str) -> DomainResult<u64> {
    let done = sqlx::query("DELETE FROM login_failures WHERE email = $1")
        .bind(email.trim().to_ascii_lowercase())
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected())
}

/// Who may be given a case (assignment from a list, not a typed email): active
/// staff whose role works cases (agents, supervisors, admins), by email.
pub async fn assignable_staff(db: &Db) -> DomainResult<Vec<Staff>> {
    let rows = sqlx::query(
        "SELECT id, email, role FROM staff
          WHERE deactivated_at IS NULL AND role IN ('agent', 'supervisor', 'admin')
          ORDER BY email",
    )
    .fetch_all(db.reader())
    .await?;
    rows.iter().map(staff_from_row).collect()
}

/// Every staff member, by email.
pub async fn list_staff(db: &Db) -> DomainResult<Vec<Staff>> {
    let rows = sqlx::query("SELECT id, email, role FROM staff ORDER BY email")
        .fetch_all(db.reader())
        .await?;
    rows.iter().map(staff_from_row).collect()
}
