//! The customer's orders as resolution sees them, and the rules that narrow them: by the
//! evidence in the text, by what the charges show (RP-001 §1), by a repeat purchase.

use policy_engine::{OrderFacts, RequestKind};
use rust_decimal::Decimal;
use time::{Duration, OffsetDateTime};

use super::evidence::{
    mentioned_amounts, mentioned_currencies, mentioned_products, plan_period, says_latest,
    says_subscription,
};
use super::said_days::mentioned_days;
use super::when::{Day, Moment};

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
    /// When the order was placed (the day it was on is the customer's, `when`).
    pub placed_at: OffsetDateTime,
    /// The order's charges; `None` when not read yet.
    pub charges: Option<Vec<ChargeSummary>>,
}

impl OrderCandidate {
    /// From the policy engine's facts (every charge is known there).
    pub fn from_facts(order: &OrderFacts) -> Self {
        OrderCandidate {
            id: order.id.clone(),
            product: order.product.as_str().to_string(),
            amount: order.amount.amount(),
            currency: order.amount.currency().code().to_string(),
            placed_at: order.created_at,
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

/// What the customer wrote besides ids that can single an order out, read once per
/// conversation (`Reading::of`): products, currencies, amounts, days, "my most recent
/// order".
#[derive(Debug, Clone, Default)]
pub(super) struct Secondary {
    products: Vec<&'static str>,
    currencies: Vec<&'static str>,
    amounts: Vec<Decimal>,
    days: Vec<Day>,
    latest: bool,
    /// A subscription is spoken of: a word for one, or a plan by its product.
    subscription: bool,
}

impl Secondary {
    /// The evidence in `folded` (`structure::fold_words` applied).
    pub(super) fn of(folded: &str) -> Secondary {
        let products = mentioned_products(folded);
        let subscription =
            products.iter().any(|p| plan_period(p).is_some()) || says_subscription(folded);
        Secondary {
            products,
            currencies: mentioned_currencies(folded),
            amounts: mentioned_amounts(folded),
            days: mentioned_days(folded),
            latest: says_latest(folded),
            subscription,
        }
    }

    /// Whether the words speak of a subscription ("cancel my subscription"): what a
    /// cancellation then means is a plan still running ([`running_plans`]).
    pub(super) fn speaks_of_a_subscription(&self) -> bool {
        self.subscription
    }
}

/// Narrows candidates by what the customer wrote besides ids: products, currencies,
/// amounts, days (dates always; weekdays and "yesterday" when the ticket's moment is
/// known), "my most recent order". Each kind of evidence narrows only when some
/// candidate fits it.
pub(super) fn by_secondary_evidence<'a>(
    evidence: &Secondary,
    candidates: Vec<&'a OrderCandidate>,
    moment: Option<&Moment>,
) -> Vec<&'a OrderCandidate> {
    let mut c = candidates;
    if !evidence.products.is_empty() {
        c = narrow(c, |o| evidence.products.contains(&o.product.as_str()));
    }
    if !evidence.currencies.is_empty() {
        c = narrow(c, |o| evidence.currencies.contains(&o.currency.as_str()));
    }
    if !evidence.amounts.is_empty() {
        c = narrow(c, |o| evidence.amounts.contains(&o.amount.normalize()));
    }
    let utc = Moment {
        reported_at: OffsetDateTime::UNIX_EPOCH,
        region: None,
        script_offset: None,
    };
    // Without the ticket's moment only calendar dates can be placed (in UTC).
    let days: Vec<&Day> = evidence
        .days
        .iter()
        .filter(|d| moment.is_some() || matches!(d, Day::Date { .. }))
        .collect();
    if !days.is_empty() {
        let moment = moment.unwrap_or(&utc);
        c = narrow(c, |o| {
            days.iter().any(|d| moment.placed_on(o.placed_at, **d))
        });
        if c.len() > 1 {
            c = narrow(c, |o| {
                days.iter()
                    .any(|d| moment.placed_on_at_home(o.placed_at, **d))
            });
        }
    }
    if evidence.latest {
        let newest = c.iter().map(|o| o.placed_at).max();
        c = narrow(c, |o| Some(o.placed_at) == newest);
    }
    c
}

/// "Cancel my subscription": the plans still running when the ticket was written —
/// ordered less than their period ago ([`plan_period`]) — when some candidates are. A
/// plan whose paid period has ended is over, and an add-on is no subscription (it is
/// delivered at purchase, RP-002 §3): neither is what is cancelled.
pub(super) fn running_plans<'a>(
    candidates: Vec<&'a OrderCandidate>,
    moment: Option<&Moment>,
) -> Vec<&'a OrderCandidate> {
    let Some(now) = moment.map(|m| m.reported_at) else {
        return candidates;
    };
    narrow(candidates, |o| {
        plan_period(&o.product).is_some_and(|p| o.placed_at <= now && now - o.placed_at < p)
    })
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

/// How far apart two identical orders can be for a customer to have bought one thing
/// twice ("I bought it again on my laptop", "half an hour later"): within a day. A plan
/// renewed a month or a year later is another purchase, never a repeat.
pub const REPEAT_WITHIN: Duration = Duration::hours(24);

/// Whether `later` repeats `earlier`: the same product, amount and currency, placed
/// after it and less than [`REPEAT_WITHIN`] later.
pub fn repeats(later: &OrderCandidate, earlier: &OrderCandidate) -> bool {
    let gap = later.placed_at - earlier.placed_at;
    later.product == earlier.product
        && later.amount == earlier.amount
        && later.currency == earlier.currency
        && (later.placed_at, &later.id) > (earlier.placed_at, &earlier.id)
        && gap < REPEAT_WITHIN
}

/// "I bought it twice": the later of two identical paid orders placed within a day of
/// each other, with the order it repeats, when exactly one order is such a repeat.
/// Whether that is an accidental repeat purchase (RP-001 v2 §1) or a purchase that may
/// still be cancelled (RP-001 §4.1, RP-002) is the engine's call, on the version in force.
pub fn repeat_purchase<'a>(
    candidates: &[&'a OrderCandidate],
) -> Option<(&'a OrderCandidate, &'a OrderCandidate)> {
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
    let repeated: Vec<(&OrderCandidate, &OrderCandidate)> = paid
        .iter()
        .filter_map(|later| {
            // The nearest earlier order it repeats.
            let earlier = paid
                .iter()
                .filter(|e| repeats(later, e))
                .max_by_key(|e| (e.placed_at, &e.id))?;
            Some((*later, *earlier))
        })
        .collect();
    match repeated.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

/// "Charged twice" where no order shows a duplicate and nothing identical was bought
/// twice: the one pair of paid orders placed within [`REPEAT_WITHIN`] of each other, later
/// first, when exactly one such pair exists. The engine then says whether they are one
/// thing bought twice or two purchases (RP-001 §4.1).
pub fn near_pair<'a>(
    candidates: &[&'a OrderCandidate],
) -> Option<(&'a OrderCandidate, &'a OrderCandidate)> {
    let mut paid: Vec<&OrderCandidate> = candidates
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
    paid.sort_by(|a, b| (a.placed_at, &a.id).cmp(&(b.placed_at, &b.id)));
    let mut pairs = paid
        .windows(2)
        .filter(|w| w[1].placed_at - w[0].placed_at < REPEAT_WITHIN)
        .map(|w| (w[1], w[0]));
    match (pairs.next(), pairs.next()) {
        (Some(pair), None) => Some(pair),
        _ => None,
    }
}
