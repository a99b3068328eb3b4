//! The scenario mix, in rough production proportions, and what a world of each region
//! is made of: currencies, list prices, payment methods, customer names, dates.

use policy_engine::{Currency, Product, Region};
use time::OffsetDateTime;

use super::rng::SplitMix64;

/// What the customer complains about, and how the world is built to match.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scenario {
    /// Two or three identical captured charges on one order (sometimes part refunded).
    Duplicate,
    /// One charge above the order amount (sometimes with a pending partial refund).
    Overcharge,
    /// Two identical orders minutes apart (RP-001 v2 §1 when < 10 minutes).
    RepeatPurchase,
    /// A cancellation of one order (annual: cooling-off by region; else not eligible).
    Cancellation,
    /// A captured charge and an uncaptured hold (overdue after 7 days).
    Hold,
    /// A duplicate whose second charge is disputed.
    Dispute,
    /// A duplicate already refunded in full (succeeded or pending).
    AlreadyRefunded,
    /// A duplicate complaint about an order with one successful charge.
    NotDuplicate,
    /// A duplicate complaint about another customer's order (RP-007).
    Ownership,
    /// A cancellation naming no order, with two orders of different products.
    Ambiguous,
    /// An extra charge of another amount on one order: no clause covers it.
    Other,
}

/// Relative weights, in rough production proportions.
const MIX: &[(Scenario, u64)] = &[
    (Scenario::Duplicate, 24),
    (Scenario::Overcharge, 10),
    (Scenario::RepeatPurchase, 10),
    (Scenario::Cancellation, 16),
    (Scenario::Hold, 8),
    (Scenario::Dispute, 5),
    (Scenario::AlreadyRefunded, 6),
    (Scenario::NotDuplicate, 7),
    (Scenario::Ownership, 5),
    (Scenario::Ambiguous, 5),
    (Scenario::Other, 4),
];

pub(super) fn pick_scenario(rng: &mut SplitMix64) -> Scenario {
    let total: u64 = MIX.iter().map(|(_, w)| w).sum();
    let mut roll = rng.below(total);
    for (scenario, weight) in MIX {
        if roll < *weight {
            return *scenario;
        }
        roll -= weight;
    }
    MIX[0].0
}

pub(super) fn currency(region: Region) -> Currency {
    match region {
        Region::CN => Currency::CNY,
        Region::US => Currency::USD,
        Region::EU => Currency::EUR,
        Region::JP => Currency::JPY,
    }
}

/// List prices in minor units (JPY has no minor unit: these are yen).
pub(super) fn prices(region: Region, product: Product) -> &'static [i64] {
    match (region, product) {
        (Region::CN, Product::AnnualPlan) => &[19_800, 29_800],
        (Region::CN, Product::MonthlyPlan) => &[2_500, 3_000],
        (Region::CN, Product::Addon) => &[3_000, 1_500],
        (Region::US, Product::AnnualPlan) => &[9_900, 12_000],
        (Region::US, Product::MonthlyPlan) => &[1_200, 1_500],
        (Region::US, Product::Addon) => &[499, 999],
        (Region::EU, Product::AnnualPlan) => &[12_000, 9_900],
        (Region::EU, Product::MonthlyPlan) => &[999, 1_299],
        (Region::EU, Product::Addon) => &[500, 999],
        (Region::JP, Product::AnnualPlan) => &[9_800, 12_000],
        (Region::JP, Product::MonthlyPlan) => &[980, 1_200],
        (Region::JP, Product::Addon) => &[1_200, 500],
    }
}

pub(super) fn payment_method(region: Region) -> &'static str {
    match region {
        Region::CN => "pm_alipay",
        Region::US => "pm_card_visa",
        Region::EU => "pm_card_mastercard",
        Region::JP => "pm_card_jcb",
    }
}

pub(super) const NAMES: &[(&str, &str)] = &[
    ("Li Wei", "li.wei"),
    ("张敏", "zhang.min"),
    ("Emma Johnson", "emma.j"),
    ("Noah Davis", "noah.d"),
    ("Lukas Müller", "lukas.m"),
    ("Sophie Martin", "sophie.m"),
    ("Sato Yuki", "yuki.sato"),
    ("Tanaka Hiroshi", "hiroshi.t"),
];

/// The first ticket date; tickets spread over the next 350 days, so RP-001 v1 (until
/// 2026-06-30) and v2 (from 2026-07-01) are both in force for a share of them.
pub(super) fn first_day() -> OffsetDateTime {
    time::macros::datetime!(2026-01-05 00:00 UTC)
}
