//! What a restore is not finished without (docs/spec/data.md, "Backups"): the refunds the
//! provider made on the restored charges since the backup, adopted into their cases
//! before anything is served or executed. The provider's idempotency window may be far
//! shorter than the time since the backup, so a key sent again would not be recognised:
//! the desk asks the provider what it holds instead, and records it.
//!
//! A restore leaves a row in `restores`; [`adopt_after_restore`] (run by `restore` itself,
//! by `serve` before it listens, by each worker pass and by `reconcile` while the row is
//! open) first looks up the intents the backup had not seen final (`restore_checks`),
//! then, customer by customer, reads every refund on the restored charges
//! (`GET /v1/refunds?charge=`) and adopts those our metadata names a case of theirs for
//! (`refunds::adopt_found_refund`: the case's idempotency key, the provider's id, amount
//! and status). Only when every charge was read is the row closed; a provider out of
//! reach leaves it open and says so. Running it twice adopts nothing twice.
//!
//! The restored charges of a customer: those the facts and decisions of their cases name,
//! those their refund intents name, and their charges at the provider (a case the backup
//! caught before it had facts names none yet).
//!
//! Deliberately not here: sending anything; refunds for cases the backup does not hold
//! (counted in the report; reconciliation lists them as made elsewhere).

use std::collections::BTreeSet;

use serde::Serialize;
use sqlx::Row;

use desk::billing::{BillingSource, LiveBilling};
use desk::error::{DomainError, DomainResult};
use desk::refunds::{self, Found, Sender};
use store::Db;

/// Customers read at a time.
const PAGE: i64 = 200;

/// The staff record approvals lost with a backup are kept under: deactivated, it never
/// signs in or acts; its name says what it stands for.
pub const SIGNER_EMAIL: &str = "found-after-restore@refund-desk.invalid";

/// What an adoption after a restore found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Adoption {
    pub restore_id: String,
    /// Restored intents looked up at the provider (`restore_checks`).
    pub intents_checked: usize,
    pub customers: usize,
    pub charges: usize,
    /// Refunds recorded on their cases now.
    pub adopted: Vec<Found>,
    /// Refunds already recorded, or needing a person (another refund under the key).
    pub unchanged: Vec<Found>,
    /// Refunds whose metadata names a case the backup does not hold.
    pub for_cases_not_held: Vec<String>,
}

impl Adoption {
    /// One line for the log, the audit and the command line.
    pub fn summary(&self) -> String {
        format!(
            "{} restored intents checked; {} charges of {} customers read; {} refunds {}; {} for cases the backup does not hold",
            self.intents_checked,
            self.charges,
            self.customers,
            self.adopted.len(),
            refunds::FOUND_AFTER_RESTORE,
            self.for_cases_not_held.len()
        )
    }
}

/// Whether a restore still waits for its adoption (nothing is served or executed).
pub async fn pending(db: &Db) -> DomainResult<Option<String>> {
    let row = sqlx::query(
        "SELECT id FROM restores WHERE adopted_at IS NULL ORDER BY restored_at LIMIT 1",
    )
    .fetch_optional(db.reader())
    .await?;
    Ok(row.map(|r| r.try_get("id")).transpose()?)
}

/// Adopts what the provider made since the backup, if a restore waits for it; `None`
/// when none does. An error (the provider out of reach) leaves the restore waiting.
pub async fn adopt_after_restore(s: Sender<'_>) -> DomainResult<Option<Adoption>> {
    let Some(restore_id) = pending(s.db).await? else {
        return Ok(None);
    };
    let mut adoption = Adoption {
        restore_id: restore_id.clone(),
        intents_checked: restored_intents(s).await?,
        ..Adoption::default()
    };
    let billing = LiveBilling {
        db: s.db.clone(),
        payments: s.payments.clone(),
    };
    let mut signer = None;
    let mut after = String::new();
    loop {
        let customers = customers_with_cases(s.db, &after).await?;
        let Some(last) = customers.last() else { break };
        after = last.clone();
        for customer_id in &customers {
            adoption.customers += 1;
            adopt_for_customer(s, &billing, customer_id, &mut signer, &mut adoption).await?;
        }
    }
    finish(s, &adoption).await?;
    Ok(Some(adoption))
}

/// Looks up every restored intent the backup had not seen final; an error when the
/// provider could not answer for one of them.
async fn restored_intents(s: Sender<'_>) -> DomainResult<usize> {
    let mut checked = 0;
    loop {
        let now = super::restore::check_restored(s).await?;
        checked += now;
        if now == 0 {
            break;
        }
    }
    let waiting = super::restore::waiting(s.db).await?;
    if waiting > 0 {
        return Err(DomainError::Provider(format!(
            "{waiting} restored refund intents could not be looked up at the provider"
        )));
    }
    Ok(checked)
}

/// The next page of customers who have a case, after `after` (keyset, by id).
async fn customers_with_cases(db: &Db, after: &str) -> DomainResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT DISTINCT customer_id FROM cases WHERE customer_id > $1 ORDER BY customer_id LIMIT $2",
    )
    .bind(after)
    .bind(PAGE)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<String, _>("customer_id")?))
        .collect()
}

