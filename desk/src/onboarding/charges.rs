//! Provider charges and the shop's orders. A charge names its order in its metadata
//! under the configured key (`PAYMENTS_ORDER_KEY`, read by `PaymentsClient`); one that
//! names no order of ours — no key, an order we do not have — is listed for staff
//! ([`list_unlinked`], refreshed by [`sync_unlinked`] over every provider charge and by
//! charge webhooks through [`refresh_charge`]), who link it to an order
//! ([`link_charge`], audited). [`read_links`] and [`put_links`] are how the billing
//! sources read those links beside the metadata ([`apply_links`], the two at once, for a
//! backtest's as-of reading), so an investigation sees a linked charge on its order — a
//! guest charge (no provider customer) included.
//!
//! What it deliberately does not do: write the link into the provider's metadata (the
//! desk writes nothing at the provider but refunds), list failed charges (they took no
//! money), or let staff link a charge to an order of a customer other than the charge's
//! (docs/spec/invariants.md #12).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sqlx::Row;

use crate::error::{DomainError, DomainResult, ErrorCode};
use payments_adapter::{PaymentsClient, ProviderCharge, ProviderError};
use store::Db;

/// A link staff made from a provider charge to one of our orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeLink {
    pub charge_id: String,
    pub order_id: String,
}

/// A provider charge that names no order of ours.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct UnlinkedCharge {
    pub charge_id: String,
    /// The charge's provider customer; `null` for a guest charge.
    pub provider_customer_id: Option<String>,
    /// Our customer linked to that provider customer, if any.
    pub customer_id: Option<String>,
    /// Decimal string in the currency's scale.
    pub amount: String,
    pub currency: String,
    pub status: String,
    /// RFC 3339.
    pub created_at: String,
    /// What the metadata names under the key, when that is no order of ours.
    pub named_order: Option<String>,
}

/// What a sync saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    /// Provider charges read.
    pub charges: u64,
    /// Naming one of our orders under the key.
    pub linked_by_metadata: u64,
    /// Linked by staff.
    pub linked_by_staff: u64,
    /// Failed charges (no money taken): not listed.
    pub failed: u64,
    /// Listed as unlinked now.
    pub unlinked: u64,
}

/// Reads every provider charge, page by page (one page in memory), and lists the ones
/// naming no order of ours; charges listed before and now linked, or gone, leave the
/// list. `progress(charges read)` after each page.
pub async fn sync_unlinked(
    db: &Db,
    payments: &PaymentsClient,
    now: i64,
    progress: &mut (dyn FnMut(u64) + Send),
) -> DomainResult<SyncReport> {
    let mut report = SyncReport::default();
    let mut after: Option<String> = None;
    loop {
        let (page, more) = payments
            .charges_page(after.as_deref())
            .await
            .map_err(provider)?;
        after = page.last().map(|c| c.id.clone());
        sync_page(db, &page, now, &mut report).await?;
        progress(report.charges);
        if !more || after.is_none() {
            break;
        }
    }
    finish_sync(db, now).await?;
    Ok(report)
}

/// One page of a full sync: each charge listed or unlisted as it stands, counted into
/// `report` (`reconcile::drift` pages through the charges with it too).
pub async fn sync_page(
    db: &Db,
    page: &[ProviderCharge],
    now: i64,
    report: &mut SyncReport,
) -> DomainResult<()> {
    let known = known_orders(db, page).await?;
    let staff = staff_links(db, page.iter().map(|c| c.id.as_str())).await?;
    for charge in page {
        report.charges += 1;
        let class = classify(charge, &known, &staff);
        match class {
            Class::Failed => report.failed += 1,
            Class::ByMetadata => report.linked_by_metadata += 1,
            Class::ByStaff => report.linked_by_staff += 1,
            Class::Unlinked => report.unlinked += 1,
        }
        store_class(db, charge, class, now).await?;
    }
    Ok(())
}

