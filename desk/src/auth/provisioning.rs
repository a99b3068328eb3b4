//! Staff provisioned by the company's identity provider over SCIM 2.0 (RFC 7643/7644):
//! people created, updated, deactivated and deleted, and groups whose members take the
//! role the group is mapped to (`GroupRoles`, `GROUP_ROLES`). The wire shapes are
//! `web::scim`'s; this module keeps the rules and the rows.
//!
//! A provisioned person has no password (they sign in through the identity provider); a
//! deleted one is deactivated and no longer a SCIM resource, the row kept for the audit
//! trail. Every change is audited with the SCIM token's name as the actor.
//!
//! One file because users and groups are written in the same transactions (a group's
//! members take its role, a user's groups are read with them); split, each half would reach
//! into the other's rows.

use serde::Serialize;
use sqlx::Row;

use super::resolved::forget_resolved;
use super::rows::staff_from_row;
use super::{Staff, StaffRole};
use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::{new_id, Db, Tx};

/// The password hash of a person who signs in only through the identity provider: no
/// password verifies against it.
pub const NO_PASSWORD: &str = "!provisioned";

/// Which group gives which role: `support=agent,leads=supervisor`. Group names compare
/// case-insensitively; a person in several mapped groups takes the highest role.
#[derive(Debug, Clone, Default)]
pub struct GroupRoles(Vec<(String, StaffRole)>);

impl GroupRoles {
    pub fn parse(text: &str) -> Result<GroupRoles, String> {
        let mut pairs = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (group, role) = pair
                .split_once('=')
                .ok_or_else(|| format!("'{pair}' is not group=role"))?;
            let role = StaffRole::parse(role.trim()).map_err(|e| e.to_string())?;
            pairs.push((group.trim().to_lowercase(), role));
        }
        Ok(GroupRoles(pairs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The highest role any of `groups` maps to, if any does.
    pub fn role_of<'a>(&self, groups: impl IntoIterator<Item = &'a str>) -> Option<StaffRole> {
        groups
            .into_iter()
            .filter_map(|g| {
                let g = g.to_lowercase();
                self.0.iter().find(|(name, _)| *name == g).map(|(_, r)| *r)
            })
            .max()
    }
}

/// What provisioning needs besides the store: the role of a person in no mapped group,
/// and the mapping.
#[derive(Clone, Copy)]
pub struct Provisioner<'a> {
    pub db: &'a Db,
    pub default_role: StaffRole,
    pub group_roles: &'a GroupRoles,
    /// Who acts, for the audit log (the SCIM token's name).
    pub actor: &'a str,
    pub now_ms: i64,
}

/// A provisioned person as SCIM shows them.
#[derive(Debug, Clone, Serialize)]
pub struct ScimUser {
    pub id: String,
    pub user_name: String,
    pub display_name: Option<String>,
    pub external_id: Option<String>,
    pub active: bool,
    pub role: StaffRole,
    pub groups: Vec<(String, String)>,
    pub created: String,
    pub last_modified: String,
}

/// The attributes a SCIM client sets on a person.
#[derive(Debug, Clone, Default)]
pub struct UserFields {
    pub user_name: Option<String>,
    pub display_name: Option<Option<String>>,
    pub external_id: Option<Option<String>>,
    pub active: Option<bool>,
}

/// A user name as SCIM sends it (for us, the person's email): 1 to 254 visible
/// characters, kept in lower case.
fn user_name(name: &str) -> DomainResult<String> {
    let name = name.trim();
    if name.is_empty()
        || name.len() > 254
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidValue,
            "userName is 1 to 254 characters without spaces",
        ));
    }
    Ok(name.to_lowercase())
}

const USER_COLUMNS: &str =
    "id, email, role, display_name, external_id, deactivated_at, created_at, updated_at";

async fn user_row(db_or_tx: &mut Tx<'_>, id: &str) -> DomainResult<Option<sqlx::any::AnyRow>> {
    Ok(sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {USER_COLUMNS} FROM staff WHERE id = $1 AND scim_deleted_at IS NULL"
    )))
    .bind(id)
    .fetch_optional(&mut **db_or_tx)
    .await?)
}

