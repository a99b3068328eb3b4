//! Managing who may sign in (docs/spec/roles.md: "rollout, staff" is an admin's): staff
//! invited by a single-use link — a capability for one person in one state: any change to
//! that person (accepted, deactivated, re-invited, role changed, provisioned) voids every
//! open link of theirs, and a link never changes an active account — their role changed,
//! deactivated (every session and token of theirs gone at once) and reactivated; sessions and tokens listed and revoked by
//! their public id; named tokens with an expiry, for staff and for services (a shop
//! backend's `integration` token, the identity provider's `scim` token). Every change is
//! audited with who made it, in its own transaction.
//!
//! It decides nothing about what a role may do (`web::access` does) and sends no mail: an
//! invitation's link is handed back to whoever made it.

use serde::Serialize;
use sqlx::Row;

use super::resolved::forget_resolved;
use super::rows::{check_password_strength, checked_email, staff_from_row, void_invitations};
use super::tokens::{issue, NewToken};
use super::{hash_password_off_runtime, random_token, token_hash, ServiceKind, Staff, StaffRole};
use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::{new_id, Db, Tx};

/// How long an invitation link works.
pub const INVITE_TTL_MS: i64 = 7 * 24 * 3600 * 1000;
/// The longest a named token may live (a year), and the shortest (a day).
pub const MAX_TOKEN_DAYS: i64 = 366;
const DAY_MS: i64 = 24 * 3600 * 1000;

/// A staff member as an admin manages them.
#[derive(Debug, Clone, Serialize)]
pub struct StaffAccount {
    pub id: String,
    pub email: String,
    pub role: StaffRole,
    pub active: bool,
    /// Browser sessions open now.
    pub sessions: i64,
    pub display_name: Option<String>,
}

/// A credential as it is listed: never the secret, only its public id.
#[derive(Debug, Clone, Serialize)]
pub struct Credential {
    pub token_id: String,
    /// `session`, `api`, `integration` or `scim`.
    pub kind: String,
    pub name: Option<String>,
    pub created_at: String,
    pub expires_at: String,
}

/// Every staff member with whether they may sign in and their open sessions.
pub async fn list_accounts(db: &Db, now_ms: i64) -> DomainResult<Vec<StaffAccount>> {
    let rows = sqlx::query(
        "SELECT s.id, s.email, s.role, s.deactivated_at, s.display_name,
                (SELECT COUNT(*) FROM auth_tokens t WHERE t.subject_kind = 'staff'
                   AND t.subject_id = s.id AND t.kind = 'session' AND t.expires_at > $1) AS sessions
         FROM staff s ORDER BY s.email",
    )
    .bind(now_ms)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            let staff = staff_from_row(r)?;
            Ok(StaffAccount {
                id: staff.id,
                email: staff.email,
                role: staff.role,
                active: r.try_get::<Option<i64>, _>("deactivated_at")?.is_none(),
                sessions: r.try_get("sessions")?,
                display_name: r.try_get("display_name")?,
            })
        })
        .collect()
}

/// The staff member with `id`, active or not.
pub async fn account(db: &Db, staff_id: &str, now_ms: i64) -> DomainResult<StaffAccount> {
    list_accounts(db, now_ms)
        .await?
        .into_iter()
        .find(|a| a.id == staff_id)
        .ok_or(DomainError::NotFound("staff"))
}

/// Deactivates a staff member: from this commit on, none of their sessions or tokens works
/// and they cannot sign in (password or identity provider). Harmless twice.
pub async fn deactivate(db: &Db, actor: &str, staff_id: &str, now_ms: i64) -> DomainResult<()> {
    change(db, actor, staff_id, now_ms, Change::Deactivate).await?;
    tracing::info!(staff_id, "staff member deactivated");
    Ok(())
}

/// Lets a deactivated staff member sign in again (with new credentials).
pub async fn reactivate(db: &Db, actor: &str, staff_id: &str, now_ms: i64) -> DomainResult<()> {
    change(db, actor, staff_id, now_ms, Change::Reactivate).await
}

/// Gives a staff member another role, from their next request on (a role is read with
/// every credential, never kept in one).
pub async fn change_role(
    db: &Db,
    actor: &str,
    staff_id: &str,
    role: StaffRole,
    now_ms: i64,
) -> DomainResult<()> {
    change(db, actor, staff_id, now_ms, Change::Role(role)).await
}

/// What an admin (or the identity provider) changes about a staff member.
enum Change {
    Deactivate,
    Reactivate,
    Role(StaffRole),
}

