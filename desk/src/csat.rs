//! Customer satisfaction: one question to the customer once their case is resolved
//! ("How did we do?", 1–5 and an optional comment), and the results per person and per
//! reason for the console.
//!
//! One answer per ticket, from its own customer only; a rating outside 1–5, a second
//! answer or an unresolved case is refused with a typed error and changes nothing. Who
//! resolved the case (the staff member who approved or rejected it, else its owner; no
//! one when the agent resolved it alone) and its reason are copied at answer time.
//!
//! Deliberately not here: asking by mail (the ticket page and the API ask), and any
//! effect on the case: a rating reopens nothing.

use serde::Serialize;
use sqlx::Row;

use crate::auth::Principal;
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::Db;

/// The longest comment kept, in characters.
pub const MAX_COMMENT_CHARS: usize = 2_000;

/// What a customer answers.
#[derive(Debug, Clone)]
pub struct Answer {
    pub rating: i64,
    pub comment: Option<String>,
}

impl Answer {
    /// A rating of 1–5 and a comment of at most [`MAX_COMMENT_CHARS`] (blank is none).
    pub fn new(rating: i64, comment: Option<&str>) -> DomainResult<Answer> {
        if !(1..=5).contains(&rating) {
            return Err(DomainError::bad_request(
                ErrorCode::InvalidRating,
                "the rating is a whole number from 1 to 5",
            ));
        }
        let comment = comment.map(str::trim).filter(|c| !c.is_empty());
        if comment.is_some_and(|c| c.chars().count() > MAX_COMMENT_CHARS) {
            return Err(DomainError::bad_request(
                ErrorCode::NoteTooLong,
                format!("the comment is longer than {MAX_COMMENT_CHARS} characters"),
            ));
        }
        Ok(Answer {
            rating,
            comment: comment.map(str::to_string),
        })
    }
}

/// Whether the ticket's customer may be asked now: resolved and not yet answered.
pub async fn may_ask(db: &Db, ticket_id: &str) -> DomainResult<bool> {
    let Some(case) = crate::cases::case_for_ticket(db, ticket_id).await? else {
        return Ok(false);
    };
    if !case.status.is_resolved() {
        return Ok(false);
    }
    Ok(answer_of(db, ticket_id).await?.is_none())
}

/// The rating given on a ticket, if any.
pub async fn answer_of(db: &Db, ticket_id: &str) -> DomainResult<Option<i64>> {
    let row = sqlx::query("SELECT rating FROM csat_answers WHERE ticket_id = $1")
        .bind(ticket_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(row.map(|r| r.try_get("rating")).transpose()?)
}

/// Records the ticket's customer's answer. Staff and services cannot answer for them.
pub async fn answer(
    db: &Db,
    principal: &Principal,
    ticket_id: &str,
    answer: &Answer,
    now: i64,
) -> DomainResult<()> {
    if !matches!(principal, Principal::Customer { .. }) {
        return Err(DomainError::Forbidden(
            "only the customer rates their ticket".into(),
        ));
    }
    crate::customer::visible_ticket(db, principal, ticket_id).await?;
    let mut tx = db.begin().await?;
    let case = crate::cases::case_for_ticket_tx(&mut tx, ticket_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if !case.status.is_resolved() {
        return Err(DomainError::conflict(
            ErrorCode::NotResolved,
            "the case is not resolved yet; you can rate it once it is",
        ));
    }
    let resolved_by = resolved_by(&mut tx, case.id.as_str(), case.assignee_id.as_deref()).await?;
    let written = sqlx::query(
        "INSERT INTO csat_answers (ticket_id, case_id, rating, comment, resolved_by, reason_code, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (ticket_id) DO NOTHING",
    )
    .bind(ticket_id)
    .bind(case.id.as_str())
    .bind(answer.rating)
    .bind(answer.comment.as_deref())
    .bind(resolved_by.as_deref())
    .bind(case.reason_code.map(|r| r.as_str()))
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if written == 0 {
        return Err(DomainError::conflict(
            ErrorCode::AlreadyRated,
            "this ticket has been rated already",
        ));
    }
    tx.commit().await?;
    Ok(())
}

/// The person who decided: the last approval's or rejection's author, else the owner.
async fn resolved_by(
    tx: &mut store::Tx<'_>,
    case_id: &str,
    owner: Option<&str>,
) -> DomainResult<Option<String>> {
    let decider: Option<String> = sqlx::query_scalar(
        "SELECT staff_id FROM approvals WHERE case_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(case_id)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(decider.or(owner.map(str::to_string)))
}

/// Answers grouped one way (per person or per reason).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Tally {
    /// The person's email (or "the agent alone"), or the reason code ("none").
    pub label: String,
    pub answers: i64,
    /// Mean rating, two decimals, as text (never a float on the wire).
    pub mean: String,
    /// Answers rated 4 or 5, in percent of `answers` (whole number).
    pub satisfied_percent: i64,
}

/// The console's CSAT report.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Report {
    pub overall: Tally,
    pub by_person: Vec<Tally>,
    pub by_reason: Vec<Tally>,
}

/// Every answer so far, overall, per person and per reason (most answers first).
pub async fn report(db: &Db) -> DomainResult<Report> {
    let person = "COALESCE(s.email, '(the agent alone)')";
    let reason = "COALESCE(a.reason_code, '(none)')";
    let overall = tallies(db, None).await?.pop();
    Ok(Report {
        overall: overall.unwrap_or_else(|| tally("all answers".into(), 0, 0, 0)),
        by_person: tallies(db, Some(person)).await?,
        by_reason: tallies(db, Some(reason)).await?,
    })
}

/// A customer's comment with its rating, for staff (the QA and CSAT pages).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Comment {
    pub case_id: String,
    pub rating: i64,
    pub comment: String,
    /// The person who decided or owned the case ("(the agent alone)" when none did).
    pub person: String,
    pub created_at: i64,
}

