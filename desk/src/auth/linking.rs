//! Who a person the identity provider signed in is at the desk (docs/spec/roles.md): a
//! staff identity is the provider's (issuer, subject). The account linked to that subject
//! is theirs. Otherwise their e-mail address may link them, once, and only when the
//! provider says it is verified: to an account that has no link yet, or to an open
//! invitation (which it spends). A second subject for an account already linked is
//! refused and audited; the link never moves.
//!
//! With groups mapped (`GROUP_ROLES`), the role follows them (someone in no mapped group
//! is refused); without, the staff record's role stands. What it does not do: check the
//! provider's answer (`oidc`) or start a session (`web`).

use sqlx::Row;

use super::oidc::{Identity, OidcSettings, Refused};
use super::provisioning::{GroupRoles, NO_PASSWORD};
use super::rows::staff_from_row;
use super::{Staff, StaffRole};
use store::{new_id, Db, Tx};

/// What the e-mail address of an identity with no account led to.
enum ByEmail {
    Staff(Staff),
    /// The address is an account's that another subject is linked to.
    SecondSubject {
        staff_id: String,
    },
}

/// The staff member `identity` is, linked or created as the module comment says.
pub async fn staff_for(
    db: &Db,
    settings: &OidcSettings,
    group_roles: &GroupRoles,
    identity: &Identity,
    now_ms: i64,
) -> Result<Staff, Refused> {
    let mapped = if group_roles.is_empty() {
        None
    } else {
        Some(
            group_roles
                .role_of(identity.groups.iter().map(String::as_str))
                .ok_or(Refused::NoGroup)?,
        )
    };
    let mut tx = db.begin().await?;
    let staff = match linked(&mut tx, &identity.subject).await? {
        Some(staff) => staff,
        None => match by_email(&mut tx, settings, mapped, identity, now_ms).await? {
            ByEmail::Staff(staff) => staff,
            ByEmail::SecondSubject { staff_id } => {
                let detail = format!("{} as {}", identity.email, identity.subject);
                let action = "sso_second_subject_refused";
                crate::audit::record(&mut tx, "sso", action, &staff_id, &detail, now_ms).await?;
                tx.commit().await?;
                tracing::warn!(
                    staff_id,
                    "a second provider subject for a linked account refused"
                );
                return Err(Refused::LinkedToAnother);
            }
        },
    };
    let role = mapped.unwrap_or(staff.role);
    follow_groups(&mut tx, &staff, role, now_ms).await?;
    tx.commit().await?;
    super::resolved::forget_resolved();
    Ok(Staff { role, ..staff })
}

/// The active account linked to `subject`, if any.
async fn linked(tx: &mut Tx<'_>, subject: &str) -> Result<Option<Staff>, Refused> {
    let row =
        sqlx::query("SELECT id, email, role, deactivated_at FROM staff WHERE oidc_subject = $1")
            .bind(subject)
            .fetch_optional(&mut **tx)
            .await?;
    let Some(row) = row else { return Ok(None) };
    if row.try_get::<Option<i64>, _>("deactivated_at")?.is_some() {
        return Err(Refused::Deactivated);
    }
    Ok(Some(staff_from_row(&row)?))
}

/// An identity with no account yet: its verified address links it to an account with no
/// link, or spends an open invitation (or, with `create_staff`, a mapped group admits it).
async fn by_email(
    tx: &mut Tx<'_>,
    settings: &OidcSettings,
    mapped: Option<StaffRole>,
    identity: &Identity,
    now_ms: i64,
) -> Result<ByEmail, Refused> {
    // docs/spec/roles.md: an address the provider has not verified links nothing.
    if !identity.email_verified {
        return Err(Refused::EmailNotVerified);
    }
    let row = sqlx::query(
        "SELECT id, email, role, deactivated_at, oidc_subject FROM staff WHERE email = $1",
    )
    .bind(&identity.email)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(row) = row {
        let staff = staff_from_row(&row)?;
        if row.try_get::<Option<String>, _>("oidc_subject")?.is_some() {
            return Ok(ByEmail::SecondSubject { staff_id: staff.id });
        }
        if row.try_get::<Option<i64>, _>("deactivated_at")?.is_some() {
            return Err(Refused::Deactivated);
        }
        return link(tx, staff, &identity.subject, now_ms).await;
    }
    let invited = spend_invite(tx, &identity.email, now_ms).await?;
    let role = match (invited, mapped) {
        (_, Some(role)) if invited.is_some() || settings.create_staff => role,
        (Some(role), None) => role,
        _ => return Err(Refused::NotInvited),
    };
    let staff = create(tx, &identity.email, role, now_ms).await?;
    link(tx, staff, &identity.subject, now_ms).await
}