/// One change to a staff member and its audit line, in one transaction; then the cache of
/// resolved credentials is dropped, so the next request reads the change.
async fn change(
    db: &Db,
    actor: &str,
    staff_id: &str,
    now_ms: i64,
    change: Change,
) -> DomainResult<()> {
    let mut tx = db.begin().await?;
    let staff = staff_in(&mut tx, staff_id).await?;
    let (sql, action, detail) = match &change {
        Change::Deactivate => (
            "UPDATE staff SET deactivated_at = COALESCE(deactivated_at, $1), updated_at = $1 WHERE id = $2",
            "staff_deactivated",
            staff.email.clone(),
        ),
        Change::Reactivate => (
            "UPDATE staff SET deactivated_at = NULL, updated_at = $1 WHERE id = $2",
            "staff_reactivated",
            staff.email.clone(),
        ),
        Change::Role(role) => (
            "UPDATE staff SET role = $3, updated_at = $1 WHERE id = $2",
            "staff_role_changed",
            format!("{}: {} → {}", staff.email, staff.role.as_str(), role.as_str()),
        ),
    };
    let mut query = sqlx::query(sql).bind(now_ms).bind(staff_id);
    if let Change::Role(role) = &change {
        query = query.bind(role.as_str());
    }
    query.execute(&mut *tx).await?;
    if let Change::Deactivate = change {
        sqlx::query("DELETE FROM auth_tokens WHERE subject_kind = 'staff' AND subject_id = $1")
            .bind(staff_id)
            .execute(&mut *tx)
            .await?;
    }
    void_invitations(&mut tx, &staff.email, now_ms).await?;
    crate::audit::record(&mut tx, actor, action, staff_id, &detail, now_ms).await?;
    tx.commit().await?;
    forget_resolved();
    Ok(())
}

async fn staff_in(tx: &mut Tx<'_>, staff_id: &str) -> DomainResult<Staff> {
    let row = sqlx::query("SELECT id, email, role FROM staff WHERE id = $1")
        .bind(staff_id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(DomainError::NotFound("staff"))?;
    staff_from_row(&row)
}

/// The credentials a staff member holds now (sessions and API tokens).
pub async fn credentials_of(db: &Db, staff_id: &str, now_ms: i64) -> DomainResult<Vec<Credential>> {
    credentials(db, "staff", Some(staff_id), now_ms).await
}

/// The service tokens in force (`integration`, `scim`).
pub async fn service_tokens(db: &Db, now_ms: i64) -> DomainResult<Vec<Credential>> {
    credentials(db, "service", None, now_ms).await
}

async fn credentials(
    db: &Db,
    subject_kind: &str,
    subject_id: Option<&str>,
    now_ms: i64,
) -> DomainResult<Vec<Credential>> {
    let rows = sqlx::query(
        "SELECT token_id, kind, name, created_at, expires_at FROM auth_tokens
         WHERE subject_kind = $1 AND ($2 = '' OR subject_id = $2) AND expires_at > $3
         ORDER BY created_at DESC, token_id",
    )
    .bind(subject_kind)
    .bind(subject_id.unwrap_or(""))
    .bind(now_ms)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Credential {
                token_id: r
                    .try_get::<Option<String>, _>("token_id")?
                    .unwrap_or_default(),
                kind: r.try_get("kind")?,
                name: r.try_get("name")?,
                created_at: rfc3339(r.try_get("created_at")?),
                expires_at: rfc3339(r.try_get("expires_at")?),
            })
        })
        .collect()
}

/// Whose a credential is: `(subject_kind, subject_id)`.
pub async fn owner_of(db: &Db, token_id: &str) -> DomainResult<(String, String)> {
    let row = sqlx::query("SELECT subject_kind, subject_id FROM auth_tokens WHERE token_id = $1")
        .bind(token_id)
        .fetch_optional(db.reader())
        .await?
        .ok_or(DomainError::NotFound("token"))?;
    Ok((row.try_get("subject_kind")?, row.try_get("subject_id")?))
}

/// Revokes one credential by its public id; it stops working at once here, and on other
/// instances within their cache's second (`auth::RESOLVED_FRESH`).
pub async fn revoke(db: &Db, actor: &str, token_id: &str, now_ms: i64) -> DomainResult<()> {
    let mut tx = db.begin().await?;
    let gone = sqlx::query("DELETE FROM auth_tokens WHERE token_id = $1")
        .bind(token_id)
        .execute(&mut *tx)
        .await?;
    if gone.rows_affected() == 0 {
        return Err(DomainError::NotFound("token"));
    }
    crate::audit::record(&mut tx, actor, "credential_revoked", token_id, "", now_ms).await?;
    tx.commit().await?;
    forget_resolved();
    Ok(())
}