/// Reads every refund on the customer's restored charges and adopts those naming one of
/// their cases.
async fn adopt_for_customer(
    s: Sender<'_>,
    billing: &LiveBilling,
    customer_id: &str,
    signer: &mut Option<String>,
    adoption: &mut Adoption,
) -> DomainResult<()> {
    let (cases, charges) = restored_charges(s.db, billing, customer_id).await?;
    for charge_id in charges {
        adoption.charges += 1;
        let refunds =
            s.payments.list_refunds(&charge_id).await.map_err(|e| {
                DomainError::Provider(format!("refunds on charge {charge_id}: {e}"))
            })?;
        for refund in refunds {
            let Some(case_id) = refund.metadata.get("case_id").cloned() else {
                continue;
            };
            if !cases.contains(&case_id) {
                if !case_held(s.db, &case_id).await? {
                    adoption.for_cases_not_held.push(refund.id.clone());
                }
                continue;
            }
            if recorded(s.db, &refund.id).await? {
                adoption.unchanged.push(Found::AlreadyRecorded {
                    refund_id: refund.id.clone(),
                });
                continue;
            }
            let signer = match signer {
                Some(id) => id.clone(),
                None => signer.insert(found_signer(s).await?).clone(),
            };
            match refunds::adopt_found_refund(s, &case_id, &refund, &signer).await? {
                found @ Found::Adopted { .. } => adoption.adopted.push(found),
                other => adoption.unchanged.push(other),
            }
        }
    }
    Ok(())
}

/// The customer's case ids, and their restored charges (see the module's comment).
async fn restored_charges(
    db: &Db,
    billing: &LiveBilling,
    customer_id: &str,
) -> DomainResult<(BTreeSet<String>, BTreeSet<String>)> {
    let rows = sqlx::query("SELECT id, facts, decision FROM cases WHERE customer_id = $1")
        .bind(customer_id)
        .fetch_all(db.pool())
        .await?;
    let mut cases = BTreeSet::new();
    let mut charges = BTreeSet::new();
    for row in &rows {
        cases.insert(row.try_get::<String, _>("id")?);
        for column in ["facts", "decision"] {
            if let Some(text) = row.try_get::<Option<String>, _>(column)? {
                charges_named(&text, &mut charges);
            }
        }
    }
    let intents = sqlx::query(
        "SELECT DISTINCT charge_id FROM refund_intents WHERE case_id IN (SELECT id FROM cases WHERE customer_id = $1)",
    )
    .bind(customer_id)
    .fetch_all(db.pool())
    .await?;
    for row in &intents {
        charges.insert(row.try_get::<String, _>("charge_id")?);
    }
    if let Some(record) = billing.customer(customer_id).await? {
        let at_provider = billing
            .charges(&record)
            .await
            .map_err(|e| DomainError::Provider(format!("charges of {customer_id}: {e:#}")))?;
        charges.extend(at_provider.into_iter().map(|c| c.id));
    }
    Ok((cases, charges))
}

/// Every charge id a stored facts or decision document names (`orders[].charges[].id`,
/// `refunds[].charge_id`); a document that is not JSON names none.
fn charges_named(document: &str, charges: &mut BTreeSet<String>) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(document) else {
        return;
    };
    let list = |v: &serde_json::Value, key: &str| v[key].as_array().cloned().unwrap_or_default();
    for order in list(&value, "orders") {
        for charge in list(&order, "charges") {
            if let Some(id) = charge["id"].as_str() {
                charges.insert(id.to_string());
            }
        }
    }
    for line in list(&value, "refunds") {
        if let Some(id) = line["charge_id"].as_str() {
            charges.insert(id.to_string());
        }
    }
}

/// Whether an intent already records this provider refund.
async fn recorded(db: &Db, refund_id: &str) -> DomainResult<bool> {
    Ok(
        sqlx::query("SELECT id FROM refund_intents WHERE provider_refund_id = $1")
            .bind(refund_id)
            .fetch_optional(db.pool())
            .await?
            .is_some(),
    )
}

async fn case_held(db: &Db, case_id: &str) -> DomainResult<bool> {
    Ok(sqlx::query("SELECT id FROM cases WHERE id = $1")
        .bind(case_id)
        .fetch_optional(db.pool())
        .await?
        .is_some())
}

/// The staff id approvals lost with the backup are kept under ([`SIGNER_EMAIL`]),
/// made through the staff accounts' own writer the first time one is needed, with a
/// password nobody knows, and deactivated at once.
async fn found_signer(s: Sender<'_>) -> DomainResult<String> {
    if let Some(staff) = desk::auth::staff_by_email(s.db, SIGNER_EMAIL).await? {
        return Ok(staff.id);
    }
    let now = s.clock.now_ms();
    let unknown = format!("{}{}", store::new_id("pw"), store::new_id("pw"));
    let staff = desk::auth::upsert_staff(
        s.db,
        SIGNER_EMAIL,
        desk::auth::StaffRole::Agent,
        &unknown,
        now,
    )
    .await?;
    desk::auth::accounts::deactivate(s.db, "system", &staff.id, now).await?;
    Ok(staff.id)
}

/// Closes the restore: from now on the desk serves and executes.
async fn finish(s: Sender<'_>, adoption: &Adoption) -> DomainResult<()> {
    let now = s.clock.now_ms();
    let report = serde_json::to_string(adoption).map_err(anyhow::Error::from)?;
    let summary = adoption.summary();
    let mut tx = s.db.begin().await?;
    sqlx::query("UPDATE restores SET adopted_at = $1, report = $2 WHERE id = $3")
        .bind(now)
        .bind(&report)
        .bind(&adoption.restore_id)
        .execute(&mut *tx)
        .await?;
    desk::audit::record(
        &mut tx,
        "system",
        "restore_adopted",
        &adoption.restore_id,
        &summary,
        now,
    )
    .await?;
    tx.commit().await?;
    tracing::info!(restore_id = %adoption.restore_id, summary, "restore adopted: serving and executing");
    Ok(())
}