/// The newest `limit` answers that carry a comment, newest first.
pub async fn recent_comments(db: &Db, limit: i64) -> DomainResult<Vec<Comment>> {
    let rows = sqlx::query(
        "SELECT a.case_id, a.rating, a.comment, COALESCE(s.email, '(the agent alone)') AS person, a.created_at
         FROM csat_answers a LEFT JOIN staff s ON s.id = a.resolved_by
         WHERE a.comment IS NOT NULL ORDER BY a.created_at DESC LIMIT $1",
    )
    .bind(limit)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Comment {
                case_id: r.try_get("case_id")?,
                rating: r.try_get("rating")?,
                comment: r.try_get("comment")?,
                person: r.try_get("person")?,
                created_at: r.try_get("created_at")?,
            })
        })
        .collect()
}

/// One tally per value of `group` (an SQL expression of ours, never input), or one over
/// every answer. Sums are cast: PostgreSQL sums a BIGINT as NUMERIC.
async fn tallies(db: &Db, group: Option<&str>) -> DomainResult<Vec<Tally>> {
    let label = group.unwrap_or("'all answers'");
    let grouping = group.map_or(String::new(), |g| {
        format!("GROUP BY {g} ORDER BY COUNT(*) DESC, {g}")
    });
    let sql = format!(
        "SELECT {label} AS label, COUNT(*) AS n,
                CAST(COALESCE(SUM(a.rating), 0) AS BIGINT) AS total,
                CAST(COALESCE(SUM(CASE WHEN a.rating >= 4 THEN 1 ELSE 0 END), 0) AS BIGINT) AS satisfied
         FROM csat_answers a LEFT JOIN staff s ON s.id = a.resolved_by {grouping}"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(db.reader())
        .await?;
    rows.iter()
        .map(|r| {
            Ok(tally(
                r.try_get("label")?,
                r.try_get("n")?,
                r.try_get("total")?,
                r.try_get("satisfied")?,
            ))
        })
        .collect()
}

/// Mean and share in integer arithmetic: the mean in hundredths, rounded half up.
fn tally(label: String, answers: i64, total: i64, satisfied: i64) -> Tally {
    let (mean, satisfied_percent) = if answers == 0 {
        ("–".to_string(), 0)
    } else {
        let hundredths = (total * 200 + answers) / (2 * answers);
        (
            format!("{}.{:02}", hundredths / 100, hundredths % 100),
            (satisfied * 200 + answers) / (2 * answers),
        )
    };
    Tally {
        label,
        answers,
        mean,
        satisfied_percent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rating_is_one_to_five_and_a_blank_comment_is_none() {
        assert!(Answer::new(0, None).is_err());
        assert!(Answer::new(6, None).is_err());
        let a = Answer::new(5, Some("  ")).unwrap();
        assert_eq!((a.rating, a.comment), (5, None));
        let long = "x".repeat(MAX_COMMENT_CHARS + 1);
        assert!(Answer::new(3, Some(&long)).is_err());
    }

    #[test]
    fn the_mean_is_rounded_half_up_to_hundredths_without_floats() {
        // 4 + 5 + 5 = 14 over 3 = 4.666… → 4.67; two of three rated 4+ → 67%.
        let t = tally("x".into(), 3, 14, 2);
        assert_eq!((t.mean.as_str(), t.satisfied_percent), ("4.67", 67));
        assert_eq!(tally("x".into(), 2, 3, 0).mean, "1.50");
        assert_eq!(tally("x".into(), 0, 0, 0).mean, "–");
    }
}
