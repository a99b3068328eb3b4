//! One case per order: which case works on a customer's order
//! (`order_claims`, written only here) and closing a case into the one that does.
//!
//! A case claims its order when its decision is recorded. A later case about the same
//! order finds the claim: while the holder still works on the order, the later case is
//! joined into it; once the holder is at its end, the later case takes the claim over.
//! The claim's primary key serialises two cases deciding on one order at once.

use sqlx::Row;

use super::{load_case_tx, update_case, void_approvals, Case, CASE_COLUMNS};
use crate::error::DomainResult;
use store::{Db, Tx};

/// Who works on an order, as `claim_order` found it.
#[derive(Debug)]
pub enum OrderClaim {
    /// This case does: it held the claim or has just taken it.
    Ours,
    /// Another case, still working on the order, holds it.
    Held(Box<Case>),
}

/// Claims `order_id` for `case`, or names the open case that holds it. A holder at its
/// end (refunded, closed, withdrawn…) gives the claim up to `case`.
pub async fn claim_order(
    tx: &mut Tx<'_>,
    case: &Case,
    order_id: &str,
    now: i64,
) -> DomainResult<OrderClaim> {
    let inserted = sqlx::query(
        "INSERT INTO order_claims (customer_id, order_id, case_id, claimed_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (customer_id, order_id) DO NOTHING",
    )
    .bind(case.customer_id.as_str())
    .bind(order_id)
    .bind(case.id.as_str())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    if inserted.rows_affected() == 1 {
        return Ok(OrderClaim::Ours);
    }
    let row =
        sqlx::query("SELECT case_id FROM order_claims WHERE customer_id = $1 AND order_id = $2")
            .bind(case.customer_id.as_str())
            .bind(order_id)
            .fetch_one(&mut **tx)
            .await?;
    let holder_id: String = row.try_get("case_id")?;
    if case.id == *holder_id {
        return Ok(OrderClaim::Ours);
    }
    if let Some(holder) = load_case_tx(tx, &holder_id).await? {
        if holder.status.works_on_its_order() {
            return Ok(OrderClaim::Held(Box::new(holder)));
        }
    }
    // Conditional on the holder read above: a concurrent take-over makes this
    // `case_changed`, and the decision is retried on what that one recorded.
    let moved = sqlx::query(
        "UPDATE order_claims SET case_id = $1, claimed_at = $2
         WHERE customer_id = $3 AND order_id = $4 AND case_id = $5",
    )
    .bind(case.id.as_str())
    .bind(now)
    .bind(case.customer_id.as_str())
    .bind(order_id)
    .bind(&holder_id)
    .execute(&mut **tx)
    .await?;
    super::expect_versioned(&moved)?;
    Ok(OrderClaim::Ours)
}

/// Closes `case` as joined into `into`: a versioned update (a lost race is
/// `case_changed`) that clears the fingerprint and voids any approval, as `close` does,
/// so nothing of the joined case can ever be approved or executed (docs/spec/invariants.md #1).
pub async fn join_into(tx: &mut Tx<'_>, case: &Case, into: &Case, now: i64) -> DomainResult<()> {
    let reason = format!("joined into {}: the same order", into.id);
    let sets = "status = 'closed', fingerprint = NULL, close_reason = $1, joined_into = $2";
    update_case(tx, case, sets, &[&reason, &into.id], now).await?;
    void_approvals(tx, &case.id).await?;
    tracing::info!(case_id = %case.id, into = %into.id, "case joined into the open case on its order");
    Ok(())
}

/// The cases joined into `case_id`, oldest first.
pub async fn joined_cases(db: &Db, case_id: &str) -> DomainResult<Vec<Case>> {
    let sql = format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE joined_into = $1 ORDER BY created_at, id LIMIT 200"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(case_id)
        .fetch_all(db.reader())
        .await?;
    rows.iter().map(super::case_from_row).collect()
}
