//! The varied style's worlds: older orders that have nothing to do with the request,
//! and order ids of one of the six schemes.

use std::collections::BTreeMap;

use policy_engine::Product;
use time::Duration;

use super::super::draft::Draft;
use super::super::mix::prices;
use super::super::rng::SplitMix64;
use super::vocabulary::{Ident, Scheme};

/// Older orders of the customer that have nothing to do with the request: each paid
/// once at its own amount on its own day, so no record points at it, and none shares
/// what the customer writes to identify the order (`ident`).
pub(super) fn add_unrelated_orders(draft: &mut Draft, rng: &mut SplitMix64, ident: Ident) {
    let own = |d: &Draft| {
        d.world
            .orders
            .iter()
            .filter(|o| o.customer_id == d.customer_id)
            .count()
    };
    let wanted = match rng.below(10) {
        0..=2 => 0,
        3..=5 => 1,
        6..=7 => 2,
        _ => rng.range(3, 5) as usize,
    };
    let target_product = draft
        .order_id
        .as_ref()
        .and_then(|id| draft.world.orders.iter().find(|o| &o.id == id))
        .map(|o| o.product);
    let first_at = draft
        .world
        .orders
        .iter()
        .map(|o| o.created_at)
        .min()
        .unwrap_or(draft.created_at);
    for k in 0..wanted {
        if own(draft) >= 6 {
            break;
        }
        let products: Vec<Product> = Product::ALL
            .into_iter()
            .filter(|p| ident != Ident::Product || Some(*p) != target_product)
            .collect();
        let product = rng.pick(&products);
        let list = rng.pick(prices(draft.region, product));
        let taken: Vec<String> = draft
            .world
            .orders
            .iter()
            .map(|o| o.amount.clone())
            .collect();
        // A price of its own: list price plus a few units, never an amount already used.
        let Some(minor) = (1..40)
            .map(|step| list + step * unit(draft) * (rng.range(1, 3)))
            .find(|m| !taken.contains(&draft.money(*m)))
        else {
            continue;
        };
        let at = first_at - Duration::days(3 + 17 * (k as i64 + 1) + rng.range(0, 9));
        let order = draft.order(product, minor, at);
        let charge = draft.charge(&order, minor, at + Duration::seconds(1));
        if rng.chance(10) {
            draft.refund(&charge, minor, at + Duration::days(2), "succeeded");
        }
    }
}

/// One step of price variation: 1 in the currency's major unit (JPY: 10 yen).
fn unit(draft: &Draft) -> i64 {
    match draft.currency {
        policy_engine::Currency::JPY => 10,
        _ => 100,
    }
}

/// Gives every order of the world an id of `scheme`; returns old id → new id.
pub(super) fn rename_orders(
    draft: &mut Draft,
    rng: &mut SplitMix64,
    scheme: Scheme,
) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    let mut used: Vec<String> = Vec::new();
    let base = rng.range(1, 9_999);
    for (k, order) in draft.world.orders.iter().enumerate() {
        let year = order.created_at.year();
        let id = loop {
            let candidate = match scheme {
                // Siblings of one base: `O-0412-1`, `O-0412-2`.
                Scheme::Dashed if rng.chance(60) => format!("O-{base:04}-{}", k + 1),
                Scheme::Dashed => format!("O-{:04}-{}", rng.range(1, 9_999), rng.range(1, 9)),
                // A prefix of an id already given: `#1023` next to `#10234`.
                Scheme::Hash if !used.is_empty() && rng.chance(30) => {
                    let longer = &used[rng.below(used.len() as u64) as usize];
                    if longer.len() > 3 {
                        longer[..longer.len() - 1].to_string()
                    } else {
                        format!("#{}", rng.range(10_000, 99_999))
                    }
                }
                Scheme::Hash => format!("#{}", rng.range(10_000, 99_999)),
                Scheme::Dated => format!("ORD-{year}-{:06}", rng.range(1, 999_999)),
                Scheme::Numeric => format!("{}", rng.range(7_000_000, 7_999_999)),
                Scheme::Code => code(rng),
                Scheme::Shop => format!("O-{}", rng.range(1_000, 99_999)),
            };
            if !used.contains(&candidate) {
                break candidate;
            }
        };
        used.push(id.clone());
        map.insert(order.id.clone(), id);
    }
    for order in &mut draft.world.orders {
        order.id = map[&order.id].clone();
    }
    for charge in &mut draft.world.charges {
        if let Some(new) = map.get(&charge.order_id) {
            charge.order_id = new.clone();
        }
    }
    map
}

/// `MX5H38`: six letters and digits, starting with a letter, at least two digits.
fn code(rng: &mut SplitMix64) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ";
    const DIGITS: &[u8] = b"23456789";
    loop {
        let mut s = String::new();
        s.push(LETTERS[rng.below(LETTERS.len() as u64) as usize] as char);
        for _ in 0..5 {
            let pool = if rng.chance(50) { LETTERS } else { DIGITS };
            s.push(pool[rng.below(pool.len() as u64) as usize] as char);
        }
        if s.chars().filter(char::is_ascii_digit).count() >= 2 {
            return s;
        }
    }
}
