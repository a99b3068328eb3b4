//! What staff are shown of a case: the case row with its refunds, read across the
//! tables that own them (`cases`, `refunds`), and — for one case, not a list — the
//! customer's history: their other tickets and past refunds. Writes nothing.

use serde::Serialize;
use sqlx::Row;

use crate::cases::{self, Case, CaseStatus};
use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult};
use crate::refunds;
use crate::tickets::{self, subject_of, MessageView};
use store::Db;

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
    /// The customer's name, email and region (`CN`, `US`, `EU`, `JP`), from the records
    /// the app holds.
    pub customer_name: Option<String>,
    pub customer_email: Option<String>,
    pub customer_region: Option<String>,
    /// Why mail to the customer's address on record does not arrive (a bounce, or the
    /// receiving server refused it), when it does not; one case only, `null`
    /// in lists.
    pub customer_email_undeliverable: Option<String>,
    /// The customer asked for a person and no person has written to them since: an
    /// approval then needs a reply with it (docs/spec/roles.md). Read for one case, not
    /// for lists (`false` there).
    #[serde(default)]
    pub person_requested: bool,
    /// The ticket's subject: the first line of its first message, shortened.
    pub subject: String,
    /// The email of the staff member the case is assigned to.
    pub assignee: Option<String>,
    /// The team queue the case waits in (`agents`, `supervisors`), or `null` when no
    /// team is asked to act (docs/spec/interfaces.md).
    pub queue: Option<String>,
    /// Why a supervisor closed the case, once closed by hand.
    pub close_reason: Option<String>,
    /// The case this one was joined into: its ticket was a second one about the same
    /// order, and the work goes on there.
    pub joined_into: Option<String>,
    /// The rollout mode the case was opened in, and whether its reviewer works
    /// from the agent's proposal.
    pub rollout: Option<crate::rollout::modes::CaseRollout>,
    /// The customer's other tickets and past refunds, when one case is read
    /// (`GET /cases/{id}` and the answers of its actions); `null` in lists.
    pub customer_history: Option<CustomerHistory>,
    pub created_at: String,
    pub updated_at: String,
}

pub async fn case_view(db: &Db, case: &Case) -> DomainResult<CaseView> {
    let parse = |s: &Option<String>| s.as_deref().and_then(|s| serde_json::from_str(s).ok());
    let refund_total = refund_total(case);
    let header = header(db, case).await?;
    let mut evidence: Option<serde_json::Value> = parse(&case.facts);
    if case.status == CaseStatus::Escalated && crate::shadow_pairs::pending(db, &case.id).await? {
        blind(evidence.as_mut());
    }
    Ok(CaseView {
        id: case.id.to_string(),
        ticket_id: case.ticket_id.to_string(),
        customer_id: case.customer_id.to_string(),
        status: case.status.as_str().to_string(),
        version: case.version,
        proposal_version: case.proposal_seq,
        run_id: case.run_id.as_ref().map(|r| r.to_string()),
        proposal: parse(&case.proposal),
        decision: parse(&case.decision),
        evidence,
        evidence_hash: case.evidence_hash.clone(),
        fingerprint: case.fingerprint.clone(),
        required_role: case.required_role.map(|r| r.as_str().to_string()),
        reason_code: case.reason_code.map(|r| r.as_str().to_string()),
        refund_total,
        currency: case.currency.map(|c| c.to_string()),
        void_reason: case.void_reason.clone(),
        policy_index: case.policy_index.clone(),
        refunds: refunds::refund_views(db, &case.id).await?,
        customer_name: header.customer_name,
        customer_email: header.customer_email,
        customer_email_undeliverable: None,
        person_requested: false,
        customer_region: header.customer_region,
        subject: subject_of(header.first_message.as_deref().unwrap_or("")),
        assignee: header.assignee,
        queue: cases::team_queue(case).map(|q| q.as_str().to_string()),
        close_reason: case.close_reason.clone(),
        joined_into: case.joined_into.clone(),
        rollout: crate::rollout::modes::case_rollout(db, &case.id).await?,
        customer_history: None,
        created_at: rfc3339(case.created_at),
        updated_at: rfc3339(case.updated_at),
    })
}

/// The staff view of one case with the customer's history beside it: two reads more
/// than [`case_view`], which a list of cases does without.
pub async fn full_case_view(db: &Db, case: &Case) -> DomainResult<CaseView> {
    let mut view = case_view(db, case).await?;
    view.customer_history = Some(customer_history(db, case).await?);
    view.customer_email_undeliverable = email_undeliverable(db, &view).await?;
    view.person_requested = cases::person_awaited_now(db, case).await?;
    Ok(view)
}

/// Why mail to the case's customer does not arrive, when it does not: read
/// for one case, not for lists.
pub async fn email_undeliverable(db: &Db, view: &CaseView) -> DomainResult<Option<String>> {
    match &view.customer_email {
        Some(email) => Ok(mailbox::addresses::undeliverable(db, email)
            .await?
            .map(|(_, why)| why)),
        None => Ok(None),
    }
}

/// Live shadow mode: the reviewer decides blind, so the evidence keeps the records
/// (customer, orders, charges) and loses what the agent concluded from the customer's
/// words — the request kind, and which order it took the ticket to be about.
fn blind(evidence: Option<&mut serde_json::Value>) {
    if let Some(serde_json::Value::Object(facts)) = evidence {
        for derived in ["request", "order_id", "order_ownership"] {
            facts.remove(derived);
        }
    }
}

