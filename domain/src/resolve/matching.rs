//! The customer's orders as resolution sees them, and the rules that narrow them: by the
//! evidence in the text, by what the charges show (RP-001 §1), by a repeat purchase.

use policy_engine::{OrderFacts, RequestKind};
use rust_decimal::Decimal;

use super::evidence::{
    mentioned_amounts, mentioned_currencies, mentioned_dates, mentioned_products,
};

/// A charge as resolution needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChargeSummary {
    pub amount: Decimal,
    /// Captured and succeeded: money was taken (RP-001 §1).
    pub took_money: bool,
    /// Uncaptured and not failed: an authorization hold.
    pub hold: bool,
}

/// One of the customer's orders, as resolution needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderCandidate {
    pub id: String,
    /// `annual_plan`, `monthly_plan`, `addon`.
    pub product: String,
    pub amount: Decimal,
    /// ISO 4217, upper case.
    pub currency: String,
    /// `(year, month, day)` the order was placed.
    pub date: (i32, u8, u8),
    /// The order's charges; `None` when not read yet.
    pub charges: Option<Vec<ChargeSummary>>,
}

impl OrderCandidate {
    /// From the policy engine's facts (every charge is known there).
    pub fn from_facts(order: &OrderFacts) -> Self {
        let d = order.created_at.date();
        OrderCandidate {
            id: order.id.clone(),
            product: order.product.as_str().to_string(),
            amount: order.amount.amount(),
            currency: order.amount.currency().code().to_string(),
            date: (d.year(), u8::from(d.month()), d.day()),
            charges: Some(
                order
                    .charges
                    .iter()
                    .map(|c| ChargeSummary {
                        amount: c.amount.amount(),
                        took_money: c.took_money(),
                        hold: !c.captured && c.status != policy_engine::ChargeStatus::Failed,
                    })
                    .collect(),
            ),
        }
    }
}

/// Keeps the candidates that pass `keep`, when that leaves some but not all of them.
fn narrow(
    candidates: Vec<&OrderCandidate>,
    keep: impl Fn(&OrderCandidate) -> bool,
) -> Vec<&OrderCandidate> {
    let kept: Vec<&OrderCandidate> = candidates.iter().copied().filter(|o| keep(o)).collect();
    if kept.is_empty() {
        candidates
    } else {
        kept
    }
}

/// Narrows candidates by what the customer wrote besides ids: products, currencies,
/// amounts, dates. Each kind of evidence narrows only when some candidate fits it.
pub(super) fn by_secondary_evidence<'a>(
    text: &str,
    candidates: Vec<&'a OrderCandidate>,
) -> Vec<&'a OrderCandidate> {
    let products = mentioned_products(text);
    let currencies = mentioned_currencies(text);
    let amounts = mentioned_amounts(text);
    let dates = mentioned_dates(text);
    let mut c = candidates;
    if !products.is_empty() {
        c = narrow(c, |o| products.contains(&o.product.as_str()));
    }
    if !currencies.is_empty() {
        c = narrow(c, |o| currencies.contains(&o.currency.as_str()));
    }
    if !amounts.is_empty() {
        c = narrow(c, |o| amounts.contains(&o.amount.normalize()));
    }
    if !dates.is_empty() {
        c = narrow(c, |o| {
            dates.iter().any(|(y, m, d)| {
                y.is_none_or(|y| y == o.date.0) && *m == o.date.1 && *d == o.date.2
            })
        });
    }
    c
}

/// Whether an order's charges show what the customer describes: more taken than the
/// order amount (duplicates, overcharges) or, for holds, an uncaptured charge.
pub fn shows_problem(request: RequestKind, order: &OrderCandidate) -> bool {
    let charges = order.charges.as_deref().unwrap_or_default();
    match request {
        RequestKind::AuthorizationHold => charges.iter().any(|c| c.hold),
        RequestKind::DuplicateCharge | RequestKind::Overcharge => {
            let taken: Decimal = charges
                .iter()
                .filter(|c| c.took_money)
                .map(|c| c.amount)
                .sum();
            taken > order.amount
        }
        RequestKind::Cancellation | RequestKind::Unclear => false,
    }
}

/// "I bought it twice": the later of two identical paid orders, when exactly one is.
/// Whether that is an accidental repeat purchase (RP-001 v2 §1) or two purchases
/// (v1 §4.1) is the engine's call, on the version in force.
pub fn repeat_purchase<'a>(candidates: &[&'a OrderCandidate]) -> Option<&'a OrderCandidate> {
    let paid: Vec<&OrderCandidate> = candidates
        .iter()
        .copied()
        .filter(|o| {
            o.charges
                .as_deref()
                .unwrap_or_default()
                .iter()
                .any(|c| c.took_money)
        })
        .collect();
    let repeats: Vec<&OrderCandidate> = paid
        .iter()
        .enumerate()
        .filter(|(i, o)| {
            paid[..*i]
                .iter()
                .any(|e| e.product == o.product && e.amount == o.amount && e.currency == o.currency)
        })
        .map(|(_, o)| *o)
        .collect();
    match repeats.as_slice() {
        [only] => Some(only),
        _ => None,
    }
}
