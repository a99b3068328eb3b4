//! Linking a shop's customers to the provider's: by the `provider_customer_id` a shop
//! gives (checked to exist), or, when it gives none, by email through the provider's
//! customer list (`GET /v1/customers?email=`, every page).
//!
//! A link decides whose charges a case sees, so it is made only when it is certain:
//! exactly one live provider customer with that email, and no other customer of ours
//! linked to it (docs/spec/invariants.md #12: a customer sees only their own records).
//! Anything else leaves the customer unlinked and counted: their cases see no charges,
//! so a paid order goes to a person as "payment records missing".
//!
//! What it deliberately does not do: match emails loosely (the provider's filter is
//! exact; `Ann@x` and `ann@x` are two emails there), or create provider customers.

use sqlx::Row;

use crate::outcome::{provider_failed, ImportError, Links, Progress};
use payments_adapter::{PaymentsClient, ProviderCustomer, ProviderError};
use store::Db;

/// How many unlinked customers the summary names.
const NAMED: usize = 20;

/// A page of staged customers, by line.
const PAGE: i64 = 100;

/// What the provider says of one email.
pub enum EmailMatch {
    One(ProviderCustomer),
    None,
    Several(usize),
}

/// The live provider customers with exactly this email.
pub async fn by_email(payments: &PaymentsClient, email: &str) -> Result<EmailMatch, ProviderError> {
    let mut found: Vec<ProviderCustomer> = payments
        .customers_by_email(email)
        .await?
        .into_iter()
        .filter(|c| !c.deleted)
        .collect();
    Ok(match found.len() {
        0 => EmailMatch::None,
        1 => EmailMatch::One(found.remove(0)),
        n => EmailMatch::Several(n),
    })
}

/// One staged customer still to link.
struct Pending {
    line: i64,
    id: String,
    email: String,
    given: Option<String>,
    already_linked: bool,
}

async fn staged_page(db: &Db, import_id: &str, after: i64) -> Result<Vec<Pending>, ImportError> {
    let rows = sqlx::query(
        "SELECT s.line, s.id, s.email, s.provider_customer_id,
                (SELECT c.provider_customer_id FROM customers c WHERE c.id = s.id) AS stored
         FROM import_customers s WHERE s.import_id = $1 AND s.line > $2 ORDER BY s.line LIMIT $3",
    )
    .bind(import_id)
    .bind(after)
    .bind(PAGE)
    .fetch_all(db.pool())
    .await?;
    rows.iter()
        .map(|r| {
            let stored: Option<String> = r.try_get("stored")?;
            Ok(Pending {
                line: r.try_get("line")?,
                id: r.try_get("id")?,
                email: r.try_get("email")?,
                given: r.try_get("provider_customer_id")?,
                already_linked: stored.is_some_and(|s| !s.is_empty()),
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(ImportError::from)
}

/// Checks given provider customers and links the others by email, in the staging table.
/// A given provider customer that does not exist is a bad row (nothing is imported).
pub(crate) async fn link_staged(
    db: &Db,
    payments: &PaymentsClient,
    import_id: &str,
    progress: Progress<'_>,
) -> Result<Links, ImportError> {
    let total: i64 = sqlx::query("SELECT COUNT(*) AS n FROM import_customers WHERE import_id = $1")
        .bind(import_id)
        .fetch_one(db.pool())
        .await?
        .try_get("n")?;
    let mut links = Links::default();
    let mut missing = Vec::new();
    let (mut after, mut done) = (0i64, 0u64);
    loop {
        let page = staged_page(db, import_id, after).await?;
        let Some(last) = page.last() else { break };
        after = last.line;
        for customer in &page {
            link_one(db, payments, import_id, customer, &mut links, &mut missing).await?;
            done += 1;
            progress("linking", done, total as u64);
        }
    }
    if !missing.is_empty() {
        let count = missing.len() as u64;
        return Err(ImportError::Rows {
            errors: missing,
            count,
        });
    }
    Ok(links)
}

async fn link_one(
    db: &Db,
    payments: &PaymentsClient,
    import_id: &str,
    c: &Pending,
    links: &mut Links,
    missing: &mut Vec<crate::rows::RowError>,
) -> Result<(), ImportError> {
    if let Some(given) = &c.given {
        match payments.get_customer(given).await {
            Ok(found) if !found.deleted => links.given += 1,
            Ok(_) | Err(ProviderError::NotFound(_)) => missing.push(crate::rows::RowError {
                line: c.line as u64,
                id: Some(c.id.clone()),
                message: format!("provider customer {given} does not exist at the provider"),
            }),
            Err(e) => return Err(provider_failed(e)),
        }
        return Ok(());
    }
    if c.already_linked {
        links.kept += 1;
        return Ok(());
    }
    match by_email(payments, &c.email)
        .await
        .map_err(provider_failed)?
    {
        EmailMatch::One(found) if !is_taken(db, import_id, &c.id, &found.id).await? => {
            sqlx::query(
                "UPDATE import_customers SET provider_customer_id = $1, linked_by = 'email'
                 WHERE import_id = $2 AND id = $3",
            )
            .bind(&found.id)
            .bind(import_id)
            .bind(c.id.as_str())
            .execute(db.pool())
            .await?;
            links.by_email += 1;
        }
        EmailMatch::One(_) => links.conflicts += 1,
        EmailMatch::Several(_) => links.ambiguous += 1,
        EmailMatch::None => unlinked(links, &c.id),
    }
    Ok(())
}

fn unlinked(links: &mut Links, id: &str) {
    links.unlinked += 1;
    if links.unlinked_ids.len() < NAMED {
        links.unlinked_ids.push(id.to_string());
    }
}

/// Whether another customer — stored, or staged in this import — is linked to
/// `provider_id`.
async fn is_taken(
    db: &Db,
    import_id: &str,
    customer_id: &str,
    provider_id: &str,
) -> Result<bool, ImportError> {
    let row = sqlx::query(
        "SELECT 1 AS taken FROM customers WHERE provider_customer_id = $1 AND id <> $2
         UNION ALL
         SELECT 1 AS taken FROM import_customers WHERE import_id = $3 AND provider_customer_id = $1 AND id <> $2",
    )
    .bind(provider_id)
    .bind(customer_id)
    .bind(import_id)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.is_some())
}

/// Without a provider to ask: given links are taken as written, the rest counted.
pub(crate) async fn unlinked_only(db: &Db, import_id: &str) -> Result<Links, ImportError> {
    let mut links = Links::default();
    let mut after = 0i64;
    loop {
        let page = staged_page(db, import_id, after).await?;
        let Some(last) = page.last() else { break };
        after = last.line;
        for c in &page {
            match (&c.given, c.already_linked) {
                (Some(_), _) => links.given += 1,
                (None, true) => links.kept += 1,
                (None, false) => unlinked(&mut links, &c.id),
            }
        }
    }
    Ok(links)
}