async fn user_of(tx: &mut Tx<'_>, row: &sqlx::any::AnyRow) -> DomainResult<ScimUser> {
    let staff = staff_from_row(row)?;
    let groups = sqlx::query(
        "SELECT g.id, g.display_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id
         WHERE m.staff_id = $1 ORDER BY g.display_name",
    )
    .bind(&staff.id)
    .fetch_all(&mut **tx)
    .await?
    .iter()
    .map(|g| Ok((g.try_get("id")?, g.try_get("display_name")?)))
    .collect::<DomainResult<Vec<_>>>()?;
    let created: i64 = row.try_get("created_at")?;
    Ok(ScimUser {
        user_name: staff.email,
        role: staff.role,
        id: staff.id,
        display_name: row.try_get("display_name")?,
        external_id: row.try_get("external_id")?,
        active: row.try_get::<Option<i64>, _>("deactivated_at")?.is_none(),
        groups,
        created: rfc3339(created),
        last_modified: rfc3339(
            row.try_get::<Option<i64>, _>("updated_at")?
                .unwrap_or(created),
        ),
    })
}

/// One provisioned person, or `NotFound` (deleted ones included).
pub async fn get_user(db: &Db, id: &str) -> DomainResult<ScimUser> {
    let mut tx = db.begin().await?;
    let row = user_row(&mut tx, id)
        .await?
        .ok_or(DomainError::NotFound("user"))?;
    let user = user_of(&mut tx, &row).await?;
    tx.commit().await?;
    Ok(user)
}

/// A filter SCIM clients send: `attribute eq "value"` on `userName`, `externalId`,
/// `displayName` or `id` (RFC 7644 §3.4.2.2; other forms are refused as `invalidFilter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EqFilter {
    pub attribute: String,
    pub value: String,
}

impl EqFilter {
    pub fn parse(text: &str, attributes: &[&str]) -> DomainResult<EqFilter> {
        let invalid = || {
            DomainError::bad_request(
                ErrorCode::InvalidFilter,
                format!(
                    "supported filters: <attribute> eq \"value\" with attribute one of {}",
                    attributes.join(", ")
                ),
            )
        };
        let mut parts = text.trim().splitn(3, char::is_whitespace);
        let (Some(attribute), Some(op), Some(value)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        let attribute = attributes
            .iter()
            .find(|a| a.eq_ignore_ascii_case(attribute))
            .ok_or_else(invalid)?;
        let value = value.trim();
        if !op.eq_ignore_ascii_case("eq")
            || value.len() < 2
            || !value.starts_with('"')
            || !value.ends_with('"')
        {
            return Err(invalid());
        }
        Ok(EqFilter {
            attribute: attribute.to_string(),
            value: value[1..value.len() - 1].replace("\\\"", "\""),
        })
    }
}

/// The provisioned people matching `filter`, one page (`start` from 1), and how many match.
pub async fn list_users(
    db: &Db,
    filter: Option<&EqFilter>,
    start: i64,
    count: i64,
) -> DomainResult<(Vec<ScimUser>, i64)> {
    let (condition, value) = match filter {
        None => ("$1 = $1", String::new()),
        Some(f) => match f.attribute.as_str() {
            "userName" => ("email = $1", f.value.to_lowercase()),
            "externalId" => ("external_id = $1", f.value.clone()),
            "displayName" => ("display_name = $1", f.value.clone()),
            _ => ("id = $1", f.value.clone()),
        },
    };
    let where_ = format!("scim_deleted_at IS NULL AND {condition}");
    let mut tx = db.begin().await?;
    let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM staff WHERE {where_}"
    )))
    .bind(&value)
    .fetch_one(&mut *tx)
    .await?;
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {USER_COLUMNS} FROM staff WHERE {where_} ORDER BY created_at, id LIMIT $2 OFFSET $3"
    )))
    .bind(&value)
    .bind(count.clamp(0, 200))
    .bind((start.max(1) - 1).max(0))
    .fetch_all(&mut *tx)
    .await?;
    let mut users = Vec::with_capacity(rows.len());
    for row in &rows {
        users.push(user_of(&mut tx, row).await?);
    }
    tx.commit().await?;
    Ok((users, total))
}

