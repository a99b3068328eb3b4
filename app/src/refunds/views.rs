//! What staff and the customer are shown of a case's refunds.

use policy_engine::{Currency, Money};
use serde::Serialize;
use sqlx::Row;

use super::{intents_from, IntentStatus};
use crate::error::DomainResult;
use crate::replies::CustomerRefundView;
use crate::store::{Db, Tx};

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
            intent_id: i.id,
            charge_id: i.charge_id,
            amount: i.amount.amount_string(),
            currency: i.amount.currency().code().to_string(),
            status: i.status.to_string(),
            idempotency_key: i.idempotency_key,
            attempts: i.attempts,
            last_error: i.last_error,
        })
        .collect())
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