/// Links `staff` to `subject`, only if no link was made meanwhile (a versioned update).
async fn link(
    tx: &mut Tx<'_>,
    staff: Staff,
    subject: &str,
    now_ms: i64,
) -> Result<ByEmail, Refused> {
    let done = sqlx::query(
        "UPDATE staff SET oidc_subject = $1, updated_at = $2 WHERE id = $3 AND oidc_subject IS NULL",
    )
    .bind(subject)
    .bind(now_ms)
    .bind(&staff.id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(ByEmail::SecondSubject { staff_id: staff.id });
    }
    crate::audit::record(tx, "sso", "sso_linked", &staff.id, subject, now_ms).await?;
    Ok(ByEmail::Staff(staff))
}

async fn create(
    tx: &mut Tx<'_>,
    email: &str,
    role: StaffRole,
    now_ms: i64,
) -> Result<Staff, Refused> {
    sqlx::query(
        "INSERT INTO staff (id, email, role, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)",
    )
    .bind(new_id("staff"))
    .bind(email)
    .bind(role.as_str())
    .bind(NO_PASSWORD)
    .bind(now_ms)
    .execute(&mut **tx)
    .await?;
    let row = sqlx::query("SELECT id, email, role FROM staff WHERE email = $1")
        .bind(email)
        .fetch_one(&mut **tx)
        .await?;
    let staff = staff_from_row(&row)?;
    let action = "staff_joined_by_sso";
    crate::audit::record(tx, &staff.id, action, &staff.id, &staff.email, now_ms).await?;
    Ok(staff)
}

/// The role the provider's groups give, recorded and audited when it changes.
async fn follow_groups(
    tx: &mut Tx<'_>,
    staff: &Staff,
    role: StaffRole,
    now_ms: i64,
) -> Result<(), Refused> {
    if role == staff.role {
        return Ok(());
    }
    sqlx::query("UPDATE staff SET role = $1, updated_at = $2 WHERE id = $3")
        .bind(role.as_str())
        .bind(now_ms)
        .bind(&staff.id)
        .execute(&mut **tx)
        .await?;
    let (from, to) = (staff.role.as_str(), role.as_str());
    let detail = format!("{}: {from} → {to} (groups)", staff.email);
    crate::audit::record(tx, "sso", "staff_role_changed", &staff.id, &detail, now_ms).await?;
    Ok(())
}

/// Spends the open invitation for `email`, if any; returns its role.
async fn spend_invite(
    tx: &mut Tx<'_>,
    email: &str,
    now_ms: i64,
) -> Result<Option<StaffRole>, Refused> {
    let row = sqlx::query(
        "SELECT token_hash, role FROM staff_invites WHERE email = $1 AND used_at IS NULL AND expires_at > $2
         ORDER BY created_at DESC LIMIT 1",
    )
    .bind(email)
    .bind(now_ms)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(row) = row else { return Ok(None) };
    // Every open link of that person is spent with it (docs/spec/roles.md: single use).
    sqlx::query("UPDATE staff_invites SET used_at = $1 WHERE email = $2 AND used_at IS NULL")
        .bind(now_ms)
        .bind(email)
        .execute(&mut **tx)
        .await?;
    Ok(Some(StaffRole::parse(&row.try_get::<String, _>("role")?)?))
}
