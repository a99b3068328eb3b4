//! What staff are shown of a case: the case row with its refunds, read across the
//! tables that own them (`cases`, `refunds`). Writes nothing.

use serde::Serialize;
use sqlx::Row;

use crate::cases::{self, Case};
use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult};
use crate::refunds;
use crate::store::Db;
use crate::tickets::{self, MessageView};

/// The staff view of a case (`GET /api/v1/cases/{id}`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CaseView {
    pub id: String,
    pub ticket_id: String,
    pub customer_id: String,
    pub status: String,
    pub version: i64,
    pub proposal_version: i64,
    pub run_id: Option<String>,
    pub proposal: Option<serde_json::Value>,
    pub decision: Option<serde_json::Value>,
    pub evidence: Option<serde_json::Value>,
    pub evidence_hash: Option<String>,
    pub fingerprint: Option<String>,
    pub required_role: Option<String>,
    pub reason_code: Option<String>,
    pub refund_total: Option<String>,
    pub currency: Option<String>,
    pub void_reason: Option<String>,
    /// The policy index (`schema_version:policy_hash`) the decision was made with.
    pub policy_index: Option<String>,
    pub refunds: Vec<refunds::RefundView>,
    /// The customer's name and email, from the records the app holds (issue 17).
    pub customer_name: Option<String>,
    pub customer_email: Option<String>,
    /// The ticket's subject: the first line of its first message, shortened.
    pub subject: String,
    /// The email of the staff member the case is assigned to.
    pub assignee: Option<String>,
    /// Why a supervisor closed the case, once closed by hand.
    pub close_reason: Option<String>,
    /// The case this one was joined into: its ticket was a second one about the same
    /// order, and the work goes on there (issue 17).
    pub joined_into: Option<String>,
    /// The rollout mode the case was opened in (issue 21), and whether its reviewer works
    /// from the agent's proposal.
    pub rollout: Option<crate::rollout::modes::CaseRollout>,
    pub created_at: String,
    pub updated_at: String,
}

pub async fn case_view(db: &Db, case: &Case) -> DomainResult<CaseView> {
    let parse = |s: &Option<String>| s.as_deref().and_then(|s| serde_json::from_str(s).ok());
    let refund_total = refund_total(case);
    let header = header(db, case).await?;
    Ok(CaseView {
        id: case.id.clone(),
        ticket_id: case.ticket_id.clone(),
        customer_id: case.customer_id.clone(),
        status: case.status.as_str().to_string(),
        version: case.version,
        proposal_version: case.proposal_seq,
        run_id: case.run_id.clone(),
        proposal: parse(&case.proposal),
        decision: parse(&case.decision),
        evidence: parse(&case.facts),
        evidence_hash: case.evidence_hash.clone(),
        fingerprint: case.fingerprint.clone(),
        required_role: case.required_role.clone(),
        reason_code: case.reason_code.clone(),
        refund_total,
        currency: case.currency.clone(),
        void_reason: case.void_reason.clone(),
        policy_index: case.policy_index.clone(),
        refunds: refunds::refund_views(db, &case.id).await?,
        customer_name: header.customer_name,
        customer_email: header.customer_email,
        subject: subject_of(header.first_message.as_deref().unwrap_or("")),
        assignee: header.assignee,
        close_reason: case.close_reason.clone(),
        joined_into: case.joined_into.clone(),
        rollout: crate::rollout::modes::case_rollout(db, &case.id).await?,
        created_at: rfc3339(case.created_at),
        updated_at: rfc3339(case.updated_at),
    })
}

