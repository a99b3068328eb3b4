//! A refund found at the provider after a restore (docs/spec/data.md, "Backups"): the
//! provider made it after the backup was taken, for a case the backup holds, and the
//! desk's record of it was lost with everything else since. It is adopted as the desk
//! would have recorded it — an intent under the case's own idempotency key, holding the
//! provider's refund id, amount and status — and the case follows the intent (refund
//! pending, succeeded or failed, never awaiting approval or denied), audited as found at
//! the provider after a restore. The customer is told the status in the same transaction,
//! as after any refund.
//!
//! Deliberately not here: which refunds to look at (`customer_data::restore` reads the
//! restored charges), and sending anything: this only records.

use policy_engine::{Currency, Money};
use sqlx::Row;

use super::settle::{follows_intents, settle_case_status_tx};
use super::{idempotency_key, provider_status, Sender, KIND_POLICY_REFUND};
use crate::cases::{self, Case, CaseStatus};
use crate::error::{DomainError, DomainResult};
use payments_adapter::ProviderRefund;
use store::{new_id, Tx};

/// The words every adoption is audited with (the audit detail, the approval's note).
pub const FOUND_AFTER_RESTORE: &str = "found at the provider after a restore";

/// What adopting one provider refund did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Found {
    /// Recorded on the case; the case now shows `case_status`.
    Adopted {
        case_id: String,
        refund_id: String,
        case_status: String,
    },
    /// An intent of the case already records this refund.
    AlreadyRecorded { refund_id: String },
    /// The case's key already records another refund of the provider's: a person looks
    /// (reconciliation lists the second one as made elsewhere).
    Conflicting { refund_id: String, reason: String },
}

/// Adopts `refund` (whose metadata names `case_id`) into the case. `signer` is the staff
/// id the approval record is kept under when the case holds no approval of its own (the
/// one given after the backup was lost with it).
pub async fn adopt_found_refund(
    s: Sender<'_>,
    case_id: &str,
    refund: &ProviderRefund,
    signer: &str,
) -> DomainResult<Found> {
    let Some(charge_id) = refund.charge.clone() else {
        return Ok(Found::Conflicting {
            refund_id: refund.id.clone(),
            reason: "the provider's refund names no charge".into(),
        });
    };
    let amount = provider_money(refund)?;
    let now = s.clock.now_ms();
    let mut tx = s.db.begin().await?;
    let case = cases::load_case_tx(&mut tx, case_id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    let key = idempotency_key(&case.id, &charge_id, KIND_POLICY_REFUND);
    let existing = sqlx::query(
        "SELECT id, provider_refund_id FROM refund_intents WHERE idempotency_key = $1 OR provider_refund_id = $2",
    )
    .bind(&key)
    .bind(&refund.id)
    .fetch_all(&mut *tx)
    .await?;
    for row in &existing {
        match row.try_get::<Option<String>, _>("provider_refund_id")? {
            Some(id) if id == refund.id => {
                return Ok(Found::AlreadyRecorded {
                    refund_id: refund.id.clone(),
                })
            }
            Some(other) => {
                return Ok(Found::Conflicting {
                    refund_id: refund.id.clone(),
                    reason: format!("the case's key already records refund {other}"),
                })
            }
            None => {}
        }
    }
    let record = Record {
        case: &case,
        refund,
        charge_id: &charge_id,
        amount,
        key: &key,
        now,
    };
    match existing.first() {
        Some(row) => {
            record
                .onto_intent(&mut tx, &row.try_get::<String, _>("id")?)
                .await?
        }
        None => record.new_intent(&mut tx, signer).await?,
    }
    let case_status = follow(&mut tx, s, &case, now).await?;
    let detail = format!(
        "refund {} ({} {}, {}) {FOUND_AFTER_RESTORE}",
        refund.id,
        amount.amount_string(),
        amount.currency().code(),
        refund.status()
    );
    crate::audit::record(&mut tx, "system", "refund_adopted", case_id, &detail, now).await?;
    tx.commit().await?;
    tracing::info!(case_id, refund_id = %refund.id, case_status = case_status.as_str(), "refund found at the provider after a restore adopted");
    Ok(Found::Adopted {
        case_id: case_id.to_string(),
        refund_id: refund.id.clone(),
        case_status: case_status.as_str().to_string(),
    })
}

/// The refund's amount as money (the provider's currency is lower case).
fn provider_money(refund: &ProviderRefund) -> DomainResult<Money> {
    let currency: Currency = refund
        .currency
        .to_ascii_uppercase()
        .parse()
        .map_err(|e| DomainError::Provider(format!("refund {}: {e}", refund.id)))?;
    Money::from_minor(refund.amount, currency)
        .map_err(|e| DomainError::Provider(format!("refund {}: {e}", refund.id)))
}

/// One provider refund as the intent that records it.
struct Record<'a> {
    case: &'a Case,
    refund: &'a ProviderRefund,
    charge_id: &'a str,
    amount: Money,
    key: &'a str,
    now: i64,
}

