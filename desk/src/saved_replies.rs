//! Saved replies: texts a supervisor or admin keeps per language — name,
//! language, text — that staff insert into a reply on a case whose ticket is in that
//! language and edit before sending. Writer of `saved_replies`. It sends nothing: a
//! saved reply reaches a customer only as a staff reply (`conversation`).
//!
//! A text may hold variables (`domain::reply_template`: `{first_name}`,
//! `{order_id}`, `{refund_amount}`, `{ticket_link}`), checked when it is saved and
//! filled for a case (`values_for_case`, `fill`) when the case page offers it.

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
    #[schema(value_type = crate::schema::Language)]
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
    let reply = checked(staff, store::new_id("reply"), input)?;
    let mut tx = db.begin().await?;
    let written = sqlx::query(
        "INSERT INTO saved_replies (id, name, language, body, created_by, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (language, name) DO NOTHING",
    )
    .bind(&reply.id)
    .bind(&reply.name)
    .bind(reply.language.as_str())
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
                reply.language.as_str()
            ),
        ));
    }
    let detail = format!("{} ({})", reply.name, reply.language.as_str());
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

/// A saved reply's text, as long as a staff reply may be, with only known variables
/// and no brace that opens or closes nothing.
fn checked_text(text: &str) -> DomainResult<String> {
    let text = crate::tickets::validate_message(text)?;
    domain::reply_template::check(&text)
        .map_err(|e| DomainError::bad_request(ErrorCode::InvalidTemplate, e.to_string()))?;
    Ok(text)
}

/// Checks the name and language of `input`; returns them.
fn checked_name(input: &NewSavedReply) -> DomainResult<(String, Language)> {
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
    Ok((name.to_string(), language))
}

/// `input` as the reply `id`, if `staff` may manage saved replies and every field is good.
fn checked(staff: &Staff, id: String, input: &NewSavedReply) -> DomainResult<SavedReply> {
    check_manager(staff)?;
    let (name, language) = checked_name(input)?;
    let text = checked_text(&input.text)?;
    Ok(SavedReply {
        id,
        name,
        language,
        text,
    })
}

/// Replaces a saved reply's name, language and text, with its audit line.
/// The same checks as `create`; a name another reply of the language has is a conflict.
pub async fn update(
    db: &Db,
    staff: &Staff,
    id: &str,
    input: &NewSavedReply,
    now: i64,
) -> DomainResult<SavedReply> {
    let SavedReply {
        name,
        language,
        text,
        ..
    } = checked(staff, id.to_string(), input)?;
    let mut tx = db.begin().await?;
    let taken: Option<String> = sqlx::query_scalar(
        "SELECT id FROM saved_replies WHERE language = $1 AND name = $2 AND id <> $3",
    )
    .bind(language.as_str())
    .bind(&name)
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    if taken.is_some() {
        return Err(DomainError::conflict(
            ErrorCode::SavedReplyExists,
            format!(
                "a saved reply named '{name}' exists in {}",
                language.as_str()
            ),
        ));
    }
    let written =
        sqlx::query("UPDATE saved_replies SET name = $1, language = $2, body = $3 WHERE id = $4")
            .bind(&name)
            .bind(language.as_str())
            .bind(&text)
            .bind(id)
            .execute(&mut *tx)
            .await?;
    if written.rows_affected() == 0 {
        return Err(DomainError::NotFound("saved reply"));
    }
    let detail = format!("{name} ({})", language.as_str());
    crate::audit::record(&mut tx, &staff.id, "saved_reply_changed", id, &detail, now).await?;
    tx.commit().await?;
    Ok(SavedReply {
        id: id.to_string(),
        name,
        language,
        text,
    })
}

/// What a saved reply's variables stand for on one case; `None` where the
/// case has no value yet (no order named, no refund decided).
#[derive(Debug, Clone, Default)]
pub struct CaseValues {
    pub first_name: Option<String>,
    pub order_id: Option<String>,
    pub refund_amount: Option<String>,
    pub ticket_link: Option<String>,
}