/// Creates a provisioned person (no password; the default role until a mapped group
/// says otherwise). A user name already taken by a person SCIM knows is a conflict; one
/// of a deleted or never-provisioned account is taken over.
pub async fn create_user(p: Provisioner<'_>, fields: &UserFields) -> DomainResult<ScimUser> {
    let name = user_name(fields.user_name.as_deref().unwrap_or(""))?;
    let mut tx = p.db.begin().await?;
    // RFC 7644 §3.3: a user name taken by a person SCIM can see is `uniqueness`; the
    // client then finds them with a filter. A deleted one's row is taken over.
    let taken: Option<Option<i64>> =
        sqlx::query_scalar("SELECT scim_deleted_at FROM staff WHERE email = $1")
            .bind(&name)
            .fetch_optional(&mut *tx)
            .await?;
    if taken.is_some_and(|deleted| deleted.is_none()) {
        return Err(DomainError::conflict(
            ErrorCode::Uniqueness,
            format!("userName '{name}' is taken"),
        ));
    }
    let id = new_id("staff");
    sqlx::query(
        "INSERT INTO staff (id, email, role, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (email) DO UPDATE SET scim_deleted_at = NULL, deactivated_at = NULL, updated_at = excluded.updated_at",
    )
    .bind(&id)
    .bind(&name)
    .bind(p.default_role.as_str())
    .bind(NO_PASSWORD)
    .bind(p.now_ms)
    .execute(&mut *tx)
    .await?;
    let id: String = sqlx::query_scalar("SELECT id FROM staff WHERE email = $1")
        .bind(&name)
        .fetch_one(&mut *tx)
        .await?;
    apply(&mut tx, p, &id, fields).await?;
    crate::audit::record(&mut tx, p.actor, "scim_user_created", &id, &name, p.now_ms).await?;
    let row = user_row(&mut tx, &id)
        .await?
        .ok_or(DomainError::NotFound("user"))?;
    let user = user_of(&mut tx, &row).await?;
    tx.commit().await?;
    Ok(user)
}