/// A token's days to live, checked: 1 to [`MAX_TOKEN_DAYS`].
pub fn token_days(days: i64) -> DomainResult<i64> {
    if (1..=MAX_TOKEN_DAYS).contains(&days) {
        Ok(days)
    } else {
        Err(DomainError::bad_request(
            ErrorCode::InvalidExpiry,
            format!("a token lives 1 to {MAX_TOKEN_DAYS} days"),
        ))
    }
}

/// A token's name, checked: 1 to 80 visible characters.
fn token_name(name: &str) -> DomainResult<&str> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 80 || name.chars().any(char::is_control) {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidTokenName,
            "a token's name is 1 to 80 characters",
        ));
    }
    Ok(name)
}

/// A named API token for a staff member, living `days`. Returns the secret (shown once)
/// and its id.
pub async fn issue_staff_token(
    db: &Db,
    actor: &str,
    staff: &Staff,
    name: &str,
    days: i64,
    now_ms: i64,
) -> DomainResult<(String, String)> {
    let new = NewToken {
        kind: "api",
        subject_kind: "staff",
        subject_id: &staff.id,
        name: Some(token_name(name)?),
        ttl_ms: token_days(days)? * DAY_MS,
    };
    issue_audited(db, actor, &new, &staff.email, now_ms).await
}

/// A named service token (`integration` for a shop backend, `scim` for the identity
/// provider), living `days`. Returns the secret (shown once) and its id.
pub async fn issue_service_token(
    db: &Db,
    actor: &str,
    kind: ServiceKind,
    name: &str,
    days: i64,
    now_ms: i64,
) -> DomainResult<(String, String)> {
    let name = token_name(name)?;
    let new = NewToken {
        kind: kind.as_str(),
        subject_kind: "service",
        subject_id: name,
        name: Some(name),
        ttl_ms: token_days(days)? * DAY_MS,
    };
    issue_audited(db, actor, &new, kind.as_str(), now_ms).await
}

/// Issues a token and writes its audit line (who issued it, for whom).
async fn issue_audited(
    db: &Db,
    actor: &str,
    new: &NewToken<'_>,
    detail: &str,
    now_ms: i64,
) -> DomainResult<(String, String)> {
    let issued = issue(db, new, now_ms).await?;
    crate::audit::record_alone(db, actor, "token_issued", &issued.token_id, detail, now_ms).await?;
    Ok((issued.token, issued.token_id))
}

/// An invitation as its link shows it.
#[derive(Debug, Clone)]
pub struct Invite {
    pub email: String,
    pub role: StaffRole,
}