/// The staff view of a case as it stands now (after an action changed it).
pub async fn current_view(db: &Db, case_id: &str) -> DomainResult<CaseView> {
    let case = cases::load_case_to_show(db, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    case_view(db, &case).await
}

/// What a case's header shows beside the case row: who the customer is, who works on
/// it, and the ticket's first message. One read across the tables that own them.
struct Header {
    customer_name: Option<String>,
    customer_email: Option<String>,
    assignee: Option<String>,
    first_message: Option<String>,
}

async fn header(db: &Db, case: &Case) -> DomainResult<Header> {
    let row = sqlx::query(
        "SELECT (SELECT name FROM customers WHERE id = $1) AS customer_name,
                (SELECT email FROM customers WHERE id = $1) AS customer_email,
                (SELECT email FROM staff WHERE id = $2) AS assignee,
                (SELECT body FROM messages WHERE ticket_id = $3 ORDER BY seq LIMIT 1) AS first_message",
    )
    .bind(&case.customer_id)
    .bind(case.assignee_id.as_deref().unwrap_or(""))
    .bind(&case.ticket_id)
    .fetch_one(db.reader())
    .await?;
    Ok(Header {
        customer_name: row.try_get("customer_name")?,
        customer_email: row.try_get("customer_email")?,
        assignee: row.try_get("assignee")?,
        first_message: row.try_get("first_message")?,
    })
}

/// What a list line of a case shows beside the case row (the console's queue).
#[derive(Debug, Clone, Default)]
pub struct CaseLine {
    pub customer_name: Option<String>,
    /// The ticket's subject ([`subject_of`] its first message).
    pub subject: String,
    /// The email of the staff member the case is assigned to.
    pub assignee: Option<String>,
    /// `198.00 USD`, once the case has a refund total.
    pub amount: Option<String>,
}

/// The list lines of `cases`, in their order, in one read however many there are (a
/// query per line would make a page of 100 cost 300 queries).
pub async fn case_lines(db: &Db, cases: &[Case]) -> DomainResult<Vec<CaseLine>> {
    if cases.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders: Vec<String> = (1..=cases.len()).map(|n| format!("${n}")).collect();
    let sql = format!(
        "SELECT c.id, cu.name AS customer_name, s.email AS assignee,
                (SELECT body FROM messages m WHERE m.ticket_id = c.ticket_id ORDER BY m.seq LIMIT 1) AS first_message
         FROM cases c LEFT JOIN customers cu ON cu.id = c.customer_id
         LEFT JOIN staff s ON s.id = c.assignee_id
         WHERE c.id IN ({})",
        placeholders.join(", ")
    );
    let mut select = sqlx::query(&sql);
    for case in cases {
        select = select.bind(&case.id);
    }
    let mut found = std::collections::HashMap::new();
    for row in select.fetch_all(db.reader()).await? {
        let first: Option<String> = row.try_get("first_message")?;
        let line = CaseLine {
            customer_name: row.try_get("customer_name")?,
            subject: subject_of(first.as_deref().unwrap_or("")),
            assignee: row.try_get("assignee")?,
            amount: None,
        };
        found.insert(row.try_get::<String, _>("id")?, line);
    }
    Ok(cases
        .iter()
        .map(|case| CaseLine {
            amount: refund_total(case)
                .zip(case.currency.as_deref())
                .map(|(total, currency)| format!("{total} {currency}")),
            ..found.remove(&case.id).unwrap_or_default()
        })
        .collect())
}

/// A case's refund total as an amount string (`198.00`), once it has one.
fn refund_total(case: &Case) -> Option<String> {
    match (case.refund_total_minor, case.currency.as_deref()) {
        (Some(minor), Some(cur)) => cur
            .parse::<policy_engine::Currency>()
            .ok()
            .and_then(|c| policy_engine::Money::from_minor(minor, c).ok())
            .map(|m| m.amount_string()),
        _ => None,
    }
}

/// How many characters of the first line a subject keeps.
const SUBJECT_CHARS: usize = 80;

/// A ticket's subject: the first non-empty line of its first message, cut at
/// [`SUBJECT_CHARS`] characters with an ellipsis.
pub fn subject_of(first_message: &str) -> String {
    let line = first_message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= SUBJECT_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(SUBJECT_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// A case's conversation as staff see it: the customer's thread (what the customer sees
/// too) and the internal notes (what no customer ever sees), apart (issue 17).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CaseThread {
    pub case_id: String,
    pub messages: Vec<MessageView>,
    pub notes: Vec<cases::NoteView>,
}

pub async fn thread(db: &Db, case: &Case) -> DomainResult<CaseThread> {
    Ok(CaseThread {
        case_id: case.id.clone(),
        messages: tickets::messages(db, &case.ticket_id).await?,
        notes: cases::notes(db, &case.id).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::subject_of;

    #[test]
    fn a_subject_is_the_first_line_of_the_first_message_shortened() {
        assert_eq!(
            subject_of("\n  Charged twice \nfor my plan"),
            "Charged twice"
        );
        assert_eq!(subject_of(""), "");
        let long = "é".repeat(200);
        let subject = subject_of(&long);
        assert_eq!(subject.chars().count(), 80);
        assert!(subject.ends_with('…'));
    }
}