/// Reads `case`'s values: the customer's first name, the ticket's order (else the
/// proposal's), the refund decided in the ticket's language (`domain::money_text`), and
/// the ticket page on `public_url` (`PUBLIC_URL`).
pub async fn values_for_case(
    db: &Db,
    case: &crate::cases::Case,
    public_url: &str,
) -> DomainResult<CaseValues> {
    let ticket = crate::tickets::load_ticket(db, &case.ticket_id).await?;
    let name: Option<Option<String>> =
        sqlx::query_scalar("SELECT name FROM customers WHERE id = $1")
            .bind(case.customer_id.as_str())
            .fetch_optional(db.reader())
            .await?;
    let language = ticket.as_ref().map_or(Language::En, |t| t.language);
    let proposal_order = case
        .proposal
        .as_deref()
        .and_then(|p| serde_json::from_str::<crate::agent::Proposal>(p).ok())
        .and_then(|p| p.order_id);
    let refund_amount = match (case.refund_total_minor, case.currency) {
        (Some(minor), Some(currency)) => policy_engine::Money::from_minor(minor, currency)
            .ok()
            .map(|m| domain::money_text::localized(&m, language.as_str())),
        _ => None,
    };
    Ok(CaseValues {
        first_name: name.flatten().as_deref().and_then(first_name),
        order_id: ticket
            .as_ref()
            .and_then(|t| t.order_id.as_ref().map(|o| o.to_string()))
            .or(proposal_order),
        refund_amount,
        ticket_link: Some(format!(
            "{}/tickets/{}",
            public_url.trim_end_matches('/'),
            case.ticket_id
        )),
    })
}

/// The first word of a name ("Mia Chen" → "Mia"); a name written without spaces (as
/// Chinese and Japanese names often are) whole.
fn first_name(name: &str) -> Option<String> {
    name.split_whitespace().next().map(str::to_string)
}

/// `text` filled with `values`; what has no value stays `{name}`, listed in `missing`.
pub fn fill(text: &str, values: &CaseValues) -> domain::reply_template::Filled {
    use domain::reply_template::Variable;
    domain::reply_template::fill(text, |var| match var {
        Variable::FirstName => values.first_name.clone(),
        Variable::OrderId => values.order_id.clone(),
        Variable::RefundAmount => values.refund_amount.clone(),
        Variable::TicketLink => values.ticket_link.clone(),
    })
}

/// The saved reply named `name` as `case`'s customer is to read it (a bulk close's
/// reply: each customer in their own language, docs/spec/interfaces.md, "Bulk
/// actions"): the version in their ticket's language, its variables filled for the
/// case. `None` when the reply has no version in that language or a variable has no
/// value on this case — the case is then left as it was, never answered in another
/// language.
pub async fn for_case(
    db: &Db,
    name: &str,
    case: &crate::cases::Case,
    public_url: &str,
) -> DomainResult<Option<String>> {
    let Some(ticket) = crate::tickets::load_ticket(db, &case.ticket_id).await? else {
        return Ok(None);
    };
    let versions = list(db, Some(ticket.language)).await?;
    let Some(reply) = versions.into_iter().find(|r| r.name == name) else {
        return Ok(None);
    };
    let values = values_for_case(db, case, public_url).await?;
    let filled = fill(&reply.text, &values);
    Ok(filled.missing.is_empty().then_some(filled.text))
}

/// Refuses a message for a customer that still holds a `{word}` (a customer
/// received "Hi {name},"): a variable nobody filled, or one typed by hand.
pub fn check_no_placeholder(text: &str) -> DomainResult<()> {
    match domain::reply_template::placeholders(text).first() {
        None => Ok(()),
        Some(word) => Err(DomainError::bad_request(
            ErrorCode::UnfilledVariable,
            format!("the message still holds {word}: write what it stands for, or remove it"),
        )),
    }
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