/// Invites `email` as `role`: a single-use link valid [`INVITE_TTL_MS`]. Refused for an
/// email that already has an active account. Returns the link's token.
pub async fn invite(
    db: &Db,
    actor: &str,
    email: &str,
    role: StaffRole,
    now_ms: i64,
) -> DomainResult<String> {
    let email = checked_email(email)?;
    if let Some(existing) = super::staff_by_email(db, &email).await? {
        if is_active(db, &existing.id).await? {
            return Err(DomainError::conflict(
                ErrorCode::AlreadyStaff,
                format!("{email} already has an account"),
            ));
        }
    }
    let token = random_token();
    let mut tx = db.begin().await?;
    // Re-inviting voids the earlier links: only the newest names the person's state.
    void_invitations(&mut tx, &email, now_ms).await?;
    sqlx::query(
        "INSERT INTO staff_invites (token_hash, email, role, invited_by, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token_hash(&token))
    .bind(&email)
    .bind(role.as_str())
    .bind(actor)
    .bind(now_ms + INVITE_TTL_MS)
    .bind(now_ms)
    .execute(&mut *tx)
    .await?;
    let detail = format!("{email} as {}", role.as_str());
    crate::audit::record(&mut tx, actor, "staff_invited", &email, &detail, now_ms).await?;
    tx.commit().await?;
    Ok(token)
}

/// Sends `email` their invitation: `link` is its absolute address (`PUBLIC_URL`, else
/// where the desk is served), through the channels (mail: its outbox row, sent once
/// `SMTP_URL` is set). The link is also shown to whoever invited, once.
pub async fn send_invitation(
    db: &Db,
    email: &str,
    role: StaffRole,
    link: &str,
    now_ms: i64,
) -> DomainResult<()> {
    let email = checked_email(email)?;
    let words = format!(
        "You are invited to join the refund desk as {} {}. Open this link within {} days to choose your password: {link}",
        if role == StaffRole::Agent || role == StaffRole::Admin { "an" } else { "a" },
        role.as_str(),
        INVITE_TTL_MS / (24 * 3600 * 1000),
    );
    let mut tx = db.begin().await?;
    crate::channels::tell_invitee(&mut tx, &email, &words, now_ms).await?;
    tx.commit().await?;
    Ok(())
}

/// The open invitation a link names, or `None` (unknown, used or expired).
pub async fn open_invite(db: &Db, token: &str, now_ms: i64) -> DomainResult<Option<Invite>> {
    let row = sqlx::query(
        "SELECT email, role FROM staff_invites WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2",
    )
    .bind(token_hash(token))
    .bind(now_ms)
    .fetch_optional(db.reader())
    .await?;
    row.map(|r| {
        Ok(Invite {
            email: r.try_get("email")?,
            role: StaffRole::parse(&r.try_get::<String, _>("role")?)?,
        })
    })
    .transpose()
}

/// Accepts an invitation with a password: the account is created (or an inactive one
/// with that email comes back, with the invited role) and the link is spent, in one
/// transaction — two tabs racing get one account between them.
pub async fn accept_invite(
    db: &Db,
    token: &str,
    password: &str,
    now_ms: i64,
) -> DomainResult<Staff> {
    check_password_strength(password)?;
    let invite = open_invite(db, token, now_ms)
        .await?
        .ok_or(DomainError::NotFound("invitation"))?;
    let hash = hash_password_off_runtime(password.to_string()).await?;
    let mut tx = db.begin().await?;
    let spent = sqlx::query(
        "UPDATE staff_invites SET used_at = $1 WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1",
    )
    .bind(now_ms)
    .bind(token_hash(token))
    .execute(&mut *tx)
    .await?;
    if spent.rows_affected() != 1 {
        return Err(DomainError::NotFound("invitation"));
    }
    // A link never changes an active account (it may only have been made before the
    // account became active, by another way in): refused, nothing spent.
    if active_by_email(&mut tx, &invite.email).await? {
        return Err(DomainError::NotFound("invitation"));
    }
    void_invitations(&mut tx, &invite.email, now_ms).await?;
    let staff = create_or_revive(&mut tx, &invite.email, invite.role, &hash, now_ms).await?;
    crate::audit::record(
        &mut tx,
        &staff.id,
        "invitation_accepted",
        &staff.id,
        &staff.email,
        now_ms,
    )
    .await?;
    tx.commit().await?;
    Ok(staff)
}

/// Whether an active staff member has `email`.
async fn active_by_email(tx: &mut Tx<'_>, email: &str) -> DomainResult<bool> {
    let active: Option<i64> = sqlx::query_scalar(
        "SELECT COUNT(*) FROM staff WHERE email = $1 AND deactivated_at IS NULL",
    )
    .bind(email)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(active.unwrap_or(0) > 0)
}

/// Creates a staff member, or brings an inactive one with that email back with `role`
/// and `password_hash` (their old credentials are long gone).
pub(super) async fn create_or_revive(
    tx: &mut Tx<'_>,
    email: &str,
    role: StaffRole,
    password_hash: &str,
    now_ms: i64,
) -> DomainResult<Staff> {
    sqlx::query(
        "INSERT INTO staff (id, email, role, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (email) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash,
             deactivated_at = NULL, updated_at = excluded.updated_at",
    )
    .bind(new_id("staff"))
    .bind(email)
    .bind(role.as_str())
    .bind(password_hash)
    .bind(now_ms)
    .execute(&mut **tx)
    .await?;
    let row = sqlx::query("SELECT id, email, role FROM staff WHERE email = $1")
        .bind(email)
        .fetch_one(&mut **tx)
        .await?;
    staff_from_row(&row)
}

/// Whether a staff member may sign in.
pub async fn is_active(db: &Db, staff_id: &str) -> DomainResult<bool> {
    let row = sqlx::query("SELECT deactivated_at FROM staff WHERE id = $1")
        .bind(staff_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(match row {
        Some(r) => r.try_get::<Option<i64>, _>("deactivated_at")?.is_none(),
        None => false,
    })
}
