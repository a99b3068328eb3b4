//! The input of a decision: what the customer asks, when, and their billing records.
//!
//! Facts are plain data gathered by the caller (the app's investigator or a
//! `FACTS.json` file for `refund-agent policy check`). This module only adds the few
//! derived quantities every rule agrees on (money taken, already refunded, refundable).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::catalog::{Product, Region};
use crate::error::PolicyError;
use crate::money::Money;

/// Everything a decision may rely on. Timestamps are RFC 3339, amounts decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    /// When the customer first asked (ticket creation). Selects the policy versions and
    /// measures every window.
    #[serde(with = "time::serde::rfc3339")]
    pub reported_at: OffsetDateTime,
    pub customer: CustomerFacts,
    pub request: RequestKind,
    /// The order the request points at; `None` when the customer did not identify one.
    #[serde(default)]
    pub order_id: Option<String>,
    #[serde(default)]
    pub order_ownership: Ownership,
    /// The customer's earlier order that `order_id` repeats, when they bought one thing
    /// twice ("I bought the annual plan twice, refund the second"): RP-001 decides an
    /// accidental repeat purchase, and otherwise (§4.1) RP-002 may still refund the later
    /// order as a cancellation. `None` for every other request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<String>,
    /// All of this customer's orders, each with its charges.
    #[serde(default)]
    pub orders: Vec<OrderFacts>,
}

/// The authenticated customer (RP-007: never taken from chat text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomerFacts {
    pub id: String,
    pub region: Region,
}

/// What the customer asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    DuplicateCharge,
    Overcharge,
    Cancellation,
    AuthorizationHold,
    Unclear,
}

impl RequestKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::DuplicateCharge => "duplicate_charge",
            RequestKind::Overcharge => "overcharge",
            RequestKind::Cancellation => "cancellation",
            RequestKind::AuthorizationHold => "authorization_hold",
            RequestKind::Unclear => "unclear",
        }
    }
}

/// Whether the order the request names belongs to the authenticated customer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ownership {
    #[default]
    Owned,
    OtherCustomer,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderFacts {
    pub id: String,
    pub product: Product,
    pub amount: Money,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(default)]
    pub charges: Vec<ChargeFacts>,
}

impl OrderFacts {
    /// True when at least one charge on the order took money.
    pub fn is_paid(&self) -> bool {
        self.charges.iter().any(ChargeFacts::took_money)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChargeStatus {
    Succeeded,
    Pending,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChargeFacts {
    pub id: String,
    pub amount: Money,
    pub captured: bool,
    pub status: ChargeStatus,
    #[serde(default)]
    pub disputed: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub payment_method: String,
    pub amount_refunded: Money,
    #[serde(default)]
    pub refunds: Vec<RefundFacts>,
}

impl ChargeFacts {
    /// RP-001 §1: only a captured, succeeded charge has taken money.
    pub fn took_money(&self) -> bool {
        self.captured && self.status == ChargeStatus::Succeeded
    }

    /// RP-003: an uncaptured charge that did not fail is an authorization hold.
    pub fn is_hold(&self) -> bool {
        !self.captured && self.status != ChargeStatus::Failed
    }

    /// What already counts as refunded: the larger of the provider's `amount_refunded`
    /// and the sum of pending and succeeded refunds (a pending refund will take money back
    /// too, RP-001 §2.1). Fails when the records mix currencies.
    pub fn already_refunded(&self) -> Result<Money, PolicyError> {
        let currency = self.amount.currency();
        let mut in_flight = Money::zero(currency);
        for refund in &self.refunds {
            if matches!(
                refund.status,
                RefundStatus::Pending | RefundStatus::Succeeded
            ) {
                in_flight = in_flight.checked_add(&refund.amount)?;
            }
        }
        // Compare in the charge's currency: a mismatch is an error, not a guess.
        Money::zero(currency).checked_add(&self.amount_refunded)?;
        Ok(if self.amount_refunded.amount() >= in_flight.amount() {
            self.amount_refunded
        } else {
            in_flight
        })
    }

    /// What may still be refunded on the charge: captured amount less already refunded,
    /// never negative; zero for a charge that took no money (RP-001 §2.4).
    pub fn refundable(&self) -> Result<Money, PolicyError> {
        let refunded = self.already_refunded()?;
        if !self.took_money() {
            return Ok(Money::zero(self.amount.currency()));
        }
        self.amount.saturating_sub(&refunded)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundStatus {
    Pending,
    Succeeded,
    Failed,
    Canceled,
}

impl RefundStatus {
    /// The snake-case name used in JSON (`pending`).
    pub fn as_str(self) -> &'static str {
        match self {
            RefundStatus::Pending => "pending",
            RefundStatus::Succeeded => "succeeded",
            RefundStatus::Failed => "failed",
            RefundStatus::Canceled => "canceled",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundFacts {
    pub id: String,
    pub amount: Money,
    pub status: RefundStatus,
}
