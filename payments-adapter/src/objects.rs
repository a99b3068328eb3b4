//! The provider's objects as the adapter reads them: charges, refunds, customers and
//! list pages, in the wire shape of the pinned API version (`STRIPE_VERSION`).
//!
//! Every field the provider's own specification allows to be null or absent is an
//! `Option` (or a map defaulting to empty) here (docs/spec/payments.md "Wire"): a refund's
//! `charge`, `status` and `metadata`, a charge's `customer` and `payment_method`, a
//! customer's `email` and `name`. A field the specification lets the caller expand (a
//! refund's `charge`, a charge's `customer`) is read as its id whether it comes as an id
//! or as the expanded object.
//!
//! What it deliberately does not do: decide what a null means for money. The one
//! reading that matters — a refund with no status — is [`ProviderRefund::status`], and it
//! errs on the side of never freeing money (docs/spec/invariants.md #6).

use std::collections::BTreeMap;

use policy_engine::Currency;
use serde::{Deserialize, Deserializer};

use crate::error::ProviderError;

#[derive(Debug, Clone, Deserialize)]
pub struct ProviderCharge {
    pub id: String,
    pub amount: i64,
    #[serde(default)]
    pub amount_captured: i64,
    #[serde(default)]
    pub amount_refunded: i64,
    pub captured: bool,
    pub currency: String,
    #[serde(default, deserialize_with = "expandable_id")]
    pub customer: Option<String>,
    pub status: String,
    #[serde(default)]
    pub disputed: bool,
    pub created: i64,
    #[serde(default)]
    pub payment_method: Option<String>,
    #[serde(default, deserialize_with = "nullable_map")]
    pub metadata: BTreeMap<String, String>,
    /// The shop's order this charge pays, read from `metadata` under the configured key
    /// (`PAYMENTS_ORDER_KEY`, default `order_id`) by the client that fetched it, or from a
    /// link staff made (`onboarding::charges`); never on the wire.
    #[serde(skip)]
    pub order_id: Option<String>,
}

impl ProviderCharge {
    pub fn currency(&self) -> Result<Currency, ProviderError> {
        self.currency
            .parse()
            .map_err(|_| ProviderError::Malformed(format!("currency '{}'", self.currency)))
    }

    /// The order this charge pays, if it names one we were told how to read.
    pub fn order_id(&self) -> Option<&str> {
        self.order_id.as_deref()
    }

    /// Reads the order id from `metadata[key]` (an empty value names nothing).
    pub fn link_order(&mut self, key: &str) {
        self.order_id = self.metadata.get(key).filter(|v| !v.is_empty()).cloned();
    }
}

/// What a refund without a status is read as: Stripe's specification allows `status`
/// to be null. Read as `pending` — money may be moving, nothing is final — so it is
/// never counted as failed, which would free its amount for a second refund
/// (docs/spec/invariants.md #6), and never as succeeded, which would tell a customer
/// money arrived.
pub const NULL_REFUND_STATUS: &str = "pending";

#[derive(Debug, Clone, Deserialize)]
pub struct ProviderRefund {
    pub id: String,
    pub amount: i64,
    /// Null for a refund the provider made without a charge (a payment intent's, a
    /// customer-balance refund): then it belongs to no charge of ours.
    #[serde(default, deserialize_with = "expandable_id")]
    pub charge: Option<String>,
    pub currency: String,
    #[serde(default)]
    pub status: Option<String>,
    pub created: i64,
    #[serde(default, deserialize_with = "nullable_map")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub failure_reason: Option<String>,
    /// Stripe's reason: `duplicate`, `fraudulent`, `requested_by_customer`, or null.
    #[serde(default)]
    pub reason: Option<String>,
}

impl ProviderRefund {
    /// Our refund intent id, as we sent it in `metadata[refund_intent_id]`.
    pub fn intent_id(&self) -> Option<&str> {
        self.metadata.get("refund_intent_id").map(String::as_str)
    }