/// Sets the given fields of person `id` (`PUT` gives every field, `PATCH` some).
pub async fn update_user(
    p: Provisioner<'_>,
    id: &str,
    fields: &UserFields,
) -> DomainResult<ScimUser> {
    let mut tx = p.db.begin().await?;
    user_row(&mut tx, id)
        .await?
        .ok_or(DomainError::NotFound("user"))?;
    if let Some(name) = &fields.user_name {
        let name = user_name(name)?;
        let other: Option<String> =
            sqlx::query_scalar("SELECT id FROM staff WHERE email = $1 AND id <> $2")
                .bind(&name)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        if other.is_some() {
            return Err(DomainError::conflict(
                ErrorCode::Uniqueness,
                format!("userName '{name}' is taken"),
            ));
        }
        sqlx::query("UPDATE staff SET email = $1 WHERE id = $2")
            .bind(&name)
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    apply(&mut tx, p, id, fields).await?;
    crate::audit::record(&mut tx, p.actor, "scim_user_updated", id, "", p.now_ms).await?;
    let row = user_row(&mut tx, id)
        .await?
        .ok_or(DomainError::NotFound("user"))?;
    let user = user_of(&mut tx, &row).await?;
    tx.commit().await?;
    forget_resolved();
    Ok(user)
}

/// The fields other than the user name, and `active`: a person made inactive loses every
/// session and token in the same transaction.
async fn apply(
    tx: &mut Tx<'_>,
    p: Provisioner<'_>,
    id: &str,
    fields: &UserFields,
) -> DomainResult<()> {
    if let Some(display) = &fields.display_name {
        sqlx::query("UPDATE staff SET display_name = $1 WHERE id = $2")
            .bind(display.as_deref())
            .bind(id)
            .execute(&mut **tx)
            .await?;
    }
    if let Some(external) = &fields.external_id {
        sqlx::query("UPDATE staff SET external_id = $1 WHERE id = $2")
            .bind(external.as_deref())
            .bind(id)
            .execute(&mut **tx)
            .await?;
    }
    match fields.active {
        Some(false) => {
            sqlx::query(
                "UPDATE staff SET deactivated_at = COALESCE(deactivated_at, $1) WHERE id = $2",
            )
            .bind(p.now_ms)
            .bind(id)
            .execute(&mut **tx)
            .await?;
            sqlx::query("DELETE FROM auth_tokens WHERE subject_kind = 'staff' AND subject_id = $1")
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        Some(true) => {
            sqlx::query("UPDATE staff SET deactivated_at = NULL WHERE id = $1")
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        None => {}
    }
    sqlx::query("UPDATE staff SET updated_at = $1 WHERE id = $2")
        .bind(p.now_ms)
        .bind(id)
        .execute(&mut **tx)
        .await?;
    // docs/spec/roles.md: any change to a person voids every open invitation of theirs.
    super::rows::void_invitations_of(tx, id, p.now_ms).await
}

/// Deletes a provisioned person: deactivated, out of every group, no longer a SCIM
/// resource. Their approvals and audit lines keep their name.
pub async fn delete_user(p: Provisioner<'_>, id: &str) -> DomainResult<()> {
    let mut tx = p.db.begin().await?;
    user_row(&mut tx, id)
        .await?
        .ok_or(DomainError::NotFound("user"))?;
    let fields = UserFields {
        active: Some(false),
        ..UserFields::default()
    };
    apply(&mut tx, p, id, &fields).await?;
    sqlx::query("DELETE FROM scim_group_members WHERE staff_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE staff SET scim_deleted_at = $1 WHERE id = $2")
        .bind(p.now_ms)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    crate::audit::record(&mut tx, p.actor, "scim_user_deleted", id, "", p.now_ms).await?;
    tx.commit().await?;
    forget_resolved();
    Ok(())
}

/// A group as SCIM shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ScimGroup {
    pub id: String,
    pub display_name: String,
    pub external_id: Option<String>,
    /// `(member id, user name)`: the name when the id is a staff member's.
    pub members: Vec<(String, Option<String>)>,
    pub created: String,
    pub last_modified: String,
}

/// What a SCIM client sets on a group; `members` replaces the membership when given.
#[derive(Debug, Clone, Default)]
pub struct GroupFields {
    pub display_name: Option<String>,
    pub external_id: Option<Option<String>>,
    pub members: Option<Vec<String>>,
    pub add_members: Vec<String>,
    pub remove_members: Vec<String>,
}

async fn group_of(tx: &mut Tx<'_>, id: &str) -> DomainResult<ScimGroup> {
    let row = sqlx::query("SELECT id, display_name, external_id, created_at, updated_at FROM scim_groups WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(DomainError::NotFound("group"))?;
    let members = sqlx::query(
        "SELECT m.staff_id, s.email FROM scim_group_members m LEFT JOIN staff s ON s.id = m.staff_id
         WHERE m.group_id = $1 ORDER BY m.staff_id",
    )
    .bind(id)
    .fetch_all(&mut **tx)
    .await?
    .iter()
    .map(|m| Ok((m.try_get("staff_id")?, m.try_get::<Option<String>, _>("email")?)))
    .collect::<DomainResult<Vec<_>>>()?;
    Ok(ScimGroup {
        id: row.try_get("id")?,
        display_name: row.try_get("display_name")?,
        external_id: row.try_get("external_id")?,
        members,
        created: rfc3339(row.try_get("created_at")?),
        last_modified: rfc3339(row.try_get("updated_at")?),
    })
}

pub async fn get_group(db: &Db, id: &str) -> DomainResult<ScimGroup> {
    let mut tx = db.begin().await?;
    let group = group_of(&mut tx, id).await?;
    tx.commit().await?;
    Ok(group)
}

pub async fn list_groups(
    db: &Db,
    filter: Option<&EqFilter>,
    start: i64,
    count: i64,
) -> DomainResult<(Vec<ScimGroup>, i64)> {
    let (condition, value) = match filter {
        None => ("$1 = $1", String::new()),
        Some(f) => match f.attribute.as_str() {
            "displayName" => ("display_name = $1", f.value.clone()),
            "externalId" => ("external_id = $1", f.value.clone()),
            _ => ("id = $1", f.value.clone()),
        },
    };
    let mut tx = db.begin().await?;
    let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM scim_groups WHERE {condition}"
    )))
    .bind(&value)
    .fetch_one(&mut *tx)
    .await?;
    let ids: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM scim_groups WHERE {condition} ORDER BY created_at, id LIMIT $2 OFFSET $3"
    )))
    .bind(&value)
    .bind(count.clamp(0, 200))
    .bind((start.max(1) - 1).max(0))
    .fetch_all(&mut *tx)
    .await?;
    let mut groups = Vec::with_capacity(ids.len());
    for id in &ids {
        groups.push(group_of(&mut tx, id).await?);
    }
    tx.commit().await?;
    Ok((groups, total))
}

