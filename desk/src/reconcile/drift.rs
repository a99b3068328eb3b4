//! Drift between the shop's records and the provider's (docs/spec/interfaces.md,
//! `reconcile`): the customers and orders the desk holds, checked against every provider
//! customer and charge, so a lead sees what an import or a webhook missed before it
//! shows in a case.
//!
//! Customers: one linked to a provider customer the provider no longer lists
//! (`missing_at_provider`), or whose email differs from that provider customer's
//! (`email_differs`); one not linked whose email a provider customer has (`linkable`:
//! `import customers` again links it when exactly one does). Orders: a charge naming one
//! in another currency (`currency_differs`), a charge naming one but paid by another
//! provider customer than the order's customer is linked to (`customer_differs`), and a
//! paid order no charge names nor staff linked (`no_charge`: its case would escalate as
//! payment records missing). The same pass over the charges refreshes the list of
//! charges naming no order (`onboarding::charges`).
//!
//! An erased customer (docs/spec/data.md, "Erasure") is a known state, not drift: the
//! desk keeps a tombstone — the provider's customer id under the pseudonym — and the
//! provider its own copy. Each is listed under `erased` (pseudonym and provider id only:
//! the provider's copy of their email is never written into a report), whether the
//! provider still lists them or not.
//!
//! Memory stays bounded by one provider page and the ids of the desk's own linked
//! customers and named orders, never the provider's whole account; each list keeps its
//! first [`MAX_LISTED`] entries and counts them all.
//!
//! What it deliberately does not do: change anything (a person decides each line), or
//! compare amounts (a charge above its order is an overcharge, a case's business).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::DomainResult;
use crate::onboarding::charges::{self, SyncReport};
use payments_adapter::{PaymentsClient, ProviderCharge, ProviderCustomer};
use store::Db;

/// Each list keeps this many entries (all are counted).
pub const MAX_LISTED: usize = 100;
/// Rows of ours read at a time.
const PAGE: i64 = 500;

/// What drifted, customers and orders.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DriftReport {
    /// Provider customers and charges read.
    pub provider_customers: u64,
    pub provider_charges: u64,
    /// Charges naming no order of ours and not linked by staff (listed for staff).
    pub unlinked_charges: u64,
    pub customers: Listed<CustomerDrift>,
    pub orders: Listed<OrderDrift>,
    /// Erased customers' tombstones: known, not drift (never makes a report unclean).
    #[serde(default)]
    pub erased: Listed<ErasedCustomer>,
    /// A pass the provider could not serve; the lists above are then partial.
    pub errors: Vec<String>,
}

impl DriftReport {
    pub fn is_clean(&self) -> bool {
        self.customers.count == 0
            && self.orders.count == 0
            && self.unlinked_charges == 0
            && self.errors.is_empty()
    }
}

/// The first [`MAX_LISTED`] entries, and how many there are.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(bound = "T: Serialize + serde::de::DeserializeOwned")]
pub struct Listed<T> {
    pub count: u64,
    pub first: Vec<T>,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            count: 0,
            first: Vec::new(),
        }
    }
}

