//! A shop's customers and orders as they come in (a file row, a shop backend's `PUT`),
//! checked into records the desk can trust, and the one place that writes the
//! `customers` and `orders` tables (`world::World::load_into` writes through here too).
//!
//! A row is text as a shop exports it ([`CustomerRow`], [`OrderRow`]: CSV cells or JSON
//! values, extra fields ignored); [`CustomerRow::check`] and [`OrderRow::check`] turn it
//! into a [`Customer`] or an [`Order`] — money as `Money` in a known currency, a region
//! and a product the policy engine knows, a time — or a [`RecordError`] naming the field.
//! [`put_customer`] and [`put_order`] upsert one record with every check a bulk import
//! makes (the thin `PUT /api/v1/customers/{id}` and `/orders/{id}` routes call them).
//!
//! What it deliberately does not do: talk to the provider (linking by email is
//! `onboarding::link`), or let an order move to another customer, or two customers share
//! an email or a provider customer — each would show one customer's payments to another
//! (docs/spec/invariants.md #12).

use policy_engine::{Currency, Money, PolicyError, Product, Region};
use serde::{Deserialize, Deserializer};
use sqlx::Row;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::clock::to_ms;
use crate::error::{DomainError, DomainResult, ErrorCode};
use store::{Db, Tx};

/// The longest id, name or email accepted (ids are opaque to us, docs/spec/domain.md).
pub const MAX_FIELD_CHARS: usize = 255;

/// What is wrong with one row, by field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("{0} is missing")]
    Missing(&'static str),
    #[error("unknown currency '{0}' (one of CNY, USD, EUR, JPY)")]
    UnknownCurrency(String),
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

impl RecordError {
    fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        RecordError::Invalid {
            field,
            message: message.into(),
        }
    }

    /// The error code a caller sees (`unknown_currency`, `invalid_record`).
    pub fn code(&self) -> ErrorCode {
        match self {
            RecordError::UnknownCurrency(_) => ErrorCode::UnknownCurrency,
            RecordError::Missing(_) | RecordError::Invalid { .. } => ErrorCode::InvalidRecord,
        }
    }
}

impl From<RecordError> for DomainError {
    fn from(e: RecordError) -> Self {
        DomainError::bad_request(e.code(), e.to_string())
    }
}

/// A customer as a shop exports it.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct CustomerRow {
    #[serde(default, deserialize_with = "text")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub email: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub region: Option<String>,
    /// The provider's customer (`cus_…`); absent or empty: linked by email, if at all.
    #[serde(default, deserialize_with = "text")]
    pub provider_customer_id: Option<String>,
}

/// An order as a shop exports it.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct OrderRow {
    #[serde(default, deserialize_with = "text")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub customer_id: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub product: Option<String>,
    /// A decimal string in the currency's scale (`"198.00"`, `"1980"`), or a number.
    #[serde(default, deserialize_with = "text")]
    pub amount: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub currency: Option<String>,
    /// RFC 3339.
    #[serde(default, deserialize_with = "text")]
    pub created_at: Option<String>,
}

/// A checked customer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    pub id: String,
    pub name: String,
    pub email: String,
    pub region: Region,
    pub provider_customer_id: Option<String>,
}

impl Customer {
    /// The email as customers are matched by it: trimmed, lower case.
    pub fn email_key(&self) -> String {
        email_key(&self.email)
    }
}

/// A checked order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub id: String,
    pub customer_id: String,
    pub product: Product,
    pub amount: Money,
    pub created_at: OffsetDateTime,
}

/// How customers are matched by email: trimmed and lower-cased.
pub fn email_key(email: &str) -> String {
    email.trim().to_lowercase()
}

/// A string, a number (written as its text) or null/absent; empty after trimming is
/// absent.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    Ok(match value {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    }
    .map(|s| s.trim().to_string())
    .filter(|s| !s.is_empty()))
}