/// Creates a group; its members take its role when its name is mapped.
pub async fn create_group(p: Provisioner<'_>, fields: &GroupFields) -> DomainResult<ScimGroup> {
    let name = group_name(fields.display_name.as_deref().unwrap_or(""))?;
    let id = new_id("grp");
    let mut tx = p.db.begin().await?;
    let taken: Option<String> =
        sqlx::query_scalar("SELECT id FROM scim_groups WHERE display_name = $1")
            .bind(&name)
            .fetch_optional(&mut *tx)
            .await?;
    if taken.is_some() {
        return Err(DomainError::conflict(
            ErrorCode::Uniqueness,
            format!("group '{name}' exists"),
        ));
    }
    sqlx::query(
        "INSERT INTO scim_groups (id, display_name, external_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)",
    )
    .bind(&id)
    .bind(&name)
    .bind(fields.external_id.clone().flatten())
    .bind(p.now_ms)
    .execute(&mut *tx)
    .await?;
    let touched = set_members(&mut tx, &id, fields).await?;
    reassign_roles(&mut tx, p, &touched).await?;
    crate::audit::record(&mut tx, p.actor, "scim_group_created", &id, &name, p.now_ms).await?;
    let group = group_of(&mut tx, &id).await?;
    tx.commit().await?;
    forget_resolved();
    Ok(group)
}

/// Changes a group (name, external id, members); members' roles follow in the same
/// transaction.
pub async fn update_group(
    p: Provisioner<'_>,
    id: &str,
    fields: &GroupFields,
) -> DomainResult<ScimGroup> {
    let mut tx = p.db.begin().await?;
    let before = group_of(&mut tx, id).await?;
    if let Some(name) = &fields.display_name {
        sqlx::query("UPDATE scim_groups SET display_name = $1 WHERE id = $2")
            .bind(group_name(name)?)
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    if let Some(external) = &fields.external_id {
        sqlx::query("UPDATE scim_groups SET external_id = $1 WHERE id = $2")
            .bind(external.as_deref())
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    let mut touched = set_members(&mut tx, id, fields).await?;
    // A renamed group may map to another role: everyone in it is reconsidered.
    touched.extend(before.members.into_iter().map(|(staff, _)| staff));
    sqlx::query("UPDATE scim_groups SET updated_at = $1 WHERE id = $2")
        .bind(p.now_ms)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    reassign_roles(&mut tx, p, &touched).await?;
    crate::audit::record(&mut tx, p.actor, "scim_group_updated", id, "", p.now_ms).await?;
    let group = group_of(&mut tx, id).await?;
    tx.commit().await?;
    forget_resolved();
    Ok(group)
}

pub async fn delete_group(p: Provisioner<'_>, id: &str) -> DomainResult<()> {
    let mut tx = p.db.begin().await?;
    let group = group_of(&mut tx, id).await?;
    sqlx::query("DELETE FROM scim_group_members WHERE group_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM scim_groups WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let touched: Vec<String> = group.members.into_iter().map(|(s, _)| s).collect();
    reassign_roles(&mut tx, p, &touched).await?;
    crate::audit::record(
        &mut tx,
        p.actor,
        "scim_group_deleted",
        id,
        &group.display_name,
        p.now_ms,
    )
    .await?;
    tx.commit().await?;
    forget_resolved();
    Ok(())
}

fn group_name(name: &str) -> DomainResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidValue,
            "displayName is 1 to 200 characters",
        ));
    }
    Ok(name.to_string())
}