impl Record<'_> {
    /// The case's intent under this key exists (voided, or never sent as far as the
    /// backup knew): it now records the provider's refund. The provider's record is the
    /// truth here, whatever the intent's status said.
    async fn onto_intent(&self, tx: &mut Tx<'_>, intent_id: &str) -> DomainResult<()> {
        sqlx::query(
            "UPDATE refund_intents SET status = $1, provider_refund_id = $2, amount_minor = $3, currency = $4,
                 attempts = CASE WHEN attempts > 0 THEN attempts ELSE 1 END,
                 first_submitted_at = COALESCE(first_submitted_at, $5), last_error = NULL,
                 version = version + 1, updated_at = $6
             WHERE id = $7 AND provider_refund_id IS NULL",
        )
        .bind(provider_status(self.refund).as_str())
        .bind(&self.refund.id)
        .bind(self.amount.minor_units())
        .bind(self.amount.currency().code())
        .bind(self.refund.created * 1000)
        .bind(self.now)
        .bind(intent_id)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// A new intent, under the id our metadata gave the provider when it is free, and
    /// the case's approval (or one kept under `signer`, saying the original was lost).
    async fn new_intent(&self, tx: &mut Tx<'_>, signer: &str) -> DomainResult<()> {
        let approval_id = match cases::approval_carried_out(tx, self.case).await? {
            Some(id) => id,
            None => {
                let note = format!(
                    "the approval was given after the backup and lost with it; refund {} {FOUND_AFTER_RESTORE}",
                    self.refund.id
                );
                cases::record_found_approval(tx, self.case, signer, &note, self.now).await?
            }
        };
        let intent_id = match self.refund.intent_id() {
            Some(id) if !intent_exists(tx, id).await? => id.to_string(),
            _ => new_id("ri"),
        };
        sqlx::query(
            "INSERT INTO refund_intents (id, case_id, approval_id, charge_id, kind, amount_minor, currency, idempotency_key,
                 status, provider_refund_id, attempts, version, created_at, updated_at, first_submitted_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1, 1, $11, $11, $12)",
        )
        .bind(intent_id)
        .bind(self.case.id.as_str())
        .bind(approval_id)
        .bind(self.charge_id)
        .bind(KIND_POLICY_REFUND)
        .bind(self.amount.minor_units())
        .bind(self.amount.currency().code())
        .bind(self.key)
        .bind(provider_status(self.refund).as_str())
        .bind(&self.refund.id)
        .bind(self.now)
        .bind(self.refund.created * 1000)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }
}

async fn intent_exists(tx: &mut Tx<'_>, intent_id: &str) -> DomainResult<bool> {
    Ok(sqlx::query("SELECT id FROM refund_intents WHERE id = $1")
        .bind(intent_id)
        .fetch_optional(&mut **tx)
        .await?
        .is_some())
}

/// The case follows its intents: one the backup caught before its money moved (awaiting
/// approval, investigating, denied, closed, …) first enters the refund part of its life
/// (its run ends: the refund it would have worked towards is made), then settles as any
/// refund does, with the customer's reply.
async fn follow(tx: &mut Tx<'_>, s: Sender<'_>, case: &Case, now: i64) -> DomainResult<CaseStatus> {
    if !follows_intents(case.status) {
        if let Some(run_id) = &case.run_id {
            crate::runs::finish_run(tx, run_id, crate::runs::RunStatus::Completed, now).await?;
        }
        cases::transition(tx, case, CaseStatus::Executing, now).await?;
    }
    let settled = settle_case_status_tx(tx, s.clock, &case.id).await?;
    match settled {
        Some(status) => Ok(status),
        None => Ok(cases::load_case_tx(tx, &case.id)
            .await?
            .ok_or(DomainError::NotFound("case"))?
            .status),
    }
}