fn required(value: Option<String>, field: &'static str) -> Result<String, RecordError> {
    let value = value.ok_or(RecordError::Missing(field))?;
    if value.chars().count() > MAX_FIELD_CHARS {
        return Err(RecordError::invalid(
            field,
            format!("longer than {MAX_FIELD_CHARS} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(RecordError::invalid(field, "contains a control character"));
    }
    Ok(value)
}

fn currency(code: Option<String>) -> Result<Currency, RecordError> {
    let code = code.ok_or(RecordError::Missing("currency"))?;
    code.parse()
        .map_err(|_| RecordError::UnknownCurrency(code.clone()))
}

/// One `@` with something either side and no spaces: what a reply can be sent to.
fn check_email(email: &str) -> Result<(), RecordError> {
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !email.chars().any(char::is_whitespace) =>
        {
            Ok(())
        }
        _ => Err(RecordError::invalid(
            "email",
            format!("'{email}' is not an email address"),
        )),
    }
}

impl CustomerRow {
    pub fn check(self) -> Result<Customer, RecordError> {
        let id = required(self.id, "id")?;
        let name = required(self.name, "name")?;
        let email = required(self.email, "email")?;
        check_email(&email)?;
        let region = required(self.region, "region")?;
        let region: Region = region.to_ascii_uppercase().parse().map_err(|_| {
            RecordError::invalid(
                "region",
                format!("unknown region '{region}' (one of CN, US, EU, JP)"),
            )
        })?;
        let provider_customer_id = match self.provider_customer_id {
            Some(p) => Some(required(Some(p), "provider_customer_id")?),
            None => None,
        };
        Ok(Customer {
            id,
            name,
            email,
            region,
            provider_customer_id,
        })
    }
}

impl OrderRow {
    pub fn check(self) -> Result<Order, RecordError> {
        let id = required(self.id, "id")?;
        let customer_id = required(self.customer_id, "customer_id")?;
        let product = required(self.product, "product")?;
        let product: Product = product.parse().map_err(|_| {
            RecordError::invalid(
                "product",
                format!("unknown product '{product}' (one of annual_plan, monthly_plan, addon)"),
            )
        })?;
        let currency = currency(self.currency)?;
        let amount = required(self.amount, "amount")?;
        let amount = Money::parse(&amount, currency).map_err(|e| match e {
            PolicyError::InvalidAmount(why) => RecordError::invalid("amount", why),
            other => RecordError::invalid("amount", other.to_string()),
        })?;
        let created_at = required(self.created_at, "created_at")?;
        let created_at = OffsetDateTime::parse(&created_at, &Rfc3339).map_err(|_| {
            RecordError::invalid(
                "created_at",
                format!("'{created_at}' is not an RFC 3339 time"),
            )
        })?;
        Ok(Order {
            id,
            customer_id,
            product,
            amount,
            created_at,
        })
    }
}

/// Whether an upsert created the record or changed an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Upserted {
    Created,
    Updated,
}

/// Writes one customer. A customer without a provider link keeps the one it had.
pub async fn upsert_customer_tx(tx: &mut Tx<'_>, c: &Customer) -> DomainResult<Upserted> {
    let existed = sqlx::query("SELECT id FROM customers WHERE id = $1")
        .bind(c.id.as_str())
        .fetch_optional(&mut **tx)
        .await?
        .is_some();
    sqlx::query(UPSERT_CUSTOMER)
        .bind(c.id.as_str())
        .bind(&c.name)
        .bind(&c.email)
        .bind(c.region.code())
        .bind(c.provider_customer_id.as_deref().unwrap_or(""))
        .execute(&mut **tx)
        .await?;
    Ok(if existed {
        Upserted::Updated
    } else {
        Upserted::Created
    })
}

/// The customer upsert: `provider_customer_id` is `''` for "not linked", and an
/// unlinked row never erases a link already stored.
pub(crate) const UPSERT_CUSTOMER: &str =
    "INSERT INTO customers (id, name, email, region, provider_customer_id) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, email = excluded.email, region = excluded.region,
     provider_customer_id = CASE WHEN excluded.provider_customer_id = '' THEN customers.provider_customer_id
                                 ELSE excluded.provider_customer_id END";

/// Writes one order.
pub async fn upsert_order_tx(tx: &mut Tx<'_>, o: &Order) -> DomainResult<Upserted> {
    let existed = sqlx::query("SELECT id FROM orders WHERE id = $1")
        .bind(&o.id)
        .fetch_optional(&mut **tx)
        .await?
        .is_some();
    sqlx::query(UPSERT_ORDER)
        .bind(&o.id)
        .bind(&o.customer_id)
        .bind(o.product.as_str())
        .bind(o.amount.minor_units())
        .bind(o.amount.currency().code())
        .bind(to_ms(o.created_at))
        .execute(&mut **tx)
        .await?;
    Ok(if existed {
        Upserted::Updated
    } else {
        Upserted::Created
    })
}

pub(crate) const UPSERT_ORDER: &str =
    "INSERT INTO orders (id, customer_id, product, amount_minor, currency, created_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO UPDATE SET customer_id = excluded.customer_id, product = excluded.product,
     amount_minor = excluded.amount_minor, currency = excluded.currency, created_at = excluded.created_at";

/// The id a `PUT` names, and the body's own id if it has one: they must agree.
fn path_id(path: &str, body: &mut Option<String>) -> DomainResult<()> {
    match body.as_deref() {
        Some(id) if id != path => Err(DomainError::bad_request(
            ErrorCode::IdMismatch,
            format!("the body's id '{id}' is not the path's '{path}'"),
        )),
        _ => {
            *body = Some(path.to_string());
            Ok(())
        }
    }
}

/// Upserts one customer (a shop backend's `PUT /api/v1/customers/{id}`): checked, and
/// refused when its email or provider customer is another customer's. One transaction.
pub async fn put_customer(db: &Db, id: &str, mut row: CustomerRow) -> DomainResult<Upserted> {
    path_id(id, &mut row.id)?;
    let customer = row.check()?;
    let mut tx = db.begin().await?;
    if let Some(other) = customer_sharing(&mut tx, &customer).await? {
        return Err(DomainError::conflict(ErrorCode::CustomerConflict, other));
    }
    let done = upsert_customer_tx(&mut tx, &customer).await?;
    tx.commit().await?;
    Ok(done)
}

/// Another customer with this customer's email or provider customer, in words.
async fn customer_sharing(tx: &mut Tx<'_>, c: &Customer) -> DomainResult<Option<String>> {
    let by_email = sqlx::query("SELECT id FROM customers WHERE lower(email) = $1 AND id <> $2")
        .bind(c.email_key())
        .bind(c.id.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    if let Some(row) = by_email {
        let other: String = row.try_get("id")?;
        return Ok(Some(format!(
            "email {} is already customer {other}'s",
            c.email
        )));
    }
    let Some(provider) = &c.provider_customer_id else {
        return Ok(None);
    };
    let by_provider =
        sqlx::query("SELECT id FROM customers WHERE provider_customer_id = $1 AND id <> $2")
            .bind(provider)
            .bind(c.id.as_str())
            .fetch_optional(&mut **tx)
            .await?;
    Ok(match by_provider {
        Some(row) => Some(format!(
            "provider customer {provider} is already customer {}'s",
            row.try_get::<String, _>("id")?
        )),
        None => None,
    })
}

/// Upserts one order (a shop backend's `PUT /api/v1/orders/{id}`): checked, its customer
/// must exist, and an order never moves to another customer. One transaction.
pub async fn put_order(db: &Db, id: &str, mut row: OrderRow) -> DomainResult<Upserted> {
    path_id(id, &mut row.id)?;
    let order = row.check()?;
    let mut tx = db.begin().await?;
    let customer = sqlx::query("SELECT id FROM customers WHERE id = $1")
        .bind(&order.customer_id)
        .fetch_optional(&mut *tx)
        .await?;
    if customer.is_none() {
        return Err(DomainError::bad_request(
            ErrorCode::UnknownCustomer,
            format!("customer {} does not exist", order.customer_id),
        ));
    }
    if let Some(owner) = order_owner(&mut tx, &order.id).await? {
        if owner != order.customer_id {
            return Err(DomainError::conflict(
                ErrorCode::OrderOwnerChanged,
                format!(
                    "order {} is customer {owner}'s; an order never moves to another customer",
                    order.id
                ),
            ));
        }
    }
    let done = upsert_order_tx(&mut tx, &order).await?;
    tx.commit().await?;
    Ok(done)
}

async fn order_owner(tx: &mut Tx<'_>, order_id: &str) -> DomainResult<Option<String>> {
    let row = sqlx::query("SELECT customer_id FROM orders WHERE id = $1")
        .bind(order_id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(row.map(|r| r.try_get("customer_id")).transpose()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(amount: &str, currency: &str) -> OrderRow {
        OrderRow {
            id: Some("O-1".into()),
            customer_id: Some("C-1".into()),
            product: Some("annual_plan".into()),
            amount: Some(amount.into()),
            currency: Some(currency.into()),
            created_at: Some("2026-11-20T09:00:00Z".into()),
        }
    }

    #[test]
    fn money_is_checked_in_its_currency_and_an_unknown_currency_is_named() {
        assert!(order("198.00", "CNY").check().is_ok());
        assert!(order("1980", "jpy").check().is_ok(), "case does not matter");
        assert_eq!(
            order("198.00", "XYZ").check(),
            Err(RecordError::UnknownCurrency("XYZ".into()))
        );
        assert!(matches!(
            order("1980.5", "JPY").check(),
            Err(RecordError::Invalid {
                field: "amount",
                ..
            })
        ));
        assert!(matches!(
            order("-1.00", "USD").check(),
            Err(RecordError::Invalid {
                field: "amount",
                ..
            })
        ));
        assert!(matches!(
            order("12,00", "EUR").check(),
            Err(RecordError::Invalid {
                field: "amount",
                ..
            })
        ));
    }

    #[test]
    fn json_numbers_and_blank_cells_read_as_text_and_absent() {
        let row: OrderRow = serde_json::from_str(
            r#"{"id": 7000024, "customer_id": "C-1", "product": "addon", "amount": 4.99,
                "currency": "USD", "created_at": "2026-11-20T09:00:00Z", "extra": true}"#,
        )
        .expect("a row");
        let order = row.check().expect("a valid order");
        assert_eq!(order.id, "7000024");
        assert_eq!(order.amount.amount_string(), "4.99");
        let row: CustomerRow = serde_json::from_str(
            r#"{"id": "C-1", "name": "Ann", "email": "a@example.com", "region": "us",
                "provider_customer_id": "  "}"#,
        )
        .expect("a row");
        let customer = row.check().expect("a valid customer");
        assert_eq!(customer.provider_customer_id, None);
        assert_eq!(customer.region, Region::US);
    }

    #[test]
    fn bad_fields_are_named() {
        let base = CustomerRow {
            id: Some("C-1".into()),
            name: Some("Ann".into()),
            email: Some("a@example.com".into()),
            region: Some("EU".into()),
            provider_customer_id: None,
        };
        let with = |f: fn(&mut CustomerRow)| {
            let mut row = base.clone();
            f(&mut row);
            row.check()
        };
        assert_eq!(
            with(|r| r.email = Some("not-an-email".into()))
                .unwrap_err()
                .to_string(),
            "email: 'not-an-email' is not an email address"
        );
        assert_eq!(
            with(|r| r.region = Some("Mars".into()))
                .unwrap_err()
                .to_string(),
            "region: unknown region 'Mars' (one of CN, US, EU, JP)"
        );
        assert_eq!(
            with(|r| r.id = None).unwrap_err(),
            RecordError::Missing("id")
        );
        assert!(with(|r| r.name = Some("x\u{0}y".into())).is_err());
    }
}