    /// The status, a null one read as [`NULL_REFUND_STATUS`].
    pub fn status(&self) -> &str {
        self.status.as_deref().unwrap_or(NULL_REFUND_STATUS)
    }

    /// Whether this refund is on `charge_id`.
    pub fn is_on(&self, charge_id: &str) -> bool {
        self.charge.as_deref() == Some(charge_id)
    }
}

/// A provider customer: who pays, as the provider knows them.
#[derive(Debug, Clone, Deserialize)]
pub struct ProviderCustomer {
    pub id: String,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub created: i64,
    /// `true` on a deleted customer's stub (`{id, object, deleted}`).
    #[serde(default)]
    pub deleted: bool,
}

/// One page of a list: `{object: "list", data, has_more}`.
#[derive(Debug, Deserialize)]
pub(super) struct List<T> {
    pub(super) data: Vec<T>,
    pub(super) has_more: bool,
}

/// An id that may come expanded: `"ch_1"`, `{"id": "ch_1", …}` or null.
fn expandable_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Expandable {
        Id(String),
        Object { id: String },
    }
    Ok(
        Option::<Expandable>::deserialize(deserializer)?.map(|e| match e {
            Expandable::Id(id) | Expandable::Object { id } => id,
        }),
    )
}

/// A map that may be null (Stripe's refund `metadata`): null reads as empty.
fn nullable_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    Ok(Option::<BTreeMap<String, String>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refund_with_every_nullable_field_null_reads_and_counts_as_pending() {
        let refund: ProviderRefund = serde_json::from_str(
            r#"{"id":"re_1","object":"refund","amount":500,"charge":null,"currency":"usd",
                "created":1700000000,"metadata":null,"status":null,"reason":null,
                "payment_intent":null,"balance_transaction":null}"#,
        )
        .expect("Stripe's specification allows every one of these nulls");
        assert_eq!(refund.charge, None);
        assert!(refund.metadata.is_empty());
        assert_eq!(refund.status(), "pending");
        assert!(!refund.is_on(""));
    }

    #[test]
    fn expanded_ids_read_as_their_id() {
        let refund: ProviderRefund = serde_json::from_str(
            r#"{"id":"re_1","amount":1,"charge":{"id":"ch_9","object":"charge"},"currency":"usd","created":1}"#,
        )
        .expect("an expanded charge");
        assert!(refund.is_on("ch_9"));
        let charge: ProviderCharge = serde_json::from_str(
            r#"{"id":"ch_1","amount":1,"captured":true,"currency":"usd","status":"succeeded",
                "created":1,"customer":{"id":"cus_1","object":"customer"},"payment_method":null,
                "metadata":{"shop_order":"O-7"}}"#,
        )
        .expect("an expanded customer");
        assert_eq!(charge.customer.as_deref(), Some("cus_1"));
    }

    #[test]
    fn the_order_is_read_under_the_configured_key_only() {
        let mut charge: ProviderCharge = serde_json::from_str(
            r#"{"id":"ch_1","amount":1,"captured":true,"currency":"usd","status":"succeeded",
                "created":1,"metadata":{"shop_order":"O-7","order_id":""}}"#,
        )
        .expect("a charge");
        charge.link_order("order_id");
        assert_eq!(charge.order_id(), None, "an empty value names nothing");
        charge.link_order("shop_order");
        assert_eq!(charge.order_id(), Some("O-7"));
    }

    #[test]
    fn a_customer_with_null_email_and_a_deleted_stub_read() {
        let c: ProviderCustomer = serde_json::from_str(
            r#"{"id":"cus_1","object":"customer","created":1,"email":null,"name":null}"#,
        )
        .expect("a customer");
        assert_eq!(c.email, None);
        let d: ProviderCustomer =
            serde_json::from_str(r#"{"id":"cus_2","object":"customer","deleted":true}"#)
                .expect("a deleted customer");
        assert!(d.deleted);
    }
}