/// Applies a membership change; returns the member ids whose groups changed. A member id
/// naming no staff member is kept (the client may send the group before the person) and
/// gives nobody a role.
async fn set_members(
    tx: &mut Tx<'_>,
    group: &str,
    fields: &GroupFields,
) -> DomainResult<Vec<String>> {
    let mut touched = Vec::new();
    if let Some(members) = &fields.members {
        let old: Vec<String> =
            sqlx::query_scalar("SELECT staff_id FROM scim_group_members WHERE group_id = $1")
                .bind(group)
                .fetch_all(&mut **tx)
                .await?;
        sqlx::query("DELETE FROM scim_group_members WHERE group_id = $1")
            .bind(group)
            .execute(&mut **tx)
            .await?;
        touched.extend(old);
        touched.extend(add_members(tx, group, members).await?);
    }
    touched.extend(add_members(tx, group, &fields.add_members).await?);
    for member in &fields.remove_members {
        sqlx::query("DELETE FROM scim_group_members WHERE group_id = $1 AND staff_id = $2")
            .bind(group)
            .bind(member)
            .execute(&mut **tx)
            .await?;
        touched.push(member.clone());
    }
    Ok(touched)
}

async fn add_members(
    tx: &mut Tx<'_>,
    group: &str,
    members: &[String],
) -> DomainResult<Vec<String>> {
    for member in members {
        if member.trim().is_empty() || member.len() > 200 || member.chars().any(char::is_control) {
            return Err(DomainError::bad_request(
                ErrorCode::InvalidValue,
                "a member's value is 1 to 200 characters",
            ));
        }
        sqlx::query(
            "INSERT INTO scim_group_members (group_id, staff_id) VALUES ($1, $2) ON CONFLICT (group_id, staff_id) DO NOTHING",
        )
        .bind(group)
        .bind(member)
        .execute(&mut **tx)
        .await?;
    }
    Ok(members.to_vec())
}

/// Each touched person's role, from their mapped groups (the highest), else the default
/// role. Without any mapping, groups change no role.
async fn reassign_roles(
    tx: &mut Tx<'_>,
    p: Provisioner<'_>,
    staff_ids: &[String],
) -> DomainResult<()> {
    if p.group_roles.is_empty() {
        return Ok(());
    }
    for staff_id in staff_ids {
        let groups: Vec<String> = sqlx::query_scalar(
            "SELECT g.display_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id WHERE m.staff_id = $1",
        )
        .bind(staff_id)
        .fetch_all(&mut **tx)
        .await?;
        let role = p
            .group_roles
            .role_of(groups.iter().map(String::as_str))
            .unwrap_or(p.default_role);
        sqlx::query("UPDATE staff SET role = $1 WHERE id = $2")
            .bind(role.as_str())
            .bind(staff_id)
            .execute(&mut **tx)
            .await?;
        super::rows::void_invitations_of(tx, staff_id, p.now_ms).await?;
    }
    Ok(())
}

/// A provisioned person by id, as the rest of the product knows staff.
pub async fn staff_of(db: &Db, id: &str) -> DomainResult<Staff> {
    let row = sqlx::query("SELECT id, email, role FROM staff WHERE id = $1")
        .bind(id)
        .fetch_optional(db.reader())
        .await?
        .ok_or(DomainError::NotFound("user"))?;
    staff_from_row(&row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_roles_map_names_case_insensitively_and_the_highest_role_wins() {
        let map =
            GroupRoles::parse("support=agent, Leads=supervisor,policy=policy_author").unwrap();
        assert_eq!(map.role_of(["SUPPORT"]), Some(StaffRole::Agent));
        assert_eq!(
            map.role_of(["support", "leads"]),
            Some(StaffRole::Supervisor)
        );
        assert_eq!(map.role_of(["nobody"]), None);
        assert!(GroupRoles::parse("support").is_err());
        assert!(GroupRoles::parse("support=boss").is_err());
    }

    #[test]
    fn only_simple_eq_filters_on_known_attributes_are_read() {
        let f = EqFilter::parse("userName eq \"Ann@Example.com\"", &["userName"]).unwrap();
        assert_eq!(
            (f.attribute.as_str(), f.value.as_str()),
            ("userName", "Ann@Example.com")
        );
        assert!(EqFilter::parse("userName co \"x\"", &["userName"]).is_err());
        assert!(EqFilter::parse("password eq \"x\"", &["userName"]).is_err());
        assert!(EqFilter::parse("userName eq x", &["userName"]).is_err());
    }
}