/// Ends a full sync begun at `now`: charges listed before and not seen in it (gone, or
/// no longer listed) leave the list.
pub async fn finish_sync(db: &Db, now: i64) -> DomainResult<()> {
    sqlx::query("DELETE FROM unlinked_charges WHERE seen_at < $1")
        .bind(now)
        .execute(db.pool())
        .await?;
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Failed,
    ByMetadata,
    ByStaff,
    Unlinked,
}

fn classify(
    charge: &ProviderCharge,
    known: &BTreeSet<String>,
    staff: &BTreeMap<String, String>,
) -> Class {
    if charge.status == "failed" {
        Class::Failed
    } else if charge.order_id().is_some_and(|o| known.contains(o)) {
        Class::ByMetadata
    } else if staff.contains_key(&charge.id) {
        Class::ByStaff
    } else {
        Class::Unlinked
    }
}

/// Lists or unlists one charge as its class says.
async fn store_class(db: &Db, charge: &ProviderCharge, class: Class, now: i64) -> DomainResult<()> {
    if class != Class::Unlinked {
        sqlx::query("DELETE FROM unlinked_charges WHERE charge_id = $1")
            .bind(&charge.id)
            .execute(db.pool())
            .await?;
        return Ok(());
    }
    let customer_id = match &charge.customer {
        Some(provider_id) => customer_linked_to(db, provider_id).await?,
        None => None,
    };
    sqlx::query(
        "INSERT INTO unlinked_charges (charge_id, provider_customer_id, customer_id, amount_minor, currency,
                                       status, charge_created_at, named_order, seen_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (charge_id) DO UPDATE SET provider_customer_id = excluded.provider_customer_id,
           customer_id = excluded.customer_id, amount_minor = excluded.amount_minor, currency = excluded.currency,
           status = excluded.status, charge_created_at = excluded.charge_created_at,
           named_order = excluded.named_order, seen_at = excluded.seen_at",
    )
    .bind(&charge.id)
    .bind(charge.customer.as_deref())
    .bind(customer_id)
    .bind(charge.amount)
    .bind(charge.currency.to_ascii_uppercase())
    .bind(&charge.status)
    .bind(charge.created * 1000)
    .bind(charge.order_id())
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Refreshes one charge's place on the list (a charge webhook, after re-reading it);
/// `true` when it is listed as unlinked.
pub async fn refresh_charge(db: &Db, charge: &ProviderCharge, now: i64) -> DomainResult<bool> {
    let known = known_orders(db, std::slice::from_ref(charge)).await?;
    let staff = staff_links(db, std::iter::once(charge.id.as_str())).await?;
    let class = classify(charge, &known, &staff);
    store_class(db, charge, class, now).await?;
    Ok(class == Class::Unlinked)
}

/// Which of the orders these charges name exist.
async fn known_orders(db: &Db, charges: &[ProviderCharge]) -> DomainResult<BTreeSet<String>> {
    let named: BTreeSet<&str> = charges.iter().filter_map(|c| c.order_id()).collect();
    existing_ids(db, "orders", "id", named.into_iter()).await
}

/// The values of `table.column` among `ids`, one query.
async fn existing_ids<'a>(
    db: &Db,
    table: &str,
    column: &str,
    ids: impl Iterator<Item = &'a str>,
) -> DomainResult<BTreeSet<String>> {
    let ids: Vec<&str> = ids.collect();
    if ids.is_empty() {
        return Ok(BTreeSet::new());
    }
    let params: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "SELECT {column} AS id FROM {table} WHERE {column} IN ({})",
        params.join(", ")
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for id in &ids {
        query = query.bind(*id);
    }
    let rows = query.fetch_all(db.reader()).await?;
    Ok(rows
        .iter()
        .map(|r| r.try_get("id"))
        .collect::<Result<_, _>>()?)
}