impl<T> Listed<T> {
    fn push(&mut self, entry: T) {
        self.count += 1;
        if self.first.len() < MAX_LISTED {
            self.first.push(entry);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CustomerDriftKind {
    MissingAtProvider,
    EmailDiffers,
    Linkable,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CustomerDrift {
    pub kind: CustomerDriftKind,
    pub customer_id: String,
    pub provider_customer_id: String,
    /// Our email; the provider's, when it has one.
    pub email: String,
    pub provider_email: Option<String>,
}

/// An erased customer as the desk still knows them: the pseudonym their money records
/// are kept under and the provider's customer id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErasedCustomer {
    pub pseudonym: String,
    pub provider_customer_id: String,
    /// Whether the provider still lists that customer (its copy is the provider's to
    /// erase).
    pub at_provider: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderDriftKind {
    CurrencyDiffers,
    CustomerDiffers,
    NoCharge,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OrderDrift {
    pub kind: OrderDriftKind,
    pub order_id: String,
    pub customer_id: String,
    /// The charge that shows it (none for `no_charge`).
    pub charge_id: Option<String>,
    /// In words: what differs.
    pub detail: String,
}

/// Checks every provider customer and charge against ours at `now`.
pub async fn check(db: &Db, payments: &PaymentsClient, now: i64) -> DomainResult<DriftReport> {
    let mut report = DriftReport::default();
    if let Err(e) = customers(db, payments, &mut report).await {
        report.errors.push(format!("customers: {e}"));
    }
    let mut named = HashSet::new();
    match orders(db, payments, now, &mut report, &mut named).await {
        Ok(()) => orders_without_charge(db, &named, &mut report).await?,
        Err(e) => report.errors.push(format!("charges: {e}")),
    }
    Ok(report)
}

/// The customers pass: every provider page compared with ours, then ours that no page
/// listed.
async fn customers(
    db: &Db,
    payments: &PaymentsClient,
    report: &mut DriftReport,
) -> DomainResult<()> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut after: Option<String> = None;
    loop {
        let (page, more) = payments
            .all_customers_page(after.as_deref())
            .await
            .map_err(charges::provider)?;
        after = page.last().map(|c| c.id.clone());
        report.provider_customers += page.len() as u64;
        linked_on_page(db, &page, &mut seen, report).await?;
        linkable_on_page(db, &page, report).await?;
        if !more || after.is_none() {
            break;
        }
    }
    missing_at_provider(db, &seen, report).await
}

/// `SELECT … WHERE column IN (…)` over `values`, with `$1…$n`.
fn in_list(
    sql_head: &str,
    values: &[String],
) -> sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments> {
    let params: Vec<String> = (1..=values.len()).map(|i| format!("${i}")).collect();
    let sql = format!("{sql_head} IN ({})", params.join(", "));
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for value in values {
        query = query.bind(value.clone());
    }
    query
}

/// Ours linked to a provider customer on this page: the email compared.
async fn linked_on_page(
    db: &Db,
    page: &[ProviderCustomer],
    seen: &mut HashSet<String>,
    report: &mut DriftReport,
) -> DomainResult<()> {
    let ids: Vec<String> = page.iter().map(|c| c.id.clone()).collect();
    if ids.is_empty() {
        return Ok(());
    }
    let rows = in_list(
        "SELECT c.id, c.email, c.provider_customer_id, e.pseudonym FROM customers c
           LEFT JOIN erasures e ON e.customer_id = c.id
          WHERE c.provider_customer_id",
        &ids,
    )
    .fetch_all(db.reader())
    .await?;
    for row in rows {
        let provider_id: String = row.try_get("provider_customer_id")?;
        let email: String = row.try_get("email")?;
        let Some(theirs) = page.iter().find(|c| c.id == provider_id) else {
            continue;
        };
        seen.insert(provider_id.clone());
        if let Some(pseudonym) = row.try_get::<Option<String>, _>("pseudonym")? {
            // docs/spec/data.md: erased, not drift; their email is a pseudonym, never
            // compared, so the provider's copy of it is not written into a report.
            report.erased.push(ErasedCustomer {
                pseudonym,
                provider_customer_id: provider_id,
                at_provider: true,
            });
            continue;
        }
        let provider_email = theirs.email.clone().filter(|e| !e.is_empty());
        if provider_email
            .as_deref()
            .is_some_and(|e| !e.eq_ignore_ascii_case(email.trim()))
        {
            report.customers.push(CustomerDrift {
                kind: CustomerDriftKind::EmailDiffers,
                customer_id: row.try_get("id")?,
                provider_customer_id: provider_id,
                email,
                provider_email,
            });
        }
    }
    Ok(())
}

/// Ours not linked, whose email a provider customer on this page has.
async fn linkable_on_page(
    db: &Db,
    page: &[ProviderCustomer],
    report: &mut DriftReport,
) -> DomainResult<()> {
    let emails: Vec<String> = page
        .iter()
        .filter_map(|c| c.email.as_deref())
        .map(crate::onboarding::records::email_key)
        .filter(|e| !e.is_empty())
        .collect();
    if emails.is_empty() {
        return Ok(());
    }
    let rows = in_list(
        "SELECT id, email FROM customers WHERE provider_customer_id = '' AND lower(email)",
        &emails,
    )
    .fetch_all(db.reader())
    .await?;
    for row in rows {
        let email: String = row.try_get("email")?;
        let id: String = row.try_get("id")?;
        let key = crate::onboarding::records::email_key(&email);
        for theirs in page.iter().filter(|c| {
            c.email
                .as_deref()
                .is_some_and(|e| crate::onboarding::records::email_key(e) == key)
        }) {
            report.customers.push(CustomerDrift {
                kind: CustomerDriftKind::Linkable,
                customer_id: id.clone(),
                provider_customer_id: theirs.id.clone(),
                email: email.clone(),
                provider_email: theirs.email.clone(),
            });
        }
    }
    Ok(())
}

/// The pages of `sql` (keyset paging: `id > $1 ORDER BY id LIMIT $2`), one `next` at a
/// time, each after the last id of the one before.
struct Pages<'a> {
    db: &'a Db,
    sql: &'static str,
    after: String,
}

impl<'a> Pages<'a> {
    fn of(db: &'a Db, sql: &'static str) -> Self {
        Pages {
            db,
            sql,
            after: String::new(),
        }
    }

    /// The next page, or `None` when there is no more.
    async fn next(&mut self) -> DomainResult<Option<Vec<sqlx::any::AnyRow>>> {
        let rows = sqlx::query(self.sql)
            .bind(self.after.as_str())
            .bind(PAGE)
            .fetch_all(self.db.reader())
            .await?;
        let Some(last) = rows.last() else {
            return Ok(None);
        };
        self.after = last.try_get("id")?;
        Ok(Some(rows))
    }
}

/// Ours linked to a provider customer no page listed.
async fn missing_at_provider(
    db: &Db,
    seen: &HashSet<String>,
    report: &mut DriftReport,
) -> DomainResult<()> {
    let mut pages = Pages::of(
        db,
        "SELECT c.id, c.email, c.provider_customer_id, e.pseudonym FROM customers c
           LEFT JOIN erasures e ON e.customer_id = c.id
         WHERE c.provider_customer_id <> '' AND c.id > $1 ORDER BY c.id LIMIT $2",
    );
    while let Some(rows) = pages.next().await? {
        for row in &rows {
            let provider_id: String = row.try_get("provider_customer_id")?;
            if seen.contains(&provider_id) {
                continue;
            }
            if let Some(pseudonym) = row.try_get::<Option<String>, _>("pseudonym")? {
                // Erased here and gone at the provider too: still known, not drift.
                report.erased.push(ErasedCustomer {
                    pseudonym,
                    provider_customer_id: provider_id,
                    at_provider: false,
                });
            } else {
                report.customers.push(CustomerDrift {
                    kind: CustomerDriftKind::MissingAtProvider,
                    customer_id: row.try_get("id")?,
                    provider_customer_id: provider_id,
                    email: row.try_get("email")?,
                    provider_email: None,
                });
            }
        }
    }
    Ok(())
}

/// The charges pass: the unlisted-charges list refreshed, and each charge naming one of
/// our orders compared with it; `named` collects the orders some charge names.
async fn orders(
    db: &Db,
    payments: &PaymentsClient,
    now: i64,
    report: &mut DriftReport,
    named: &mut HashSet<String>,
) -> DomainResult<()> {
    let mut sync = SyncReport::default();
    let mut after: Option<String> = None;
    loop {
        let (page, more) = payments
            .charges_page(after.as_deref())
            .await
            .map_err(charges::provider)?;
        after = page.last().map(|c| c.id.clone());
        charges::sync_page(db, &page, now, &mut sync).await?;
        compare_charges(db, &page, named, report).await?;
        if !more || after.is_none() {
            break;
        }
    }
    charges::finish_sync(db, now).await?;
    report.provider_charges = sync.charges;
    report.unlinked_charges = sync.unlinked;
    Ok(())
}

/// Each charge of a page that names one of our orders, against that order.
async fn compare_charges(
    db: &Db,
    page: &[ProviderCharge],
    named: &mut HashSet<String>,
    report: &mut DriftReport,
) -> DomainResult<()> {
    let ids: Vec<String> = page
        .iter()
        .filter_map(|c| c.order_id().map(str::to_string))
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let rows = in_list(
        "SELECT o.id, o.customer_id, o.currency, c.provider_customer_id
         FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id",
        &ids,
    )
    .fetch_all(db.reader())
    .await?;
    for row in rows {
        let order_id: String = row.try_get("id")?;
        for charge in page
            .iter()
            .filter(|c| c.order_id() == Some(order_id.as_str()))
        {
            named.insert(order_id.clone());
            if let Some(drift) = charge_drift(&row, &order_id, charge)? {
                report.orders.push(drift);
            }
        }
    }
    Ok(())
}

/// What differs between an order (`row`) and a charge naming it, if anything.
fn charge_drift(
    row: &sqlx::any::AnyRow,
    order_id: &str,
    charge: &ProviderCharge,
) -> DomainResult<Option<OrderDrift>> {
    let currency: String = row.try_get("currency")?;
    let linked: String = row.try_get("provider_customer_id")?;
    let drift = |kind, detail| OrderDrift {
        kind,
        order_id: order_id.to_string(),
        customer_id: row.try_get("customer_id").unwrap_or_default(),
        charge_id: Some(charge.id.clone()),
        detail,
    };
    if !charge.currency.eq_ignore_ascii_case(&currency) {
        return Ok(Some(drift(
            OrderDriftKind::CurrencyDiffers,
            format!(
                "the order is in {currency}, charge {} in {}",
                charge.id,
                charge.currency.to_ascii_uppercase()
            ),
        )));
    }
    match charge.customer.as_deref() {
        Some(payer) if !linked.is_empty() && payer != linked => Ok(Some(drift(
            OrderDriftKind::CustomerDiffers,
            format!(
                "charge {} was paid by provider customer {payer}; the order's customer is linked to {linked}",
                charge.id
            ),
        ))),
        _ => Ok(None),
    }
}

/// Paid orders no charge names and staff linked none to.
async fn orders_without_charge(
    db: &Db,
    named: &HashSet<String>,
    report: &mut DriftReport,
) -> DomainResult<()> {
    let mut pages = Pages::of(
        db,
        "SELECT o.id, o.customer_id FROM orders o
         WHERE o.amount_minor > 0 AND o.id > $1
           AND NOT EXISTS (SELECT 1 FROM charge_links l WHERE l.order_id = o.id)
         ORDER BY o.id LIMIT $2",
    );
    while let Some(rows) = pages.next().await? {
        for row in &rows {
            let order_id: String = row.try_get("id")?;
            if !named.contains(&order_id) {
                report.orders.push(OrderDrift {
                    kind: OrderDriftKind::NoCharge,
                    customer_id: row.try_get("customer_id")?,
                    detail: format!(
                        "no charge at the provider names order {order_id}, and none is linked to it"
                    ),
                    order_id,
                    charge_id: None,
                });
            }
        }
    }
    Ok(())
}