/// The staff view of a case as it stands now (after an action changed it), in full.
pub async fn current_view(db: &Db, case_id: &str) -> DomainResult<CaseView> {
    let case = cases::load_case_to_show(db, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    full_case_view(db, &case).await
}

/// What the case header shows of the customer's past: their other tickets
/// with where each case stands, and the refunds made through the desk on their other
/// cases, each newest first and cut at 20 (`tickets::HISTORY_LINES`) with the full count.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CustomerHistory {
    pub tickets: Vec<tickets::TicketLine>,
    /// How many other tickets the customer has (more than `tickets` lists, past the cut).
    pub tickets_total: i64,
    /// Refunds made through the desk; one made at the provider directly is in the
    /// provider's records (the investigation tools read them), not here.
    pub refunds: Vec<refunds::PastRefund>,
    /// How many such refunds there are.
    pub refunds_total: i64,
}

/// The customer's history beside `case`: two reads, whatever its length.
pub async fn customer_history(db: &Db, case: &Case) -> DomainResult<CustomerHistory> {
    let limit = tickets::HISTORY_LINES;
    let other = tickets::other_tickets(db, &case.customer_id, &case.ticket_id, limit).await?;
    let past = refunds::past_refunds(db, &case.customer_id, &case.id, limit).await?;
    Ok(CustomerHistory {
        tickets: other.lines,
        tickets_total: other.total,
        refunds: past.refunds,
        refunds_total: past.total,
    })
}

/// What a case's header shows beside the case row: who the customer is, who works on
/// it, and the ticket's first message. One read across the tables that own them.
struct Header {
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_region: Option<String>,
    assignee: Option<String>,
    first_message: Option<String>,
}

async fn header(db: &Db, case: &Case) -> DomainResult<Header> {
    let row = sqlx::query(
        "SELECT (SELECT name FROM customers WHERE id = $1) AS customer_name,
                (SELECT email FROM customers WHERE id = $1) AS customer_email,
                (SELECT region FROM customers WHERE id = $1) AS customer_region,
                (SELECT email FROM staff WHERE id = $2) AS assignee,
                (SELECT body FROM messages WHERE ticket_id = $3 ORDER BY seq LIMIT 1) AS first_message",
    )
    .bind(case.customer_id.as_str())
    .bind(case.assignee_id.as_deref().unwrap_or(""))
    .bind(case.ticket_id.as_str())
    .fetch_one(db.reader())
    .await?;
    Ok(Header {
        customer_name: row.try_get("customer_name")?,
        customer_email: row.try_get("customer_email")?,
        customer_region: row.try_get("customer_region")?,
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
    /// The language the customer is answered in (`en`, `zh`, …).
    pub language: String,
    /// Since when the customer has waited for a person, while a reply clock runs
    /// (`cases::sla`).
    pub waiting: Option<cases::sla::Waiting>,
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
                (SELECT t.language FROM tickets t WHERE t.id = c.ticket_id) AS language,
                (SELECT body FROM messages m WHERE m.ticket_id = c.ticket_id ORDER BY m.seq LIMIT 1) AS first_message,
                {}
         FROM cases c LEFT JOIN customers cu ON cu.id = c.customer_id
         LEFT JOIN staff s ON s.id = c.assignee_id
         WHERE c.id IN ({})",
        cases::sla::waiting_columns(),
        placeholders.join(", ")
    );
    let mut select = sqlx::query(sqlx::AssertSqlSafe(sql));
    for case in cases {
        select = select.bind(case.id.as_str());
    }
    let mut found = std::collections::HashMap::new();
    for row in select.fetch_all(db.reader()).await? {
        let first: Option<String> = row.try_get("first_message")?;
        let line = CaseLine {
            customer_name: row.try_get("customer_name")?,
            subject: subject_of(first.as_deref().unwrap_or("")),
            assignee: row.try_get("assignee")?,
            amount: None,
            language: row
                .try_get::<Option<String>, _>("language")?
                .unwrap_or_default(),
            waiting: cases::sla::waiting_from_row(&row)?,
        };
        found.insert(row.try_get::<String, _>("id")?, line);
    }
    Ok(cases
        .iter()
        .map(|case| CaseLine {
            amount: refund_total(case)
                .zip(case.currency)
                .map(|(total, currency)| format!("{total} {currency}")),
            ..found.remove(case.id.as_str()).unwrap_or_default()
        })
        .collect())
}

/// A case's refund total as an amount string (`198.00`), once it has one.
fn refund_total(case: &Case) -> Option<String> {
    match (case.refund_total_minor, case.currency) {
        (Some(minor), Some(currency)) => policy_engine::Money::from_minor(minor, currency)
            .ok()
            .map(|m| m.amount_string()),
        _ => None,
    }
}

/// A case's conversation as staff see it: the customer's thread (what the customer sees
/// too) and the internal notes (what no customer ever sees), apart.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CaseThread {
    pub case_id: String,
    pub messages: Vec<MessageView>,
    pub notes: Vec<cases::NoteView>,
    /// What the customer attached to their mail, by message; each a download
    /// at `/api/v1/attachments/{id}`.
    pub attachments: Vec<mailbox::attachments::AttachmentLine>,
}

pub async fn thread(db: &Db, case: &Case) -> DomainResult<CaseThread> {
    Ok(CaseThread {
        case_id: case.id.to_string(),
        messages: tickets::messages(db, &case.ticket_id).await?,
        notes: cases::notes(db, &case.id).await?,
        attachments: mailbox::attachments::of_ticket(db, &case.ticket_id).await?,
    })
}