/// Staff links of these charges: charge → order.
async fn staff_links<'a>(
    db: &Db,
    charge_ids: impl Iterator<Item = &'a str>,
) -> DomainResult<BTreeMap<String, String>> {
    let ids: Vec<&str> = charge_ids.collect();
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let params: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "SELECT charge_id, order_id FROM charge_links WHERE charge_id IN ({})",
        params.join(", ")
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for id in &ids {
        query = query.bind(*id);
    }
    let rows = query.fetch_all(db.reader()).await?;
    rows.iter()
        .map(|r| Ok((r.try_get("charge_id")?, r.try_get("order_id")?)))
        .collect()
}

/// Our customer linked to a provider customer, if any.
async fn customer_linked_to(db: &Db, provider_id: &str) -> DomainResult<Option<String>> {
    if provider_id.is_empty() {
        return Ok(None);
    }
    let row = sqlx::query("SELECT id FROM customers WHERE provider_customer_id = $1")
        .bind(provider_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(row.map(|r| r.try_get("id")).transpose()?)
}

/// The unlinked charges, newest first, `limit` (1 to 500) after the cursor
/// `(created_at ms, charge_id)` of the last one shown.
pub async fn list_unlinked(
    db: &Db,
    after: Option<(i64, &str)>,
    limit: i64,
) -> DomainResult<Vec<UnlinkedCharge>> {
    let (at, id) = after.unwrap_or((i64::MAX, ""));
    let rows = sqlx::query(
        "SELECT charge_id, provider_customer_id, customer_id, amount_minor, currency, status,
                charge_created_at, named_order
         FROM unlinked_charges
         WHERE charge_created_at < $1 OR (charge_created_at = $1 AND charge_id > $2)
         ORDER BY charge_created_at DESC, charge_id LIMIT $3",
    )
    .bind(at)
    .bind(id)
    .bind(limit.clamp(1, 500))
    .fetch_all(db.reader())
    .await?;
    rows.iter().map(unlinked_from_row).collect()
}

fn unlinked_from_row(r: &sqlx::any::AnyRow) -> DomainResult<UnlinkedCharge> {
    let currency: String = r.try_get("currency")?;
    let minor: i64 = r.try_get("amount_minor")?;
    let amount = currency
        .parse()
        .ok()
        .and_then(|c| policy_engine::Money::from_minor(minor, c).ok())
        .map_or_else(|| minor.to_string(), |m| m.amount_string());
    Ok(UnlinkedCharge {
        charge_id: r.try_get("charge_id")?,
        provider_customer_id: r.try_get("provider_customer_id")?,
        customer_id: r.try_get("customer_id")?,
        amount,
        currency,
        status: r.try_get("status")?,
        created_at: crate::clock::rfc3339(r.try_get("charge_created_at")?),
        named_order: r.try_get("named_order")?,
    })
}

/// Links a provider charge to one of our orders (staff, audited). Refused when the
/// charge's metadata already names one of our orders, or when the charge is another
/// customer's: its provider customer linked to someone else, or the order's customer
/// linked to another provider customer.
pub async fn link_charge(
    db: &Db,
    payments: &PaymentsClient,
    charge_id: &str,
    order_id: &str,
    actor: &str,
    now: i64,
) -> DomainResult<()> {
    let charge = match payments.get_charge(charge_id).await {
        Ok(charge) => charge,
        Err(ProviderError::NotFound(_)) => return Err(DomainError::NotFound("charge")),
        Err(e) => return Err(provider(e)),
    };
    may_link(db, &charge, order_id).await?;
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO charge_links (charge_id, order_id, linked_by, linked_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (charge_id) DO UPDATE SET order_id = excluded.order_id, linked_by = excluded.linked_by,
         linked_at = excluded.linked_at",
    )
    .bind(charge_id)
    .bind(order_id)
    .bind(actor)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM unlinked_charges WHERE charge_id = $1")
        .bind(charge_id)
        .execute(&mut *tx)
        .await?;
    let what = format!("charge {charge_id} linked to order {order_id}");
    crate::audit::record(&mut tx, actor, "charge_linked", charge_id, &what, now).await?;
    tx.commit().await?;
    Ok(())
}

/// Whether `charge` may be linked to `order_id` (docs/spec/invariants.md #12: never one
/// customer's payment on another's order).
async fn may_link(db: &Db, charge: &ProviderCharge, order_id: &str) -> DomainResult<()> {
    let owner = sqlx::query(
        "SELECT o.customer_id, c.provider_customer_id FROM orders o JOIN customers c ON c.id = o.customer_id
         WHERE o.id = $1",
    )
    .bind(order_id)
    .fetch_optional(db.pool())
    .await?
    .ok_or(DomainError::NotFound("order"))?;
    let order_customer: String = owner.try_get("customer_id")?;
    let order_provider: String = owner.try_get("provider_customer_id")?;
    let charge_id = &charge.id;
    if let Some(named) = charge.order_id() {
        if !known_orders(db, std::slice::from_ref(charge))
            .await?
            .is_empty()
        {
            return Err(DomainError::conflict(
                ErrorCode::ChargeAlreadyLinked,
                format!("charge {charge_id} names order {named} in its metadata"),
            ));
        }
    }
    let Some(provider_customer) = &charge.customer else {
        return Ok(());
    };
    let linked = customer_linked_to(db, provider_customer).await?;
    let theirs = linked.as_deref().is_some_and(|c| c != order_customer);
    let other_provider = !order_provider.is_empty() && &order_provider != provider_customer;
    if theirs || other_provider {
        return Err(DomainError::conflict(
            ErrorCode::ChargeOwnerMismatch,
            format!(
                "charge {charge_id} is provider customer {provider_customer}'s; order {order_id} is customer {order_customer}'s"
            ),
        ));
    }
    Ok(())
}

/// Applies staff links to a customer's charges as the provider listed them, and adds the
/// linked charges the list lacks (a guest charge, one under another provider customer
/// id), read one by one. What `billing::LiveBilling::charges` returns.
pub async fn apply_links(
    db: &Db,
    payments: &PaymentsClient,
    customer_id: &str,
    charges: &mut Vec<ProviderCharge>,
) -> anyhow::Result<()> {
    let links = read_links(db, customer_id).await?;
    put_links(payments, &links, charges).await
}

/// The links staff made to `customer_id`'s orders ([`apply_links`]'s first half, which
/// one investigation's billing source reads once per pass).
pub async fn read_links(db: &Db, customer_id: &str) -> anyhow::Result<Vec<ChargeLink>> {
    let rows = sqlx::query(
        "SELECT l.charge_id, l.order_id FROM charge_links l JOIN orders o ON o.id = l.order_id
         WHERE o.customer_id = $1",
    )
    .bind(customer_id)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|row| {
            Ok(ChargeLink {
                charge_id: row.try_get("charge_id")?,
                order_id: row.try_get("order_id")?,
            })
        })
        .collect()
}

/// `links` on `charges`: a linked charge the listing lacks (a guest charge) is read
/// from the provider, every time — it is the provider's record.
pub async fn put_links(
    payments: &PaymentsClient,
    links: &[ChargeLink],
    charges: &mut Vec<ProviderCharge>,
) -> anyhow::Result<()> {
    for link in links {
        match charges.iter_mut().find(|c| c.id == link.charge_id) {
            Some(charge) => charge.order_id = Some(link.order_id.clone()),
            None => {
                let mut charge = payments.get_charge(&link.charge_id).await?;
                charge.order_id = Some(link.order_id.clone());
                charges.push(charge);
            }
        }
    }
    Ok(())
}

pub(crate) fn provider(e: ProviderError) -> DomainError {
    DomainError::Provider(e.to_string())
}
