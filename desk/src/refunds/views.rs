//! What staff and the customer are shown of a case's refunds.

use policy_engine::{Currency, Money};
use serde::Serialize;
use sqlx::Row;

use super::{intents_from, IntentStatus};
use crate::clock::rfc3339;
use crate::error::DomainResult;
use crate::replies::CustomerRefundView;
use store::{Db, Tx};

/// A provider refund made for a case, as staff see it (`GET /cases/{id}` → `refunds`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RefundView {
    pub id: Option<String>,
    pub intent_id: String,
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
    pub status: String,
    pub idempotency_key: String,
    pub attempts: i64,
    /// Why the intent is where it is (unknown outcome, refusal, needs review), for staff.
    pub last_error: Option<String>,
}

/// The refunds of a case as staff see them (a read of committed state).
pub async fn refund_views(db: &Db, case_id: &str) -> DomainResult<Vec<RefundView>> {
    Ok(intents_from(db.reader(), case_id)
        .await?
        .into_iter()
        .map(|i| RefundView {
            id: i.provider_refund_id,
            intent_id: i.id.into_string(),
            charge_id: i.charge_id.into_string(),
            amount: i.amount.amount_string(),
            currency: i.amount.currency().code().to_string(),
            status: i.status.to_string(),
            idempotency_key: i.idempotency_key,
            attempts: i.attempts,
            last_error: i.last_error,
        })
        .collect())
}

/// A refund made through the desk on another of the customer's cases, as the case
/// header lists it. Refunds made elsewhere (the provider's dashboard) are in
/// the provider's records, which the investigation's tools read; this page-side list
/// reads only our store, so a page never waits on the provider.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PastRefund {
    /// The provider's refund id, once the provider has answered.
    pub id: Option<String>,
    pub case_id: String,
    pub ticket_id: String,
    pub charge_id: String,
    /// A decimal string in the currency's scale (`"198.00"`, `"1980"` for JPY).
    pub amount: String,
    pub currency: String,
    /// The intent's status as stored (`succeeded`, `pending_verification`, …).
    pub status: String,
    /// The status in words (`Refunded`, `Being verified`, …).
    pub status_label: String,
    /// When it was first sent to the provider, else when it was approved.
    pub at: String,
}

/// The newest of a customer's past refunds, and how many there are in all.
#[derive(Debug, Clone, Default)]
pub struct PastRefunds {
    pub refunds: Vec<PastRefund>,
    pub total: i64,
}

/// The refunds made through the desk on the customer's cases other than
/// `except_case_id` (void intents, never sent, are not refunds), newest first, at most
/// `limit`, and their count: one read, from the customer's tickets (indexed by
/// customer) through their cases to the intents.
pub async fn past_refunds(
    db: &Db,
    customer_id: &str,
    except_case_id: &str,
    limit: i64,
) -> DomainResult<PastRefunds> {
    let rows = sqlx::query(
        "SELECT i.provider_refund_id, i.case_id, t.id AS ticket_id, i.charge_id, i.amount_minor,
                i.currency, i.status, COALESCE(i.first_submitted_at, i.created_at) AS refunded_at,
                (SELECT COUNT(*) FROM tickets t2 JOIN cases c2 ON c2.ticket_id = t2.id
                   JOIN refund_intents i2 ON i2.case_id = c2.id
                  WHERE t2.customer_id = $1 AND c2.id <> $2 AND i2.status <> 'void') AS total
         FROM tickets t JOIN cases c ON c.ticket_id = t.id JOIN refund_intents i ON i.case_id = c.id
         WHERE t.customer_id = $1 AND c.id <> $2 AND i.status <> 'void'
         ORDER BY refunded_at DESC, i.id DESC LIMIT $3",
    )
    .bind(customer_id)
    .bind(except_case_id)
    .bind(limit)
    .fetch_all(db.reader())
    .await?;
    let mut past = PastRefunds::default();
    for r in &rows {
        past.total = r.try_get("total")?;
        let currency: Currency = r
            .try_get::<String, _>("currency")?
            .parse()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let amount = Money::from_minor(r.try_get("amount_minor")?, currency)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let status = IntentStatus::from_stored(&r.try_get::<String, _>("status")?)?;
        past.refunds.push(PastRefund {
            id: r.try_get("provider_refund_id")?,
            case_id: r.try_get("case_id")?,
            ticket_id: r.try_get("ticket_id")?,
            charge_id: r.try_get("charge_id")?,
            amount: amount.amount_string(),
            currency: currency.code().to_string(),
            status: status.as_str().to_string(),
            status_label: status.label().to_string(),
            at: rfc3339(r.try_get("refunded_at")?),
        });
    }
    Ok(past)
}

/// RP-005's words for an intent's state: an unknown outcome is being verified, never
/// failed.
fn customer_status(intent_status: IntentStatus) -> &'static str {
    match intent_status {
        IntentStatus::Created => "in_review",
        IntentStatus::Submitting | IntentStatus::Pending => "submitted",
        IntentStatus::Succeeded => "completed",
        IntentStatus::PendingVerification | IntentStatus::NeedsReview => "being_verified",
        IntentStatus::Failed | IntentStatus::Canceled | IntentStatus::Void => "not_completed",
    }
}

pub(crate) async fn customer_refunds_tx(
    tx: &mut Tx<'_>,
    case_id: &str,
) -> DomainResult<Vec<CustomerRefundView>> {
    let rows = sqlx::query("SELECT amount_minor, currency, status FROM refund_intents WHERE case_id = $1 AND status <> 'void' ORDER BY charge_id")
        .bind(case_id)
        .fetch_all(&mut **tx)
        .await?;
    rows.iter().map(customer_view_from_row).collect()
}

fn customer_view_from_row(r: &sqlx::any::AnyRow) -> DomainResult<CustomerRefundView> {
    customer_refund(
        r.try_get("amount_minor")?,
        &r.try_get::<String, _>("currency")?,
        &r.try_get::<String, _>("status")?,
    )
}

/// A refund intent as its customer is shown it, from its stored amount (minor units),
/// currency and status.
pub fn customer_refund(
    amount_minor: i64,
    currency: &str,
    status: &str,
) -> DomainResult<CustomerRefundView> {
    let currency: Currency = currency.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    let amount = Money::from_minor(amount_minor, currency).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(CustomerRefundView {
        amount: amount.amount_string(),
        currency: currency.code().to_string(),
        status: customer_status(IntentStatus::from_stored(status)?).to_string(),
    })
}

pub async fn customer_refunds(db: &Db, case_id: &str) -> DomainResult<Vec<CustomerRefundView>> {
    let rows = sqlx::query("SELECT amount_minor, currency, status FROM refund_intents WHERE case_id = $1 AND status <> 'void' ORDER BY charge_id")
        .bind(case_id)
        .fetch_all(db.reader())
        .await?;
    rows.iter().map(customer_view_from_row).collect()
}
