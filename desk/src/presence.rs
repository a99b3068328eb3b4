//! Presence on a case: "Ann is viewing", "Bo is replying". A staff member's open case page
//! says every few seconds what they are doing; the others on the case see it, so two
//! people do not write two answers or decide one refund twice without knowing.
//!
//! A hint, never a lock: the decision's own guards (the fingerprint, versioned updates)
//! are what stop a stale action. Kept in `case_presence` (every instance sees the same
//! people); a mark older than [`FRESH_MS`] counts for nothing (one row per person and case,
//! overwritten, so stale rows need no sweeping).

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::auth::Staff;
use crate::error::{DomainError, DomainResult};
use store::Db;

/// How long a mark counts: a page that stopped saying so (closed, asleep) fades out.
pub const FRESH_MS: i64 = 30_000;

/// What a person is doing on a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    Viewing,
    Replying,
}

impl Activity {
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Viewing => "viewing",
            Activity::Replying => "replying",
        }
    }

    fn parse(text: &str) -> DomainResult<Activity> {
        match text {
            "viewing" => Ok(Activity::Viewing),
            "replying" => Ok(Activity::Replying),
            other => Err(anyhow::anyhow!("case_presence.activity: {other}").into()),
        }
    }
}

/// Someone else on the case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Present {
    /// Their display name, else their email.
    pub name: String,
    pub activity: Activity,
}

/// Marks `staff` as doing `activity` on the case and answers who else is on it.
pub async fn mark(
    db: &Db,
    staff: &Staff,
    case_id: &str,
    activity: Activity,
    now: i64,
) -> DomainResult<Vec<Present>> {
    let known = crate::cases::load_case(db, case_id).await?;
    if known.is_none() {
        return Err(DomainError::NotFound("case"));
    }
    sqlx::query(
        "INSERT INTO case_presence (case_id, staff_id, activity, seen_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (case_id, staff_id) DO UPDATE SET activity = excluded.activity, seen_at = excluded.seen_at",
    )
    .bind(case_id)
    .bind(&staff.id)
    .bind(activity.as_str())
    .bind(now)
    .execute(db.pool())
    .await?;
    others(db, case_id, Some(&staff.id), now).await
}

/// Who is on the case now, apart from `except` (the asker), replying first.
pub async fn others(
    db: &Db,
    case_id: &str,
    except: Option<&str>,
    now: i64,
) -> DomainResult<Vec<Present>> {
    let rows = sqlx::query(
        "SELECT COALESCE(NULLIF(s.display_name, ''), s.email) AS name, p.activity
         FROM case_presence p JOIN staff s ON s.id = p.staff_id
         WHERE p.case_id = $1 AND p.seen_at > $2 AND p.staff_id <> $3
         ORDER BY CASE p.activity WHEN 'replying' THEN 0 ELSE 1 END, name",
    )
    .bind(case_id)
    .bind(now - FRESH_MS)
    .bind(except.unwrap_or(""))
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Present {
                name: r.try_get("name")?,
                activity: Activity::parse(&r.try_get::<String, _>("activity")?)?,
            })
        })
        .collect()
}
